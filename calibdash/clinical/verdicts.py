"""The judgments of a clinical validation: one status and one plain sentence per level of the
calibration hierarchy (Van Calster et al. 2019), discrimination, overall accuracy, clinical
usefulness and sample size, for the whole data, a subgroup or (with centres) the pooled result.

These are statistical judgments (which interval excludes which ideal value, which targets are
met), so they live beside the statistics: :meth:`RiskValidation.verdicts` calls
:func:`hierarchy_verdicts`. The display (:mod:`calibdash.display.clinical`) and the report only
show the records. The rules, with their measured level and power, are in docs/clinical.md.

Class and group names are the user's: sentences return them as plain text, to be escaped
(HTML) or marked where they are shown.
"""

from __future__ import annotations

import numpy as np

from calibdash.clinical.sample_size import MIN_EVENTS, TARGETS
from calibdash.errors import ConfigError

__all__ = ["LEVELS", "DIGITS", "REFERENCE_VALUES", "STATUSES", "hierarchy_verdicts", "useful_thresholds",
           "sample_size_text", "format_metric", "format_p", "interval_text", "select_class", "select_group",
           "metric_rows", "group_info", "level_words"]

# The rows of hierarchy_verdicts, in this order, and the metrics each rests on.
LEVELS = {
    "mean calibration": ("O:E", "calibration-in-the-large"),
    "weak calibration": ("calibration slope",),
    "moderate calibration": ("ICI", "E50", "E90", "Emax"),
    "discrimination": ("AUROC",),
    "overall accuracy": ("Brier", "scaled Brier", "Spiegelhalter z"),
    "clinical usefulness": (),
    "sample size": (),
}
# Decimals shown of each metric (the downloads keep full precision).
DIGITS = {"O:E": 2, "calibration-in-the-large": 2, "calibration slope": 2, "ICI": 3, "E50": 3, "E90": 3,
          "Emax": 3, "Brier": 3, "scaled Brier": 3, "AUROC": 3, "Spiegelhalter z": 2}
# The value a perfectly calibrated model has (the forest plot's reference line).
REFERENCE_VALUES = {"O:E": 1.0, "calibration-in-the-large": 0.0, "calibration slope": 1.0, "ICI": 0.0, "E50": 0.0,
                    "E90": 0.0, "Emax": 0.0}
STATUSES = ("ok", "problem", "uncertain")

def _format_number(value, spec):
    # "" when missing, as calibdash.display.tables.format_number
    if value is None:
        return ""
    v = float(value)
    if np.isnan(v):
        return ""
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return format(v, spec)


# ----------------------------------------------------------------------------- formatting
def format_metric(name, value, *, digits=None):
    """``value`` of metric ``name`` with its decimals (:data:`DIGITS`, or ``digits``); "" when
    missing. A value that rounds to zero is written without a minus sign ("0.00", not "-0.00").
    """
    text = _format_number(value, f".{DIGITS.get(name, 3) if digits is None else digits}f")
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def format_p(p):
    """A p-value as medicine writes it: "< 0.001", else three decimals; "" when missing."""
    if p is None or not np.isfinite(p):
        return ""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def interval_text(name, low, high, *, ideal=None):
    """"low to high" of metric ``name``; "" when either end is missing.

    With ``ideal``, an end that differs from it is given more decimals until it no longer
    reads as it (an O:E interval ending at 0.997 is "0.72 to 0.997", not "0.72 to 1.00", which
    would contradict the verdict that it excludes 1).
    """
    digits = DIGITS.get(name, 3)
    if ideal is not None:
        while digits < 6 and any(np.isfinite(x) and x != ideal and format_metric(name, x, digits=digits)
                                 == format_metric(name, ideal, digits=digits) for x in (low, high)):
            digits += 1
    lo, hi = format_metric(name, low, digits=digits), format_metric(name, high, digits=digits)
    return f"{lo} to {hi}" if lo and hi else ""


def level_words(v):
    """"95% CI" for the result's interval level."""
    return f"{100 * float(v.settings.get('level', 0.95)):g}% CI"


def _pct(x):
    return f"{100 * x:.0f}%"


# ----------------------------------------------------------------------------- selection
def select_class(v, cls):
    if cls is None:
        return v.classes[0]
    if str(cls) not in v.classes:
        raise ConfigError(f"No class {str(cls)!r} in this validation; the classes are "
                          + ", ".join(repr(c) for c in v.classes) + ".")
    return str(cls)


def select_group(v, cls, group):
    if group is None:
        return None
    known = v.groups[v.groups["class"] == cls]["group"].tolist() if len(v.groups) else []
    if str(group) not in known:
        raise ConfigError(f"No group {str(group)!r} in this validation"
                          + (f"; the groups of {v.group_name!r} are " + ", ".join(repr(g) for g in known) + "."
                             if known else " (it was run without groups)."))
    return str(group)


def metric_rows(v, cls, group):
    m = v.metrics
    rows = m[(m["class"] == cls) & (m["group"].isna() if group is None else (m["group"] == group))]
    return rows.set_index("metric")


def group_info(v, cls, group):
    g = v.groups
    return g[(g["class"] == cls) & (g["group"] == group)].iloc[0]


# ----------------------------------------------------------------------------- verdicts
def _estimate(rows, name):
    r = rows.loc[name]
    return float(r["estimate"]), float(r["ci_low"]), float(r["ci_high"])


def _with_ci(v, name, est, lo, hi, label=None):
    """"label 1.24 (95% CI 1.17 to 1.31)", the interval left out when there is none."""
    ci = interval_text(name, lo, hi, ideal=REFERENCE_VALUES.get(name))
    head = f"{label} {format_metric(name, est)}" if label else format_metric(name, est)
    return f"{head} ({level_words(v)} {ci})" if ci else f"{head} (no interval)"


def _has_ci(lo, hi):
    return bool(np.isfinite(lo) and np.isfinite(hi))


def _mean_calibration(v, rows):
    e, lo, hi = _estimate(rows, "O:E")
    a, a_lo, a_hi = _estimate(rows, "calibration-in-the-large")
    ci = level_words(v)
    oe = f"{format_metric('O:E', e)} events observed per event expected"
    if _has_ci(lo, hi):
        oe += f" ({ci} {interval_text('O:E', lo, hi, ideal=1.0)})"
        above, below = lo > 1, hi < 1
        width = hi - lo
    else:  # no bootstrap (n_resamples=0): the profile interval of calibration-in-the-large decides
        oe += f"; calibration-in-the-large {format_metric('calibration-in-the-large', a)} ({ci} " \
              f"{interval_text('calibration-in-the-large', a_lo, a_hi, ideal=0.0)})"
        above, below = a_lo > 0, a_hi < 0
        width = np.nan
    if above:
        return "problem", f"Predicted risks are too low on average: {oe}."
    if below:
        return "problem", f"Predicted risks are too high on average: {oe}."
    text = f"No evidence of over- or underestimation on average: {oe}; the data are consistent with 1"
    if np.isfinite(width) and width > TARGETS["O:E"]:
        return "uncertain", (f"{text}, but the interval is {width:.3g} wide (target at most {TARGETS['O:E']:g}): "
                             "the average could still be clearly off.")
    return "ok", text + "."


def _weak_calibration(v, rows):
    b, lo, hi = _estimate(rows, "calibration slope")
    slope = _with_ci(v, "calibration slope", b, lo, hi, "calibration slope")
    if hi < 1:
        return "problem", (f"Predictions are too extreme (typical of overfitting): {slope}; high risks are "
                           "overestimated and low risks underestimated.")
    if lo > 1:
        return "problem", (f"Predictions are too modest: {slope}; high risks are underestimated and low risks "
                           "overestimated.")
    width = hi - lo
    text = f"The data are consistent with the ideal slope of 1: {slope}"
    if not np.isfinite(width):
        return "uncertain", f"The calibration slope is {format_metric('calibration slope', b)}, without an interval."
    if width > TARGETS["calibration slope"]:
        return "uncertain", (f"{text}, but the interval is {width:.3g} wide (target at most "
                             f"{TARGETS['calibration slope']:g}): too imprecise to rule out over- or underfitting.")
    return "ok", f"{text}; the interval is {width:.3g} wide."


def _moderate_calibration(v, rows, small):
    ici, lo, hi = _estimate(rows, "ICI")
    e90 = float(rows.loc["E90", "estimate"])
    p = float(rows.loc["ICI", "p_value"])
    ci = level_words(v)
    size = (f"observed and predicted risks differ by {format_metric('ICI', ici)} on average (ICI"
            + (f", {ci} {interval_text('ICI', lo, hi)}" if _has_ci(lo, hi) else "")
            + f") and by at most {format_metric('E90', e90)} for 90% of patients (E90)")
    if not np.isfinite(p):
        return "uncertain", f"Without resamples there is no test of the curve: {size}."
    level = float(v.settings.get("level", 0.95))
    if p >= 1 - level:
        text = (f"The flexible calibration curve is consistent with the diagonal (test of perfect calibration by "
                f"the ICI: p = {format_p(p)}): {size}")
        if small:
            return "uncertain", f"{text}; but the sample is small, so the curve could still be clearly off."
        return "ok", text + "."
    return "problem", (f"The flexible calibration curve departs from the diagonal (p {'= ' if p >= 0.001 else ''}"
                       f"{format_p(p)}): {size}.")


def _discrimination(v, rows):
    c, lo, hi = _estimate(rows, "AUROC")
    text = _with_ci(v, "AUROC", c, lo, hi, "AUROC")
    share = (f"an event gets a higher predicted risk than a non-event in {_pct(c)} of pairs" if np.isfinite(c)
             else "")
    if _has_ci(lo, hi) and lo <= 0.5:
        return "problem", f"The model does not separate events from non-events better than chance: {text}."
    if not _has_ci(lo, hi) or hi - lo > TARGETS["AUROC"]:
        return "uncertain", (f"{text}: {share}; the interval is wide (target at most {TARGETS['AUROC']:g}), so the "
                             "discrimination is imprecise.")
    return "ok", f"{text}: {share}."


def _overall(v, rows):
    brier, lo, hi = _estimate(rows, "Brier")
    s, s_lo, s_hi = _estimate(rows, "scaled Brier")
    z = float(rows.loc["Spiegelhalter z", "estimate"])
    zp = float(rows.loc["Spiegelhalter z", "p_value"])
    text = (f"{_with_ci(v, 'Brier', brier, lo, hi, 'Brier score')}; scaled Brier "
            f"{_with_ci(v, 'scaled Brier', s, s_lo, s_hi)}, the share of the outcome's variance the risks explain "
            "beyond the event rate")
    spiegel = (f"Spiegelhalter's test {'rejects' if zp < 1 - float(v.settings.get('level', 0.95)) else 'does not reject'}"
               f" calibrated risks (z = {format_metric('Spiegelhalter z', z)}, p {'= ' if zp >= 0.001 else ''}"
               f"{format_p(zp)})") if np.isfinite(zp) else ""
    tail = f". {spiegel}." if spiegel else "."
    if _has_ci(s_lo, s_hi) and s_hi < 0:
        return "problem", f"Worse than giving everyone the event rate: {text}{tail}"
    if not _has_ci(s_lo, s_hi) or s_lo <= 0:
        return "uncertain", f"Not clearly better than giving everyone the event rate: {text}{tail}"
    return "ok", text[0].upper() + text[1:] + tail


def _segments(thresholds, mask):
    """Runs of consecutive True in ``mask`` as (first, last) thresholds."""
    out, start = [], None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        if start is not None and (not m or i == len(mask) - 1):
            out.append((thresholds[start], thresholds[i if m else i - 1]))
            start = None
    return out


def useful_thresholds(v, *, cls=None):
    """The thresholds (as (first, last) runs) at which the model's net benefit exceeds both
    treating everyone and treating no one (point estimates)."""
    cls = select_class(v, cls)
    d = v.decision_curve[v.decision_curve["class"] == cls]
    wide = d.pivot(index="threshold", columns="strategy", values="net_benefit").sort_index()
    mask = (wide["model"] > wide["treat all"]) & (wide["model"] > wide["treat none"])
    return _segments(wide.index.to_numpy(), mask.to_numpy())


def _usefulness(v, cls, group):
    if group is not None:
        return "uncertain", ("Net benefit is computed for the whole data only; read the decision curve there.")
    runs = useful_thresholds(v, cls=cls)
    if not runs:
        return "problem", ("At no threshold from 1% to 99% does the model have a higher net benefit than treating "
                           "everyone or no one: acting on its risks would not help.")
    spans = [f"{_pct(a)} to {_pct(b)}" if a != b else _pct(a) for a, b in runs[:4]]
    spans = ", ".join(spans[:-1]) + " and " + spans[-1] if len(spans) > 1 else spans[0]
    more = " and elsewhere" if len(runs) > 4 else ""
    return "ok", (f"The model has a higher net benefit than treating everyone or no one at thresholds of {spans}"
                  f"{more}; read the decision curve at the risk at which clinicians would act.")


def _shortfalls(table):
    """Riley's targets not met, as phrases."""
    out = []
    for _, r in table.iterrows():
        if r["adequate"]:
            continue
        if r["metric"] in TARGETS:
            if not np.isfinite(r["achieved"]):
                continue
            need = (f"; about {r['rows_needed']:,.0f} rows would reach it" if np.isfinite(r["rows_needed"]) else "")
            out.append(f"the interval of {r['metric']} is {r['achieved']:.3g} wide (target at most {r['target']:g}{need})")
        else:
            out.append(f"{r['achieved']:,.0f} {r['metric']} (at least {r['target']:,.0f} recommended)")
    return out


def _reason(note):
    """A group's note without its leading status ("imprecise: ...", "not judged: ...")."""
    head, sep, rest = str(note).partition(": ")
    return rest if sep and head in ("imprecise", "not judged") else str(note)


def _is_small(v, cls, group):
    """Whether the block or group has fewer events or non-events than recommended."""
    if group is not None:
        return group_info(v, cls, group)["status"] != "judged"
    table = v.sample_size[v.sample_size["class"] == cls]
    return bool(table[~table["metric"].isin(list(TARGETS))]["achieved"].min() < MIN_EVENTS)


def _sample_size(v, cls, group):
    if group is not None:
        info = group_info(v, cls, group)
        if info["status"] == "too small":
            return "problem", f"Too small to judge: {_reason(info['note'])}."
        if info["status"] == "imprecise":
            return "uncertain", f"The numbers are imprecise: {_reason(info['note'])}."
        rows = metric_rows(v, cls, group)
        short = []
        for metric, target in TARGETS.items():
            width = float(rows.loc[metric, "ci_high"] - rows.loc[metric, "ci_low"])
            if np.isfinite(width) and width > target:
                short.append(f"the interval of {metric} is {width:.3g} wide (target at most {target:g})")
        if short:
            return "uncertain", "The numbers are imprecise: " + "; ".join(short) + "."
        return "ok", f"{int(info['n']):,} rows with {int(info['events']):,} events meet Riley et al.'s (2021) precision targets."
    status, text = _sample_size_status(v, cls)
    return status, text


def _sample_size_status(v, cls):
    table = v.sample_size[v.sample_size["class"] == cls]
    counts = table[~table["metric"].isin(list(TARGETS))]
    fewest = int(counts["achieved"].min())
    events = int(counts.loc[counts["metric"] == "events", "achieved"].iloc[0])
    non_events = int(counts.loc[counts["metric"] == "non-events", "achieved"].iloc[0])
    short = _shortfalls(table)
    if fewest < MIN_EVENTS:
        return "problem", (f"Too small to judge: {events:,} events and {non_events:,} non-events; at least "
                           f"{MIN_EVENTS} of each are recommended for a validation (Collins et al. 2016, Riley et al. "
                           "2021). Every interval is wide and the verdicts above are tentative.")
    if short:
        return "uncertain", ("The numbers are imprecise against the targets of Riley et al. (2021): "
                             + "; ".join(short) + ". Read the intervals rather than the estimates.")
    return "ok", (f"{events:,} events and {non_events:,} non-events: every precision target of Riley et al. (2021) is met.")


def hierarchy_verdicts(v, *, cls=None, group=None):
    """One plain sentence per level of the validation, for the whole data or one group.

    Parameters
    ----------
    v : RiskValidation
    cls : str, optional
        The class block (default: the first, the positive class of binary data).
    group : str, optional
        A group of ``v.group_name`` (default: the whole data).

    Returns
    -------
    list of dict
        In the order of :data:`LEVELS`, each with ``level``, ``verdict`` (a sentence),
        ``status`` (``"ok"``, ``"problem"`` or ``"uncertain"``) and ``metrics`` (the metric
        names it rests on).
    """
    cls = select_class(v, cls)
    group = select_group(v, cls, group)
    rows = metric_rows(v, cls, group)
    too_small = group is not None and group_info(v, cls, group)["status"] == "too small"
    makers = {
        "mean calibration": lambda: _mean_calibration(v, rows),
        "weak calibration": lambda: _weak_calibration(v, rows),
        "moderate calibration": lambda: _moderate_calibration(v, rows, _is_small(v, cls, group)),
        "discrimination": lambda: _discrimination(v, rows),
        "overall accuracy": lambda: _overall(v, rows),
        "clinical usefulness": lambda: _usefulness(v, cls, group),
        "sample size": lambda: _sample_size(v, cls, group),
    }
    out = []
    for level, metrics in LEVELS.items():
        if too_small and level != "sample size":
            status, text = "uncertain", "Not judged: the group is too small."
        else:
            status, text = makers[level]()
        out.append({"level": level, "verdict": text, "status": status, "metrics": list(metrics)})
    return out



def sample_size_text(v, *, cls=None):
    """A plain note on the sample size against Riley et al.'s (2021) precision targets.

    "Too small to judge" when there are fewer than 100 events or non-events; otherwise
    which targets the achieved interval widths meet, and how many rows would meet the others.
    """
    cls = select_class(v, cls)
    _, text = _sample_size_status(v, cls)
    return text
