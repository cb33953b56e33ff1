"""Figures that are read right (issue 16): room between stacked panels, powers of ten on
log axes, a panel for every tunable estimator, legend colours that match the marks, class
names as panel titles, interval bars that show beside their markers."""

import re

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash.display import plots
from calibdash.display import reliability as rl
from calibdash.display.views import per_class_view
from calibdash.lab import demo
from calibdash.lab import studies as lab

# Pixels a stacked panel needs above it: its title (about 20) and the upper panel's tick
# labels (about 20), plus that panel's axis title (about 25) when it has one.
TITLE_AND_TICKS_PX = 45
AXIS_TITLE_PX = 25


@pytest.fixture(scope="module")
def sim():
    pred = demo.load_demo("simulation: 3 classes")
    return pred.probs[:1200], pred.labels[:1200]


@pytest.fixture(scope="module")
def top(sim):
    return cd.evaluate(*sim, notion="top-label", estimators=["15-bins", "bins", "kde", "ukkr", "temperature"])


@pytest.fixture(scope="module")
def canonical(sim):
    return cd.evaluate(*sim, notion="canonical", estimators=["kde", "kkkr", "temperature"],
                       grids={"temperature": {"temperature": ["fit", 0.5, 2.0]}})


def gaps_px(fig):
    """(pixels between each pair of vertically stacked panels, whether the upper one has an x-axis title)."""
    layout = fig.layout
    plot_px = layout.height - layout.margin.t - layout.margin.b
    out = []
    xaxes = {name: layout[name] for name in layout if name.startswith("xaxis")}
    for name, x in xaxes.items():
        y = layout["yaxis" + name[5:]]
        for other_name, other in xaxes.items():
            below = layout["yaxis" + other_name[5:]]
            if tuple(other.domain) == tuple(x.domain) and below.domain[1] < y.domain[0]:
                nearest = max(layout["yaxis" + n[5:]].domain[1] for n, a in xaxes.items()
                              if tuple(a.domain) == tuple(x.domain) and layout["yaxis" + n[5:]].domain[1] < y.domain[0])
                if below.domain[1] == nearest:
                    out.append(((y.domain[0] - below.domain[1]) * plot_px, bool(x.title.text)))
    return out


def assert_room_between_panels(fig):
    gaps = gaps_px(fig)
    assert gaps, "the figure has no stacked panels to check"
    for gap, titled in gaps:
        assert gap >= TITLE_AND_TICKS_PX + (AXIS_TITLE_PX if titled else 0), gaps


@pytest.mark.slow
def test_stacked_panels_leave_room_for_titles_and_tick_labels(sim, top, canonical):
    for res in (top, canonical):
        assert_room_between_panels(plots.estimates_by_quantity(res))
    assert_room_between_panels(plots.risk_curves(top))  # four panels: two rows
    P, y = sim
    G = rl.selected_recalibration(canonical, P)[1]
    tables = rl.per_class_tables(P, y, [0, 1, 2], n_bins=5, n_resamples=0)
    six = {**tables, **{k + 3: t for k, t in tables.items()}}
    fig = plots.per_class_figure(six, ["a", "b", "c", "d", "e", "f"], {k: (P[:, k % 3], G[:, k % 3]) for k in six})
    assert_room_between_panels(fig)


POWER = re.compile(r"10<sup>(\u2212?\d+)</sup>")


@pytest.mark.slow
def test_log_axes_read_as_powers_of_ten(top, canonical):
    for res in (top, canonical):
        fig = plots.risk_curves(res)
        axes = [fig.layout[name] for name in fig.layout if name.startswith("xaxis") and fig.layout[name].title.text]
        logs = [a for a in axes if a.type == "log"]
        assert logs
        for a in logs:
            assert a.tickmode == "array" and 2 <= len(a.ticktext) <= plots.MAX_POWER_TICKS
            assert all(POWER.fullmatch(t) for t in a.ticktext), a.ticktext
            ks = [int(POWER.fullmatch(t)[1].replace("\u2212", "-")) for t in a.ticktext]
            np.testing.assert_allclose(a.tickvals, [10.0 ** k for k in ks], rtol=1e-12)
        for a in axes:
            if a.type != "log" and a.tickmode != "array":
                assert a.exponentformat == "power"  # never plotly's SI prefixes ("1f", "10n")
    # a 17-decade lambda grid: labels every four decades, from its top; 10^0 whenever spanned
    assert plots.hyperparameter_axis(np.logspace(-18, -2, 17).tolist())[1]["ticktext"] == [
        plots.power_of_ten(k) for k in (-18, -14, -10, -6, -2)]
    assert plots.hyperparameter_axis(np.logspace(-10, 1, 12).tolist())[1]["ticktext"] == [
        plots.power_of_ten(k) for k in (-9, -6, -3, 0)]
    # a custom grid of 0.05 to 10: one label per decade, no minor digits "2, 5"
    position, axis = plots.hyperparameter_axis([0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10])
    assert axis["type"] == "log" and axis["ticktext"] == [plots.power_of_ten(k) for k in (-1, 0, 1)]
    assert position[0.2] == 0.2


@pytest.mark.slow
def test_temperature_gets_a_panel_with_its_values_as_categories(top, canonical):
    fig = plots.risk_curves(top)
    i = [a.text for a in fig.layout.annotations].index("temperature")
    axis = fig.layout[f"xaxis{i + 1}"]
    assert list(axis.ticktext) == ["fit"] and tuple(axis.range) == (-0.5, 0.5)
    assert axis.title.text == plots.parameter_words("temperature")
    s = top.summary.set_index("estimator")
    (diamond,) = [t for t in fig.data if t.name == "chosen value" and t.xaxis == f"x{i + 1}"]
    assert diamond.x[0] == 0 and diamond.y[0] == pytest.approx(s.loc["temperature", "val_risk"])
    lo, hi = fig.layout[f"yaxis{i + 1}"].range
    assert lo <= s.loc["temperature", "val_risk"] <= hi and lo <= s.loc["15-bins", "val_risk"] <= hi
    # a grid of numbers and "fit": numbers in order, then the word; the line joins them
    fig = plots.risk_curves(canonical)
    i = [a.text for a in fig.layout.annotations].index("temperature")
    assert list(fig.layout[f"xaxis{i + 1}"].ticktext) == ["0.5", "2", "fit"]
    (line,) = [t for t in fig.data if t.name == "temperature"]
    mean = canonical.curves[canonical.curves.estimator == "temperature"].groupby("value", sort=False)["val_risk"].mean()
    np.testing.assert_allclose(line.y, [mean[0.5], mean[2.0], mean["fit"]])
    assert plots.curve_estimators(top) == ["bins", "kde", "ukkr", "temperature"]


def drawn_colours(trace):
    """The colours a Scatter trace paints (None: one plotly picks, which no legend names)."""
    mode = trace.mode or ("lines+markers" if len(trace.x) < 20 else "lines")  # plotly's default mode
    colours = set()
    if "markers" in mode:
        colours.add(trace.marker.color)
    if "lines" in mode and trace.line.width != 0:
        colours.add(trace.line.color)
    if trace.fill not in (None, "none"):
        colours.add(trace.fillcolor)
    return colours


def assert_legend_matches_marks(fig):
    shown = [t for t in fig.data if t.showlegend is not False]
    legend_colours = set().union(*(drawn_colours(t) for t in shown))
    groups = {t.legendgroup for t in shown if t.legendgroup}
    for t in fig.data:
        colours = drawn_colours(t)
        assert None not in colours, f"{t.name!r} paints in a colour plotly picks"
        if t.showlegend is False:
            assert colours <= legend_colours or t.legendgroup in groups, f"{t.name!r}: {colours} has no legend entry"


@pytest.mark.slow
def test_learn_figures_legend_colours_match_the_marks():
    est = lab.estimates_vs_n(lab.scenario("logistic"), ns=[200, 300], n_repeats=2, estimators=["bins", "kde"], random_state=0)
    assert_legend_matches_marks(plots.lab_estimates_figure(lab.summarise_estimates(est), est["truth"].iloc[0]))
    df = lab.figure1(n=100, n_seeds=4, thetas=[0.6, 1.0, 1.4], random_state=0)
    assert_legend_matches_marks(plots.figure1_figure(df, max_seed_lines=3))


def test_learn_table_is_in_the_charts_unit():
    est = lab.estimates_vs_n(lab.scenario("logistic"), ns=[200], n_repeats=2, estimators=["bins"], random_state=0)
    summary = lab.summarise_estimates(est)
    points = plots.lab_summary_points(summary)
    for column in plots.LAB_ERROR_COLUMNS:
        np.testing.assert_allclose(points[column], 100 * summary[column])
    line = [t for t in plots.lab_estimates_figure(summary, est["truth"].iloc[0]).data if t.name == "bins"][0]
    np.testing.assert_allclose(line.y, points["mean"])
    axis = plots.lab_estimates_figure(summary, est["truth"].iloc[0]).layout.xaxis
    assert list(axis.ticktext) == ["200"]


def test_an_estimator_keeps_its_colour_whichever_estimators_are_shown():
    # Issue 27: Learn's lines changed colour between views (the colour was the line's place in the chart).
    from calibdash.estimators.registry import REGISTRY

    def colours(names):
        rows = [dict(n=n, estimator=e, mean=0.1, sd=0.01, se_mean=0.005, bias=0.0, rmse=0.01, truth=0.1, repeats=2)
                for n in (100, 200) for e in names]
        fig = plots.lab_estimates_figure(pd.DataFrame(rows), 0.1)
        return {t.name: t.line.color for t in fig.data if t.name in names}

    assert colours(["bins", "kde"])["kde"] == colours(["kde", "temperature"])["kde"] == colours(["temperature", "kde"])["kde"]
    every = colours(list(REGISTRY))
    assert len(set(every.values())) == len(REGISTRY) and every == {e: plots.estimator_color(e) for e in REGISTRY}


def binary(class_names=None):
    rng = np.random.default_rng(4)
    p = rng.uniform(size=400)
    y = (rng.random(400) < p).astype(int)
    return cd.load_predictions(p, y, class_names=class_names)


@pytest.mark.parametrize(("class_names", "titles"), [(["benign", "malignant"], ["benign", "malignant"]),
                                                     (None, ["class 0", "class 1"])])
def test_binary_panels_are_titled_by_class(class_names, titles):
    pred = binary(class_names)
    res = cd.evaluate(pred, notion="classwise", estimators=["bins"])
    view = per_class_view(pred, res, n_resamples=0)
    fig = plots.per_class_figure(view.tables, pred.class_names, view.recalibration)
    assert [a.text for a in fig.layout.annotations] == titles


@pytest.mark.slow
def test_interval_caps_reach_beyond_their_markers(top, sim):
    figures = [plots.forest_plot(top), plots.estimates_by_quantity(top)]
    # Two models on the simulation's rows (the data are already made): the probabilities and a
    # softened copy of them, as a temperature of 2 would give.
    P, y = sim
    softened = np.sqrt(P) / np.sqrt(P).sum(axis=1, keepdims=True)
    comparison = cd.compare({"as given": P, "softened": softened}, y, notion="top-label", estimator="bins", random_state=0)
    figures += [plots.comparison_figure(comparison), plots.pairs_figure(comparison)]
    bars = [t for f in figures for t in f.data if t.error_x and t.error_x.array is not None]
    assert len(bars) >= len(figures)
    for t in bars:
        assert t.error_x.visible is not False and t.error_x.thickness >= 2
        assert 2 * t.error_x.width > t.marker.size  # a cap shows even around an interval narrower than the marker


@pytest.mark.slow
def test_every_axis_pushes_its_margins(top, sim):
    P, y = sim
    table = rl.reliability_table(*rl.top_label(P, y), n_bins=10, n_resamples=0)
    for fig in (plots.risk_curves(top), plots.forest_plot(top), plots.estimates_by_quantity(top),
                plots.reliability_figure(table), plots.continuous_reliability_figure(rl.continuous_reliability_curve(P, y, n_resamples=0))):
        for name in fig.layout:
            if name.startswith(("xaxis", "yaxis")):
                assert fig.layout[name].automargin is True, name


def legend_place(fig):
    """Where the legend of ``fig`` lies: at the "foot" of the figure (container coordinates, where
    plotly reserves room for it under everything else), "above" the plot area, or "below" it (at a
    fraction of its height, where the x axis's title is too)."""
    lg = fig.layout.legend
    if lg.yref == "container" and lg.y == 0 and lg.yanchor == "bottom":
        return "foot"
    if lg.y is not None and lg.y >= 1 and lg.yanchor == "bottom":
        return "above"
    return "below"


def test_no_legend_can_cover_an_axis_title_or_the_figures_title(sim):
    # issue 27: on Compare's overlaid reliability chart the legend, below the plot, covered the x
    # axis's (two-line) title. A legend lies at the figure's foot, or above the plot area in a
    # figure without a title; below it only where no x axis has a title.
    # (tests/e2e/test_figures_browser.py measures them in chromium.)
    P, y = sim
    table = rl.reliability_table(*rl.top_label(P, y), n_bins=10, n_resamples=0)
    softened = np.sqrt(P) / np.sqrt(P).sum(axis=1, keepdims=True)
    other = rl.reliability_table(*rl.top_label(softened, y), n_bins=10, n_resamples=0)
    est = lab.estimates_vs_n(lab.scenario("logistic"), ns=[200], n_repeats=2, estimators=["bins"], random_state=0)
    figures = {
        "overlaid": plots.overlaid_reliability_figure({"a": table, "b": other}),
        "reliability": plots.reliability_figure(table),
        "continuous": plots.continuous_reliability_figure(rl.continuous_reliability_curve(P, y, n_resamples=0, grid=21)),
        "simplex": plots.ternary_figure(P[:, :3] / P[:, :3].sum(axis=1, keepdims=True)),
        "lab": plots.lab_estimates_figure(lab.summarise_estimates(est), est["truth"].iloc[0]),
        "figure 1": plots.figure1_figure(lab.figure1(n=100, n_seeds=2, thetas=[0.6, 1.0], random_state=0)),
    }
    for name, fig in figures.items():
        assert any(t.showlegend is not False for t in fig.data), name  # a legend is drawn
        place = legend_place(fig)
        titled_x = any(fig.layout[a].title.text for a in fig.layout if a.startswith("xaxis"))
        assert place == "foot" or (place == "above" and not fig.layout.title.text) \
            or (place == "below" and not titled_x), (name, place)
