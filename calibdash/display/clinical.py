"""What the app and the validation report show of :func:`calibdash.validate_risk_model`.

- :func:`hierarchy_verdicts`: one plain sentence per level of the calibration hierarchy
  (Van Calster et al. 2019), discrimination, overall accuracy, clinical usefulness and the
  sample size, each with a status a page can colour;
- :func:`metrics_table`: the metrics as display text (numbers with stated digits, blanks for
  missing values);
- :func:`validation_curve_figure`, :func:`decision_curve_figure`, :func:`forest_figure`: the
  figures clinicians know from R's ``CalibrationCurves::val.prob.ci.2``, ``dcurves`` and
  subgroup forest plots;
- :func:`sample_size_text`: the note on Riley et al.'s (2021) precision targets.

The verdict rules, in words (docs/clinical.md lists them too): a level is a *problem* when
its interval excludes the ideal value (O:E 1, slope 1, a flexible curve on the diagonal,
AUROC above 0.5, a model beating treat-all and treat-none somewhere), *uncertain* when the
interval contains the ideal but is wider than Riley's target (the data cannot tell), and *ok*
otherwise. Magnitudes are reported, never judged against a clinical tolerance: what error
matters depends on the decision the risks inform.

Class and group names are the user's: figures take them through
:func:`calibdash.display.text.plot_text`; sentences and tables return them as plain text,
to be escaped (HTML) or marked (:func:`calibdash.display.text.code`) where they are shown.
Nothing here imports Streamlit.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calibdash.clinical.verdicts import (  # noqa: F401  (re-exported: the display's vocabulary)
    DIGITS,
    LEVELS,
    REFERENCE_VALUES,
    format_metric,
    format_p,
    group_info,
    hierarchy_verdicts,
    interval_text,
    level_words,
    metric_rows,
    sample_size_text,
    select_class,
    select_group,
    useful_thresholds,
)
from calibdash.display.plots import BASE, BEST, LINE, RECAL, auto_margins, subplot_spacing
from calibdash.display.text import plot_text
from calibdash.errors import ConfigError

__all__ = ["LEVELS", "DIGITS", "FOREST_METRICS", "REFERENCE_VALUES", "hierarchy_verdicts", "metrics_table",
           "validation_curve_figure", "decision_curve_figure", "forest_figure", "sample_size_text",
           "format_metric", "format_p", "interval_text", "useful_thresholds"]

# The decision curve's view: treat-all's net benefit falls to -(1 - prevalence) / ... at high
# thresholds, which would squeeze the curves that matter into a sliver.
NET_BENEFIT_FLOOR = -0.05
FOREST_METRICS = ("calibration-in-the-large", "calibration slope", "ICI")


# ----------------------------------------------------------------------------- table
def metrics_table(v, *, cls=None, group=None):
    """The metrics of one class block and group as display text.

    Returns
    -------
    DataFrame
        Columns ``metric``, ``estimate``, ``95% CI`` (named for the interval level; "low to
        high"), ``interval method``, ``p-value`` and ``note``: all text, "" for a missing
        value. The numbers at full precision are in ``v.metrics``.
    """
    cls = select_class(v, cls)
    group = select_group(v, cls, group)
    rows = metric_rows(v, cls, group)
    ci = level_words(v)
    out = []
    for name, r in rows.iterrows():
        out.append({"metric": name, "estimate": format_metric(name, r["estimate"]),
                    ci: interval_text(name, r["ci_low"], r["ci_high"]), "interval method": str(r["interval"] or ""),
                    "p-value": format_p(float(r["p_value"])),
                    "note": "" if r["note"] is None or (isinstance(r["note"], float) and math.isnan(r["note"]))
                    else str(r["note"])})
    return pd.DataFrame(out, columns=["metric", "estimate", ci, "interval method", "p-value", "note"])


# ----------------------------------------------------------------------------- figures
def _legend_on_top(fig, height, margin):
    # Above the plot area: plotly sets no margin for a legend, and one below would cover the x
    # axis title; horizontal, so that it wraps on a narrow screen.
    fig.update_layout(height=height, margin=margin,
                      legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom", traceorder="normal"))


def validation_curve_figure(v, *, cls=None):
    """The flexible calibration curve with its band, over the predicted-risk histograms by outcome.

    As R's ``CalibrationCurves::val.prob.ci.2`` draws it: the loess curve of the observed
    outcome on the predicted risk with its bootstrap band (gaps where the band is not
    defined, at the very ends of the range), the diagonal of perfect calibration, and under
    it the numbers of events (up) and non-events (down) per bin of predicted risk.
    """
    cls = select_class(v, cls)
    c = v.curve[v.curve["class"] == cls]
    d = v.distribution[v.distribution["class"] == cls]
    margin = dict(t=60, b=50, l=60, r=15)
    height = 560
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.74, 0.26],
                        vertical_spacing=subplot_spacing(12, height, margin))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color=BASE, dash="dash"),
                             name="perfect calibration", hoverinfo="skip"), row=1, col=1)
    band = f"{level_words(v)[:-3]} band"
    # upper edge first, then the lower edge filled up to it; NaN ends stay gaps (connectgaps off)
    fig.add_trace(go.Scatter(x=c["p"], y=c["ci_high"], mode="lines", line=dict(width=0), showlegend=False,
                             hoverinfo="skip", connectgaps=False), row=1, col=1)
    fig.add_trace(go.Scatter(x=c["p"], y=c["ci_low"], mode="lines", line=dict(width=0), fill="tonexty",
                             fillcolor="rgba(31, 119, 180, 0.22)", name=band, hoverinfo="skip", connectgaps=False),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=c["p"], y=c["estimate"], mode="lines", line=dict(color=LINE, width=2.5),
                             name="flexible calibration curve (loess)",
                             hovertemplate="predicted %{x:.3f}<br>observed %{y:.3f}<extra></extra>"), row=1, col=1)
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
    fig.update_yaxes(title_text="observed frequency", range=[-0.02, 1.02], row=1, col=1)
    fig.update_xaxes(range=[0, 1], row=1, col=1)
    fig.update_xaxes(range=[0, 1], title_text=f"predicted risk of {plot_text(cls)}", row=2, col=1)
    fig.update_layout(barmode="relative", bargap=0)
    _legend_on_top(fig, height, margin)
    return auto_margins(fig)


def decision_curve_figure(v, *, cls=None):
    """Net benefit of the model, treating everyone and treating no one, over the threshold
    probability (Vickers & Elkin 2006), with bootstrap bands.

    The view is clipped below at :data:`NET_BENEFIT_FLOOR` (treating everyone falls far below
    0 at high thresholds) and above at the largest net benefit.
    """
    cls = select_class(v, cls)
    d = v.decision_curve[v.decision_curve["class"] == cls]
    colours = {"model": LINE, "treat all": RECAL, "treat none": BASE}
    fills = {"model": "rgba(31, 119, 180, 0.2)", "treat all": "rgba(255, 127, 14, 0.15)"}
    fig = go.Figure()
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
                                 hovertemplate=f"{strategy}: %{{y:.3f}} at threshold %{{x:.2f}}<extra></extra>"))
    upper = np.nanmax(d[["net_benefit", "ci_high"]].to_numpy(dtype=float)) if len(d) else 0.1
    top = max(float(upper), 0.01) * 1.05
    fig.update_yaxes(range=[NET_BENEFIT_FLOOR, top], title_text="net benefit")
    fig.update_xaxes(range=[0, 1], title_text="threshold probability", tickformat=".0%")
    _legend_on_top(fig, 440, dict(t=50, b=50, l=60, r=15))
    return auto_margins(fig)


def _forest_rows(v, cls):
    """(label, group or None, status) of every row of the forest plot, "All" first."""
    rows = [("All", None, "judged")]
    if len(v.groups):
        for _, g in v.groups[v.groups["class"] == cls].iterrows():
            rows.append((str(g["group"]), str(g["group"]), str(g["status"])))
    return rows


# the gap holds a panel's tick labels and the next panel's two-line title
FOREST_ROW_PX, FOREST_GAP_PX = 26, 90


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
        t = f"<b>{m}</b>"
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
            xs, ys, plus, minus, hover = [], [], [], [], []
            for (_, group, status), shown in zip(entries, labels):
                if status == "too small" or (status == "imprecise") == filled:
                    continue
                r = metric_rows(v, cls, group).loc[m]
                e, lo, hi = float(r["estimate"]), float(r["ci_low"]), float(r["ci_high"])
                xs.append(e)
                ys.append(shown)
                plus.append(hi - e if np.isfinite(hi) else 0)
                minus.append(e - lo if np.isfinite(lo) else 0)
                hover.append(f"{shown}: {format_metric(m, e)} ({interval_text(m, lo, hi) or 'no interval'})")
            if not xs:
                continue
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="markers", hovertext=hover, hoverinfo="text",
                marker=dict(size=10, color=LINE, symbol="square" if filled else "square-open", line=dict(width=2)),
                error_x=dict(type="data", symmetric=False, array=plus, arrayminus=minus, color="#444", thickness=1.8,
                             width=5),
                name="group estimate and interval" if filled else "imprecise group",
                showlegend=i == 1, legendgroup="filled" if filled else "open"), row=i, col=1)
        small = [shown for (_, _, status), shown in zip(entries, labels) if status == "too small"]
        if small:
            ref = REFERENCE_VALUES.get(m, 0.0)
            fig.add_trace(go.Scatter(x=[ref] * len(small), y=small, mode="text", text=["too small (not judged)"] * len(small),
                                     textposition="middle right", textfont=dict(color=BASE), showlegend=False,
                                     hoverinfo="skip"), row=i, col=1)
        if m in REFERENCE_VALUES:
            fig.add_vline(x=REFERENCE_VALUES[m], line=dict(color=BEST, dash="dash", width=1.2), row=i, col=1)
        fig.update_yaxes(categoryorder="array", categoryarray=order, type="category", row=i, col=1)
    fig.update_layout(height=height, margin=margin, showlegend=False)
    return auto_margins(fig)
