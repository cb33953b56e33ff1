"""The clinical validation's words, table and figures (calibdash.display.clinical)."""

import numpy as np
import pytest

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


def test_calibrated_model_reads_as_fine(calibrated):
    mean = _verdict(calibrated, "mean calibration")
    assert mean["verdict"].startswith("No evidence of over- or underestimation on average")
    assert mean["status"] == "ok"
    weak = _verdict(calibrated, "weak calibration")
    assert "consistent with the ideal slope of 1" in weak["verdict"] and "wide" in weak["verdict"]
    assert weak["status"] == "ok"


def test_too_extreme_predictions():
    weak = _verdict(_validate(3000, slope=0.6, seed=2), "weak calibration")
    assert weak["status"] == "problem"
    assert "too extreme (typical of overfitting)" in weak["verdict"]


def test_too_modest_predictions():
    weak = _verdict(_validate(3000, slope=1.6, seed=3), "weak calibration")
    assert weak["status"] == "problem"
    assert weak["verdict"].startswith("Predictions are too modest")


def test_underestimation_on_average():
    v = _validate(3000, intercept=0.6, seed=4)
    mean = _verdict(v, "mean calibration")
    assert mean["status"] == "problem"
    assert mean["verdict"].startswith("Predicted risks are too low on average:")
    oe = v.metric("O:E")
    assert f"{oe['estimate']:.2f} events observed per event expected (95% CI" in mean["verdict"]
    high = _verdict(_validate(3000, intercept=-0.6, seed=5), "mean calibration")
    assert high["verdict"].startswith("Predicted risks are too high on average:")


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
    assert list(t.columns) == ["metric", "estimate", "95% CI", "interval method", "p-value", "note"]
    assert list(t["metric"]) == list(cd.clinical.METRICS)
    text = t.to_string()
    assert "None" not in text and "nan" not in text
    emax = t.set_index("metric").loc["Emax"]
    assert emax["95% CI"] == "" and emax["estimate"] != ""
    small = dc.metrics_table(grouped, group="tiny <b>")
    assert (small["estimate"] == "").all() and small["note"].str.startswith("not judged").all()


def test_too_small_group_is_not_judged(grouped):
    items = dc.hierarchy_verdicts(grouped, group="tiny <b>")
    assert items[-1]["status"] == "problem" and items[-1]["verdict"].startswith("Too small to judge")
    assert all(i["verdict"] == "Not judged: the group is too small." for i in items[:-1])
    with pytest.raises(ConfigError, match="No group 'east'"):
        dc.hierarchy_verdicts(grouped, group="east")


def test_validation_curve_figure(grouped):
    fig = dc.validation_curve_figure(grouped)
    names = [t.name for t in fig.data]
    assert {"perfect calibration", "flexible calibration curve (loess)", "events", "non-events"} <= set(names)
    band = [t for t in fig.data if t.type == "scatter" and t.fill == "tonexty"]
    assert len(band) == 1 and np.isnan(np.asarray(band[0].y, dtype=float)).any()  # gaps at the ends
    assert all(not t.connectgaps for t in fig.data if t.type == "scatter" and t.name != "perfect calibration")
    events = next(t for t in fig.data if t.name == "events")
    non = next(t for t in fig.data if t.name == "non-events")
    assert min(events.y) >= 0 and max(non.y) <= 0  # events up, non-events down
    assert fig.layout.xaxis2.range == (0, 1) and "predicted risk" in fig.layout.xaxis2.title.text
    assert fig.layout.xaxis.matches == "x2" or fig.layout.xaxis2.matches == "x"
    assert fig.layout.yaxis.title.text == "observed frequency"


def test_decision_curve_figure_is_clipped(grouped):
    fig = dc.decision_curve_figure(grouped)
    assert [t.name for t in fig.data if t.showlegend is not False] == ["model", "treat all", "treat none"]
    low, high = fig.layout.yaxis.range
    assert low == dc.NET_BENEFIT_FLOOR
    treat_all = next(t for t in fig.data if t.name == "treat all")
    assert min(treat_all.y) < low  # treat all falls out of the view, the view is not stretched to it
    assert high >= max(next(t for t in fig.data if t.name == "model").y)
    assert fig.layout.xaxis.title.text == "threshold probability"


def test_forest_figure_flags_small_groups(grouped):
    fig = dc.forest_figure(grouped)
    titles = [a.text for a in fig.layout.annotations]
    assert len(titles) == 3 and "heterogeneity: p" in titles[0] and "heterogeneity" not in titles[2]
    text = [t for t in fig.data if t.mode == "text"]
    assert len(text) == 3 and all(list(t.text) == ["too small (not judged)"] for t in text)
    assert "tiny &lt;b&gt; (too small)" in text[0].y  # the user's name escaped for plotly
    points = [t for t in fig.data if t.mode == "markers"]
    assert all("tiny" not in " ".join(t.y) for t in points)  # not judged, not drawn
    assert fig.layout.yaxis.categoryarray[-1] == "All"
    with pytest.raises(ConfigError, match="without groups"):
        dc.forest_figure(_validate(400, seed=8))


def test_forest_figure_marks_imprecise_groups():
    p, y = _sim(1200, seed=9)
    g = np.where(np.arange(len(y)) < 200, "small", "large")
    v = cd.validate_risk_model(p, y, groups=g, n_resamples=20, calibration_error=False)
    assert v.groups.set_index("group").loc["small", "status"] == "imprecise"
    fig = dc.forest_figure(v)
    open_ = [t for t in fig.data if t.mode == "markers" and t.marker.symbol == "square-open"]
    assert open_ and all(y_.endswith("(imprecise)") for t in open_ for y_ in t.y)
