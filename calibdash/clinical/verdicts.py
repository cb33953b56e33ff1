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
from scipy import stats

from calibdash.clinical.sample_size import MIN_EVENTS, MIN_GROUP_EVENTS, TARGETS
from calibdash.errors import ConfigError
from calibdash.formatting import format_number, format_p  # format_p: re-exported, one of the verdicts' words

__all__ = ["LEVELS", "DIGITS", "POINTS_METRICS", "METRIC_UNITS", "metric_scale", "REFERENCE_VALUES", "STATUSES",
           "STATUS_WORDS", "hierarchy_verdicts", "useful_thresholds",
           "sample_size_text", "format_metric", "format_p", "interval_text", "select_class", "select_group",
           "metric_rows", "group_info", "level_words", "group_findings", "holm", "USEFUL_MIN_RUN"]

# "Useful" needs the lower end of the net-benefit difference's interval above 0 over a stretch
# of at least this many consecutive thresholds (1 point apart): one threshold alone is a
# multiple-comparison accident (tests/clinical/test_verdict_level.py measures the level).
USEFUL_MIN_RUN = 5
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
# The differences between observed and predicted risk, shown in percentage points (issue 27: one
# unit per quantity, the curves beside them are in %); the results and downloads keep fractions.
POINTS_METRICS = ("ICI", "E50", "E90", "Emax")
# What each metric is shown in: its own scale where it has one.
METRIC_UNITS = {"O:E": "ratio", "calibration-in-the-large": "logit scale", "calibration slope": "logit scale",
                **{m: "percentage points" for m in POINTS_METRICS}, "Brier": "0 to 1", "scaled Brier": "0 to 1",
                "AUROC": "C statistic, 0 to 1", "Spiegelhalter z": "standard normal z"}
# Decimals shown of each metric on that scale (the downloads keep full precision).
DIGITS = {"O:E": 2, "calibration-in-the-large": 2, "calibration slope": 2, "ICI": 1, "E50": 1, "E90": 1,
          "Emax": 1, "Brier": 3, "scaled Brier": 3, "AUROC": 3, "Spiegelhalter z": 2}
# The value a perfectly calibrated model has (the forest plot's reference line).
REFERENCE_VALUES = {"O:E": 1.0, "calibration-in-the-large": 0.0, "calibration slope": 1.0, "ICI": 0.0, "E50": 0.0,
                    "E90": 0.0, "Emax": 0.0}
STATUSES = ("ok", "problem", "uncertain")
# The word every front end (the app, the report, the command line) prints for a status: one
# vocabulary, so that a reader of the report finds the words the app showed (it once said "fine").
STATUS_WORDS = {"ok": "ok", "problem": "problem", "uncertain": "uncertain"}

# ----------------------------------------------------------------------------- formatting
def metric_scale(name):
    """What a value of metric ``name`` is multiplied by to be shown in :data:`METRIC_UNITS`: 100
    for the :data:`POINTS_METRICS` (a difference of risks, 0.054, is 5.4 percentage points), else 1."""
    return 100.0 if name in POINTS_METRICS else 1.0


def format_metric(name, value, *, digits=None):
    """``value`` of metric ``name`` on its scale (:func:`metric_scale`) with its decimals
    (:data:`DIGITS`, or ``digits``); "" when missing. A value that rounds to zero is written
    without a minus sign ("0.00", not "-0.00").
    """
    if value is not None and not isinstance(value, str):
        value = metric_scale(name) * float(value)
    text = format_number(value, f".{DIGITS.get(name, 3) if digits is None else digits}f")
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


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
    return f"{100 * float(v.config.get('level', 0.95)):g}% CI"


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


def _alpha(v):
    return 1 - float(v.config.get("level", 0.95))


def _p_words(p):
    return f"p {'= ' if p >= 0.001 else ''}{format_p(p)}"


# ----------------------------------------------------------------------------- context
def _heterogeneity(v, cls, group):
    """The heterogeneity tests that reject (metric -> p), for the whole data of grouped data."""
    if group is not None or not len(v.heterogeneity):
        return {}
    h = v.heterogeneity[v.heterogeneity["class"] == cls]
    return {r["metric"]: float(r["p_value"]) for _, r in h.iterrows()
            if np.isfinite(r["p_value"]) and r["p_value"] < _alpha(v)}


def _pooled(v, cls, group, metric):
    """The meta-analysis row of ``metric`` (whole data with centres), else None."""
    if group is not None or v.clusters is None or not len(v.pooled):
        return None
    rows = v.pooled[(v.pooled["class"] == cls) & (v.pooled["metric"] == metric)]
    if rows.empty or not np.isfinite(rows["estimate"].iloc[0]):
        return None
    return rows.iloc[0]


def _pooled_words(v, name, r, label):
    """"pooled over 6 centres (random effects): O:E 1.05 (95% CI ...); in a new centre it could lie
    between .. and .. (95% prediction interval)"."""
    text = f"pooled over {int(r['n_clusters'])} centres (random effects): " + _with_ci(
        v, name, r["estimate"], r["ci_low"], r["ci_high"], label)
    if _has_ci(r["pi_low"], r["pi_high"]):
        text += (f"; in a new centre it could lie between {format_metric(name, r['pi_low'])} and "
                 f"{format_metric(name, r['pi_high'])} ({100 * float(v.config.get('level', 0.95)):g}% prediction "
                 "interval)")
    return text


def _judged(v, rows, cls, group, name):
    """(estimate, ci_low, ci_high, words) of the metric a verdict rests on: the pooled
    meta-analysis with centres, else the metrics table's row."""
    pooled = _pooled(v, cls, group, name)
    if pooled is not None:
        return (float(pooled["estimate"]), float(pooled["ci_low"]), float(pooled["ci_high"]),
                _pooled_words(v, name, pooled, name))
    e, lo, hi = _estimate(rows, name)
    return e, lo, hi, _with_ci(v, name, e, lo, hi, name)


def _differ_words(v, het):
    """The sentence that the groups differ, with the tests' p-values."""
    name = v.group_name or "the groups"
    what = "centres" if v.clusters else "groups"
    tests = "; ".join(f"{m}: {_p_words(p)}" for m, p in het.items())
    return (f"calibration differs between the {what} of {name!r} (likelihood-ratio tests of heterogeneity, {tests}), so "
            f"the whole-data figure mixes {what} that are calibrated differently: read the per-{what[:-1]} results")


# ----------------------------------------------------------------------------- levels
def _mean_calibration(v, rows, cls, group):
    pooled = _pooled(v, cls, group, "O:E")
    if pooled is not None:
        lo, hi = float(pooled["ci_low"]), float(pooled["ci_high"])
        oe = _pooled_words(v, "O:E", pooled, "O:E")
        width = hi - lo
        above, below = lo > 1, hi < 1
    else:
        e, lo, hi = _estimate(rows, "O:E")
        a, a_lo, a_hi = _estimate(rows, "calibration-in-the-large")
        ci = level_words(v)
        oe = f"{format_metric('O:E', e)} events observed per event expected"
        if _has_ci(lo, hi):
            oe += f" ({ci} {interval_text('O:E', lo, hi, ideal=1.0)})"
            above, below = lo > 1, hi < 1
            width = hi - lo
        else:  # no bootstrap (n_resamples=0): the profile interval of calibration-in-the-large decides
            oe += f"; calibration-in-the-large {_with_ci(v, 'calibration-in-the-large', a, a_lo, a_hi)}"
            above, below = a_lo > 0, a_hi < 0
            width = np.nan
            if not _has_ci(a_lo, a_hi):
                return "uncertain", f"Mean calibration cannot be judged without an interval: {oe}."
    het = _heterogeneity(v, cls, group)
    tail = f" Note that {_differ_words(v, het)}." if "calibration-in-the-large" in het else ""
    if above:
        return "problem", f"Predicted risks are too low on average: {oe}.{tail}"
    if below:
        return "problem", f"Predicted risks are too high on average: {oe}.{tail}"
    text = f"No evidence of over- or underestimation on average: {oe}; the data are consistent with 1"
    if np.isfinite(width) and width > TARGETS["O:E"]:
        return "uncertain", (f"{text}, but the interval is {width:.3g} wide (target at most {TARGETS['O:E']:g}): "
                             f"the average could still be clearly off.{tail}")
    return "ok", f"{text}.{tail}"


def _curve_shape(v, cls, group):
    """Where along the risks the flexible curve (or the grouped points) lies clearly above or below
    the diagonal, as words with the share of patients there; "" when nowhere."""
    runs = []
    if group is None and v.curve_method.get(cls, "loess") == "loess" and len(v.curve):
        c = v.curve[v.curve["class"] == cls].dropna(subset=["ci_low", "ci_high"])
        if len(c):
            p = c["p"].to_numpy()
            side = np.where(c["ci_low"].to_numpy() > p, 1, np.where(c["ci_high"].to_numpy() < p, -1, 0))
            runs = _side_runs(p, side)
    if not runs and len(v.grouped):
        gsel = v.grouped[(v.grouped["class"] == cls)
                         & (v.grouped["group"].isna() if group is None else v.grouped["group"] == group)]
        if len(gsel):
            p = gsel["mean_risk"].to_numpy()
            side = np.where(gsel["ci_low"].to_numpy() > p, 1, np.where(gsel["ci_high"].to_numpy() < p, -1, 0))
            runs = _side_runs(p, side, lows=gsel["p_low"].to_numpy(), highs=gsel["p_high"].to_numpy())
    if not runs:
        return ""
    d = v.distribution[v.distribution["class"] == cls]
    total = float((d["events"] + d["non_events"]).sum())
    mids = ((d["bin_low"] + d["bin_high"]) / 2).to_numpy()
    counts = (d["events"] + d["non_events"]).to_numpy(dtype=float)
    parts = []
    for s, a, b in runs:
        share = counts[(mids >= a) & (mids <= b)].sum() / total if total and group is None else np.nan
        where = f"from {_pct(a)} to {_pct(b)}" if _pct(a) != _pct(b) else f"around {_pct(a)}"
        words = "underestimated" if s > 0 else "overestimated"
        parts.append(f"{words} {where}" + (f" (about {_pct(share)} of patients)" if np.isfinite(share) else ""))
    return "the flexible curve shows risks " + " and ".join(parts)


def _side_runs(p, side, *, lows=None, highs=None):
    """Runs of equal non-zero ``side`` along ``p`` as (side, first, last)."""
    lows = p if lows is None else lows
    highs = p if highs is None else highs
    out, start = [], None
    for i in range(len(p) + 1):
        cur = side[i] if i < len(p) else 0
        if start is not None and cur != side[start]:
            out.append((int(side[start]), float(lows[start]), float(highs[i - 1])))
            start = None
        if start is None and i < len(p) and cur != 0:
            start = i
    return out


def _weak_calibration(v, rows, cls, group):
    b, lo, hi, slope = _judged(v, rows, cls, group, "calibration slope")
    if not np.isfinite(b):
        return "uncertain", ("The calibration slope cannot be estimated (the risks are all equal, or the outcome is "
                             "perfectly separated).")
    if not _has_ci(lo, hi):
        return "uncertain", f"The calibration slope is {format_metric('calibration slope', b)}, without an interval."
    het = _heterogeneity(v, cls, group)
    shape = _curve_shape(v, cls, group)
    shape = f"; {shape}" if shape else ""
    if het and (hi < 1 or lo > 1):
        direction = "too extreme" if hi < 1 else "too modest"
        return "problem", (f"Across the whole data the predictions look {direction} ({slope}), but {_differ_words(v, het)}. "
                           "Pooling groups with different event rates or calibration changes the whole-data slope, so "
                           f"this is not by itself evidence of {'overfitting' if hi < 1 else 'underfitting'}{shape}.")
    if hi < 1:
        return "problem", (f"Predictions are too extreme (a slope below 1, typical of overfitting): {slope}{shape}.")
    if lo > 1:
        return "problem", f"Predictions are too modest (a slope above 1): {slope}{shape}."
    width = hi - lo
    text = f"The data are consistent with the ideal slope of 1: {slope}"
    if width > TARGETS["calibration slope"]:
        return "uncertain", (f"{text}, but the interval is {width:.3g} wide (target at most "
                             f"{TARGETS['calibration slope']:g}): too imprecise to rule out over- or underfitting.")
    return "ok", f"{text}; the interval is {width:.3g} wide."


def _moderate_calibration(v, rows, small):
    ici, lo, hi = _estimate(rows, "ICI")
    e90 = float(rows.loc["E90", "estimate"])
    p = float(rows.loc["ICI", "p_value"])
    # at registry size the p-value is a sequential Monte Carlo one: say so with the number
    mc = next((t for t in str(rows.loc["ICI", "note"] or "").split("; ") if t.startswith("p-value from")), "")
    mc = f"; {mc}" if mc else ""
    ci = level_words(v)
    if not np.isfinite(ici):
        return "uncertain", "The flexible calibration curve could not be estimated (see the notes)."
    size = (f"observed and predicted risks differ by {format_metric('ICI', ici)} percentage points on average (ICI"
            + (f", {ci} {interval_text('ICI', lo, hi)}" if _has_ci(lo, hi) else "")
            + f") and by at most {format_metric('E90', e90)} points for 90% of patients (E90)")
    if not np.isfinite(p):
        return "uncertain", f"Without resamples there is no test of the curve: {size}."
    if p >= _alpha(v):
        text = (f"The flexible calibration curve is consistent with the diagonal (test of perfect calibration by "
                f"the ICI: p = {format_p(p)}{mc}): {size}")
        if small:
            return "uncertain", f"{text}; but the sample is small, so the curve could still be clearly off."
        return "ok", text + "."
    return "problem", f"The flexible calibration curve departs from the diagonal ({_p_words(p)}{mc}): {size}."


def _discrimination(v, rows, cls, group):
    c, lo, hi, text = _judged(v, rows, cls, group, "AUROC")
    share = (f"an event gets a higher predicted risk than a non-event in {_pct(c)} of pairs" if np.isfinite(c)
             else "")
    if _has_ci(lo, hi) and hi < 0.5:
        return "problem", (f"The model ranks worse than chance (events get lower risks than non-events): {text}: "
                           f"{share}.")
    if _has_ci(lo, hi) and lo <= 0.5:
        return "uncertain", (f"Uncertain: the discrimination cannot be distinguished from chance (the interval "
                             f"contains 0.5): {text}.")
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
    rejects = bool(np.isfinite(zp) and zp < _alpha(v))
    spiegel = (f"Spiegelhalter's test {'rejects' if rejects else 'does not reject'} calibrated risks "
               f"(z = {format_metric('Spiegelhalter z', z)}, {_p_words(zp)})") if np.isfinite(zp) else ""
    tail = f". {spiegel}." if spiegel else "."
    if _has_ci(s_lo, s_hi) and s_hi < 0:
        return "problem", f"Worse than giving everyone the event rate: {text}{tail}"
    if rejects:
        # the Brier score mixes calibration and discrimination; a rejected test of calibration
        # is a problem whatever the score
        return "problem", (f"The risks are not calibrated by Spiegelhalter's test, whatever their accuracy: "
                           f"{text}{tail}")
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


def _nb_rows(v, cls, group):
    nb = v.net_benefit
    if not len(nb):
        return nb
    return nb[(nb["class"] == cls) & (nb["group"].isna() if group is None else nb["group"] == group)]


def useful_thresholds(v, *, cls=None, group=None, min_run=None):
    """The thresholds, as (first, last) runs inside ``v.config["thresholds"]``, at which the
    model's net benefit is shown to exceed both treating everyone and treating no one: the lower
    end of the interval of the difference is above 0 at each of at least ``min_run``
    consecutive thresholds (default :data:`USEFUL_MIN_RUN`)."""
    cls = select_class(v, cls)
    d = _nb_rows(v, cls, group).sort_values("threshold")
    d = d[d["in_range"]]
    mask = (d["difference_low"] > 0).to_numpy()
    runs = _segments(d["threshold"].to_numpy(), mask)
    need = USEFUL_MIN_RUN if min_run is None else min_run
    step = 0.01
    return [(a, b) for a, b in runs if round((b - a) / step) + 1 >= need]


def _usefulness(v, cls, group):
    low, high = v.config.get("thresholds", (0.05, 0.5))
    span = f"{_pct(low)} to {_pct(high)}"
    d = _nb_rows(v, cls, group)
    if not len(d) or "difference_low" not in d:
        return "uncertain", "Net benefit was not computed for these data."
    d = d[d["in_range"]].sort_values("threshold")
    if not d["difference_low"].notna().any():
        return "uncertain", (f"Without bootstrap intervals the net benefit over thresholds {span} cannot be judged; "
                             "read the decision curve.")
    runs = useful_thresholds(v, cls=cls, group=group)
    if runs:
        spans = [f"{_pct(a)} to {_pct(b)}" for a, b in runs[:4]]
        spans = ", ".join(spans[:-1]) + " and " + spans[-1] if len(spans) > 1 else spans[0]
        # the threshold in the runs where the lower end is largest, as the example
        inside = d[np.any([(d["threshold"] >= a) & (d["threshold"] <= b) for a, b in runs], axis=0)]
        best = inside.loc[inside["difference_low"].idxmax()]
        ci = level_words(v)
        return "ok", (f"Useful at thresholds of {spans} (within the range {span} set for this decision): there the "
                      "model's net benefit is above the better of treating everyone and no one, interval included; "
                      f"e.g. at {_pct(best['threshold'])} by {100 * best['difference']:.1f} true positives per 100 "
                      f"patients ({ci} {100 * best['difference_low']:.1f} to {100 * best['difference_high']:.1f}), "
                      f"{best['avoided_per_100']:.0f} net interventions avoided per 100 against treating everyone.")
    if (d["difference_high"] < 0).all():
        return "problem", (f"Not useful: at every threshold from {span} the model's net benefit is below that of treating "
                           "everyone or no one, interval included.")
    return "uncertain", (f"Usefulness not shown: at no stretch of thresholds within {span} is the model's net benefit "
                         "clearly above both treating everyone and treating no one (the intervals of the difference "
                         "reach 0); read the decision curve at the threshold at which clinicians would act.")


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
        elif r["metric"] in ("events", "non-events"):
            out.append(f"{r['achieved']:,.0f} {r['metric']} (at least {r['target']:,.0f} recommended)")
    return out


def _reason(note):
    """A group's note without its leading status ("imprecise: ...", "not judged: ...")."""
    head, sep, rest = str(note).partition(": ")
    return rest if sep and head in ("imprecise", "not judged") else str(note)


def _counts(v, cls):
    table = v.sample_size[v.sample_size["class"] == cls]
    counts = table[table["metric"].isin(["events", "non-events"])]
    events = int(counts.loc[counts["metric"] == "events", "achieved"].iloc[0])
    non_events = int(counts.loc[counts["metric"] == "non-events", "achieved"].iloc[0])
    return events, non_events


def _is_small(v, cls, group):
    """Whether the block or group has fewer events or non-events than recommended."""
    if group is not None:
        return group_info(v, cls, group)["status"] != "judged"
    return min(_counts(v, cls)) < MIN_EVENTS


def _too_few(v, cls, group):
    """Fewer events or non-events than the validation needs to judge anything (the rule of groups,
    applied to the whole data too)."""
    if group is not None:
        return group_info(v, cls, group)["status"] == "too small"
    return min(_counts(v, cls)) < MIN_GROUP_EVENTS


def _sample_size(v, cls, group):
    if group is not None:
        info = group_info(v, cls, group)
        if info["status"] == "too small":
            return "uncertain", f"Too few events to judge: {_reason(info['note'])}."
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
    return _sample_size_status(v, cls)


def _assumption(v, cls, table):
    """At which O:E and slope the rows needed were computed (the observed ones, when the
    sample-size table says so)."""
    if "assumption" not in table or not table["assumption"].astype(str).str.contains("observed").any():
        return ""
    rows = metric_rows(v, cls, None)
    oe, slope = float(rows.loc["O:E", "estimate"]), float(rows.loc["calibration slope", "estimate"])
    at = [f"O:E {format_metric('O:E', oe)}"] if np.isfinite(oe) else []
    at += [f"slope {format_metric('calibration slope', slope)}"] if np.isfinite(slope) else []
    return f" (rows needed computed at the observed {' and '.join(at)}, not assuming a calibrated model)" if at else ""


def _sample_size_status(v, cls):
    table = v.sample_size[v.sample_size["class"] == cls]
    events, non_events = _counts(v, cls)
    fewest = min(events, non_events)
    short = _shortfalls(table)
    if fewest < MIN_EVENTS:
        return ("uncertain" if _too_few(v, cls, None) else "problem"), (
            f"Too small to judge: {events:,} event{'s' if events != 1 else ''} and {non_events:,} "
            f"non-event{'s' if non_events != 1 else ''}; at least {MIN_EVENTS} of each are recommended for a validation "
            "(Collins et al. 2016, Riley et al. 2021). Every interval is wide and the verdicts above are tentative.")
    if short:
        return "uncertain", ("The numbers are imprecise against the targets of Riley et al. (2021): "
                             + "; ".join(short) + _assumption(v, cls, table) + ". Read the intervals rather than the estimates.")
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
    too_few = _too_few(v, cls, group)
    makers = {
        "mean calibration": lambda: _mean_calibration(v, rows, cls, group),
        "weak calibration": lambda: _weak_calibration(v, rows, cls, group),
        "moderate calibration": lambda: _moderate_calibration(v, rows, _is_small(v, cls, group)),
        "discrimination": lambda: _discrimination(v, rows, cls, group),
        "overall accuracy": lambda: _overall(v, rows),
        "clinical usefulness": lambda: _usefulness(v, cls, group),
        "sample size": lambda: _sample_size(v, cls, group),
    }
    out = []
    for level, metrics in LEVELS.items():
        if too_few and level != "sample size":
            status, text = "uncertain", ("Too few events to judge: with fewer than 10 events or non-events the numbers "
                                         "are shown without intervals and not judged.")
        else:
            status, text = makers[level]()
        text = text[:1].upper() + text[1:]  # a pooled result's sentence starts with "pooled over ..."
        out.append({"level": level, "verdict": text, "status": status, "metrics": list(metrics)})
    return out


# ----------------------------------------------------------------------------- groups and centres
# metric shown, the test's metric, its calibrated value on the tested scale, words above, below
_FINDING_METRICS = (("O:E", "calibration-in-the-large", 0.0, "risks too low on average", "risks too high on average"),
                    ("calibration slope", "calibration slope", 1.0, "risks too modest (slope above 1)",
                     "risks too extreme (slope below 1)"))


def holm(pvalues):
    """Holm's (1979) step-down adjusted p-values (NaN stays NaN)."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def _finding_tests(v, cls, group):
    """(shown metric, estimate, ci_low, ci_high, p-value, words above, words below) of a group:
    likelihood-ratio tests of its calibration-in-the-large and slope, or with centres the Wald
    tests of the meta-analysis' inputs (log O:E, slope) that its forest plot shows."""
    out = []
    if v.clusters and len(v.centres):
        c = v.centres[(v.centres["class"] == cls) & (v.centres["cluster"] == group)].set_index("metric")
        for shown, _, null, above, below in _FINDING_METRICS:
            if shown not in c.index:
                continue
            r = c.loc[shown]  # yi is log O:E or the slope: the tested scale's calibrated value is null
            z = (r["yi"] - null) / np.sqrt(r["vi"]) if r["vi"] > 0 else np.nan
            p = float(2 * stats.norm.sf(abs(z))) if np.isfinite(z) else np.nan
            out.append((shown, float(r["estimate"]), float(r["ci_low"]), float(r["ci_high"]), p, above, below))
        return out
    rows = metric_rows(v, cls, group)
    for shown, tested, _, above, below in _FINDING_METRICS:
        e, lo, hi = _estimate(rows, shown)
        out.append((shown, e, lo, hi, float(rows.loc[tested, "p_value"]), above, below))
    return out


def group_findings(v, *, cls=None):
    """One plain sentence per judged subgroup or centre that is off, naming it, what is off and
    the numbers (e.g. "Centre 'hospital C' (158 patients): risks too high on average, O:E 0.64
    (95% CI 0.53 to 0.78; Holm-adjusted p < 0.001)"); empty when none is.

    A group is named only when its test survives Holm's adjustment over every group and both
    tests (mean calibration and slope): at nominal 95% each, twelve calibrated centres had at
    least one "off" in 58 of 100 simulated studies (tests/clinical/test_verdict_level.py).
    The tests are the likelihood-ratio tests of calibration-in-the-large 0 (for "on average")
    and slope 1; with centres, the Wald tests of each centre's log O:E and slope, the numbers
    of the meta-analysis and its forest plot.
    """
    cls = select_class(v, cls)
    if not len(v.groups):
        return []
    what = "Centre" if v.clusters else "Group"
    judged = [g for _, g in v.groups[v.groups["class"] == cls].iterrows() if g["status"] != "too small"]
    tests = [(g, t) for g in judged for t in _finding_tests(v, cls, str(g["group"]))]
    adjusted = holm([t[4] for _, t in tests])
    alpha = _alpha(v)
    by_group = {}
    for (g, (shown, e, lo, hi, _, above, below)), p in zip(tests, adjusted):
        ideal = REFERENCE_VALUES[shown]
        if not (np.isfinite(p) and p < alpha):
            continue
        words = above if e > ideal else below
        ci = interval_text(shown, lo, hi, ideal=ideal)
        numbers = f"{shown} {format_metric(shown, e)} ({level_words(v)} {ci}; " if ci else f"{shown} {format_metric(shown, e)} ("
        by_group.setdefault(str(g["group"]), (g, []))[1].append(f"{words}, {numbers}Holm-adjusted {_p_words(p)})")
    return [f"{what} {name!r} ({int(g['n']):,} patients): " + "; ".join(found) + "."
            for name, (g, found) in by_group.items()]


def sample_size_text(v, *, cls=None):
    """A plain note on the sample size against Riley et al.'s (2021) precision targets.

    "Too small to judge" when there are fewer than 100 events or non-events; otherwise
    which targets the achieved interval widths meet, and how many rows would meet the others.
    """
    cls = select_class(v, cls)
    _, text = _sample_size_status(v, cls)
    return text
