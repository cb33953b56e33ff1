"""A self-contained HTML report of a clinical validation (:func:`calibdash.validate_risk_model`),
and its metrics as CSV.

The sections follow TRIPOD+AI's items on model performance (Collins et al., BMJ 2024): the
data and outcome, the sample size's adequacy, the calibration hierarchy, discrimination,
clinical usefulness, subgroups, and the provenance a reviewer needs to rerun the numbers.
The sentences, tables and figures are those of :mod:`calibdash.display.clinical`, so that the
report says what the app shows.

Like :func:`calibdash.report`, it works offline: plotly.js is inline once, the fonts are the
system's, and links to papers are plain links. Every name from the user's data (source,
classes, groups) is HTML-escaped.
"""

from __future__ import annotations

import datetime as _dt
import html

import numpy as np

from calibdash.clinical.sample_size import MIN_EVENTS
from calibdash.clinical.validation import MIN_GROUP_EVENTS
from calibdash.display import clinical as dc
from calibdash.errors import InputError
from calibdash.io.export import csv_text
from calibdash.reporting.html import MADE_BY
from calibdash.reporting.references import REFERENCES, VALIDATION_REFERENCES

__all__ = ["validation_report", "metrics_csv", "SECTIONS"]

# (anchor, heading) of the report's sections, in TRIPOD+AI's order.
SECTIONS = (
    ("data", "1. Data and outcome"),
    ("sample-size", "2. Sample size"),
    ("calibration", "3. Calibration"),
    ("discrimination", "4. Discrimination and overall accuracy"),
    ("usefulness", "5. Clinical usefulness"),
    ("subgroups", "6. Subgroups"),
    ("provenance", "7. Provenance"),
)
# Thresholds at which the report tabulates net benefit (the figure shows all of them).
TABLE_THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.5)
# The metrics tabulated per group (the full table per group is in the CSV).
GROUP_METRICS = ("O:E", "calibration-in-the-large", "calibration slope", "ICI", "AUROC")

_CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0 auto; max-width: 1100px; padding: 1.5rem 2rem 4rem; color: #1d1d1f; line-height: 1.45; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; margin-top: 2.2rem; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85rem; }
pre { background: #f6f6f6; padding: .7rem; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .9rem; }
th, td { border: 1px solid #ddd; padding: .25rem .55rem; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
.muted { color: #666; font-size: .9rem; }
ul.verdicts { list-style: none; padding-left: 0; }
ul.verdicts li { border-left: 5px solid #999; padding: .3rem .8rem; margin: .4rem 0; background: #fcfcfc; }
li.status-ok { border-left-color: #2ca02c !important; }
li.status-problem { border-left-color: #d62728 !important; }
li.status-uncertain { border-left-color: #ff7f0e !important; }
figure { margin: 1rem 0; }
figcaption { color: #555; font-size: .88rem; margin-top: .3rem; }
"""
_STATUS_WORDS = {"ok": "fine", "problem": "problem", "uncertain": "uncertain"}


def metrics_csv(v):
    """``v.metrics`` as CSV text (no index), every number at full precision.

    The one place the metrics are written as CSV (the app's download and the command line's
    ``metrics.csv``).
    """
    return csv_text(v.metrics)


# ----------------------------------------------------------------------------- html bits
def _e(value):
    return html.escape(str(value), quote=True)


def _table(header, rows, numeric=()):
    out = ["<table><thead><tr>", *(f"<th>{_e(h)}</th>" for h in header), "</tr></thead><tbody>"]
    for row in rows:
        cells = "".join(("<td class=\"num\">" if i in numeric else "<td>") + f"{_e(c)}</td>" for i, c in enumerate(row))
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _frame_table(df, numeric=()):
    return _table(list(df.columns), df.itertuples(index=False, name=None),
                  numeric=[i for i, c in enumerate(df.columns) if c in numeric])


def _kv(pairs):
    return "<table><tbody>" + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in pairs) + "</tbody></table>"


def _verdicts(items):
    out = ['<ul class="verdicts">']
    for item in items:
        out.append(f'<li class="status-{_e(item["status"])}" data-level="{_e(item["level"])}"><strong>{_e(item["level"])}'
                   f" ({_STATUS_WORDS.get(item['status'], item['status'])}):</strong> {_e(item['verdict'])}</li>")
    out.append("</ul>")
    return "".join(out)


class _Figures:
    """Figures in document order; the first carries plotly.js inline, the others reuse it."""

    def __init__(self):
        self.count = 0

    def add(self, fig, caption, name):
        body = fig.to_html(full_html=False, include_plotlyjs=self.count == 0, div_id=f"cd-fig-{self.count + 1}",
                           config={"displaylogo": False, "responsive": True})
        self.count += 1
        return f'<figure data-figure="{_e(name)}">{body}<figcaption>{_e(caption)}</figcaption></figure>'


def _interval_words(v):
    return f"{100 * float(v.settings.get('level', 0.95)):g}% interval"


def _num(value, fmt):
    return "" if value is None or not np.isfinite(value) else format(float(value), fmt)


# ----------------------------------------------------------------------------- sections
def _by_level(verdicts):
    return {item["level"]: item for item in verdicts}


def _data_section(v, predictions):
    whole = v.metrics[v.metrics["group"].isna()]
    rows = []
    for cls in v.classes:
        r = whole[whole["class"] == cls].iloc[0]
        rows.append((cls, f"{int(r['n']):,}", f"{int(r['events']):,}", f"{int(r['non_events']):,}",
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
             ("grouping column", v.group_name or "none")]
    if predictions is not None:
        pairs.insert(2, ("class names in the file", ", ".join(predictions.class_names)))
    return (_kv(pairs)
            + _table(["class", "rows", "events", "non-events", "event rate"], rows, numeric=(1, 2, 3, 4))
            + "<p>How the input was read:</p><ul>" + "".join(f"<li>{_e(t)}</li>" for t in read) + "</ul>")


def _sample_size_section(v, cls, verdicts):
    t = v.sample_size[v.sample_size["class"] == cls]
    rows = [(r["criterion"], _num(r["target"], "g"), _num(r["achieved"], ".3g"), "yes" if r["adequate"] else "no",
             _num(r["rows_needed"], ",.0f")) for _, r in t.iterrows()]
    return (_verdicts([verdicts["sample size"]])
            + _table(["criterion (Riley et al. 2021)", "target", "achieved", "met", "rows needed"], rows,
                     numeric=(1, 2, 4))
            + '<p class="muted">Rows needed: what Riley et al.\'s formulas give for this event rate, C statistic and '
              "distribution of risks, assuming a calibrated model; the counts follow Collins et al. (2016).</p>")


def _calibration_section(v, cls, verdicts, figs):
    table = dc.metrics_table(v, cls=cls)
    calibration = table[table["metric"].isin([m for lv in ("mean calibration", "weak calibration",
                                                           "moderate calibration") for m in dc.LEVELS[lv]])]
    return (_verdicts([verdicts[lv] for lv in ("mean calibration", "weak calibration", "moderate calibration")])
            + _frame_table(calibration, numeric=("estimate", "p-value"))
            + figs.add(dc.validation_curve_figure(v, cls=cls),
                       "The flexible calibration curve (loess of the outcome on the predicted risk, span 0.75, degree "
                       "2, as R's loess) with its bootstrap band, the diagonal of perfect calibration, and the numbers "
                       "of events (up) and non-events (down) by predicted risk.", f"calibration curve {cls}"))


def _discrimination_section(v, cls, verdicts):
    table = dc.metrics_table(v, cls=cls)
    rows = table[table["metric"].isin(dc.LEVELS["discrimination"] + dc.LEVELS["overall accuracy"])]
    return (_verdicts([verdicts["discrimination"], verdicts["overall accuracy"]])
            + _frame_table(rows, numeric=("estimate", "p-value")))


def _usefulness_section(v, cls, verdicts, figs):
    d = v.decision_curve[v.decision_curve["class"] == cls]
    rows = []
    for t in TABLE_THRESHOLDS:
        at = d[np.isclose(d["threshold"], t)].set_index("strategy")
        if at.empty:
            continue
        m = at.loc["model"]
        rows.append((f"{t:.0%}", _num(m["net_benefit"], ".3f"),
                     f"{_num(m['ci_low'], '.3f')} to {_num(m['ci_high'], '.3f')}" if np.isfinite(m["ci_low"]) else "",
                     _num(at.loc["treat all", "net_benefit"], ".3f")))
    return (_verdicts([verdicts["clinical usefulness"]])
            + figs.add(dc.decision_curve_figure(v, cls=cls),
                       "Net benefit (true positives minus false positives weighted by the odds of the threshold, per "
                       "patient) of acting on the model's risk, of treating everyone and of treating no one, with "
                       "bootstrap bands (Vickers & Elkin 2006).", f"decision curve {cls}")
            + _table(["threshold", "net benefit of the model", _interval_words(v), "treat all"], rows, numeric=(1, 3)))


def _subgroups_section(v, cls, figs):
    if not v.group_name:
        return "<p>No grouping column was given: the validation covers the whole data only.</p>"
    g = v.groups[v.groups["class"] == cls]
    out = [f"<p>Grouping column: <code>{_e(v.group_name)}</code>. Groups with fewer than {MIN_GROUP_EVENTS} events "
           f"or non-events are listed but not judged; groups with fewer than {MIN_EVENTS} are imprecise.</p>",
           _table(["group", "rows", "events", "non-events", "status", "note"],
                  [(r["group"], f"{r['n']:,}", f"{r['events']:,}", f"{r['non_events']:,}", r["status"], r["note"])
                   for _, r in g.iterrows()], numeric=(1, 2, 3))]
    m = v.metrics[(v.metrics["class"] == cls) & v.metrics["group"].notna() & v.metrics["metric"].isin(GROUP_METRICS)]
    rows = [(r["group"], r["metric"], dc.format_metric(r["metric"], r["estimate"]),
             dc.interval_text(r["metric"], r["ci_low"], r["ci_high"])) for _, r in m.iterrows()]
    out.append(_table(["group", "metric", "estimate", _interval_words(v)], rows, numeric=(2,)))
    out.append(figs.add(dc.forest_figure(v, cls=cls), "Per group and for all rows: estimate and 95% interval beside "
                        "the value of a calibrated model (dashed).", f"forest {cls}"))
    het = v.heterogeneity[v.heterogeneity["class"] == cls]
    if len(het):
        out.append("<p>Likelihood-ratio tests of heterogeneity between the judged groups (is the intercept, or the "
                   "slope, the same in every group?):</p>")
        out.append(_table(["metric", "statistic", "df", "p-value", "groups"],
                          [(r["metric"], _num(r["statistic"], ".3f"), int(r["df"]), dc.format_p(r["p_value"]),
                            int(r["groups"])) for _, r in het.iterrows()], numeric=(1, 2, 3, 4)))
    else:
        out.append("<p>Fewer than two groups could be judged: no test of heterogeneity.</p>")
    ce = v.calibration_error[v.calibration_error["class"] == cls] if len(v.calibration_error) else v.calibration_error
    if len(ce):
        out.append("<p>The risk-optimised canonical calibration error (Gruber &amp; Bach 2025: the square root of "
                   "the squared calibration error, estimated on held-out rows by the estimator a mean-squared-error "
                   "risk on validation folds chose), for all rows and each judged group, 0 for a calibrated model:</p>")
        out.append(_table(["group", "estimator", "estimate", _interval_words(v), "rows"],
                          [("All" if r["group"] is None or r["group"] != r["group"] else r["group"], r["estimator"],
                            _num(r["estimate"], ".4g"), f"{_num(r['ci_low'], '.4g')} to {_num(r['ci_high'], '.4g')}",
                            f"{int(r['n']):,}") for _, r in ce.iterrows()], numeric=(2, 4)))
    return "".join(out)


def _rerun_text(v, made_by, results_file):
    s = v.settings
    call = (f"cd.validate_risk_model(pred, groups={v.group_name!r}, n_resamples={s.get('n_resamples')}, "
            f"random_state={s.get('random_state')}, level={s.get('level')}, "
            f"calibration_error={s.get('calibration_error')})")
    cli = (f"python -m calibdash validate FILE{' --groups ' + v.group_name if v.group_name else ''} "
           f"--n-resamples {s.get('n_resamples')} --seed {s.get('random_state')} --out DIR")
    where = {"python": "", "cli": f" The metrics at full precision are in {results_file}, written beside this report.",
             "app": f" The metrics at full precision are in the app's download {results_file}."}[made_by]
    return (f"<p>To rerun to the same numbers: <code>{_e(call)}</code> in Python, or <code>{_e(cli)}</code> on the "
            f"same file with the same loading options.{_e(where)}</p>")


def _provenance_section(v, made_by, results_file):
    from calibdash import __version__

    s = v.settings
    pairs = [("calibdash", __version__), ("made by", {"python": "Python", "cli": "the command line",
                                                       "app": "the app"}[made_by]),
             ("results file", results_file or "none"), ("seed (random_state)", s.get("random_state")),
             ("bootstrap resamples", s.get("n_resamples")), ("interval level", s.get("level")),
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
        link = f' <a href="{_e(r.url)}">{_e(r.url)}</a>' if r.url else ""
        refs.append(f'<li data-key="{_e(key)}">{_e(r.citation)}{link}<br><span class="muted">{_e(r.role)}</span></li>')
    refs.append("</ol>")
    every = "\n\n".join(REFERENCES[k].bibtex for k in VALIDATION_REFERENCES)
    return (_kv(pairs) + _rerun_text(v, made_by, results_file)
            + '<p class="muted">Intervals: profile likelihood for calibration-in-the-large and the slope, DeLong\'s for '
              "the AUROC, the percentile bootstrap of rows for the rest (the lower end of ICI, E50 and E90 as "
              "described in docs/clinical.md); the loess is R's (the same netlib code, through scikit-misc).</p>"
            + "<h3>Library versions</h3>" + _kv(versions)
            + "<h3>References</h3>" + "".join(refs)
            + f"<details><summary>BibTeX</summary><pre>{_e(every)}</pre></details>")


def validation_report(v, *, title=None, made_by="python", results_file=None, predictions=None):
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

    Returns
    -------
    str
        The HTML document; it loads nothing from the network.
    """
    if made_by not in MADE_BY:
        raise InputError(f"made_by must be one of {', '.join(MADE_BY)}; got {made_by!r}.")
    if made_by != "python" and not results_file:
        raise InputError(f"made_by={made_by!r} needs results_file, the name of the metrics file that goes with the report.")
    from calibdash import __version__

    if title is None:
        title = f"Validation of a risk model: {v.source_name}"
    figs = _Figures()
    per_class = {cls: _by_level(dc.hierarchy_verdicts(v, cls=cls)) for cls in v.classes}
    makers = {
        "data": lambda cls: None,
        "sample-size": lambda cls: _sample_size_section(v, cls, per_class[cls]),
        "calibration": lambda cls: _calibration_section(v, cls, per_class[cls], figs),
        "discrimination": lambda cls: _discrimination_section(v, cls, per_class[cls]),
        "usefulness": lambda cls: _usefulness_section(v, cls, per_class[cls], figs),
        "subgroups": lambda cls: _subgroups_section(v, cls, figs),
    }
    body = []
    for anchor, heading in SECTIONS:
        out = [f'<section id="{anchor}"><h2>{_e(heading)}</h2>']
        if anchor == "data":
            out.append(_data_section(v, predictions))
        elif anchor == "provenance":
            out.append(_provenance_section(v, made_by, results_file))
        else:
            for cls in v.classes:
                if len(v.classes) > 1:
                    out.append(f"<h3>Class {_e(cls)} against the rest</h3>")
                out.append(makers[anchor](cls))
        out.append("</section>")
        body.append("".join(out))
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    nav = "".join(f'<li><a href="#{a}">{_e(h)}</a></li>' for a, h in SECTIONS)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<meta name=\"generator\" content=\"calibdash {_e(__version__)}\">"
        f"<meta name=\"calibdash-figures\" content=\"{figs.count}\">"
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1><p class=\"muted\">calibdash {_e(__version__)}, generated {stamp}. The calibration "
        "hierarchy of Van Calster et al. (2019), discrimination, overall accuracy and net benefit, each with a "
        f"{_e(_interval_words(v))}, reported in the order of TRIPOD+AI's items on model performance.</p>"
        f"<nav><ul>{nav}</ul></nav>{''.join(body)}</body></html>\n"
    )
