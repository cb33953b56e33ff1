"""What the app and the validation report show of :func:`calibdash.validate_risk_model`.

- :func:`hierarchy_verdicts`: one plain sentence per level of the calibration hierarchy
  (Van Calster et al. 2019), discrimination, overall accuracy, clinical usefulness and the
  sample size, each with a status a page can colour. The rules are statistical judgments and
  live beside the statistics (:mod:`calibdash.clinical.verdicts`, :meth:`RiskValidation.verdicts`);
  this module re-exports them and only shows them;
- :func:`metrics_table`, :func:`grouped_table`, :func:`net_benefit_table`, :func:`pooled_table`,
  :func:`recalibration_table`, :func:`calibration_error_table`: display text (numbers with
  stated digits and units, blanks for missing values);
- :func:`validation_curve_figure`, :func:`decision_curve_figure`, :func:`forest_figure`: the
  figures clinicians know from R's ``CalibrationCurves::val.prob.ci.2``, ``dcurves`` and
  subgroup forest plots;
- :func:`sample_size_text`, :func:`recalibration_text`, :func:`curve_note`: sentences.

Units (:data:`UNITS`): risks and event rates are proportions of patients and are shown in %;
ICI, E50, E90 and Emax are differences of risk, shown in percentage points as in the verdicts,
as is the calibration error of Gruber & Bach; the other metrics keep their own scale, which the
metrics table's ``unit`` column and the forest plot's panel titles name
(:data:`calibdash.clinical.verdicts.METRIC_UNITS`); net benefit is in true positives per
patient, and net interventions avoided are per 100 patients.

Class, group and centre names are the user's: figures take them through
:func:`calibdash.text.plot_text`; sentences and tables return them as plain text,
to be escaped (HTML) or marked (:func:`calibdash.text.code`) where they are shown.
Nothing here imports Streamlit.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calibdash.clinical.validation import ZERO_FLOOR_METRICS
from calibdash.clinical.verdicts import (  # noqa: F401  (re-exported: the display's vocabulary)
    DIGITS,
    LEVELS,
    METRIC_UNITS,
    POINTS_METRICS,
    REFERENCE_VALUES,
    format_metric,
    format_p,
    group_info,
    hierarchy_verdicts,
    interval_text,
    level_words,
    metric_rows,
    metric_scale,
    sample_size_text,
    select_class,
    select_group,
    useful_thresholds,
)
from calibdash.display.plots import BASE, BEST, LINE, RECAL, auto_margins, subplot_spacing
from calibdash.errors import ConfigError
from calibdash.text import plot_text

__all__ = ["LEVELS", "DIGITS", "FOREST_METRICS", "METRIC_UNITS", "POINTS_METRICS", "metric_scale", "REFERENCE_VALUES",
           "UNITS", "NET_BENEFIT_THRESHOLDS",
           "CALIBRATION_ERROR_HEADER", "CALIBRATION_ERROR_HELP", "TAU2_HEADER", "RECALIBRATION_SCALE", "hierarchy_verdicts",
           "metrics_table",
           "grouped_table", "net_benefit_table", "pooled_table", "centres_table", "recalibration_table",
           "recalibration_text", "calibration_error_table", "curve_note", "zoom_limit", "validation_curve_figure",
           "decision_curve_figure", "forest_figure", "interval_traces", "sample_size_text", "format_metric", "format_p",
           "interval_text", "useful_thresholds"]

# The decision curve's view: treat-all's net benefit falls to -(1 - prevalence) / ... at high
# thresholds, which would squeeze the curves that matter into a sliver.
NET_BENEFIT_FLOOR = -0.05
FOREST_METRICS = ("calibration-in-the-large", "calibration slope", "ICI")
# The thresholds net_benefit_table shows by default (those inside the judged range).
NET_BENEFIT_THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.5)
# What the numbers are in (the report states it in its header; the app in its help texts).
UNITS = ("Risks and event rates are proportions of patients, shown in %. ICI, E50, E90 and Emax are absolute "
         "differences between observed and predicted risk, shown in percentage points (5.0 points: a predicted "
         "risk of 20% against an observed 25%), as is the calibration error. O:E is a ratio; calibration-in-the-"
         "large and the calibration slope are on the logit scale; the Brier score, the scaled Brier score and the "
         "AUROC (C statistic) are on their own 0 to 1 scales. Net benefit is in true positives per patient; net "
         "interventions avoided are per 100 patients. The downloads keep every number as computed, in fractions.")
CALIBRATION_ERROR_HEADER = "calibration error (points)"
CALIBRATION_ERROR_HELP = (
    "The risk-optimised canonical calibration error of Gruber & Bach (2025): the square root of the squared "
    "canonical calibration error, so an error (not a squared one), in percentage points, 0 for a "
    "calibrated model. The estimator is selected separately in each group (by a mean-squared-error risk on "
    "validation folds), so it can differ between groups and the groups' numbers are not comparable with each other.")
# The ticks an axis zoomed to the risks ends on (zoom_limit).
_ZOOM_TICKS = (0.01, 0.02, 0.03, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
# Room above the largest value of a zoomed axis.
_ZOOM_HEADROOM = 1.05


def _pct(x, digits=1):
    return "" if x is None or not np.isfinite(x) else f"{100 * float(x):.{digits}f}%"


def _num(x, spec):
    # "" when missing; a value that rounds to zero without a minus sign ("0.000", not "-0.000")
    if x is None or not np.isfinite(x):
        return ""
    text = format(float(x), spec)
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def _pair(lo, hi, fmt):
    a, b = fmt(lo), fmt(hi)
    return f"{a} to {b}" if a and b else ""


def _is_whole(group_column):
    return pd.Series(group_column, dtype=object).isna().to_numpy()


def _rows_of(frame, cls, group=None):
    """The rows of a result frame with a ``group`` column for one class and group (None: whole data)."""
    if frame is None or not len(frame):
        return frame
    at = frame["class"] == cls
    if "group" in frame.columns:
        at &= _is_whole(frame["group"]) if group is None else (frame["group"] == group).to_numpy()
    return frame[at]


# ----------------------------------------------------------------------------- table
def metrics_table(v, *, cls=None, group=None):
    """The metrics of one class block and group as display text.

    Returns
    -------
    DataFrame
        Columns ``metric``, ``unit`` (the scale the row's numbers are on:
        :data:`calibdash.clinical.verdicts.METRIC_UNITS`), ``estimate``, ``95% CI`` (named for
        the interval level; "low to high"), ``interval method``, ``p-value`` and ``note``: all
        text, "" for a missing value. The numbers at full precision are in ``v.metrics``.
    """
    cls = select_class(v, cls)
    group = select_group(v, cls, group)
    rows = metric_rows(v, cls, group)
    ci = level_words(v)
    out = []
    for name, r in rows.iterrows():
        out.append({"metric": name, "unit": METRIC_UNITS.get(name, ""), "estimate": format_metric(name, r["estimate"]),
                    ci: interval_text(name, r["ci_low"], r["ci_high"]),
                    "interval method": _method_text(r, v.config.get("n_resamples")),
                    "p-value": format_p(float(r["p_value"])),
                    "note": "" if r["note"] is None or (isinstance(r["note"], float) and math.isnan(r["note"]))
                    else str(r["note"])})
    return pd.DataFrame(out, columns=["metric", "unit", "estimate", ci, "interval method", "p-value", "note"])


def _method_text(r, n_resamples):
    """The interval's method, with the resamples a bootstrap interval rests on ("bootstrap (987 of
    1,000 resamples)" when some failed)."""
    method = str(r["interval"] or "")
    k = r.get("resamples", 0)
    if not method or method.startswith("none") or k is None or not np.isfinite(k) or int(k) <= 0:
        return method
    k = int(k)
    if n_resamples and k < int(n_resamples):
        return f"{method} ({k:,} of {int(n_resamples):,} resamples)"
    return f"{method} ({k:,} resamples)"


# ----------------------------------------------------------------------------- figures
def _legend_on_top(fig, height, margin):
    # Above the plot area: plotly sets no margin for a legend, and one below would cover the x
    # axis title; horizontal, so that it wraps on a narrow screen.
    fig.update_layout(height=height, margin=margin,
                      legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom", traceorder="normal"))


def zoom_limit(value):
    """The end of an axis zoomed to values up to ``value``: a little above it (5%), on a round
    tick (:data:`_ZOOM_TICKS`: 0.01, 0.02, 0.03, 0.05, 0.1, 0.15, ... 0.8, 1); 1 at most, and 1
    when ``value`` is missing."""
    if value is None or not np.isfinite(value) or value <= 0:
        return 1.0
    target = min(float(value) * _ZOOM_HEADROOM, 1.0)
    return next(t for t in _ZOOM_TICKS if t >= target - 1e-12)


def _curve_reason(v, cls):
    """The note of the result that says why class ``cls`` has no loess curve (the first note naming
    loess, preferring one that names the class)."""
    about = [str(n) for n in v.notes if "loess" in str(n).lower()]
    named = [n for n in about if str(cls) in n]
    return (named or about or [""])[0]


def curve_note(v, *, cls=None):
    """Why the calibration plot of ``cls`` has no loess curve, as a sentence; "" when it has one."""
    cls = select_class(v, cls)
    method = v.curve_method.get(cls, "loess")
    if method == "loess":
        return ""
    reason = _curve_reason(v, cls)
    head = ("No flexible (loess) calibration curve: the observed event rate at each level of the predicted risk is "
            "drawn instead, with its exact (Clopper-Pearson) interval, and the levels are joined by a line."
            if method == "levels" else
            "No flexible (loess) calibration curve: only the observed event rate per group of predicted risk, with "
            "its exact (Clopper-Pearson) interval, is drawn.")
    return f"{head} {reason}" if reason else head


def _largest(*values):
    """The largest finite value among the arrays ``values``; NaN when there is none."""
    finite = [float(x) for vs in values for x in np.asarray(vs, dtype=float).ravel() if np.isfinite(x)]
    return max(finite) if finite else np.nan


def _tick(top):
    # whole per cent on an axis to 10% or more, tenths of a per cent below
    return ".0%" if top >= 0.1 else ".1%"


def _grouped_name(v, kind):
    what = "risk levels" if kind == "levels" else "tenths of risk"
    return f"{what}: observed rate, exact {level_words(v)[:-3]} interval"


def validation_curve_figure(v, *, cls=None):
    """The flexible calibration curve with its band and the grouped points, over the
    predicted-risk histograms by outcome.

    As R's ``CalibrationCurves::val.prob.ci.2`` draws it: the loess curve of the observed
    outcome on the predicted risk with its bootstrap band (gaps where the band is not
    defined, at the very ends of the range), the diagonal of perfect calibration, and under
    it the numbers of events (up) and non-events (down) per bin of predicted risk. Over the
    curve, the observed event rate against the mean predicted risk of groups of rows
    (``v.grouped``: tenths of risk, or one point per distinct risk of a coarse score) with
    their exact (Clopper-Pearson) intervals.

    When no loess curve could be estimated (``v.curve_method[cls] == "levels"``), the grouped
    points are joined by a line and the figure says so (:func:`curve_note` gives the reason).

    Both axes are zoomed to the risks, in % (:func:`zoom_limit`): x from 0 to a little above the
    largest predicted risk, y to a little above the largest of that, the curve and the grouped
    points' upper interval ends, so that a rare outcome's risks are not drawn in a corner of 0-1
    and the diagonal stays in view.
    """
    cls = select_class(v, cls)
    c = v.curve[v.curve["class"] == cls]
    d = v.distribution[v.distribution["class"] == cls]
    g = _rows_of(v.grouped, cls).sort_values("mean_risk")
    method = v.curve_method.get(cls, "loess")
    levels = method == "levels"
    largest_risk = _largest(c["p"] if len(c) else (), g["p_high"] if len(g) else ())
    x_top = zoom_limit(largest_risk)
    y_top = zoom_limit(_largest([largest_risk], g["ci_high"] if len(g) else (), c["estimate"] if len(c) else ()))
    margin = dict(t=60, b=50, l=60, r=15)
    height = 560
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.74, 0.26],
                        vertical_spacing=subplot_spacing(12, height, margin))
    fig.add_trace(go.Scatter(x=[0, x_top], y=[0, x_top], mode="lines", line=dict(color=BASE, dash="dash"),
                             name="perfect calibration", hoverinfo="skip"), row=1, col=1)
    if len(c) and method == "loess":
        band = f"{level_words(v)[:-3]} band"
        # upper edge first, then the lower edge filled up to it; NaN ends stay gaps (connectgaps off)
        fig.add_trace(go.Scatter(x=c["p"], y=c["ci_high"], mode="lines", line=dict(width=0), showlegend=False,
                                 hoverinfo="skip", connectgaps=False), row=1, col=1)
        fig.add_trace(go.Scatter(x=c["p"], y=c["ci_low"], mode="lines", line=dict(width=0), fill="tonexty",
                                 fillcolor="rgba(31, 119, 180, 0.22)", name=band, hoverinfo="skip", connectgaps=False),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=c["p"], y=c["estimate"], mode="lines", line=dict(color=LINE, width=2.5),
                                 name="flexible calibration curve (loess)",
                                 hovertemplate="predicted %{x:.1%}<br>observed %{y:.1%}<extra></extra>"), row=1, col=1)
    if len(g):
        kind = str(g["kind"].iloc[0])
        est, lo, hi = (g[k].to_numpy(dtype=float) for k in ("observed", "ci_low", "ci_high"))
        custom = np.column_stack([g["n"].to_numpy(dtype=float), g["events"].to_numpy(dtype=float), lo, hi,
                                  g["p_low"].to_numpy(dtype=float), g["p_high"].to_numpy(dtype=float)])
        ci = level_words(v)
        head = ("predicted risk %{x:.1%}<br>" if kind == "levels" else
                "risks %{customdata[4]:.1%} to %{customdata[5]:.1%}: mean predicted %{x:.1%}<br>")
        fig.add_trace(go.Scatter(
            x=g["mean_risk"], y=est, mode="lines+markers" if levels else "markers", name=_grouped_name(v, kind),
            line=dict(color=RECAL, width=1.6), marker=dict(color=RECAL, size=8, line=dict(color="#444", width=1)),
            error_y=dict(type="data", symmetric=False, array=np.nan_to_num(hi - est), arrayminus=np.nan_to_num(est - lo),
                         color="#444", thickness=1.4, width=4, visible=True),
            customdata=custom,
            hovertemplate=head + f"observed %{{y:.1%}} ({ci} %{{customdata[2]:.1%}} to %{{customdata[3]:.1%}})<br>"
                                 "%{customdata[1]:,.0f} events of %{customdata[0]:,.0f}<extra></extra>"), row=1, col=1)
    if method != "loess":
        joined = "observed rate per risk level, joined by a line" if levels else "observed rate per group of risk"
        fig.add_annotation(xref="x domain", yref="y domain", x=0.01, y=0.99, xanchor="left", yanchor="top",
                           showarrow=False, align="left", font=dict(size=12, color="#444"),
                           text=f"No loess curve (see the notes):<br>{joined}")
    mids = ((d["bin_low"] + d["bin_high"]) / 2).to_numpy()
    width = float((d["bin_high"] - d["bin_low"]).iloc[0]) if len(d) else 0.02
    ev, ne = d["events"].to_numpy(), d["non_events"].to_numpy()
    fig.add_trace(go.Bar(x=mids, y=ev, width=width, marker_color=BEST, name="events",
                         hovertemplate="%{y} events<extra></extra>"), row=2, col=1)
    fig.add_trace(go.Bar(x=mids, y=-ne, width=width, marker_color=BASE, name="non-events", customdata=ne,
                         hovertemplate="%{customdata} non-events<extra></extra>"), row=2, col=1)
    top = int(max(ev.max() if len(ev) else 0, ne.max() if len(ne) else 0, 1))
    # symmetric, so that events (up) and non-events (down) are drawn to the same scale
    fig.update_yaxes(tickvals=[-top, 0, top], ticktext=[f"{top:,}", "0", f"{top:,}"], title_text="count",
                     range=[-1.08 * top, 1.08 * top], zeroline=True, row=2, col=1)
    fig.update_yaxes(title_text="observed event rate", range=[-0.02 * y_top, 1.02 * y_top], tickformat=_tick(y_top),
                     row=1, col=1)
    fig.update_xaxes(range=[0, x_top], row=1, col=1)
    fig.update_xaxes(range=[0, x_top], tickformat=_tick(x_top), title_text=f"predicted risk of {plot_text(cls)}", row=2, col=1)
    fig.update_layout(barmode="relative", bargap=0)
    _legend_on_top(fig, height, margin)
    return auto_margins(fig)


def _threshold_range(v):
    low, high = v.config["thresholds"]
    return float(low), float(high)


def _group_rows(v, frame, cls, group, what):
    """``frame``'s rows of one class and group (None: whole data); ConfigError for an unknown group or
    one without rows (a group too small to judge)."""
    group = select_group(v, cls, group)
    rows = _rows_of(frame, cls, group)
    if group is not None and not len(rows):
        raise ConfigError(f"Group {group!r} has no {what}: it has too few events or non-events to be judged.")
    return group, rows


def decision_curve_figure(v, *, cls=None, group=None):
    """Net benefit of the model, treating everyone and treating no one, over the threshold
    probability (Vickers & Elkin 2006), with bootstrap bands; for the whole data or one group.

    The range of thresholds over which clinical usefulness is judged
    (``v.config["thresholds"]``) is shaded. The view is clipped below at
    :data:`NET_BENEFIT_FLOOR` (treating everyone falls far below 0 at high thresholds) and above
    at the largest net benefit.

    Raises
    ------
    ConfigError
        For an unknown group, or one too small to be judged (it has no decision curve).
    """
    cls = select_class(v, cls)
    _, d = _group_rows(v, v.decision_curve, cls, group, "decision curve")
    colours = {"model": LINE, "treat all": RECAL, "treat none": BASE}
    fills = {"model": "rgba(31, 119, 180, 0.2)", "treat all": "rgba(255, 127, 14, 0.15)"}
    fig = go.Figure()
    low, high = _threshold_range(v)
    fig.add_vrect(x0=low, x1=high, fillcolor="rgba(44, 160, 44, 0.10)", line_width=0, layer="below",
                  annotation_text=f"thresholds judged: {low:.0%} to {high:.0%}", annotation_position="top left",
                  annotation_font=dict(size=11, color="#2a6e2a"))
    for strategy in ("model", "treat all", "treat none"):
        s = d[d["strategy"] == strategy].sort_values("threshold")
        if strategy in fills and s["ci_low"].notna().any():
            fig.add_trace(go.Scatter(x=s["threshold"], y=s["ci_high"], mode="lines", line=dict(width=0),
                                     showlegend=False, hoverinfo="skip"))
            fig.add_trace(go.Scatter(x=s["threshold"], y=s["ci_low"], mode="lines", line=dict(width=0),
                                     fill="tonexty", fillcolor=fills[strategy], showlegend=False, hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=s["threshold"], y=s["net_benefit"], mode="lines", name=strategy,
                                 line=dict(color=colours[strategy], width=2.5 if strategy == "model" else 1.8,
                                           dash="dot" if strategy == "treat none" else None),
                                 hovertemplate=f"{strategy}: %{{y:.3f}} at threshold %{{x:.0%}}<extra></extra>"))
    upper = _largest(d["net_benefit"], d["ci_high"]) if len(d) else 0.1
    top = max(float(upper) if np.isfinite(upper) else 0.1, 0.01) * 1.05
    fig.update_yaxes(range=[NET_BENEFIT_FLOOR, top], title_text="net benefit (true positives per patient)")
    fig.update_xaxes(range=[0, 1], title_text="threshold probability", tickformat=".0%")
    _legend_on_top(fig, 440, dict(t=50, b=50, l=60, r=15))
    return auto_margins(fig)


# ----------------------------------------------------------------------------- more tables
def grouped_table(v, *, cls=None, group=None):
    """The grouped points of the calibration plot (``v.grouped``) as display text, in %.

    Returns
    -------
    DataFrame
        Columns ``predicted risks`` (the group's range), ``patients``, ``events``, ``mean
        predicted risk``, ``observed event rate`` and the exact (Clopper-Pearson) interval of the
        observed rate (named for the level, e.g. ``exact 95% CI``): one row per tenth of risk, or
        per distinct risk of a coarse score.
    """
    cls = select_class(v, cls)
    _, g = _group_rows(v, v.grouped, cls, group, "grouped points")
    ci = f"exact {level_words(v)}"
    rows = [{"predicted risks": _pair(r["p_low"], r["p_high"], _pct) if r["p_low"] != r["p_high"] else _pct(r["p_low"]),
             "patients": f"{int(r['n']):,}", "events": f"{int(r['events']):,}",
             "mean predicted risk": _pct(r["mean_risk"]), "observed event rate": _pct(r["observed"]),
             ci: _pair(r["ci_low"], r["ci_high"], _pct)}
            for _, r in g.sort_values("mean_risk").iterrows()]
    return pd.DataFrame(rows, columns=["predicted risks", "patients", "events", "mean predicted risk",
                                       "observed event rate", ci])


def _at(table, thresholds):
    """Rows of ``table`` at each of ``thresholds`` (matched to the grid), in that order."""
    grid = table["threshold"].to_numpy(dtype=float)
    out = []
    for t in thresholds:
        hit = np.flatnonzero(np.isclose(grid, float(t), atol=1e-9))
        if len(hit):
            out.append(table.iloc[hit[0]])
    return out


def net_benefit_table(v, *, cls=None, group=None, thresholds=None):
    """Net benefit at a few thresholds, as display text: the model's, treating everyone's, the
    model's difference from the better of treating everyone and treating no one with its
    interval, and net interventions avoided per 100 patients with its interval.

    Parameters
    ----------
    thresholds : sequence of float, optional
        Default: those of :data:`NET_BENEFIT_THRESHOLDS` inside the range judged
        (``v.config["thresholds"]``), or the range's ends when none is. A threshold outside
        that range is marked "(outside the range judged)".

    Raises
    ------
    ConfigError
        For an unknown group or one too small to be judged, or a threshold that is not on
        the grid of the decision curve.
    """
    cls = select_class(v, cls)
    _, nb = _group_rows(v, v.net_benefit, cls, group, "net benefit")
    nb = nb.sort_values("threshold")
    low, high = _threshold_range(v)
    if thresholds is None:
        thresholds = [t for t in NET_BENEFIT_THRESHOLDS if low - 1e-9 <= t <= high + 1e-9] or [low, high]
    rows = _at(nb, thresholds)
    if len(rows) < len(thresholds):
        grid = nb["threshold"].to_numpy(dtype=float)
        missing = [t for t in thresholds if not np.isclose(grid, float(t), atol=1e-9).any()]
        raise ConfigError(f"No net benefit at threshold {missing[0]!r}: the decision curve is computed at "
                          f"{grid.min():.2f} to {grid.max():.2f} in steps of 0.01.")
    ci = level_words(v)
    out = []
    for r in rows:
        t = f"{100 * float(r['threshold']):g}%" + ("" if bool(r["in_range"]) else " (outside the range judged)")
        out.append({"threshold": t, "model": _num(r["model"], ".3f"), "treat all": _num(r["treat_all"], ".3f"),
                    "difference from the better of treat all and treat none": _num(r["difference"], ".3f"),
                    f"difference {ci}": _pair(r["difference_low"], r["difference_high"], lambda x: _num(x, ".3f")),
                    "net interventions avoided per 100 patients": _num(r["avoided_per_100"], ".1f"),
                    f"avoided {ci}": _pair(r["avoided_low"], r["avoided_high"], lambda x: _num(x, ".1f"))})
    return pd.DataFrame(out, columns=["threshold", "model", "treat all",
                                      "difference from the better of treat all and treat none", f"difference {ci}",
                                      "net interventions avoided per 100 patients", f"avoided {ci}"])


TAU2_HEADER = "tau² (between-centre variance)"


def _need_clusters(v, what):
    if not getattr(v, "clusters", None):
        raise ConfigError(f"The {what} needs centres, and this validation was run without them: pass clusters= "
                          "to validate_risk_model (or choose a centre column).")


def pooled_table(v, *, cls=None):
    """The random-effects meta-analysis of the centres (``v.pooled``) as display text.

    Returns
    -------
    DataFrame
        One row per metric: ``metric``, ``unit`` (its scale), ``pooled estimate``, its confidence interval (named for
        the level), the prediction interval (the range of a new centre's value), tau² (the
        between-centre variance, on the scale pooled: log O:E, logit AUROC, CITL and slope as
        they are), the number of centres and the method.

    Raises
    ------
    ConfigError
        When the validation was run without clusters.
    """
    _need_clusters(v, "pooled table")
    cls = select_class(v, cls)
    p = v.pooled[v.pooled["class"] == cls]
    ci = level_words(v)
    pi = f"{ci[:-3]} prediction interval (a new centre)"
    out = []
    for _, r in p.iterrows():
        m = str(r["metric"])
        out.append({"metric": m, "unit": METRIC_UNITS.get(m, ""), "pooled estimate": format_metric(m, r["estimate"]),
                    ci: interval_text(m, r["ci_low"], r["ci_high"], ideal=REFERENCE_VALUES.get(m)),
                    pi: interval_text(m, r["pi_low"], r["pi_high"]),
                    TAU2_HEADER: _num(r["tau2"], ".3g"), "centres": f"{int(r['n_clusters']):,}",
                    "method": str(r["method"])})
    return pd.DataFrame(out, columns=["metric", "unit", "pooled estimate", ci, pi, TAU2_HEADER, "centres", "method"])


def centres_table(v, *, cls=None):
    """Each centre's estimates (``v.centres``, the inputs of the meta-analysis) as display text:
    one row per centre with ``centre``, ``patients``, ``events``, one column per metric
    ("1.04 (0.92 to 1.19)": the estimate and its interval) and ``note``.

    Raises
    ------
    ConfigError
        When the validation was run without clusters.
    """
    _need_clusters(v, "table of centres")
    cls = select_class(v, cls)
    c = v.centres[v.centres["class"] == cls]
    metrics = list(dict.fromkeys(c["metric"]))
    out = []
    for centre, rows in c.groupby("cluster", sort=False):
        row = {"centre": str(centre), "patients": f"{int(rows['n'].iloc[0]):,}",
               "events": f"{int(rows['events'].iloc[0]):,}"}
        notes = []
        for _, r in rows.iterrows():
            m = str(r["metric"])
            ci = interval_text(m, r["ci_low"], r["ci_high"], ideal=REFERENCE_VALUES.get(m))
            est = format_metric(m, r["estimate"])
            row[m] = f"{est} ({ci})" if est and ci else est
            note = r["note"]
            if note is not None and not (isinstance(note, float) and np.isnan(note)) and str(note):
                notes.append(str(note))
        row["note"] = "; ".join(dict.fromkeys(notes))
        out.append(row)
    return pd.DataFrame(out, columns=["centre", "patients", "events", *metrics, "note"])


# The recalibrations' intercepts and slopes act on logit(p).
RECALIBRATION_SCALE = "logit scale"
_RECAL_MEANING = {("intercept update", "a"): "added to logit(p); b = 1",
                  ("logistic recalibration", "a"): "intercept", ("logistic recalibration", "b"): "slope on logit(p)"}


def recalibration_table(v, *, cls=None):
    """The fitted recalibrations (``v.recalibration``) as display text: ``model`` ("intercept
    update", "logistic recalibration"), ``parameter`` (a, b), ``estimate (logit scale)`` and its
    interval (three decimals; :data:`RECALIBRATION_SCALE`) and ``meaning``. :func:`recalibration_text` says how to apply them."""
    cls = select_class(v, cls)
    r = v.recalibration[v.recalibration["class"] == cls]
    ci = level_words(v)
    est, ci = f"estimate ({RECALIBRATION_SCALE})", f"{ci} ({RECALIBRATION_SCALE})"
    out = [{"model": str(x["model"]), "parameter": str(x["parameter"]), est: _num(x["estimate"], ".3f"),
            ci: _pair(x["ci_low"], x["ci_high"], lambda y: _num(y, ".3f")),
            "meaning": _RECAL_MEANING.get((str(x["model"]), str(x["parameter"])), "")} for _, x in r.iterrows()]
    return pd.DataFrame(out, columns=["model", "parameter", est, ci, "meaning"])


def recalibration_text(v, *, cls=None):
    """How to apply the recalibrations of ``cls`` to a new patient's risk p, with the fitted numbers."""
    cls = select_class(v, cls)
    r = v.recalibration[v.recalibration["class"] == cls].set_index(["model", "parameter"])["estimate"]

    def get(model, parameter):
        return float(r.get((model, parameter), np.nan))

    a0, a, b = get("intercept update", "a"), get("logistic recalibration", "a"), get("logistic recalibration", "b")
    return (f"To recalibrate a predicted risk p: logistic recalibration p_new = expit(a + b logit(p)) with "
            f"a = {_num(a, '.3f')} and b = {_num(b, '.3f')} (corrects the average and the spread of the risks); "
            f"the intercept update p_new = expit(a + logit(p)) with a = {_num(a0, '.3f')} (corrects the average "
            "only). Here logit(p) = ln(p / (1 - p)) and expit(x) = 1 / (1 + exp(-x)). Recalibrated risks should be "
            "validated again on new data before use.")


def calibration_error_table(v, *, cls=None):
    """The risk-optimised calibration error of Gruber & Bach per group (``v.calibration_error``)
    as display text: ``group`` ("All" for the whole data), ``estimator`` (the one selected),
    :data:`CALIBRATION_ERROR_HEADER`, its interval and ``rows``. Its help text is
    :data:`CALIBRATION_ERROR_HELP`: the estimator can differ between groups, so the groups'
    numbers are not comparable. Empty when the validation ran without it."""
    cls = select_class(v, cls)
    ce = v.calibration_error
    ce = ce[ce["class"] == cls] if len(ce) else ce
    ci = f"{level_words(v)} (points)"
    out = [{"group": "All" if g is None or g != g else str(g), "estimator": str(r["estimator"]),
            CALIBRATION_ERROR_HEADER: _num(100 * r["estimate"], ".2f"),
            ci: _pair(100 * r["ci_low"], 100 * r["ci_high"], lambda y: _num(y, ".2f")), "rows": f"{int(r['n']):,}"}
           for g, (_, r) in zip(ce["group"] if len(ce) else [], ce.iterrows())]
    return pd.DataFrame(out, columns=["group", "estimator", CALIBRATION_ERROR_HEADER, ci, "rows"])


def _forest_rows(v, cls):
    """(label, group or None, status) of every row of the forest plot, "All" first."""
    rows = [("All", None, "judged")]
    if len(v.groups):
        for _, g in v.groups[v.groups["class"] == cls].iterrows():
            rows.append((str(g["group"]), str(g["group"]), str(g["status"])))
    return rows


# the gap holds a panel's tick labels and the next panel's two-line title
FOREST_ROW_PX, FOREST_GAP_PX = 26, 90
INTERVAL_COLOR, INTERVAL_PX, CAP_PX = "#444", 1.8, 10


def interval_traces(lows, highs, ys, *, floored=False):
    """The intervals of a forest plot's rows ``ys``: a line from each ``lows`` to ``highs`` and a
    cap at each end that was measured.

    plotly's error bars cap both ends of every interval, a missing end included (at the
    estimate), so the ICI's lower ends, 0 by rule when the data are consistent with perfect
    calibration (``floored``: :data:`calibdash.clinical.validation.ZERO_FLOOR_METRICS`), drew a
    column of ticks on the reference line at 0 (issue 27). Here such an end, or a missing one,
    has no cap: the line reaches 0 and stops.
    """
    xs, ys_line, cap_x, cap_y = [], [], [], []
    for lo, hi, y in zip(lows, highs, ys):
        ends = [x for x in (lo, hi) if np.isfinite(x)]
        if len(ends) == 2:
            xs += [lo, hi, None]
            ys_line += [y, y, None]
        for x in ends:
            if not (floored and x == lo and x == 0):
                cap_x.append(x)
                cap_y.append(y)
    return [go.Scatter(x=xs, y=ys_line, mode="lines", line=dict(color=INTERVAL_COLOR, width=INTERVAL_PX),
                       hoverinfo="skip", showlegend=False, name="interval"),
            go.Scatter(x=cap_x, y=cap_y, mode="markers", hoverinfo="skip", showlegend=False, name="interval end",
                       marker=dict(symbol="line-ns", size=CAP_PX, line=dict(color=INTERVAL_COLOR, width=INTERVAL_PX)))]


def forest_figure(v, *, cls=None, metrics=FOREST_METRICS):
    """One panel per metric, one row per group plus "All": estimate and interval beside the
    value of a calibrated model.

    Groups too small to judge are named and shown as "too small (not judged)", without a
    point; imprecise groups are drawn with open markers and labelled "(imprecise)". The
    panel titles carry the likelihood-ratio test of heterogeneity where one was run.

    Raises
    ------
    ConfigError
        When the validation was run without groups.
    """
    if not v.group_name or not len(v.groups):
        raise ConfigError("The forest plot compares subgroups, and this validation was run without groups: "
                          "pass groups= to validate_risk_model (or choose a grouping column).")
    cls = select_class(v, cls)
    unknown = [m for m in metrics if m not in DIGITS]
    if unknown:
        raise ConfigError(f"Unknown metric {unknown[0]!r}; choose among " + ", ".join(map(repr, DIGITS)) + ".")
    entries = _forest_rows(v, cls)
    het = v.heterogeneity[v.heterogeneity["class"] == cls] if len(v.heterogeneity) else v.heterogeneity
    titles = []
    for m in metrics:
        t = f"<b>{m}</b> ({METRIC_UNITS[m]})"
        h = het[het["metric"] == m] if len(het) else het
        if len(h):
            t += (f"<br>heterogeneity: p {'= ' if h['p_value'].iloc[0] >= 0.001 else ''}"
                  f"{format_p(float(h['p_value'].iloc[0]))}")
        titles.append(t)
    margin = dict(t=50, b=40, l=20, r=20)
    panel = FOREST_ROW_PX * len(entries) + 30
    height = len(metrics) * panel + (len(metrics) - 1) * FOREST_GAP_PX + margin["t"] + margin["b"]
    fig = make_subplots(rows=len(metrics), cols=1, subplot_titles=titles,
                        vertical_spacing=subplot_spacing(FOREST_GAP_PX, height, margin) if len(metrics) > 1 else 0.1)
    labels = []
    for label, _, status in entries:
        shown = plot_text(label)
        if status == "imprecise":
            shown += " (imprecise)"
        elif status == "too small":
            shown += " (too small)"
        labels.append(shown)
    order = labels[::-1]  # "All" at the top
    for i, m in enumerate(metrics, start=1):
        for filled in (True, False):
            xs, ys, lows, highs, hover = [], [], [], [], []
            for (_, group, status), shown in zip(entries, labels):
                if status == "too small" or (status == "imprecise") == filled:
                    continue
                r = metric_rows(v, cls, group).loc[m]
                e, lo, hi = float(r["estimate"]), float(r["ci_low"]), float(r["ci_high"])
                hover.append(f"{shown}: {format_metric(m, e)} ({interval_text(m, lo, hi) or 'no interval'})")
                e, lo, hi = (metric_scale(m) * x for x in (e, lo, hi))  # drawn on the scale the title names
                xs.append(e)
                ys.append(shown)
                lows.append(lo)
                highs.append(hi)
            if not xs:
                continue
            for trace in interval_traces(lows, highs, ys, floored=m in ZERO_FLOOR_METRICS):
                fig.add_trace(trace, row=i, col=1)
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="markers", hovertext=hover, hoverinfo="text",
                marker=dict(size=10, color=LINE, symbol="square" if filled else "square-open", line=dict(width=2)),
                name="group estimate and interval" if filled else "imprecise group",
                showlegend=i == 1, legendgroup="filled" if filled else "open"), row=i, col=1)
        small = [shown for (_, _, status), shown in zip(entries, labels) if status == "too small"]
        if small:
            ref = metric_scale(m) * REFERENCE_VALUES.get(m, 0.0)
            fig.add_trace(go.Scatter(x=[ref] * len(small), y=small, mode="text", text=["too small (not judged)"] * len(small),
                                     textposition="middle right", textfont=dict(color=BASE), showlegend=False,
                                     hoverinfo="skip"), row=i, col=1)
        if m in REFERENCE_VALUES:
            fig.add_vline(x=metric_scale(m) * REFERENCE_VALUES[m], line=dict(color=BEST, dash="dash", width=1.2),
                          row=i, col=1)
        fig.update_yaxes(categoryorder="array", categoryarray=order, type="category", row=i, col=1)
    fig.update_layout(height=height, margin=margin, showlegend=False)
    return auto_margins(fig)
