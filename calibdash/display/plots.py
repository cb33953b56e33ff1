"""Plotly figure builders for the app (no Streamlit here, so they are testable alone).

plotly renders a subset of HTML (links among it) in titles, axis labels, legends, category
labels and hover texts, so every name that comes from the user's data (class names, model
names) goes into a figure through :func:`calibdash.display.text.plot_text`, and shows as typed.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calibdash.display.text import plot_text
from calibdash.errors import InputError
from calibdash.estimators.registry import parameter

BEST = "#d62728"
BASE = "#7f7f7f"
LINE = "#1f77b4"
RECAL = "#ff7f0e"
TIED = "#1f3c88"



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


def risk_curves(result, ncols=2):
    """Validation risk against the tuned hyperparameter, one panel per estimator.

    The line is the mean over folds; the band +- one *paired* standard error, of each
    value's fold-by-fold risk difference to the chosen value (zero width at the chosen
    value: where the band of another value stays above the diamond, the data tell them
    apart); the red diamond the chosen value; the dotted grey line the 15-bin estimator's
    risk and the dashed black line the risk of h = 0, "perfectly calibrated" (an estimator
    that is not clearly below it has not shown any miscalibration).
    """
    names = tuned_estimators(result)
    s = result.summary.set_index("estimator")
    baseline = float(s.loc["15-bins", "val_risk"]) if "15-bins" in s.index else None
    ref = result.reference
    zero = None if ref is None else float(ref["val_risk"])
    n = max(len(names), 1)
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=names or ["no tuned estimator"], horizontal_spacing=0.08,
                        vertical_spacing=0.16 if nrows > 1 else 0.1)
    for i, name in enumerate(names):
        row, col = i // ncols + 1, i % ncols + 1
        stats = curve_stats(result, name)
        param = result.curves.loc[result.curves["estimator"] == name, "param"].iloc[0]
        values = stats["value"].tolist()
        log = is_log_grid(values)
        for fixed, part in stats.groupby("fixed", sort=False):
            part = part.sort_values("value")
            x, m, se = part["value"].astype(float).to_numpy(), part["mean"].to_numpy(), part["paired_se"].to_numpy()
            label = name + (f" ({fixed})" if fixed and stats["fixed"].nunique() > 1 else "")
            fig.add_trace(
                go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([m + se, (m - se)[::-1]]), fill="toself",
                           fillcolor="rgba(31,119,180,0.18)", line=dict(width=0), hoverinfo="skip", showlegend=False,
                           name=f"{label} paired band"),
                row=row, col=col,
            )
            fig.add_trace(
                go.Scatter(x=x, y=m, mode="lines+markers", line=dict(color=LINE), marker=dict(size=5), name=label,
                           showlegend=False, customdata=se,
                           hovertemplate=f"{param} = %{{x:.3g}}<br>risk = %{{y:.5g}}<br>paired s.e. to the chosen value "
                                         f"%{{customdata:.2g}}<extra>{label}</extra>"),
                row=row, col=col,
            )
        chosen = s.loc[name, "params"][param]
        fig.add_trace(
            go.Scatter(x=[chosen], y=[s.loc[name, "val_risk"]], mode="markers",
                       marker=dict(color=BEST, size=12, symbol="diamond"), showlegend=i == 0, name="chosen value",
                       hovertemplate=f"chosen {param} = %{{x:.3g}}<br>risk = %{{y:.5g}}<extra></extra>"),
            row=row, col=col,
        )
        if baseline is not None:
            fig.add_trace(
                go.Scatter(x=[min(values), max(values)], y=[baseline, baseline], mode="lines",
                           line=dict(color=BASE, dash="dot"), name="15-bin risk", showlegend=i == 0,
                           hovertemplate="15-bin risk = %{y:.5g}<extra></extra>"),
                row=row, col=col,
            )
        lows, highs = stats["mean"] - stats["paired_se"], stats["mean"] + stats["paired_se"]
        y_range = _robust_range(lows, highs, baseline)
        if y_range is None:
            lo, hi = float(np.nanmin(lows)), float(np.nanmax(highs))
            if baseline is not None:
                lo, hi = min(lo, baseline), max(hi, baseline)
            pad = 0.08 * max(hi - lo, 1e-12 * max(abs(hi), 1e-300))
            y_range = [lo - pad, hi + pad]
        if zero is not None:
            # Drawn where it falls; when it lies above the panel (it usually does: any
            # estimator that shows miscalibration beats it), a note says where.
            fig.add_trace(
                go.Scatter(x=[min(values), max(values)], y=[zero, zero], mode="lines",
                           line=dict(color="#222", dash="dash"), name="risk of h = 0 (perfectly calibrated)",
                           showlegend=i == 0, hovertemplate="risk of h = 0 = %{y:.5g}<extra></extra>"),
                row=row, col=col,
            )
            if zero > y_range[1]:
                fig.add_annotation(text=f"h = 0: risk {zero:.4g} (above)", xref="x domain" if i == 0 else f"x{i + 1} domain",
                                   yref="y domain" if i == 0 else f"y{i + 1} domain", x=0.98, y=0.98, xanchor="right",
                                   yanchor="top", showarrow=False, font=dict(size=11, color="#222"))
        fig.update_yaxes(range=y_range, row=row, col=col)
        fig.update_xaxes(type="log" if log else "linear", title_text=parameter_words(param), row=row, col=col)
        fig.update_yaxes(title_text="validation risk" if col == 1 else None, row=row, col=col)
    fig.update_layout(height=300 * nrows + 80, margin=dict(t=60, b=40, l=60, r=20),
                      legend=dict(orientation="h", y=1.02 + 0.04 / nrows, x=1, xanchor="right", yanchor="bottom"))
    return fig


def forest_plot(result):
    """Estimates of the calibration error (percentage points) with their 95% intervals.

    Red: the estimator of lowest validation risk; dark blue: the others the risk cannot
    tell apart from it (tied); grey: those measurably worse. The shaded band is the
    verdict's interval (the union of the tied estimators' intervals, from 0 when h = 0 is
    tied), and the dashed line marks 0, perfect calibration.
    """
    from calibdash.display.verdict import verdict

    s = result.summary.sort_values("val_risk", ascending=False)
    best = result.best["estimator"]
    est = 100 * s["estimate"].to_numpy()
    low, high = 100 * s["ci_low"].to_numpy(), 100 * s["ci_high"].to_numpy()
    tied = s["tied"].to_numpy(dtype=bool)
    colors = [BEST if e == best else (TIED if t else BASE) for e, t in zip(s["estimator"], tied)]
    status = ["lowest risk" if e == best else ("tied with the best" if t else "measurably worse risk")
              for e, t in zip(s["estimator"], tied)]
    v = verdict(result)
    fig = go.Figure()
    fig.add_vrect(x0=v.low_pp, x1=v.high_pp, fillcolor="rgba(214,39,40,0.10)", line_width=0, layer="below")
    fig.add_trace(go.Scatter(
        x=est, y=s["estimator"], mode="markers", marker=dict(color=colors, size=11),
        error_x=dict(type="data", symmetric=False, array=high - est, arrayminus=est - low, visible=True, color="#555"),
        customdata=np.stack([low, high, s["val_risk"].to_numpy(), np.array(status, dtype=object)], axis=1),
        hovertemplate="%{y}: %{x:.2f} points, 95% interval %{customdata[0]:.2f} to %{customdata[1]:.2f}"
                      "<br>validation risk %{customdata[2]:.5g} (%{customdata[3]})<extra></extra>",
        showlegend=False,
    ))
    fig.add_vline(x=0, line=dict(color="#222", dash="dash", width=1))
    fig.update_layout(
        xaxis_title="estimated calibration error (percentage points, 95% interval)",
        yaxis_title=None, height=110 + 45 * len(s), margin=dict(t=50, b=50, l=110, r=20),
        title=dict(text="red: lowest validation risk; blue: tied with it; grey: measurably worse; "
                        "shaded: the verdict's interval", font=dict(size=13)),
    )
    fig.update_xaxes(rangemode="tozero")
    return fig


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
        fig.add_trace(go.Scatter(x=x, y=g, mode="markers",
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
    fig.update_layout(title=title, height=560, bargap=0, margin=dict(t=60, b=50, l=60, r=20),
                      legend=dict(orientation="h", y=-0.18))
    return fig


def per_class_figure(tables, class_names, recal=None, ncols=3):
    """Small reliability panels, one per class: p_k against the frequency of class k.

    ``recal`` is an optional {k: (p_k, g_k)} of the recalibration map per class.
    """
    keys = list(tables)
    ncols = min(ncols, len(keys))
    nrows = math.ceil(len(keys) / ncols)
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=[plot_text(class_names[k]) for k in keys],
                        horizontal_spacing=0.06, vertical_spacing=0.12 / max(1, nrows / 3))
    for i, k in enumerate(keys):
        r = None if recal is None or k not in recal else (*recal[k], "recalibrated (selected estimator)")
        _reliability_traces(fig, tables[k], r, row=i // ncols + 1, col=i % ncols + 1, show_legend=i == 0)
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(range=[0, 1.02])
    fig.update_layout(height=260 * nrows + 80, bargap=0, margin=dict(t=50, b=40, l=40, r=20),
                      legend=dict(orientation="h", y=-0.08))
    return fig


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
                      height=560, margin=dict(t=40, b=40), legend=dict(orientation="h", y=-0.05))
    return fig


def continuous_reliability_figure(curve, title=None, xlabel="confidence (max probability)", ylabel="fraction correct"):
    """Continuous reliability curve (Posocco & Bonnefoy 2021) with its bootstrap band and,
    below, the estimated density of the confidences.

    ``curve`` is a :func:`calibdash.display.reliability.continuous_reliability_curve` frame; its NaN
    rows (no prediction within the kernel's reach) are left as gaps.
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
                             customdata=np.stack([curve["lower"], curve["upper"]], axis=1),
                             hovertemplate="confidence %{x:.3f}<br>estimated frequency %{y:.3f}"
                                           "<br>band %{customdata[0]:.3f}-%{customdata[1]:.3f}<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=curve["density"], mode="lines", line=dict(color=BASE), fill="tozeroy",
                             name="density of predictions", showlegend=False,
                             hovertemplate="confidence %{x:.3f}<br>density %{y:.3g}<extra></extra>"), row=2, col=1)
    fig.update_yaxes(range=[0, 1.02], title_text=ylabel, row=1, col=1)
    fig.update_yaxes(title_text="density", row=2, col=1)
    fig.update_xaxes(range=[0, 1], row=1, col=1)
    fig.update_xaxes(range=[0, 1], title_text=xlabel, row=2, col=1)
    fig.update_layout(title=title, height=560, margin=dict(t=60, b=50, l=60, r=20), legend=dict(orientation="h", y=-0.18))
    return fig


# Estimates on the scale of a calibration error are shown in percentage points.
_PERCENT_QUANTITIES = ("calibration error (L2)", "L1 calibration error")


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
    fig = make_subplots(rows=len(groups), cols=1, row_heights=[n + 1.5 for n in sizes], vertical_spacing=0.6 / (sum(sizes) + 2),
                        subplot_titles=[f"{q} ({'percentage points' if q in _PERCENT_QUANTITIES else 'raw'})" for q in groups])
    for i, q in enumerate(groups, start=1):
        g = [r for r in rows if r["quantity"] == q][::-1]
        scale = 100.0 if q in _PERCENT_QUANTITIES else 1.0
        est = np.array([r["estimate"] for r in g]) * scale
        low = np.array([r["low"] for r in g]) * scale
        high = np.array([r["high"] for r in g]) * scale
        fig.add_trace(go.Scatter(
            x=est, y=[r["name"] for r in g], mode="markers", showlegend=False,
            marker=dict(color=[BEST if r["best"] else LINE for r in g], size=10),
            error_x=dict(type="data", symmetric=False, array=np.nan_to_num(high - est), arrayminus=np.nan_to_num(est - low),
                         visible=True, color="#555"),
            customdata=np.stack([low, high], axis=1),
            hovertemplate="%{y}: %{x:.4g} (95% interval %{customdata[0]:.4g} to %{customdata[1]:.4g})<extra>" + q + "</extra>",
        ), row=i, col=1)
    fig.update_layout(height=120 + 34 * sum(sizes) + 60 * len(groups), margin=dict(t=40, b=30, l=10, r=20))
    fig.update_yaxes(automargin=True)
    return fig


__all__ = ["is_log_grid", "curve_stats", "tuned_estimators", "risk_curves", "forest_plot", "reliability_figure", "per_class_figure",
           "ternary_figure", "continuous_reliability_figure", "estimates_by_quantity"]


# -- model comparison and the simulation lab -------------------------------------------
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


def comparison_figure(comparison):
    """Calibration error (with its interval), accuracy and Brier score of every model,
    side by side, so that calibration is not mistaken for accuracy."""
    m = comparison.models
    names = [plot_text(n) for n in m["model"]]  # category labels, shown again by %{y}
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[f"calibration error ({comparison.estimator})", "accuracy", "Brier score"])
    est = 100 * m["estimate"].to_numpy()
    fig.add_trace(go.Scatter(
        x=est, y=names, mode="markers", marker=dict(color=LINE, size=11), showlegend=False,
        error_x=dict(type="data", symmetric=False, array=100 * m["ci_high"].to_numpy() - est,
                     arrayminus=est - 100 * m["ci_low"].to_numpy(), color="#555"),
        customdata=100 * m[["ci_low", "ci_high"]].to_numpy(),
        hovertemplate="%{y}: %{x:.2f} points (%{customdata[0]:.2f} to %{customdata[1]:.2f})<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=100 * m["accuracy"], y=names, orientation="h", marker=dict(color=BASE), showlegend=False,
                         hovertemplate="%{y}: %{x:.1f}% correct<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Bar(x=m["brier"], y=names, orientation="h", marker=dict(color="#bcbd22"), showlegend=False,
                         hovertemplate="%{y}: Brier %{x:.4f}<extra></extra>"), row=1, col=3)
    fig.update_xaxes(title_text="percentage points (interval)", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text="% correct", range=[0, 100], row=1, col=2)
    fig.update_xaxes(title_text="lower is better", rangemode="tozero", row=1, col=3)
    fig.update_layout(height=120 + 50 * len(names), margin=dict(t=50, b=50, l=150, r=20))
    return fig


def pairs_figure(comparison):
    """Differences of squared calibration errors between pairs of models, with intervals.

    Left of 0: the first model of the pair is better calibrated.
    """
    p = comparison.pairs
    labels = [f"{plot_text(a)} - {plot_text(b)}" for a, b in zip(p["model_a"], p["model_b"])]
    colors = [BEST if pv < 0.05 else LINE for pv in p["p_value"]]
    fig = go.Figure(go.Scatter(
        x=p["difference"], y=labels, mode="markers", marker=dict(color=colors, size=11), showlegend=False,
        error_x=dict(type="data", symmetric=False, array=(p["ci_high"] - p["difference"]).to_numpy(),
                     arrayminus=(p["difference"] - p["ci_low"]).to_numpy(), color="#555"),
        customdata=p[["ci_low", "ci_high", "p_value"]].to_numpy(),
        hovertemplate="%{y}: %{x:.3g} (%{customdata[0]:.3g} to %{customdata[1]:.3g}), p = %{customdata[2]:.3g}<extra></extra>"))
    fig.add_vline(x=0, line=dict(color=BASE, dash="dash"))
    fig.update_layout(xaxis_title="difference of squared calibration errors (a - b); below 0: a is better calibrated",
                      height=100 + 50 * len(labels), margin=dict(t=30, b=50, l=260, r=20),
                      title=dict(text="red: p < 0.05", font=dict(size=13)))
    return fig


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
    fig.update_layout(title=title, xaxis_title="confidence (max probability); marker size: predictions in the bin",
                      yaxis_title="fraction correct", height=520, margin=dict(t=60, b=50, l=60, r=20),
                      legend=dict(orientation="h", y=-0.15))
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(range=[0, 1.02])
    return fig


def lab_estimates_figure(summary, truth):
    """Each estimator's mean estimate (line) and spread over repeated draws (band, +- one
    sd) against the sample size, with the true calibration error (dashed)."""
    fig = go.Figure()
    for i, (name, part) in enumerate(summary.groupby("estimator", sort=False)):
        part = part.sort_values("n")
        color = _PALETTE[i % len(_PALETTE)]
        x, m, sd = part["n"].to_numpy(float), 100 * part["mean"].to_numpy(), 100 * part["sd"].to_numpy()
        r, g, b = (int(color[k:k + 2], 16) for k in (1, 3, 5))
        fig.add_trace(go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([m + sd, (m - sd)[::-1]]), fill="toself",
                                 fillcolor=f"rgba({r},{g},{b},0.15)", line=dict(width=0), hoverinfo="skip",
                                 showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(x=x, y=m, mode="lines+markers", name=name, line=dict(color=color), legendgroup=name,
                                 customdata=np.stack([sd, 100 * part["bias"].to_numpy()], axis=1),
                                 hovertemplate=f"{name}, n = %{{x}}<br>mean %{{y:.2f}} &plusmn; %{{customdata[0]:.2f}} points"
                                               "<br>bias %{customdata[1]:+.2f}<extra></extra>"))
    ns = sorted(summary["n"].unique())
    fig.add_trace(go.Scatter(x=[ns[0], ns[-1]], y=[100 * truth] * 2, mode="lines", name="truth",
                             line=dict(color="black", dash="dash", width=2),
                             hovertemplate="true error %{y:.2f} points<extra></extra>"))
    fig.update_xaxes(type="log", title_text="sample size n", tickvals=ns)
    fig.update_yaxes(title_text="calibration error (percentage points)")
    fig.update_layout(height=460, margin=dict(t=30, b=50, l=60, r=20), legend=dict(orientation="h", y=-0.2))
    return fig


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
                             fillcolor="rgba(31,119,180,0.25)", line=dict(width=0), hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(x=x, y=m, mode="lines", line=dict(color=LINE, width=3), name=f"mean over {int(s['count'].max())} seeds",
                             hovertemplate="theta = %{x:.3f}<br>mean risk %{y:.6g}<extra></extra>"))
    best = s.attrs["argmin"]
    fig.add_trace(go.Scatter(x=[best], y=[float(s.loc[s["theta"] == best, "mean"].iloc[0])], mode="markers",
                             marker=dict(color=BEST, size=13, symbol="diamond"), name=f"minimum at theta = {best:.3g}"))
    fig.add_vline(x=1.0, line=dict(color="black", dash="dash"))
    fig.update_layout(xaxis_title="theta (1 = the true conditional probabilities)", yaxis_title="risk (Eq. 20)",
                      height=460, margin=dict(t=30, b=50, l=70, r=20), legend=dict(orientation="h", y=-0.2))
    # The single seeds spread far wider than the mean's band; keep the mean readable.
    lo, hi = float(np.min(m - 3 * se)), float(np.max(m + 3 * se))
    pad = 0.5 * (hi - lo)
    fig.update_yaxes(range=[lo - pad, hi + pad])
    return fig


__all__ += ["comparison_figure", "pairs_figure", "overlaid_reliability_figure", "lab_estimates_figure", "figure1_figure"]
