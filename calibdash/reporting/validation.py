"""A self-contained HTML report of a clinical validation (:func:`calibdash.validate_risk_model`),
and its metrics as CSV.

The sections follow TRIPOD+AI's items on model performance (Collins et al., BMJ 2024): the
data and outcome, the sample size's adequacy, the calibration hierarchy, discrimination,
clinical usefulness, subgroups, centres (a random-effects meta-analysis, when the validation was
run with ``clusters=``), the recalibration that would fix the risks, and the provenance a
reviewer needs to rerun the numbers.
The sentences, tables and figures are those of :mod:`calibdash.display.clinical`, so that the
report says what the app shows.

Like :func:`calibdash.report`, it works offline: plotly.js is inline once, the fonts are the
system's, and links to papers are plain links. Every name from the user's data (source,
classes, groups, centres) is HTML-escaped.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibdash.clinical.sample_size import MIN_EVENTS
from calibdash.clinical.validation import MIN_GROUP_EVENTS
from calibdash.clinical.verdicts import STATUS_WORDS
from calibdash.display import clinical as dc
from calibdash.display.meta import pooled_forest_figure
from calibdash.formatting import format_count, format_significant
from calibdash.io.export import csv_text
from calibdash.reporting.html_kit import (
    Figures,
    check_made_by,
    details,
    document,
    escape,
    frame_table,
    num,
    reference_link,
    rerun_text,
    text_kv_table,
    text_table,
    title_block,
)
from calibdash.reporting.references import REFERENCES, VALIDATION_REFERENCES

__all__ = ["validation_report", "metrics_csv", "SECTIONS"]

# (anchor, heading) of the report's sections, in TRIPOD+AI's order; numbered as shown. "centres"
# replaces "subgroups" when the validation was run with clusters (groups and centres are exclusive).
SECTIONS = (
    ("data", "Data and outcome"),
    ("sample-size", "Sample size"),
    ("calibration", "Calibration"),
    ("discrimination", "Discrimination and overall accuracy"),
    ("usefulness", "Clinical usefulness"),
    ("subgroups", "Subgroups"),
    ("centres", "Centres"),
    ("recalibration", "Recalibration"),
    ("provenance", "Provenance"),
)
# The metrics tabulated per group (the full table per group is in the CSV).
GROUP_METRICS = ("O:E", "calibration-in-the-large", "calibration slope", "ICI", "AUROC")

# What ``results_file`` names, for the error when it is missing.
_WHAT = "metrics file"
# The metrics of the pooled forest plots, in the order of v.pooled.
POOLED_METRICS = ("O:E", "calibration-in-the-large", "calibration slope", "AUROC")


def metrics_csv(v):
    """``v.metrics`` as CSV text (no index), every number at full precision.

    The one place the metrics are written as CSV (the app's download and the command line's
    ``metrics.csv``).
    """
    return csv_text(v.metrics)


# ----------------------------------------------------------------------------- html bits
def _verdicts(items):
    out = ['<ul class="verdicts">']
    for item in items:
        out.append(f'<li class="status-{escape(item["status"])}" data-level="{escape(item["level"])}">'
                   f"<strong>{escape(item['level'])} ({escape(STATUS_WORDS[item['status']])}):</strong> {escape(item['verdict'])}</li>")
    out.append("</ul>")
    return "".join(out)


def _interval_words(v):
    return f"{100 * float(v.config.get('level', 0.95)):g}% interval"


# ----------------------------------------------------------------------------- sections
def _by_level(verdicts):
    return {item["level"]: item for item in verdicts}


def _data_section(v, predictions):
    whole = v.metrics[v.metrics["group"].isna()]
    rows = []
    for cls in v.classes:
        r = whole[whole["class"] == cls].iloc[0]
        g = v.grouped[(v.grouped["class"] == cls) & v.grouped["group"].isna()] if len(v.grouped) else v.grouped
        mean_risk = float((g["mean_risk"] * g["n"]).sum() / g["n"].sum()) if len(g) else np.nan
        rows.append((cls, f"{int(r['n']):,}", f"{int(r['events']):,}", f"{int(r['non_events']):,}",
                     num(100 * mean_risk, ".1f") + "%" if np.isfinite(mean_risk) else "",
                     f"{r['events'] / r['n']:.1%}"))
    multiclass = len(v.classes) > 1
    read = ["Each class is validated against all the others (one block per class)." if multiclass else
            f"The outcome is {v.classes[0]!r}: the predicted risk is that of this class, and every other label counts "
            "as a non-event."]
    read += list(v.notes)
    if predictions is not None:
        # the loader's notes only: its warnings are about the evaluation pipeline (folds, holdout)
        read += [str(n) for n in predictions.notes]
    pairs = [("source", v.source_name), ("rows", f"{v.n:,}"),
             ("outcome (positive class)" if not multiclass else "classes validated", ", ".join(v.classes)),
             ("grouping column (subgroups)", "none" if v.clusters else (v.group_name or "none")),
             ("centre column (clusters)", v.clusters or "none")]
    if predictions is not None:
        pairs.insert(2, ("class names in the file", ", ".join(predictions.class_names)))
    return (text_kv_table(pairs)
            + text_table(["class", "rows", "events", "non-events", "mean predicted risk", "observed event rate"], rows,
                         numeric=(1, 2, 3, 4, 5))
            + '<p>How the input was read, and what the analysis could not estimate:</p><ul class="notes">'
            + "".join(f"<li>{escape(t)}</li>" for t in read) + "</ul>")


def _sample_size_section(v, cls, verdicts):
    t = v.sample_size[v.sample_size["class"] == cls]
    # the values the rows needed were computed at (the observed O:E and slope), when the table says
    assumed = "assumption" in t.columns
    counts = ("events", "non-events")  # their target and achieved value are numbers of patients
    rows = [(r["criterion"], format_count(r["target"]) if r["metric"] in counts else format_significant(r["target"]),
             format_count(r["achieved"]) if r["metric"] in counts else format_significant(r["achieved"]),
             "yes" if r["adequate"] else "no", format_count(r["rows_needed"]),
             *([_text(r["assumption"])] if assumed else [])) for _, r in t.iterrows()]
    header = ["criterion (Riley et al. 2021)", "target", "achieved", "met", "rows needed"]
    return (_verdicts([verdicts["sample size"]])
            + text_table(header + (["rows needed computed at"] if assumed else []), rows, numeric=(1, 2, 4),
                         data="sample-size")
            + '<p class="muted">Rows needed: what Riley et al.\'s formulas give for this event rate, C statistic and '
              "distribution of risks"
            + (", at the observed O:E and calibration slope (the last column), not at those of a calibrated model"
               if assumed else "")
            + "; the counts follow Collins et al. (2016).</p>")


def _text(value):
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _calibration_error_part(v, cls):
    t = dc.calibration_error_table(v, cls=cls)
    if not len(t):
        return ""
    return ('<h4 data-part="calibration-error">Risk-optimised calibration error (Gruber &amp; Bach 2025)</h4>'
            f"<p>{escape(dc.CALIBRATION_ERROR_HELP)}</p>"
            + text_table(list(t.columns), t.itertuples(index=False, name=None), numeric=(2, 4),
                         titles={dc.CALIBRATION_ERROR_HEADER: dc.CALIBRATION_ERROR_HELP}))


def _calibration_section(v, cls, verdicts, figs, calibration_error):
    table = dc.metrics_table(v, cls=cls)
    calibration = table[table["metric"].isin([m for lv in ("mean calibration", "weak calibration",
                                                           "moderate calibration") for m in dc.LEVELS[lv]])]
    note = dc.curve_note(v, cls=cls)
    method = v.curve_method.get(cls, "loess")
    caption = ("The observed event rate against the mean predicted risk of "
               + ("each distinct predicted risk" if _grouped_kind(v, cls) == "levels" else "each tenth of the patients "
                  "by predicted risk")
               + " with its exact (Clopper-Pearson) interval"
               + (", over the flexible calibration curve (loess of the outcome on the predicted risk, span 0.75, "
                  "degree 2, as R's loess) with its bootstrap band" if method == "loess" else
                  " (no loess curve: see the note above)")
               + "; the diagonal of perfect calibration; under it the numbers of events (up) and non-events (down) by "
                 "predicted risk. The axes are zoomed to the range of the risks.")
    g = dc.grouped_table(v, cls=cls)
    out = [_verdicts([verdicts[lv] for lv in ("mean calibration", "weak calibration", "moderate calibration")]),
           frame_table(calibration, numeric=("estimate", "p-value")),
           '<p class="muted">ICI, E50, E90 and Emax are differences of risk in percentage points; the column unit '
           "names every metric's scale.</p>"]
    if note:
        out.append(f'<p class="note" data-note="curve">{escape(note)}</p>')
    out.append(figs.add(dc.validation_curve_figure(v, cls=cls), caption, f"calibration curve {cls}"))
    if len(g):
        out.append("<p>The grouped points of the figure (risks and rates in % of patients):</p>")
        out.append(frame_table(g, numeric=("patients", "events", "mean predicted risk", "observed event rate"),
                               data="grouped"))
    if calibration_error:
        out.append(_calibration_error_part(v, cls))
    return "".join(out)


def _grouped_kind(v, cls):
    g = v.grouped[(v.grouped["class"] == cls) & v.grouped["group"].isna()] if len(v.grouped) else v.grouped
    return str(g["kind"].iloc[0]) if len(g) else ""


def _discrimination_section(v, cls, verdicts):
    table = dc.metrics_table(v, cls=cls)
    rows = table[table["metric"].isin(dc.LEVELS["discrimination"] + dc.LEVELS["overall accuracy"])]
    return (_verdicts([verdicts["discrimination"], verdicts["overall accuracy"]])
            + frame_table(rows, numeric=("estimate", "p-value")))


def _range_words(v):
    low, high = v.config["thresholds"]
    return f"{100 * float(low):g}% to {100 * float(high):g}%"


_NB_NUMERIC = ("model", "treat all", "difference from the better of treat all and treat none",
               "net interventions avoided per 100 patients")


def _usefulness_section(v, cls, verdicts, figs):
    nb = dc.net_benefit_table(v, cls=cls)
    return (_verdicts([verdicts["clinical usefulness"]])
            + f'<p>Thresholds judged: <strong data-thresholds="range">{escape(_range_words(v))}</strong> (the risks at '
              "which a clinician would act; set with <code>thresholds=</code>), shaded in the figure.</p>"
            + figs.add(dc.decision_curve_figure(v, cls=cls),
                       "Net benefit (true positives minus false positives weighted by the odds of the threshold, per "
                       "patient) of acting on the model's risk, of treating everyone and of treating no one, with "
                       "bootstrap bands (Vickers & Elkin 2006); the thresholds judged are shaded.",
                       f"decision curve {cls}")
            + "<p>Net benefit at thresholds in the range judged; net interventions avoided are the unnecessary "
              "treatments the model spares per 100 patients, against treating everyone, at the same number of "
              "events treated:</p>"
            + frame_table(nb, numeric=_NB_NUMERIC, data="net-benefit"))


def _findings(v, cls, what):
    found = v.group_findings(cls=cls)
    if not found:
        return f'<p data-findings="none">No {what} is off: no judged {what}\'s interval of O:E or calibration slope excludes 1.</p>'
    return (f"<p>Findings per {what}:</p><ul class=\"findings\">" + "".join(f"<li>{escape(t)}</li>" for t in found)
            + "</ul>")


def _group_net_benefit(v, cls, what):
    if not len(v.net_benefit):
        return ""
    nb = v.net_benefit[(v.net_benefit["class"] == cls) & v.net_benefit["group"].notna()]
    judged = set(v.groups.loc[(v.groups["class"] == cls) & (v.groups["status"] != "too small"), "group"])
    frames = []
    for g in [g for g in dict.fromkeys(nb["group"]) if g in judged]:
        t = dc.net_benefit_table(v, cls=cls, group=g)
        t.insert(0, what, g)
        frames.append(t)
    if not frames:
        return ""
    table = pd.concat(frames, ignore_index=True)
    return (f"<p>Net benefit per judged {what}, at thresholds in the range judged:</p>"
            + frame_table(table, numeric=_NB_NUMERIC, data="group-net-benefit"))


def _groups_part(v, cls, figs, what):
    """The per-group (or per-centre) results: findings, counts, metrics, forest plot,
    heterogeneity and net benefit."""
    g = v.groups[v.groups["class"] == cls]
    column = "Centre column" if what == "centre" else "Grouping column"
    out = [f"<p>{column}: <code>{escape(v.group_name)}</code>. {what.capitalize()}s with fewer than {MIN_GROUP_EVENTS} "
           f"events or non-events are listed but not judged; {what}s with fewer than {MIN_EVENTS} are imprecise.</p>",
           _findings(v, cls, what),
           text_table([what, "rows", "events", "non-events", "status", "note"],
                      [(r["group"], f"{r['n']:,}", f"{r['events']:,}", f"{r['non_events']:,}", r["status"], r["note"])
                       for _, r in g.iterrows()], numeric=(1, 2, 3), data="groups")]
    m = v.metrics[(v.metrics["class"] == cls) & v.metrics["group"].notna() & v.metrics["metric"].isin(GROUP_METRICS)]
    rows = [(r["group"], r["metric"], dc.METRIC_UNITS.get(r["metric"], ""), dc.format_metric(r["metric"], r["estimate"]),
             dc.interval_text(r["metric"], r["ci_low"], r["ci_high"])) for _, r in m.iterrows()]
    out.append(text_table([what, "metric", "unit", "estimate", _interval_words(v)], rows, numeric=(3,), data="group-metrics"))
    out.append(figs.add(dc.forest_figure(v, cls=cls), f"Per {what} and for all rows: estimate and 95% interval beside "
                        "the value of a calibrated model (dashed).", f"forest {cls}"))
    het = v.heterogeneity[v.heterogeneity["class"] == cls]
    if len(het):
        out.append(f"<p>Likelihood-ratio tests of heterogeneity between the judged {what}s (is the intercept, or the "
                   f"slope, the same in every {what}?):</p>")
        out.append(text_table(["metric", "statistic", "df", "p-value", f"{what}s"],
                              [(r["metric"], num(r["statistic"], ".3f"), int(r["df"]), dc.format_p(r["p_value"]),
                                int(r["groups"])) for _, r in het.iterrows()], numeric=(1, 2, 3, 4)))
    else:
        out.append(f"<p>Fewer than two {what}s could be judged: no test of heterogeneity.</p>")
    out.append(_group_net_benefit(v, cls, what))
    return "".join(out)


def _subgroups_section(v, cls, figs):
    if not v.group_name:
        return "<p>No grouping column was given: the validation covers the whole data only.</p>"
    return _groups_part(v, cls, figs, "group")


def _centres_section(v, cls, figs):
    pooled = dc.pooled_table(v, cls=cls)
    out = ["<p>The whole-data intervals come from a cluster bootstrap (whole centres resampled), and each metric is "
           "pooled over the centres by a random-effects meta-analysis (Debray et al. 2017): REML estimate of the "
           "between-centre variance tau², Hartung-Knapp(-Sidik-Jonkman) confidence interval (Hartung & Knapp 2001), "
           "and a prediction interval for the value in a new centre (Riley et al. 2011). O:E is pooled on the log "
           "scale and the AUROC on the logit scale (tau² is on those scales), and both are shown back-transformed.</p>",
           frame_table(pooled, numeric=("pooled estimate", dc.TAU2_HEADER, "centres"), data="pooled")]
    centres = v.centres[v.centres["class"] == cls]
    pooled_rows = v.pooled[v.pooled["class"] == cls]
    for metric in [m for m in POOLED_METRICS if m in set(pooled_rows["metric"])]:
        out.append(figs.add(pooled_forest_figure(centres, pooled_rows, metric),
                            f"{metric} per centre with its interval; the pooled estimate (diamond) and the "
                            "prediction interval for a new centre.", f"pooled forest {cls} {metric}"))
    c = dc.centres_table(v, cls=cls)
    out.append(f"<p>The inputs of the meta-analysis: each centre's estimate ({escape(dc.level_words(v))}):</p>")
    out.append(frame_table(c, numeric=("patients", "events"), data="centres"))
    out.append("<h3>Each centre analysed alone</h3>")
    out.append(_groups_part(v, cls, figs, "centre"))
    return "".join(out)


def _recalibration_section(v, cls):
    t = dc.recalibration_table(v, cls=cls)
    return ("<p>The updates that would recalibrate the risks, fitted on this data (on the rows with risks strictly "
            "between 0 and 1), with profile-likelihood intervals:</p>"
            + frame_table(t, numeric=(f"estimate ({dc.RECALIBRATION_SCALE})",), data="recalibration")
            + f"<p>{escape(dc.recalibration_text(v, cls=cls))}</p>"
            + '<p class="muted">In Python, <code>v.recalibrate(p, model="logistic recalibration")</code> (or '
              '<code>model="intercept update"</code>) returns the recalibrated risks; the app offers them as a '
              "download.</p>")


def _rerun_text(made_by, results_file, v):
    """The provenance paragraph: the Python call and the command that rerun these numbers, and where the
    metrics are (for ``made_by``)."""
    s = v.config
    low, high = s.get("thresholds", (None, None))
    groups = None if v.clusters else v.group_name
    call = (f"cd.validate_risk_model(pred, groups={groups!r}, clusters={v.clusters!r}, "
            f"thresholds=({low!r}, {high!r}), n_resamples={s.get('n_resamples')}, "
            f"random_state={s.get('random_state')}, level={s.get('level')}, "
            f"calibration_error={s.get('calibration_error')})")
    # TODO(lead): the command line has no --clusters or --thresholds yet; add them here when it does.
    cli = (f"python -m calibdash validate FILE{' --groups ' + groups if groups else ''} "
           f"--n-resamples {s.get('n_resamples')} --random-state {s.get('random_state')} --out DIR")
    where = {"python": "", "cli": f" The metrics at full precision are in {results_file}, written beside this report.",
             "app": f" The metrics at full precision are in the app's download {results_file}."}
    ways = f"<code>{escape(call)}</code> in Python, or <code>{escape(cli)}</code> on the same file with the same loading options."
    return rerun_text(made_by, results_file, {k: ways + escape(w) for k, w in where.items()}, what=_WHAT)


def _provenance_section(v, made_by, results_file):
    from calibdash import __version__

    s = v.config
    pairs = [("calibdash", __version__), ("made by", {"python": "Python", "cli": "the command line",
                                                       "app": "the app"}[made_by]),
             ("results file", results_file or "none"), ("seed (random_state)", s.get("random_state")),
             ("bootstrap resamples", s.get("n_resamples")), ("interval level", s.get("level")),
             ("thresholds judged (clinical usefulness)", _range_words(v)),
             ("centre column (clusters)", v.clusters or "none"),
             ("risk-optimised calibration error", "yes" if s.get("calibration_error") else "no"),
             ("estimators for it", ", ".join(s.get("estimators") or []) or "the canonical notion's defaults")]
    versions = []
    for module in ("numpy", "scipy", "pandas", "statsmodels", "skmisc", "sklearn", "plotly"):
        try:
            versions.append((module, __import__(module).__version__))
        except Exception:  # noqa: BLE001 - a missing optional library is simply not listed
            continue
    refs = ["<ol>"]
    for key in VALIDATION_REFERENCES:
        r = REFERENCES[key]
        refs.append(f'<li data-key="{escape(key)}">{escape(r.citation)}{reference_link(r)}<br>'
                    f'<span class="muted">{escape(r.role)}</span></li>')
    refs.append("</ol>")
    every = "\n\n".join(REFERENCES[k].bibtex for k in VALIDATION_REFERENCES)
    return (text_kv_table(pairs) + _rerun_text(made_by, results_file, v)
            + '<p class="muted">Intervals: profile likelihood for calibration-in-the-large, the slope and the '
              "recalibration, DeLong's for the AUROC, exact (Clopper-Pearson) for the grouped points, the percentile "
              "bootstrap of rows (of centres, with clusters) for the rest (the lower end of ICI, E50 and E90 as "
              "described in docs/clinical.md); the loess is R's (the same netlib code, through scikit-misc).</p>"
            + "<h3>Library versions</h3>" + text_kv_table(versions)
            + "<h3>References</h3>" + "".join(refs)
            + details("BibTeX", every))


def validation_report(v, *, title=None, made_by="python", results_file=None, predictions=None,
                      calibration_error=False):
    """A self-contained HTML report of a clinical validation, ordered like TRIPOD+AI.

    Parameters
    ----------
    v : RiskValidation
        What :func:`calibdash.validate_risk_model` returned.
    title : str, optional
        Default: "Validation of a risk model: SOURCE".
    made_by : {"python", "cli", "app"}, default="python"
        Who makes the report, so that the provenance names what that caller wrote.
    results_file : str, optional
        The name of the metrics CSV that goes with the report; required unless
        ``made_by="python"``.
    predictions : Predictions, optional
        The loaded data, for the loader's notes and warnings in "how the input was read".
    calibration_error : bool, default=False
        Show the risk-optimised calibration error of Gruber & Bach per group (when ``v`` has
        it). Off by default: the estimator it selects can differ between groups, so the
        groups' numbers are not comparable, and clinical readers have the calibration
        hierarchy.

    Returns
    -------
    str
        The HTML document; it loads nothing from the network. With centres
        (``v.clusters``) it has a section on the pooled results.
    """
    check_made_by(made_by, results_file, _WHAT)
    if title is None:
        title = f"Validation of a risk model: {v.source_name}"
    figs = Figures()
    per_class = {cls: _by_level(v.verdicts(cls=cls)) for cls in v.classes}
    makers = {
        "sample-size": lambda cls: _sample_size_section(v, cls, per_class[cls]),
        "calibration": lambda cls: _calibration_section(v, cls, per_class[cls], figs, calibration_error),
        "discrimination": lambda cls: _discrimination_section(v, cls, per_class[cls]),
        "usefulness": lambda cls: _usefulness_section(v, cls, per_class[cls], figs),
        "subgroups": lambda cls: _subgroups_section(v, cls, figs),
        "centres": lambda cls: _centres_section(v, cls, figs),
        "recalibration": lambda cls: _recalibration_section(v, cls),
    }
    shown = [(a, h) for a, h in SECTIONS if a not in ("subgroups", "centres") or (a == "centres") == bool(v.clusters)]
    body = []
    for number, (anchor, heading) in enumerate(shown, start=1):
        out = [f'<section id="{anchor}"><h2>{number}. {escape(heading)}</h2>']
        if anchor == "data":
            out.append(_data_section(v, predictions))
        elif anchor == "provenance":
            out.append(_provenance_section(v, made_by, results_file))
        else:
            for cls in v.classes:
                if len(v.classes) > 1:
                    out.append(f"<h3>Class {escape(cls)} against the rest</h3>")
                out.append(makers[anchor](cls))
        out.append("</section>")
        body.append("".join(out))
    head = (title_block(title, "The calibration hierarchy of Van Calster et al. (2019), discrimination, overall accuracy "
                               f"and net benefit, each with a {escape(_interval_words(v))}, reported in the order of "
                               "TRIPOD+AI's items on model performance.")
            + f"<p class=\"units\"><strong>Units.</strong> {escape(dc.UNITS)}</p>")
    nav = [f'<li><a href="#{a}">{n}. {escape(h)}</a></li>' for n, (a, h) in enumerate(shown, start=1)]
    return document(title, head, nav, body, figs)
