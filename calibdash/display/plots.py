"""Plotly figure builders for the app (no Streamlit here, so they are testable alone).

plotly renders a subset of HTML (links among it) in titles, axis labels, legends, category
labels and hover texts, so every name that comes from the user's data (class names, model
names) goes into a figure through :func:`calibdash.text.plot_text`, and shows as typed.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calibdash.display.units import quantity_scale, quantity_unit
from calibdash.errors import InputError
from calibdash.estimators.registry import REGISTRY, parameter
from calibdash.evaluation.verdict import judge
from calibdash.text import plot_text

BEST = "#d62728"
BASE = "#7f7f7f"
LINE = "#1f77b4"
RECAL = "#ff7f0e"
TIED = "#1f3c88"

# Estimate markers, and the caps of their interval bars: a cap reaches beyond the marker
# (half-height ERROR_CAP_PX against a radius of MARKER_PX / 2), so an interval narrower than
# its marker, common on a narrow screen, still shows.
MARKER_PX, ERROR_CAP_PX = 9, 7


def auto_margins(fig):
    """``fig`` with every axis pushing the margins out as far as its tick labels and title
    need (plotly's ``automargin``): fixed margins clip them on a narrow screen."""
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


# A legend placed at a fraction of the plot area's height below it overlapped the x axis's
# title, which plotly places in pixels under the tick labels (on Compare's overlaid chart, whose
# axis title has two lines, issue 27); above the plot, a legend that wraps on a narrow screen runs
# into the figure's title, and beside it, it squeezes the plot on a phone. At the foot of the
# figure (container coordinates) plotly reserves the room it needs below everything else, and
# it wraps, horizontal, on a narrow screen.
LEGEND_BELOW = dict(orientation="h", xref="container", x=0, xanchor="left", yref="container", y=0, yanchor="bottom")


def interval_bars(plus, minus):
    """``error_x`` of estimates with intervals: ``plus`` above and ``minus`` below each estimate."""
    return dict(type="data", symmetric=False, array=plus, arrayminus=minus, visible=True, color="#444", thickness=2,
                width=ERROR_CAP_PX)



def parameter_words(param):
    """How an axis names hyperparameter ``param`` (the registry's words, else its name)."""
    described = parameter(param)
    return described.words if described else param


def is_log_grid(values):
    """True when every value is a positive number and they span more than two decades."""
    nums = [v for v in values if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)]
    if len(nums) != len(values) or len(nums) < 2 or min(nums) <= 0:
        return False
    return math.log10(max(nums) / min(nums)) > 2


def _numeric(values):
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values)


def curve_stats(result, name):
    """Per (fixed, value): mean validation risk over folds, its unpaired standard error
    ``se``, and ``paired_se``: the standard error of the fold-by-fold difference to the
    chosen value's risks. The folds are shared, so the paired error shows which grid values
    the data can tell apart from the chosen one; the unpaired one mostly shows that some
    folds are harder than others, for every value alike."""
    c = result.curves[result.curves["estimator"] == name]
    g = c.groupby(["fixed", "value"], sort=False)["val_risk"]
    stats = g.agg(["mean", "std", "count"]).reset_index()
    stats["se"] = stats["std"].fillna(0.0) / np.sqrt(stats["count"])
    chosen = result.folds[result.folds["estimator"] == name].set_index("fold")["val_risk"]
    diff = c.assign(diff=c["val_risk"].to_numpy() - chosen.reindex(c["fold"]).to_numpy())
    paired = diff.groupby(["fixed", "value"], sort=False)["diff"].std().fillna(0.0).to_numpy()
    stats["paired_se"] = paired / np.sqrt(stats["count"])
    return stats


def tuned_estimators(result):
    """Names of the estimators whose tuned parameter has several numeric values."""
    names = []
    for name in result.summary["estimator"]:
        values = result.curves.loc[result.curves["estimator"] == name, "value"].unique().tolist()
        if len(values) > 1 and _numeric(values):
            names.append(name)
    return names


def curve_estimators(result):
    """Names of the estimators that get a risk panel: every one the registry calls tunable,
    a grid of one value or of words included (temperature's "fit": its risk beside the
    15-bin baseline and h = 0 says whether it found any miscalibration). Not the fixed
    15-bin baseline, which is drawn in every panel instead."""
    return [name for name in result.summary["estimator"] if name in REGISTRY and REGISTRY[name].tunable]


def power_of_ten(k):
    """Tick text of 10^k, e.g. "10<sup>−15</sup>" (a true minus sign)."""
    return f"10<sup>{int(k)}</sup>".replace("-", "\u2212")


# At most this many labelled powers of ten on a log axis: a 17-decade lambda grid in a
# narrow panel would otherwise print its labels on top of each other.
MAX_POWER_TICKS = 5
# Most markers of a recalibration map's scatter in a reliability diagram.
MAX_MAP_POINTS = 5_000


def hyperparameter_axis(values):
    """How an x axis shows the grid ``values``: ``(position, axis)``.

    ``position`` maps each value to its x coordinate and ``axis`` holds the axis settings
    (``type``, ticks, ``range``). A numeric grid spanning more than two decades gets a log
    axis labelled only at powers of ten (plotly would print SI prefixes such as "1f" and
    minor digits "2, 5" that read as values otherwise); another numeric grid a linear axis
    whose large and small numbers are written as powers of ten, never SI prefixes; a grid of
    one value or with words ("fit") one evenly spaced category per value, numbers first, in
    increasing order.
    """
    values = list(dict.fromkeys(values))
    if len(values) > 1 and _numeric(values):
        position = {v: float(v) for v in values}
        nums = sorted(position.values())
        if is_log_grid(nums):
            lo, hi = math.ceil(math.log10(nums[0]) - 1e-9), math.floor(math.log10(nums[-1]) + 1e-9)
            step = max(1, math.ceil((hi - lo) / (MAX_POWER_TICKS - 1)))
            anchor = 0 if lo <= 0 <= hi else hi  # 10^0 = 1 labelled whenever the grid spans it
            powers = [k for k in range(lo, hi + 1) if (k - anchor) % step == 0]
            return position, dict(type="log", tickmode="array", tickvals=[10.0 ** k for k in powers],
                                  ticktext=[power_of_ten(k) for k in powers])
        return position, dict(type="linear", exponentformat="power")
    order = sorted((v for v in values if _numeric([v])), key=float) + [v for v in values if not _numeric([v])]
    position = {v: float(i) for i, v in enumerate(order)}
    return position, dict(type="linear", tickmode="array", tickvals=list(range(len(order))),
                          ticktext=[plot_text(v if isinstance(v, str) else f"{float(v):g}") for v in order],
                          range=[-0.5, len(order) - 0.5])


def subplot_spacing(gap_px, height, margin):
    """make_subplots' vertical_spacing (a fraction of the plotting height) of a gap of
    ``gap_px`` pixels, in a figure ``height`` pixels tall with top and bottom ``margin``:
    stacked panels then keep room for the upper panel's tick labels and axis title and the
    lower panel's title whatever the number of rows."""
    return gap_px / (height - margin["t"] - margin["b"])


def _robust_range(low, high, extra=None):
    """A y-range that is not flattened by a few huge risks (e.g. an unstable tiny lambda).

    None (autorange) unless the largest values would squash the rest more than threefold;
    then the top is set near the 75th percentile, and the outliers leave the panel
    (their hover text still shows them).
    """
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    lo = float(np.nanmin(low))
    q = float(np.nanquantile(high, 0.75))
    if extra is not None:
        lo, q = min(lo, extra), max(q, extra)
    top = float(np.nanmax(high))
    if not np.isfinite(top) or top - lo <= 3 * max(q - lo, 1e-300):
        return None
    pad = 0.15 * (q - lo)
    return [lo - pad, q + 2 * pad]


# Risk panels: plotting height of one panel, and the room between two rows for the upper
# panel's tick labels and axis title and the lower panel's title (pixels).
RISK_PANEL_PX, RISK_GAP_PX = 240, 110


def risk_curves(result, ncols=2):
    """Validation risk against the tuned hyperparameter, one panel per estimator.

    The line is the mean over folds; the band +- one *paired* standard error, of each
    value's fold-by-fold risk difference to the chosen value (zero width at the chosen
    value: where the band of another value stays above the diamond, the data tell them
    apart); the red diamond the chosen value; the dotted grey line the 15-bin estimator's
    risk and the dashed black line the risk of h = 0, "perfectly calibrated" (an estimator
    that is not clearly below it has not shown any miscalibration). An estimator with a
    grid of one value or of words (temperature's "fit") gets a panel too, its values as
    categories (:func:`hyperparameter_axis`).
    """
    names = curve_estimators(result)
    s = result.summary.set_index("estimator")
    baseline = float(s.loc["15-bins", "val_risk"]) if "15-bins" in s.index else None
    ref = result.reference
    zero = None if ref is None else float(ref["val_risk"])
    n = max(len(names), 1)
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    margin = dict(t=90, b=70, l=70, r=20)
    height = nrows * RISK_PANEL_PX + (nrows - 1) * RISK_GAP_PX + margin["t"] + margin["b"]
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=names or ["no tuned estimator"], horizontal_spacing=0.16,
                        vertical_spacing=subplot_spacing(RISK_GAP_PX, height, margin) if nrows > 1 else 0.1)
    for i, name in enumerate(names):
        row, col = i // ncols + 1, i % ncols + 1
        stats = curve_stats(result, name)
        param = result.curves.loc[result.curves["estimator"] == name, "param"].iloc[0]
        position, axis = hyperparameter_axis(stats["value"].tolist())
        stats["x"] = stats["value"].map(position)
        if axis.get("range"):  # categories: the reference lines span the panel
            x_span = axis["range"]
        else:
            x_span = [stats["x"].min(), stats["x"].max()]
        for fixed, part in stats.groupby("fixed", sort=False):
            part = part.sort_values("x")
            x, m, se = part["x"].to_numpy(), part["mean"].to_numpy(), part["paired_se"].to_numpy()
            label = name + (f" ({fixed})" if fixed and stats["fixed"].nunique() > 1 else "")
            fig.add_trace(
                go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([m + se, (m - se)[::-1]]), fill="toself",
                           mode="lines", fillcolor="rgba(31,119,180,0.18)", line=dict(width=0, color=LINE), hoverinfo="skip",
                           showlegend=False, name=f"{label} paired band"),
                row=row, col=col,
            )
            shown = [v if isinstance(v, str) else f"{float(v):.3g}" for v in part["value"]]
            fig.add_trace(
                go.Scatter(x=x, y=m, mode="lines+markers", line=dict(color=LINE), marker=dict(size=5, color=LINE), name=label,
                           showlegend=False, customdata=np.stack([np.array(shown, dtype=object), se], axis=1),
                           hovertemplate=f"{param} = %{{customdata[0]}}<br>risk = %{{y:.5g}}<br>paired s.e. to the chosen "
                                         f"value %{{customdata[1]:.2g}}<extra>{label}</extra>"),
                row=row, col=col,
            )
        chosen = s.loc[name, "params"][param]
        shown = chosen if isinstance(chosen, str) else f"{float(chosen):.3g}"
        fig.add_trace(
            go.Scatter(x=[position[chosen]], y=[s.loc[name, "val_risk"]], mode="markers",
                       marker=dict(color=BEST, size=12, symbol="diamond"), showlegend=i == 0, name="chosen value",
                       hovertemplate=f"chosen {param} = {plot_text(shown)}<br>risk = %{{y:.5g}}<extra></extra>"),
            row=row, col=col,
        )
        if baseline is not None:
            fig.add_trace(
                go.Scatter(x=x_span, y=[baseline, baseline], mode="lines",
                           line=dict(color=BASE, dash="dot"), name="15-bin risk", showlegend=i == 0,
                           hovertemplate="15-bin risk = %{y:.5g}<extra></extra>"),
                row=row, col=col,
            )
        lows, highs = stats["mean"] - stats["paired_se"], stats["mean"] + stats["paired_se"]
        # One value has no curve to read: its panel is there to compare it with the lines.
        lines = [r for r in (baseline, zero if len(position) == 1 else None) if r is not None]
        y_range = _robust_range(lows, highs, baseline) if len(position) > 1 else None
        if y_range is None:
            lo, hi = min([float(np.nanmin(lows))] + lines), max([float(np.nanmax(highs))] + lines)
            pad = 0.08 * max(hi - lo, 1e-12 * max(abs(hi), 1e-300))
            y_range = [lo - pad, hi + pad]
        if zero is not None:
            # Drawn where it falls; when it lies above the panel (it usually does: any
            # estimator that shows miscalibration beats it), a note says where.
            fig.add_trace(
                go.Scatter(x=x_span, y=[zero, zero], mode="lines",
                           line=dict(color="#222", dash="dash"), name="risk of h = 0 (perfectly calibrated)",
                           showlegend=i == 0, hovertemplate="risk of h = 0 = %{y:.5g}<extra></extra>"),
                row=row, col=col,
            )
            if zero > y_range[1]:
                fig.add_annotation(text=f"h = 0 (above):<br>risk {zero:.4g}", xref="x domain" if i == 0 else f"x{i + 1} domain",
                                   yref="y domain" if i == 0 else f"y{i + 1} domain", x=0.02, y=0.98, xanchor="left",
                                   yanchor="top", showarrow=False, font=dict(size=11, color="#222"))
        fig.update_yaxes(range=y_range, row=row, col=col)
        fig.update_xaxes(title_text=parameter_words(param), **axis, row=row, col=col)
        fig.update_yaxes(title_text="validation risk" if col == 1 else None, exponentformat="power", row=row, col=col)
    # The legend sits above the first row's panel titles (about 30 pixels) and wraps on a narrow screen.
    fig.update_layout(height=height, margin=margin,
                      legend=dict(orientation="h", x=0, xanchor="left", y=1 + 30 / (height - margin["t"] - margin["b"]),
                                  yanchor="bottom"))
    return auto_margins(fig)


def forest_plot(result):
    """Estimates of the calibration error (percentage points) with their 95% intervals.

    Red: the estimator of lowest validation risk; dark blue: the others the risk cannot
    tell apart from it (tied); grey: those measurably worse. The shaded band is the
    verdict's interval (the union of the tied estimators' intervals, from 0 when h = 0 is
    tied), and the dashed line marks 0, perfect calibration.
    """
    s = result.summary.sort_values("val_risk", ascending=False)
    best = result.best["estimator"]
    est = 100 * s["estimate"].to_numpy()
    low, high = 100 * s["ci_low"].to_numpy(), 100 * s["ci_high"].to_numpy()
    tied = s["tied"].to_numpy(dtype=bool)
    colors = [BEST if e == best else (TIED if t else BASE) for e, t in zip(s["estimator"], tied)]
    status = ["lowest risk" if e == best else ("tied with the best" if t else "measurably worse risk")
              for e, t in zip(s["estimator"], tied)]
    j = judge(result)
    fig = go.Figure()
    fig.add_vrect(x0=100 * j.low, x1=100 * j.high, fillcolor="rgba(214,39,40,0.10)", line_width=0, layer="below")
    fig.add_trace(go.Scatter(
        x=est, y=s["estimator"], mode="markers", marker=dict(color=colors, size=MARKER_PX),
        error_x=interval_bars(high - est, est - low),
        customdata=np.stack([low, high, s["val_risk"].to_numpy(), np.array(status, dtype=object)], axis=1),
        hovertemplate="%{y}: %{x:.2f} points, 95% interval %{customdata[0]:.2f} to %{customdata[1]:.2f}"
                      "<br>validation risk %{customdata[2]:.5g} (%{customdata[3]})<extra></extra>",
        showlegend=False,
    ))
    fig.add_vline(x=0, line=dict(color="#222", dash="dash", width=1))
    fig.update_layout(
        xaxis_title="estimated calibration error<br>(percentage points, 95% interval)",
        yaxis_title=None, height=140 + 45 * len(s), margin=dict(t=70, b=50, l=10, r=20),
        title=dict(text="red: lowest validation risk; blue: tied with it;<br>grey: measurably worse; "
                        "shaded: the verdict's interval", font=dict(size=13)),
    )
    fig.update_xaxes(rangemode="tozero")
    return auto_margins(fig)


def _reliability_traces(fig, table, recal=None, row=None, col=None, show_legend=True):
    kw = dict(row=row, col=col) if row is not None else {}
    ok = table["count"] > 0
    t = table[ok]
    centers = ((t["lower"] + t["upper"]) / 2).to_numpy()
    widths = (t["upper"] - t["lower"]).to_numpy()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color=BASE, dash="dash"),
                             name="perfect calibration", showlegend=show_legend, hoverinfo="skip"), **kw)
    fig.add_trace(
        go.Bar(x=centers, y=t["accuracy"], width=widths * 0.95, marker=dict(color="rgba(31,119,180,0.55)"),
               name="observed frequency", showlegend=show_legend,
               customdata=np.stack([t["count"], t["confidence"], t["band_low"], t["band_high"]], axis=1),
               error_y=dict(type="data", symmetric=False, array=(t["band_high"] - t["accuracy"]).to_numpy(),
                            arrayminus=(t["accuracy"] - t["band_low"]).to_numpy(), color="#333", thickness=1),
               hovertemplate="bin %{x:.3f}<br>frequency %{y:.3f} (band %{customdata[2]:.3f}-%{customdata[3]:.3f})"
                             "<br>mean confidence %{customdata[1]:.3f}<br>%{customdata[0]} predictions<extra></extra>"),
        **kw,
    )
    fig.add_trace(go.Scatter(x=t["confidence"], y=t["accuracy"], mode="markers", marker=dict(color="#333", size=5),
                             name="bin (mean confidence, frequency)", showlegend=show_legend, hoverinfo="skip"), **kw)
    if recal is not None:
        x, g, label = recal
        order = np.argsort(x)
        x, g = np.asarray(x, dtype=float)[order], np.asarray(g, dtype=float)[order]
        # Millions of markers would freeze the browser (and a report of 2,000,000 holdout rows
        # held 54 MB of them): above MAX_MAP_POINTS every k-th row in the order of the
        # confidence is drawn, and the legend says so; the smoothed line uses every row.
        step = max(1, -(-len(x) // MAX_MAP_POINTS))
        shown = slice(step // 2, None, step)
        if step > 1:
            label = f"{label}; 1 in {step:,} of {len(x):,} rows shown"
        fig.add_trace(go.Scatter(x=x[shown], y=g[shown], mode="markers",
                                 marker=dict(color=RECAL, size=3, opacity=0.45), name=label, showlegend=show_legend,
                                 hovertemplate="confidence %{x:.3f}<br>recalibrated %{y:.3f}<extra></extra>"), **kw)
        if len(x) >= 50:
            # Every top-label map is a function of the confidence, but a fold ensemble's
            # scatter is noisy and a class's map (classwise) is shown against its own
            # probability: the line is its mean in equal-mass groups of nearby values.
            groups = np.array_split(np.arange(len(x)), min(40, len(x) // 25))
            fig.add_trace(go.Scatter(x=[x[i].mean() for i in groups], y=[g[i].mean() for i in groups], mode="lines",
                                     line=dict(color=RECAL, width=2.5), name="recalibration curve (smoothed)",
                                     showlegend=show_legend, hoverinfo="skip"), **kw)


def reliability_figure(table, title="Top-label reliability", recal=None, xlabel="confidence (max probability)", ylabel="fraction correct"):
    """Reliability diagram: bars of per-bin frequency with bootstrap bands, bin counts below.

    ``recal`` is an optional (x, g(x), label) of the selected estimator's recalibration map.
    """
    fig = make_subplots(rows=2, cols=1, row_heights=[0.75, 0.25], shared_xaxes=True, vertical_spacing=0.05)
    _reliability_traces(fig, table, recal, row=1, col=1)
    ok = table["count"] > 0
    t = table[ok]
    fig.add_trace(go.Bar(x=((t["lower"] + t["upper"]) / 2), y=t["count"], width=(t["upper"] - t["lower"]) * 0.95,
                         marker=dict(color=BASE), name="predictions per bin", showlegend=False,
                         hovertemplate="%{y} predictions<extra></extra>"), row=2, col=1)
    fig.update_yaxes(range=[0, 1.02], title_text=ylabel, row=1, col=1)
    fig.update_yaxes(title_text="count", row=2, col=1)
    fig.update_xaxes(range=[0, 1], row=1, col=1)
    fig.update_xaxes(range=[0, 1], title_text=xlabel, row=2, col=1)
    fig.update_layout(title=title, height=560, bargap=0, margin=dict(t=60, b=50, l=60, r=20), legend=LEGEND_BELOW)
    return auto_margins(fig)


def class_title(class_names, k):
    """How a figure names class ``k``: its name as typed, or "class k" when the data named
    no class (the names are then the indices "0", "1", ..., and a panel titled "1" reads as
    a number)."""
    if tuple(class_names) == tuple(str(i) for i in range(len(class_names))):
        return f"class {k}"
    return plot_text(class_names[k])


# Per-class panels: plotting height of one, and the room between rows for the upper
# panels' tick labels and the lower panels' titles (pixels).
CLASS_PANEL_PX, CLASS_GAP_PX = 210, 60


def per_class_figure(tables, class_names, recal=None, ncols=3):
    """Small reliability panels, one per class: p_k against the frequency of class k.

    ``recal`` is an optional {k: (p_k, g_k)} of the recalibration map per class.
    """
    keys = list(tables)
    ncols = min(ncols, len(keys))
    nrows = math.ceil(len(keys) / ncols)
    margin = dict(t=50, b=40, l=50, r=20)
    height = nrows * CLASS_PANEL_PX + (nrows - 1) * CLASS_GAP_PX + margin["t"] + margin["b"]
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=[class_title(class_names, k) for k in keys],
                        horizontal_spacing=0.08,
                        vertical_spacing=subplot_spacing(CLASS_GAP_PX, height, margin) if nrows > 1 else 0.1)
    for i, k in enumerate(keys):
        r = None if recal is None or k not in recal else (*recal[k], "recalibrated (selected estimator)")
        _reliability_traces(fig, tables[k], r, row=i // ncols + 1, col=i % ncols + 1, show_legend=i == 0)
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(range=[0, 1.02])
    fig.update_layout(height=height, bargap=0, margin=margin,
                      legend=dict(orientation="h", y=-30 / (height - margin["t"] - margin["b"]), yanchor="top"))
    return auto_margins(fig)


def ternary_figure(P, G=None, class_names=("class 0", "class 1", "class 2"), labels=None, max_points=400, random_state=0):
    """Predictions of a three-class model in the simplex, with their recalibrated positions.

    A grey segment joins each prediction to its estimated recalibrated position g(z).
    """
    P = np.asarray(P, dtype=np.float64)
    if P.shape[1] != 3:
        raise InputError("The simplex plot needs exactly three classes.")
    n = len(P)
    idx = np.arange(n) if n <= max_points else np.sort(np.random.default_rng(random_state).choice(n, max_points, replace=False))
    fig = go.Figure()
    names = [plot_text(c) for c in class_names]  # axis titles and hover templates
    if G is not None:
        G = np.asarray(G, dtype=np.float64)[idx]
        G = G / np.maximum(G.sum(axis=1, keepdims=True), 1e-12)
        seg = np.full((3 * len(idx), 3), np.nan)
        seg[0::3], seg[1::3] = P[idx], G
        fig.add_trace(go.Scatterternary(a=seg[:, 0], b=seg[:, 1], c=seg[:, 2], mode="lines",
                                        line=dict(color="rgba(120,120,120,0.5)", width=1), name="shift", hoverinfo="skip"))
        fig.add_trace(go.Scatterternary(a=G[:, 0], b=G[:, 1], c=G[:, 2], mode="markers",
                                        marker=dict(color=RECAL, size=5), name="estimated recalibrated position",
                                        hovertemplate=f"{names[0]} %{{a:.2f}}<br>{names[1]} %{{b:.2f}}<br>"
                                                      f"{names[2]} %{{c:.2f}}<extra>recalibrated</extra>"))
    color = None if labels is None else np.asarray(labels)[idx]
    fig.add_trace(go.Scatterternary(a=P[idx, 0], b=P[idx, 1], c=P[idx, 2], mode="markers",
                                    marker=dict(color=LINE if color is None else color, size=5,
                                                colorscale=([[0, "#1f77b4"], [0.5, "#2ca02c"], [1, "#9467bd"]]
                                                            if color is not None else None),
                                                line=dict(width=0.5, color="white")),
                                    name="prediction (colour: true class)" if color is not None else "prediction",
                                    hovertemplate=f"{names[0]} %{{a:.2f}}<br>{names[1]} %{{b:.2f}}<br>"
                                                  f"{names[2]} %{{c:.2f}}<extra>prediction</extra>"))
    fig.update_layout(ternary=dict(aaxis_title=names[0], baxis_title=names[1], caxis_title=names[2]),
                      height=560, margin=dict(t=40, b=40), legend=LEGEND_BELOW)
    return auto_margins(fig)


def continuous_reliability_figure(curve, title=None, xlabel="confidence (max probability)", ylabel="fraction correct"):
    """Continuous reliability curve (Posocco & Bonnefoy 2021) with its bootstrap band and,
    below, the estimated density of the confidences.

    ``curve`` is a :func:`calibdash.display.reliability.continuous_reliability_curve` frame; its NaN
    rows (too few predictions within the kernel's reach for an estimate) are left as gaps.
    """
    x = curve["confidence"].to_numpy()
    fig = make_subplots(rows=2, cols=1, row_heights=[0.75, 0.25], shared_xaxes=True, vertical_spacing=0.05)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color=BASE, dash="dash"),
                             name="perfect calibration", hoverinfo="skip"), row=1, col=1)
    if curve["upper"].notna().any():
        fig.add_trace(go.Scatter(x=x, y=curve["upper"], mode="lines", line=dict(width=0), hoverinfo="skip",
                                 showlegend=False, name="band upper"), row=1, col=1)
        fig.add_trace(go.Scatter(x=x, y=curve["lower"], mode="lines", line=dict(width=0), fill="tonexty",
                                 fillcolor="rgba(31,119,180,0.2)", hoverinfo="skip", name="bootstrap band"),
                      row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=curve["accuracy"], mode="lines", line=dict(color=LINE, width=2.5),
                             name="estimated P(correct | confidence)",
                             customdata=np.stack([curve["lower"], curve["upper"], curve["rows"]], axis=1),
                             hovertemplate="confidence %{x:.3f}<br>estimated frequency %{y:.3f}"
                                           "<br>band %{customdata[0]:.3f}-%{customdata[1]:.3f}"
                                           "<br>about %{customdata[2]:.0f} predictions within reach<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=curve["density"], mode="lines", line=dict(color=BASE), fill="tozeroy",
                             name="density of predictions", showlegend=False,
                             hovertemplate="confidence %{x:.3f}<br>density %{y:.3g}<extra></extra>"), row=2, col=1)
    fig.update_yaxes(range=[0, 1.02], title_text=ylabel, row=1, col=1)
    fig.update_yaxes(title_text="density", row=2, col=1)
    fig.update_xaxes(range=[0, 1], row=1, col=1)
    fig.update_xaxes(range=[0, 1], title_text=xlabel, row=2, col=1)
    fig.update_layout(title=title, height=560, margin=dict(t=60, b=50, l=60, r=20), legend=LEGEND_BELOW)
    return auto_margins(fig)


QUANTITY_GAP_PX = 75


def estimates_by_quantity(result):
    """Every estimate of a result, ranked and from the literature, in one panel per quantity
    estimated (so that no two numbers on different scales share an axis), with ~95%
    intervals. The ranked estimators sit in the "calibration error (L2)" panel, the one the
    risk selected in red."""
    from calibdash.metrics.literature import QUANTITIES

    s = result.summary
    rows = [dict(quantity="calibration error (L2)", name=f"{e} (ranked)", estimate=v, low=lo, high=hi, best=e == result.best["estimator"])
            for e, v, lo, hi in zip(s["estimator"], s["estimate"], s["ci_low"], s["ci_high"])]
    o = result.others
    rows += [dict(quantity=q, name=e, estimate=v, low=lo, high=hi, best=False)
             for e, q, v, lo, hi in zip(o["estimator"], o["quantity"], o["estimate"], o["ci_low"], o["ci_high"])]
    groups = [q for q in QUANTITIES if any(r["quantity"] == q for r in rows)]
    sizes = [sum(r["quantity"] == q for r in rows) for q in groups]
    # Each panel is 34 pixels per row plus 50 for its tick labels' half rows; between two
    # panels, room for the upper one's tick labels and the lower one's title.
    panels = [34 * k + 50 for k in sizes]
    margin = dict(t=40, b=40, l=10, r=20)
    height = sum(panels) + (len(groups) - 1) * QUANTITY_GAP_PX + margin["t"] + margin["b"]
    fig = make_subplots(rows=len(groups), cols=1, row_heights=panels,
                        vertical_spacing=subplot_spacing(QUANTITY_GAP_PX, height, margin) if len(groups) > 1 else 0,
                        subplot_titles=[q if f"({quantity_unit(q)})" in q else f"{q} ({quantity_unit(q)})" for q in groups])
    for i, q in enumerate(groups, start=1):
        g = [r for r in rows if r["quantity"] == q][::-1]
        scale = quantity_scale(q)  # calibration errors in percentage points, the others on their own scale
        est = np.array([r["estimate"] for r in g]) * scale
        low = np.array([r["low"] for r in g]) * scale
        high = np.array([r["high"] for r in g]) * scale
        fig.add_trace(go.Scatter(
            x=est, y=[r["name"] for r in g], mode="markers", showlegend=False,
            marker=dict(color=[BEST if r["best"] else LINE for r in g], size=MARKER_PX),
            error_x=interval_bars(np.nan_to_num(high - est), np.nan_to_num(est - low)),
            customdata=np.stack([low, high], axis=1),
            hovertemplate="%{y}: %{x:.4g} (95% interval %{customdata[0]:.4g} to %{customdata[1]:.4g})<extra>" + q + "</extra>",
        ), row=i, col=1)
    fig.update_layout(height=height, margin=margin)
    fig.update_xaxes(exponentformat="power")
    return auto_margins(fig)


__all__ = ["is_log_grid", "curve_stats", "tuned_estimators", "curve_estimators", "power_of_ten", "hyperparameter_axis",
           "subplot_spacing", "auto_margins", "interval_bars", "class_title", "risk_curves", "forest_plot", "reliability_figure",
           "per_class_figure", "ternary_figure", "continuous_reliability_figure", "estimates_by_quantity"]


# -- model comparison and the simulation lab -------------------------------------------
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


def comparison_figure(comparison):
    """Calibration error (with its interval), accuracy and Brier score of every model,
    side by side, so that calibration is not mistaken for accuracy."""
    m = comparison.models
    names = [plot_text(n) for n in m["model"]]  # category labels, shown again by %{y}
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[f"calibration error ({comparison.estimator}), percentage points", "accuracy",
                                        "Brier score"])
    est = 100 * m["estimate"].to_numpy()
    fig.add_trace(go.Scatter(
        x=est, y=names, mode="markers", marker=dict(color=LINE, size=MARKER_PX), showlegend=False,
        error_x=interval_bars(100 * m["ci_high"].to_numpy() - est, est - 100 * m["ci_low"].to_numpy()),
        customdata=100 * m[["ci_low", "ci_high"]].to_numpy(),
        hovertemplate="%{y}: %{x:.2f} points (%{customdata[0]:.2f} to %{customdata[1]:.2f})<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=100 * m["accuracy"], y=names, orientation="h", marker=dict(color=BASE), showlegend=False,
                         hovertemplate="%{y}: %{x:.1f}% correct<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Bar(x=m["brier"], y=names, orientation="h", marker=dict(color="#bcbd22"), showlegend=False,
                         hovertemplate="%{y}: Brier %{x:.4f}<extra></extra>"), row=1, col=3)
    fig.update_xaxes(title_text="percentage points (interval)", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text="% correct", range=[0, 100], row=1, col=2)
    fig.update_xaxes(title_text="lower is better", rangemode="tozero", row=1, col=3)
    fig.update_layout(height=120 + 50 * len(names), margin=dict(t=50, b=50, l=10, r=20))
    return auto_margins(fig)


def pairs_figure(comparison):
    """Differences of the calibration errors between pairs of models, in percentage points,
    with their intervals (:func:`calibdash.evaluation.compare.error_difference_interval`; a pair
    without one, an error near 0, shows its point alone and says so on hover). Red: p < 0.05,
    the paired test of equal squared errors, that is of equal errors.

    Left of 0: the first model of the pair is better calibrated.
    """
    p = comparison_pairs_points(comparison)
    labels = [f"{plot_text(a)} - {plot_text(b)}" for a, b in zip(p["model_a"], p["model_b"])]
    colors = [BEST if pv < 0.05 else LINE for pv in p["p_value"]]
    x, low, high = (p[c].to_numpy(dtype=float) for c in ("error_difference", "error_difference_low", "error_difference_high"))
    interval = [f"{lo:.2f} to {hi:.2f}" if np.isfinite(lo) else NO_PAIR_INTERVAL for lo, hi in zip(low, high)]
    fig = go.Figure(go.Scatter(
        x=x, y=labels, mode="markers", marker=dict(color=colors, size=MARKER_PX), showlegend=False,
        error_x=interval_bars(np.nan_to_num(high - x), np.nan_to_num(x - low)),
        customdata=np.column_stack([np.array(interval, dtype=object), p["p_value"].to_numpy()]),
        hovertemplate="%{y}: %{x:.2f} points (%{customdata[0]}), p = %{customdata[1]:.3g}<extra></extra>"))
    fig.add_vline(x=0, line=dict(color=BASE, dash="dash"))
    fig.update_layout(xaxis_title="difference of calibration errors (a - b), percentage points;<br>below 0: a is better "
                                  "calibrated",
                      height=100 + 50 * len(labels), margin=dict(t=30, b=50, l=10, r=20),
                      title=dict(text="red: p < 0.05", font=dict(size=13)))
    return auto_margins(fig)


def overlaid_reliability_figure(tables, title="Top-label reliability, all models"):
    """Reliability curves of several models in one panel: per-bin mean confidence against
    the observed frequency, one line per model (``tables``: {model: reliability_table})."""
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color=BASE, dash="dash"),
                               name="perfect calibration", hoverinfo="skip"))
    for i, (name, t) in enumerate(tables.items()):
        t = t[t["count"] > 0]
        name = plot_text(name)
        fig.add_trace(go.Scatter(
            x=t["confidence"], y=t["accuracy"], mode="lines+markers", name=name,
            line=dict(color=_PALETTE[i % len(_PALETTE)]), marker=dict(size=np.clip(4 + np.sqrt(t["count"]) / 3, 4, 16)),
            customdata=t[["count", "band_low", "band_high"]].to_numpy(),
            hovertemplate=f"{name}<br>confidence %{{x:.3f}}<br>frequency %{{y:.3f}} "
                          "(band %{customdata[1]:.3f}-%{customdata[2]:.3f})<br>%{customdata[0]} predictions<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="confidence (max probability);<br>marker size: predictions in the bin",
                      yaxis_title="fraction correct", height=520, margin=dict(t=60, b=50, l=60, r=20),
                      legend=LEGEND_BELOW)
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(range=[0, 1.02])
    return auto_margins(fig)


# The columns of calibdash.lab.studies.summarise_estimates on the scale of the calibration error.
LAB_ERROR_COLUMNS = ("mean", "sd", "se_mean", "bias", "rmse", "truth")


def lab_summary_points(summary):
    """:func:`calibdash.lab.studies.summarise_estimates` with its error columns in
    percentage points, the unit of :func:`lab_estimates_figure` (a table beside the chart
    must not show the same numbers as fractions)."""
    return summary.assign(**{c: 100 * summary[c] for c in LAB_ERROR_COLUMNS})


COMPARISON_ERROR_COLUMNS = ("estimate", "ci_low", "ci_high")


def comparison_models_points(models):
    """The Compare page's models table (:attr:`calibdash.evaluation.compare.ComparisonResult.models`) with its
    calibration errors in percentage points and its accuracy in % correct, the units of
    :func:`comparison_figure`, and without the squared errors (the CSV download keeps every column at
    full precision, in fractions)."""
    shown = models.drop(columns=["squared_estimate", "squared_se"], errors="ignore")
    return shown.assign(**{c: 100 * shown[c] for c in (*COMPARISON_ERROR_COLUMNS, "accuracy")})


COMPARISON_PAIR_COLUMNS = ("error_difference", "error_difference_low", "error_difference_high", "estimate_a", "estimate_b")
# What a pair without an interval of its difference of errors shows instead.
NO_PAIR_INTERVAL = "no interval: an error is within two standard errors of 0"


def comparison_pairs_points(comparison):
    """The Compare page's pairs table: :meth:`calibdash.evaluation.compare.ComparisonResult.error_differences`
    in percentage points, the unit of :func:`pairs_figure` (the two models, the difference of their errors
    with its interval, the p-value and each model's error). The difference of the squared errors, which
    the p-value tests, is left out; the CSV download keeps :attr:`ComparisonResult.pairs` at full
    precision, in fractions."""
    shown = comparison.error_differences()
    return shown.assign(**{c: 100 * shown[c] for c in COMPARISON_PAIR_COLUMNS})


# One colour per estimator, whichever estimators a view shows: Learn's lines changed colour when
# an estimator was added or removed (issue 27). The registry's order picks it; ten colours for its ten.
_ESTIMATOR_PALETTE = _PALETTE + ("#7f7f7f", "#393b79")


def estimator_color(name):
    """The colour of the estimator ``name`` in every figure that draws estimators as lines."""
    order = list(REGISTRY)
    return _ESTIMATOR_PALETTE[order.index(name) % len(_ESTIMATOR_PALETTE)] if name in order else BASE


def lab_estimates_figure(summary, truth):
    """Each estimator's mean estimate (line) and spread over repeated draws (band, +- one
    sd) against the sample size, with the true calibration error (dashed), in percentage
    points; every estimator in its own colour (:func:`estimator_color`)."""
    fig = go.Figure()
    points = lab_summary_points(summary)
    for name, part in points.groupby("estimator", sort=False):
        part = part.sort_values("n")
        color = estimator_color(name)
        x, m, sd = part["n"].to_numpy(float), part["mean"].to_numpy(), part["sd"].to_numpy()
        r, g, b = (int(color[k:k + 2], 16) for k in (1, 3, 5))
        # mode "lines" of width 0: a Scatter of fewer than 20 points would otherwise also draw
        # its corners as markers, in a colour of plotly's own that no legend entry has
        fig.add_trace(go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([m + sd, (m - sd)[::-1]]), fill="toself",
                                 mode="lines", fillcolor=f"rgba({r},{g},{b},0.15)", line=dict(width=0, color=color),
                                 hoverinfo="skip", showlegend=False, legendgroup=name, name=f"{name} spread"))
        fig.add_trace(go.Scatter(x=x, y=m, mode="lines+markers", name=name, line=dict(color=color), marker=dict(color=color),
                                 legendgroup=name,
                                 customdata=np.stack([sd, part["bias"].to_numpy()], axis=1),
                                 hovertemplate=f"{name}, n = %{{x}}<br>mean %{{y:.2f}} &plusmn; %{{customdata[0]:.2f}} points"
                                               "<br>bias %{customdata[1]:+.2f}<extra></extra>"))
    ns = sorted(summary["n"].unique())
    fig.add_trace(go.Scatter(x=[ns[0], ns[-1]], y=[100 * truth] * 2, mode="lines", name="truth",
                             line=dict(color="black", dash="dash", width=2),
                             hovertemplate="true error %{y:.2f} points<extra></extra>"))
    fig.update_xaxes(type="log", title_text="sample size n", tickmode="array", tickvals=ns, ticktext=[f"{n:,}" for n in ns])
    fig.update_yaxes(title_text="calibration error (percentage points)")
    fig.update_layout(height=460, margin=dict(t=30, b=50, l=60, r=20), legend=LEGEND_BELOW)
    return auto_margins(fig)


def figure1_figure(df, max_seed_lines=20):
    """The paper's Figure 1: risk of h_theta against theta, a few seeds as thin lines, the
    mean over seeds with +- one standard error, and its minimiser (red)."""
    from calibdash.lab.studies import summarise_figure1

    s = summarise_figure1(df)
    fig = go.Figure()
    for i, (_seed, part) in enumerate(df.groupby("seed")):
        if i >= max_seed_lines:
            break
        fig.add_trace(go.Scatter(x=part["theta"], y=part["risk"], mode="lines", line=dict(color="rgba(127,127,127,0.25)", width=1),
                                 name="single seeds", showlegend=i == 0, legendgroup="seeds", hoverinfo="skip"))
    x, m, se = s["theta"].to_numpy(), s["mean"].to_numpy(), s["se"].to_numpy()
    fig.add_trace(go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([m + se, (m - se)[::-1]]), fill="toself",
                             mode="lines", fillcolor="rgba(31,119,180,0.25)", line=dict(width=0, color=LINE), hoverinfo="skip",
                             showlegend=False, legendgroup="mean", name="mean +- one standard error"))
    fig.add_trace(go.Scatter(x=x, y=m, mode="lines", line=dict(color=LINE, width=3), name=f"mean over {int(s['count'].max())} seeds",
                             legendgroup="mean",
                             hovertemplate="theta = %{x:.3f}<br>mean risk %{y:.6g}<extra></extra>"))
    best = s.attrs["argmin"]
    fig.add_trace(go.Scatter(x=[best], y=[float(s.loc[s["theta"] == best, "mean"].iloc[0])], mode="markers",
                             marker=dict(color=BEST, size=13, symbol="diamond"), name=f"minimum at theta = {best:.3g}"))
    fig.add_vline(x=1.0, line=dict(color="black", dash="dash"))
    fig.update_layout(xaxis_title="theta (1 = the true conditional probabilities)", yaxis_title="risk (Eq. 20)",
                      height=460, margin=dict(t=30, b=50, l=70, r=20), legend=LEGEND_BELOW)
    # The single seeds spread far wider than the mean's band; keep the mean readable.
    lo, hi = float(np.min(m - 3 * se)), float(np.max(m + 3 * se))
    pad = 0.5 * (hi - lo)
    fig.update_yaxes(range=[lo - pad, hi + pad])
    return auto_margins(fig)


__all__ += ["COMPARISON_PAIR_COLUMNS", "NO_PAIR_INTERVAL", "comparison_pairs_points"]
__all__ += ["comparison_figure", "pairs_figure", "overlaid_reliability_figure", "LAB_ERROR_COLUMNS", "lab_summary_points",
            "lab_estimates_figure", "estimator_color", "figure1_figure"]
