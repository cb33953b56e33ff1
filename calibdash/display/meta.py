"""The forest plot of a multicentre validation: each centre, the pooled estimate and the
prediction interval (:mod:`calibdash.clinical.meta`).

One row per centre (its estimate and the interval the meta-analysis sees), a diamond for the
random-effects estimate spanning its Hartung-Knapp interval and, under it, a bar for the
prediction interval: where a new centre's value is expected. Centre names are the user's
and reach the figure through :func:`calibdash.text.plot_text`. Nothing here imports
Streamlit.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from calibdash.clinical.meta import META_METRICS
from calibdash.display.clinical import format_metric, interval_text
from calibdash.display.plots import BASE, BEST, LINE, RECAL, auto_margins
from calibdash.errors import ConfigError, InputError
from calibdash.text import plot_text

__all__ = ["IDEAL_VALUES", "pooled_forest_figure"]

# The value of a calibrated model (AUROC: chance), drawn as a dashed line.
IDEAL_VALUES = {"O:E": 1.0, "calibration-in-the-large": 0.0, "calibration slope": 1.0, "AUROC": 0.5}
_ROW_PX = 28
_MIN_SIZE, _MAX_SIZE = 6, 16  # square markers, by weight
_DIAMOND_HALF = 0.32  # half-height of the diamond, in rows


def _one_class(table, what):
    if "class" in table.columns and table["class"].nunique(dropna=False) > 1:
        raise InputError(f"pooled_forest_figure draws one class: pass that class's rows of the {what} table.")


# Ticks of a log O:E axis: ratios a reader takes in at a glance.
_RATIO_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 50, 100)


def _ratio_ticks(fig):
    """Tick values and texts of a log axis spanning every x drawn in ``fig`` (plotly's own
    log ticks label 0.2-0.9 by their first digit only)."""
    xs = np.concatenate([np.asarray(t.x, dtype=float) for t in fig.data if t.x is not None] + [[1.0]])
    for t in fig.data:
        if t.error_x is not None and t.error_x.array is not None:
            x = np.asarray(t.x, dtype=float)
            xs = np.concatenate([xs, x + np.asarray(t.error_x.array, float), x - np.asarray(t.error_x.arrayminus, float)])
    xs = xs[np.isfinite(xs) & (xs > 0)]
    lo, hi = xs.min(), xs.max()
    ticks = [t for t in _RATIO_TICKS if lo / 1.05 <= t <= hi * 1.05]
    if len(ticks) > 8:  # a wide range: fewer, further apart
        ticks = [t for t in ticks if t in (0.01, 0.1, 0.5, 1, 2, 10, 100)]
    return dict(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])


def pooled_forest_figure(centres, pooled, metric, *, title=None):
    """A forest plot of one metric over the centres, with the pooled diamond and the
    prediction interval.

    Parameters
    ----------
    centres : DataFrame
        One class's rows of :func:`calibdash.clinical.meta.centre_estimates` (a validation's
        ``centres``).
    pooled : DataFrame
        The same class's rows of :func:`calibdash.clinical.meta.pooled_table` (``pooled``).
    metric : {"O:E", "calibration-in-the-large", "calibration slope", "AUROC"}
    title : str, optional
        Shown as typed (escaped for plotly). By default the metric, the number of centres
        pooled and tau^2.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces named "centre" (filled squares, sized by random-effects weight), "left out"
        (open squares: centres with an estimate the meta-analysis could not use, e.g. an
        AUROC of 1), "not defined" (text), "pooled estimate" (the diamond),
        "prediction interval"; a dashed line at the ideal value (O:E 1,
        calibration-in-the-large 0, slope 1, AUROC 0.5). O:E is drawn on a log axis.

    Raises
    ------
    ConfigError
        For an unknown metric.
    InputError
        When a table holds several classes or lacks the metric.
    """
    if metric not in META_METRICS:
        raise ConfigError(f"Unknown metric {metric!r}; choose among " + ", ".join(map(repr, META_METRICS)) + ".")
    _one_class(centres, "centres")
    _one_class(pooled, "pooled")
    rows = centres[centres["metric"] == metric].reset_index(drop=True)
    summary = pooled[pooled["metric"] == metric]
    if not len(summary):
        raise InputError(f"The pooled table has no row for {metric!r}.")
    s = summary.iloc[0]
    log_axis = metric == "O:E"
    n = len(rows)
    # rows from the top: centre i at y = n - i; the pooled diamond and its prediction
    # interval under them
    y_centre = n - np.arange(n, dtype=float)
    y_pooled, y_pi = -0.6, -1.4
    names = [plot_text(c) for c in rows["cluster"]]

    tau2 = float(s["tau2"]) if np.isfinite(s["tau2"]) else 0.0
    used = np.isfinite(rows["yi"].to_numpy(float)) & np.isfinite(rows["vi"].to_numpy(float))
    weights = np.where(used, 1.0 / (rows["vi"].to_numpy(float) + tau2), 0.0)
    share = weights / weights.sum() if weights.sum() > 0 else weights
    est = rows["estimate"].to_numpy(float)
    drawable = np.isfinite(est) & ((est > 0) if log_axis else True)
    labels = [name + ("" if u else " (left out)") for name, u in zip(names, used)]

    fig = go.Figure()
    for name, mask, filled in (("centre", used & drawable, True), ("left out", ~used & drawable, False)):
        idx = np.flatnonzero(mask)
        if not len(idx):
            continue
        lo, hi = rows["ci_low"].to_numpy(float)[idx], rows["ci_high"].to_numpy(float)[idx]
        e = est[idx]
        plus = np.where(np.isfinite(hi), hi - e, 0.0)
        minus = np.where(np.isfinite(lo), e - lo, 0.0)
        if filled:
            size = _MIN_SIZE + (_MAX_SIZE - _MIN_SIZE) * np.sqrt(share[idx] / share[idx].max())
        else:
            size = np.full(len(idx), _MIN_SIZE + 2.0)
        hover = []
        for i in idx:
            text = (f"{names[i]}: {format_metric(metric, est[i])}"
                    f" ({interval_text(metric, rows['ci_low'][i], rows['ci_high'][i]) or 'no interval'})"
                    f"<br>{int(rows['n'][i])} patients, {int(rows['events'][i])} events")
            text += f"<br>weight {100 * share[i]:.1f}%" if filled else f"<br>left out: {plot_text(rows['note'][i])}"
            hover.append(text)
        fig.add_trace(go.Scatter(
            x=e, y=y_centre[idx], mode="markers", name=name, hovertext=hover, hoverinfo="text",
            marker=dict(symbol="square" if filled else "square-open", size=size, color=LINE if filled else BASE,
                        line=dict(width=1.5, color=LINE if filled else BASE)),
            error_x=dict(type="data", symmetric=False, array=plus, arrayminus=minus, color="#444", thickness=1.5, width=4),
            showlegend=False))
    missing = np.flatnonzero(~drawable)
    if len(missing):
        anchor = IDEAL_VALUES[metric]
        fig.add_trace(go.Scatter(
            x=[anchor] * len(missing), y=y_centre[missing], mode="text", name="not defined",
            text=["not defined"] * len(missing), textposition="middle right", textfont=dict(color=BASE),
            hovertext=[f"{names[i]}: {plot_text(rows['note'][i])}" for i in missing], hoverinfo="text",
            showlegend=False))

    e, lo, hi = float(s["estimate"]), float(s["ci_low"]), float(s["ci_high"])
    if np.isfinite(e) and np.isfinite(lo) and np.isfinite(hi):
        fig.add_trace(go.Scatter(
            x=[lo, e, hi, e, lo], y=[y_pooled, y_pooled + _DIAMOND_HALF, y_pooled, y_pooled - _DIAMOND_HALF, y_pooled],
            mode="lines", fill="toself", fillcolor=BEST, line=dict(color=BEST, width=1), name="pooled estimate",
            hovertext=f"pooled: {format_metric(metric, e)} ({interval_text(metric, lo, hi)})", hoverinfo="text",
            hoveron="fills", showlegend=False))
    elif np.isfinite(e):  # one centre: no interval, a point
        fig.add_trace(go.Scatter(x=[e], y=[y_pooled], mode="markers", name="pooled estimate",
                                 marker=dict(symbol="diamond", size=14, color=BEST), showlegend=False,
                                 hovertext=f"pooled: {format_metric(metric, e)} (no interval)", hoverinfo="text"))
    p_lo, p_hi = float(s["pi_low"]), float(s["pi_high"])
    if np.isfinite(p_lo) and np.isfinite(p_hi):
        fig.add_trace(go.Scatter(
            x=[p_lo, p_hi], y=[y_pi, y_pi], mode="lines+markers", name="prediction interval",
            line=dict(color=RECAL, width=3), marker=dict(symbol="line-ns-open", size=12, color=RECAL, line=dict(width=3)),
            hovertext=f"prediction interval: {interval_text(metric, p_lo, p_hi)}", hoverinfo="text", showlegend=False))

    fig.add_vline(x=IDEAL_VALUES[metric], line=dict(color=BEST, dash="dash", width=1.2))
    k = int(s["n_clusters"])
    tick_vals = [*y_centre, y_pooled, y_pi]
    tick_text = [*labels, "<b>pooled (random effects)</b>", "prediction interval"]
    if title is None:
        title = f"<b>{metric}</b>: {k} centre{'' if k == 1 else 's'} pooled"
        if np.isfinite(s["tau2"]):
            scale = {"O:E": " (log O:E)", "AUROC": " (logit)"}.get(metric, "")
            title += f", tau² {s['tau2']:.3g}{scale}"
    else:
        title = plot_text(title)
    fig.update_yaxes(tickvals=tick_vals, ticktext=tick_text, range=[y_pi - 0.8, n + 0.8], zeroline=False, showgrid=False)
    fig.update_xaxes(title=metric + (" (log scale)" if log_axis else ""), type="log" if log_axis else "linear")
    if log_axis:
        fig.update_xaxes(**_ratio_ticks(fig))
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=_ROW_PX * (n + 3) + 110,
                      margin=dict(t=50, b=50, l=20, r=20), showlegend=False)
    return auto_margins(fig)
