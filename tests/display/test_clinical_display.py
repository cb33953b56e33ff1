"""The clinical validation's words, table and figures (calibdash.display.clinical)."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import calibdash as cd
from calibdash.display import clinical as dc
from calibdash.errors import ConfigError


def _sim(n, *, intercept=0.0, slope=1.0, seed=0, groups=None):
    """Risks p and outcomes drawn from logit P(y=1) = intercept + slope * logit(p)."""
    rng = np.random.default_rng(seed)
    lp = rng.normal(-0.5, 1.2, n)
    p = 1 / (1 + np.exp(-lp))
    y = (rng.random(n) < 1 / (1 + np.exp(-(intercept + slope * lp)))).astype(int)
    return p, y


def _validate(n, groups=None, **truth):
    p, y = _sim(n, **truth)
    return cd.validate_risk_model(p, y, groups=groups, n_resamples=60, calibration_error=False)


def _verdict(v, level, **kw):
    return next(item for item in dc.hierarchy_verdicts(v, **kw) if item["level"] == level)


@pytest.fixture(scope="module")
def calibrated():
    return _validate(6000, seed=1)


def test_levels_in_order_with_statuses(calibrated):
    items = dc.hierarchy_verdicts(calibrated)
    assert [i["level"] for i in items] == list(dc.LEVELS)
    assert all(i["status"] in ("ok", "problem", "uncertain") and i["verdict"].endswith(".") for i in items)
    assert _verdict(calibrated, "weak calibration")["metrics"] == ["calibration slope"]


def test_calibrated_model_reads_as_ok(calibrated):
    mean = _verdict(calibrated, "mean calibration")
    assert mean["verdict"].startswith("No evidence of over- or underestimation on average")
    assert mean["status"] == "ok"
    weak = _verdict(calibrated, "weak calibration")
    assert "consistent with the ideal slope of 1" in weak["verdict"] and "wide" in weak["verdict"]
    assert weak["status"] == "ok"
    # issue 27: the differences of risk in percentage points, as in the table and beside the curves in %
    moderate = _verdict(calibrated, "moderate calibration")["verdict"]
    ici, e90 = calibrated.metric("ICI"), calibrated.metric("E90")
    assert (f"differ by {100 * ici['estimate']:.1f} percentage points on average (ICI, 95% CI "
            f"{100 * ici['ci_low']:.1f} to {100 * ici['ci_high']:.1f}) and by at most {100 * e90['estimate']:.1f} points "
            "for 90% of patients") in moderate


@pytest.mark.slow
def test_too_extreme_predictions():
    weak = _verdict(_validate(3000, slope=0.6, seed=2), "weak calibration")
    assert weak["status"] == "problem"
    assert weak["verdict"].startswith("Predictions are too extreme") and "typical of overfitting" in weak["verdict"]


@pytest.mark.slow
def test_too_modest_predictions():
    weak = _verdict(_validate(3000, slope=1.6, seed=3), "weak calibration")
    assert weak["status"] == "problem"
    assert weak["verdict"].startswith("Predictions are too modest")


@pytest.mark.slow
def test_underestimation_on_average():
    v = _validate(3000, intercept=0.6, seed=4)
    mean = _verdict(v, "mean calibration")
    assert mean["status"] == "problem"
    assert mean["verdict"].startswith("Predicted risks are too low on average:")
    oe = v.metric("O:E")
    assert f"{oe['estimate']:.2f} events observed per event expected (95% CI" in mean["verdict"]
    high = _verdict(_validate(3000, intercept=-0.6, seed=5), "mean calibration")
    assert high["verdict"].startswith("Predicted risks are too high on average:")


@pytest.mark.slow
def test_small_sample_is_imprecise():
    v = _validate(150, seed=6)
    size = _verdict(v, "sample size")
    assert size["status"] == "problem" and size["verdict"].startswith("Too small to judge")
    assert dc.sample_size_text(v) == size["verdict"]
    assert _verdict(v, "weak calibration")["status"] == "uncertain"
    assert "imprecise" in _verdict(v, "weak calibration")["verdict"]


def test_interval_never_rounds_onto_the_ideal():
    assert dc.interval_text("O:E", 0.72, 0.997, ideal=1.0) == "0.720 to 0.997"
    assert dc.interval_text("O:E", 0.72, 1.3, ideal=1.0) == "0.72 to 1.30"
    assert dc.format_metric("calibration-in-the-large", -0.001) == "0.00"


@pytest.fixture(scope="module")
def grouped():
    p, y = _sim(2400, slope=0.8, seed=7)
    rng = np.random.default_rng(7)
    g = rng.choice(np.array(["north", "south"], dtype=object), len(y))
    g[:60] = "tiny <b>"  # 5 events: too small to judge
    y[:60] = 0
    y[:5] = 1
    return cd.validate_risk_model(p, y, groups=g, n_resamples=40, calibration_error=False)


def test_metrics_table_is_text_without_none(grouped):
    t = dc.metrics_table(grouped)
    assert list(t.columns) == ["metric", "unit", "estimate", "95% CI", "interval method", "p-value", "note"]
    assert list(t["metric"]) == list(cd.clinical.METRICS)
    # issue 27: every row names its scale; the differences of risk in percentage points, as the curves beside them
    assert (t["unit"] != "").all()
    rows = t.set_index("metric")
    for name in dc.POINTS_METRICS:
        assert rows.loc[name, "unit"] == "percentage points"
        assert rows.loc[name, "estimate"] == f"{100 * grouped.metric(name)['estimate']:.1f}"
    assert rows.loc["calibration slope", "unit"] == "logit scale"
    assert rows.loc["O:E", "estimate"] == f"{grouped.metric('O:E')['estimate']:.2f}"
    text = t.to_string()
    assert "None" not in text and "nan" not in text
    emax = t.set_index("metric").loc["Emax"]
    assert emax["95% CI"] == "" and emax["estimate"] != ""
    small = dc.metrics_table(grouped, group="tiny <b>")
    assert (small["estimate"] == "").all() and small["note"].str.startswith("not judged").all()


def test_too_small_group_is_not_judged(grouped):
    items = dc.hierarchy_verdicts(grouped, group="tiny <b>")
    assert all(i["status"] == "uncertain" and i["verdict"].startswith("Too few events to judge") for i in items)
    assert items == grouped.verdicts(group="tiny <b>")  # the display shows the result's verdicts
    with pytest.raises(ConfigError, match="No group 'east'"):
        dc.hierarchy_verdicts(grouped, group="east")


def test_validation_curve_figure(grouped):
    fig = dc.validation_curve_figure(grouped)
    names = [t.name for t in fig.data]
    assert {"perfect calibration", "flexible calibration curve (loess)", "events", "non-events",
            "tenths of risk: observed rate, exact 95% interval"} <= set(names)
    band = [t for t in fig.data if t.type == "scatter" and t.fill == "tonexty"]
    assert len(band) == 1 and np.isnan(np.asarray(band[0].y, dtype=float)).any()  # gaps at the ends
    assert all(not t.connectgaps for t in fig.data if t.type == "scatter" and t.name != "perfect calibration")
    events = next(t for t in fig.data if t.name == "events")
    non = next(t for t in fig.data if t.name == "non-events")
    assert min(events.y) >= 0 and max(non.y) <= 0  # events up, non-events down
    assert "predicted risk" in fig.layout.xaxis2.title.text and fig.layout.xaxis2.tickformat.endswith("%")
    assert fig.layout.xaxis.matches == "x2" or fig.layout.xaxis2.matches == "x"
    assert fig.layout.yaxis.title.text == "observed event rate"


def test_zoom_limit():
    # a little (5%) above the value, on the next round tick; 1 at most and for a missing value
    for value, end in ((0.26, 0.3), (0.27, 0.3), (0.29, 0.4), (0.0094, 0.01), (0.0096, 0.02), (0.12, 0.15),
                       (0.5, 0.6), (0.9, 1.0), (1.0, 1.0), (np.nan, 1.0), (0.0, 1.0)):
        assert dc.zoom_limit(value) == end, value


@pytest.fixture(scope="module")
def rare():
    """A rare outcome: every risk below 0.27."""
    rng = np.random.default_rng(11)
    p = np.minimum(1 / (1 + np.exp(-rng.normal(-3, 0.8, 2000))), 0.26)
    y = (rng.random(len(p)) < p).astype(int)
    return cd.validate_risk_model(p, y, n_resamples=30, calibration_error=False), p


def test_rare_outcome_axes_are_zoomed(rare):
    v, p = rare
    fig = dc.validation_curve_figure(v)
    g = v.grouped[v.grouped["group"].isna()]
    x_end = fig.layout.xaxis2.range[1]
    assert fig.layout.xaxis.range[1] == x_end == dc.zoom_limit(p.max()) == 0.3  # not 0-1
    y_end = fig.layout.yaxis.range[1]
    top = max(p.max(), g["ci_high"].max(), v.curve["estimate"].max())
    assert top <= y_end <= 1.02 * dc.zoom_limit(top) and y_end >= x_end  # the diagonal stays in view
    diagonal = next(t for t in fig.data if t.name == "perfect calibration")
    assert tuple(diagonal.x) == tuple(diagonal.y) == (0, x_end)
    # the histograms share the zoomed axis: every bin with a patient is inside it
    shown = [x for t in fig.data if t.name in ("events", "non-events") for x, y in zip(t.x, t.y) if y != 0]
    assert shown and max(shown) < x_end


def test_grouped_points_with_exact_intervals(rare):
    v, _ = rare
    fig = dc.validation_curve_figure(v)
    pts = next(t for t in fig.data if t.name and t.name.startswith("tenths of risk"))
    g = v.grouped[v.grouped["group"].isna()].sort_values("mean_risk")
    assert pts.mode == "markers" and len(pts.x) == len(g) == 10
    assert np.allclose(pts.x, g["mean_risk"]) and np.allclose(pts.y, g["events"] / g["n"])
    # the bars are the exact (Clopper-Pearson) interval of each group's events out of its rows
    lo = stats.beta.ppf(0.025, g["events"], g["n"] - g["events"] + 1)
    hi = stats.beta.ppf(0.975, g["events"] + 1, g["n"] - g["events"])
    assert np.allclose(np.asarray(pts.y) + np.asarray(pts.error_y.array), hi, atol=1e-9)
    assert np.allclose(np.asarray(pts.y) - np.asarray(pts.error_y.arrayminus), np.nan_to_num(lo), atol=1e-9)
    table = dc.grouped_table(v)
    assert list(table.columns) == ["predicted risks", "patients", "events", "mean predicted risk",
                                   "observed event rate", "exact 95% CI"]
    first = g.iloc[0]
    assert table.iloc[0]["observed event rate"] == f"{100 * first['events'] / first['n']:.1f}%"
    assert table.iloc[0]["exact 95% CI"] == f"{100 * lo[0]:.1f}% to {100 * hi[0]:.1f}%"


@pytest.fixture(scope="module")
def coarse():
    """A point score with three levels: no loess curve."""
    rng = np.random.default_rng(2)
    p = rng.choice([0.1, 0.35, 0.6], 600)
    y = (rng.random(600) < p).astype(int)
    return cd.validate_risk_model(p, y, n_resamples=20, calibration_error=False)


def test_levels_fallback_is_drawn_without_loess(coarse):
    assert coarse.curve_method[coarse.classes[0]] == "levels"
    fig = dc.validation_curve_figure(coarse)
    names = [t.name for t in fig.data]
    assert "flexible calibration curve (loess)" not in names
    assert not [t for t in fig.data if t.type == "scatter" and t.fill == "tonexty"]  # no band either
    pts = next(t for t in fig.data if t.name == "risk levels: observed rate, exact 95% interval")
    assert pts.mode == "lines+markers" and np.allclose(pts.x, [0.1, 0.35, 0.6])
    assert any("No loess curve" in a.text for a in fig.layout.annotations)
    note = dc.curve_note(coarse)
    assert note.startswith("No flexible (loess) calibration curve") and "3 distinct values" in note
    assert fig.layout.xaxis2.range[1] == dc.zoom_limit(0.6) == 0.7


def test_curve_note_empty_with_a_loess_curve(grouped):
    assert dc.curve_note(grouped) == ""


def test_decision_curve_figure_is_clipped(grouped):
    fig = dc.decision_curve_figure(grouped)
    assert [t.name for t in fig.data if t.showlegend is not False] == ["model", "treat all", "treat none"]
    low, high = fig.layout.yaxis.range
    assert low == dc.NET_BENEFIT_FLOOR
    treat_all = next(t for t in fig.data if t.name == "treat all")
    assert min(treat_all.y) < low  # treat all falls out of the view, the view is not stretched to it
    assert high >= max(next(t for t in fig.data if t.name == "model").y)
    assert fig.layout.xaxis.title.text == "threshold probability"


@pytest.mark.slow
def test_decision_curve_marks_the_threshold_range_and_groups(grouped):
    fig = dc.decision_curve_figure(grouped)
    (shade,) = [s for s in fig.layout.shapes if s.type == "rect"]
    assert (shade.x0, shade.x1) == grouped.config["thresholds"] == (0.05, 0.5)
    v = cd.validate_risk_model(*_sim(800, seed=12), n_resamples=10, calibration_error=False, thresholds=(0.1, 0.3))
    (shade,) = [s for s in dc.decision_curve_figure(v).layout.shapes if s.type == "rect"]
    assert (shade.x0, shade.x1) == (0.1, 0.3)
    north = dc.decision_curve_figure(grouped, group="north")
    model = next(t for t in north.data if t.name == "model")
    d = grouped.decision_curve
    want = d[(d["group"] == "north") & (d["strategy"] == "model")].sort_values("threshold")["net_benefit"]
    whole = d[d["group"].isna() & (d["strategy"] == "model")].sort_values("threshold")["net_benefit"]
    assert np.allclose(model.y, want) and not np.allclose(model.y, whole)
    with pytest.raises(ConfigError, match="too few events"):
        dc.decision_curve_figure(grouped, group="tiny <b>")
    with pytest.raises(ConfigError, match="No group 'east'"):
        dc.decision_curve_figure(grouped, group="east")


def test_net_benefit_table(grouped):
    t = dc.net_benefit_table(grouped)
    assert list(t["threshold"]) == ["5%", "10%", "20%", "30%", "50%"]
    assert list(t.columns) == ["threshold", "model", "treat all", "difference from the better of treat all and treat "
                               "none", "difference 95% CI", "net interventions avoided per 100 patients",
                               "avoided 95% CI"]
    nb = grouped.net_benefit
    r = nb[nb["group"].isna() & np.isclose(nb["threshold"], 0.2)].iloc[0]
    row = t.set_index("threshold").loc["20%"]
    assert row["model"] == f"{r['model']:.3f}" and row["treat all"] == f"{r['treat_all']:.3f}"
    assert row["difference 95% CI"] == f"{r['difference_low']:.3f} to {r['difference_high']:.3f}".replace("-0.000",
                                                                                                          "0.000")
    assert row["net interventions avoided per 100 patients"] == f"{r['avoided_per_100']:.1f}"
    assert row["avoided 95% CI"] == f"{r['avoided_low']:.1f} to {r['avoided_high']:.1f}"
    outside = dc.net_benefit_table(grouped, thresholds=(0.02, 0.1))
    assert list(outside["threshold"]) == ["2% (outside the range judged)", "10%"]
    south = dc.net_benefit_table(grouped, group="south")
    s = nb[(nb["group"] == "south") & np.isclose(nb["threshold"], 0.1)].iloc[0]
    assert south.set_index("threshold").loc["10%", "model"] == f"{s['model']:.3f}"
    with pytest.raises(ConfigError, match="No net benefit at threshold 0.125"):
        dc.net_benefit_table(grouped, thresholds=(0.125,))


@pytest.mark.slow
def test_net_benefit_table_keeps_to_the_range():
    v = cd.validate_risk_model(*_sim(800, seed=13), n_resamples=10, calibration_error=False, thresholds=(0.15, 0.25))
    assert list(dc.net_benefit_table(v)["threshold"]) == ["20%"]
    v = cd.validate_risk_model(*_sim(800, seed=13), n_resamples=10, calibration_error=False, thresholds=(0.12, 0.18))
    assert list(dc.net_benefit_table(v)["threshold"]) == ["12%", "18%"]  # no standard point inside: the ends


def test_recalibration_table_and_text(grouped):
    t = dc.recalibration_table(grouped)
    r = grouped.recalibration
    assert list(t["model"]) == ["intercept update", "logistic recalibration", "logistic recalibration"]
    assert list(t["parameter"]) == ["a", "a", "b"]
    assert list(t["estimate (logit scale)"]) == [f"{x:.3f}" for x in r["estimate"]]  # issue 27: the header says the scale
    assert list(t["95% CI (logit scale)"]) == [f"{lo:.3f} to {hi:.3f}" for lo, hi in zip(r["ci_low"], r["ci_high"])]
    text = dc.recalibration_text(grouped)
    a, b = r.set_index(["model", "parameter"])["estimate"][["logistic recalibration"]].to_numpy()
    assert "p_new = expit(a + b logit(p))" in text and f"a = {a:.3f} and b = {b:.3f}" in text
    # the formula as written gives what the result's recalibrate gives
    p = np.array([0.05, 0.2, 0.7])
    assert np.allclose(1 / (1 + np.exp(-(a + b * np.log(p / (1 - p))))), grouped.recalibrate(p))


def test_pooled_and_centres_tables_need_clusters(grouped):
    with pytest.raises(ConfigError, match="clusters="):
        dc.pooled_table(grouped)
    with pytest.raises(ConfigError, match="clusters="):
        dc.centres_table(grouped)


def test_metrics_table_counts_resamples(grouped):
    t = dc.metrics_table(grouped).set_index("metric")["interval method"]
    resamples = int(grouped.metric("O:E")["resamples"])
    assert resamples > 0 and t["O:E"] == f"bootstrap ({resamples} resamples)"
    assert t["calibration slope"] == "profile likelihood" and t["Emax"].startswith("none")
    failed = dataclasses.replace(grouped, metrics=grouped.metrics.assign(
        resamples=np.where(grouped.metrics["metric"] == "O:E", 37, grouped.metrics["resamples"])))
    assert dc.metrics_table(failed).set_index("metric").loc["O:E", "interval method"] == "bootstrap (37 of 40 resamples)"


def test_calibration_error_table_says_what_it_is(grouped):
    assert not len(dc.calibration_error_table(grouped))
    frame = pd.DataFrame({"class": "1", "group": [None, "north"], "estimator": ["kde", "ukkr"],
                          "estimate": [0.0213, 0.04], "ci_low": [0.0, 0.01], "ci_high": [0.05, 0.07], "n": [2400, 1200]})
    v = dataclasses.replace(grouped, calibration_error=frame)
    t = dc.calibration_error_table(v)
    assert list(t.columns) == ["group", "estimator", dc.CALIBRATION_ERROR_HEADER, "95% CI (points)", "rows"]
    assert list(t["group"]) == ["All", "north"] and t.iloc[0][dc.CALIBRATION_ERROR_HEADER] == "2.13"  # points
    assert "square root" in dc.CALIBRATION_ERROR_HELP and "not a squared one" in dc.CALIBRATION_ERROR_HELP
    assert "percentage points" in dc.CALIBRATION_ERROR_HELP and "not comparable" in dc.CALIBRATION_ERROR_HELP


@pytest.mark.slow
def test_forest_figure_flags_small_groups(grouped):
    fig = dc.forest_figure(grouped)
    titles = [a.text for a in fig.layout.annotations]
    assert len(titles) == 3 and "heterogeneity: p" in titles[0] and "heterogeneity" not in titles[2]
    text = [t for t in fig.data if t.mode == "text"]
    assert len(text) == 3 and all(list(t.text) == ["too small (not judged)"] for t in text)
    assert "tiny &lt;b&gt; (too small)" in text[0].y  # the user's name escaped for plotly
    points = [t for t in fig.data if t.mode == "markers" and t.name != "interval end"]  # not the intervals' caps
    assert all("tiny" not in " ".join(t.y) for t in points)  # not judged, not drawn
    assert fig.layout.yaxis.categoryarray[-1] == "All"
    # issue 27: each panel names its scale; the ICI drawn in percentage points, as the table gives it
    assert [t.split("</b> ")[1].split("<br>")[0] for t in titles] == [
        f"({dc.METRIC_UNITS[m]})" for m in dc.FOREST_METRICS]
    assert "(percentage points)" in titles[2]
    ici = next(t for t in points if t.xaxis == "x3")
    whole = list(ici.y).index("All")
    assert ici.x[whole] == pytest.approx(100 * grouped.metric("ICI")["estimate"])
    with pytest.raises(ConfigError, match="without groups"):
        dc.forest_figure(_validate(400, seed=8))


@pytest.mark.slow
def test_forest_figure_marks_imprecise_groups():
    p, y = _sim(1200, seed=9)
    g = np.where(np.arange(len(y)) < 200, "small", "large")
    v = cd.validate_risk_model(p, y, groups=g, n_resamples=20, calibration_error=False)
    assert v.groups.set_index("group").loc["small", "status"] == "imprecise"
    fig = dc.forest_figure(v)
    open_ = [t for t in fig.data if t.mode == "markers" and t.marker.symbol == "square-open"]
    assert open_ and all(y_.endswith("(imprecise)") for t in open_ for y_ in t.y)


@pytest.fixture(scope="module")
def centres():
    """Three hospitals, one ("C") shifted by +1 on the logit scale."""
    p, y = _sim(1500, seed=14)
    site = np.random.default_rng(14).choice(np.array(["A", "B", "C"], dtype=object), len(y))
    lp = np.log(p / (1 - p)) + np.where(site == "C", 1.0, 0.0)
    y = (np.random.default_rng(15).random(len(y)) < 1 / (1 + np.exp(-lp))).astype(int)
    return cd.validate_risk_model(p, y, clusters=site, n_resamples=10, calibration_error=False)


def test_pooled_table(centres):
    t = dc.pooled_table(centres)
    assert list(t.columns) == ["metric", "unit", "pooled estimate", "95% CI", "95% prediction interval (a new centre)",
                               dc.TAU2_HEADER, "centres", "method"]
    assert list(t["unit"]) == ["ratio", "logit scale", "logit scale", "C statistic, 0 to 1"]
    assert list(t["metric"]) == ["O:E", "calibration-in-the-large", "calibration slope", "AUROC"]
    for (_, shown), (_, r) in zip(t.iterrows(), centres.pooled.iterrows()):
        m = r["metric"]
        assert shown["pooled estimate"] == dc.format_metric(m, r["estimate"])
        assert shown["95% prediction interval (a new centre)"] == dc.interval_text(m, r["pi_low"], r["pi_high"])
        assert shown[dc.TAU2_HEADER] == f"{r['tau2']:.3g}" and shown["centres"] == "3"
    assert t.to_string().count("nan") == 0


def test_centres_table_one_row_per_centre(centres):
    t = dc.centres_table(centres)
    assert list(t["centre"]) == ["A", "B", "C"]
    assert list(t.columns) == ["centre", "patients", "events", "O:E", "calibration-in-the-large", "calibration slope",
                               "AUROC", "note"]
    c = centres.centres.set_index(["cluster", "metric"])
    oe = c.loc[("C", "O:E")]
    assert t.set_index("centre").loc["C", "O:E"] == (f"{dc.format_metric('O:E', oe['estimate'])} "
                                                     f"({dc.interval_text('O:E', oe['ci_low'], oe['ci_high'], ideal=1.0)})")
    assert t.set_index("centre").loc["A", "patients"] == f"{int(c.loc[('A', 'O:E'), 'n']):,}"


def _marks(fig, axis, x):
    """The marks a reader sees at ``x`` in the panel of x axis ``axis`` ("x3"): markers, and the caps
    of plotly's error bars (both ends of every bar, a zero-length arm's at its point)."""
    found = []
    for t in fig.data:
        if (t.xaxis or "x") != axis or t.mode not in ("markers", "lines+markers") or t.x is None:
            continue
        xs = np.asarray(t.x, dtype=float)
        found += [("marker", t.name) for v in xs if v == x]
        e = t.error_x
        if e is not None and e.array is not None and (e.visible is None or e.visible) and (e.width is None or e.width > 0):
            for lo, hi in zip(xs - np.asarray(e.arrayminus, dtype=float), xs + np.asarray(e.array, dtype=float)):
                found += [("cap", t.name) for v in (lo, hi) if np.isclose(v, x)]
    return found


def test_forest_figure_draws_no_tick_where_an_interval_reaches_zero_by_rule():
    # issue 27: "stray ticks at x = 0": the caps of the ICI intervals whose lower end is 0 because the
    # data are consistent with perfect calibration (ZERO_FLOOR_METRICS), drawn on the reference line
    p, y = _sim(1600, seed=21)
    g = np.where(np.arange(len(y)) % 2 == 0, "east", "west")
    v = cd.validate_risk_model(p, y, groups=g, n_resamples=20, calibration_error=False)
    ici = v.metrics[v.metrics["metric"] == "ICI"]
    assert (ici["ci_low"] == 0).sum() >= 2  # the case of the issue: intervals floored at 0
    fig = dc.forest_figure(v, metrics=("calibration slope", "ICI"))
    assert _marks(fig, "x2", 0.0) == []
    # every measured end keeps its cap: the upper ends of the ICI and both ends of the slope
    for axis, metric in (("x2", "ICI"), ("x", "calibration slope")):
        rows = v.metrics[v.metrics["metric"] == metric]
        ends = [dc.metric_scale(metric) * x for x in list(rows["ci_high"]) + list(rows["ci_low"]) if x != 0]  # as drawn
        assert all(_marks(fig, axis, x) for x in ends), metric
