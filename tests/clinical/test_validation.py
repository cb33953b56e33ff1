"""validate_risk_model: inputs, class blocks, subgroups and the shape of its result."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import calibdash as cd
from calibdash.clinical.validation import MAX_GROUPS, METRICS, MIN_GROUP_EVENTS
from calibdash.errors import ConfigError, InputError

FAST = dict(n_resamples=0, calibration_error=False)


def _binary(n=600, seed=0, slope=0.7):
    rng = np.random.default_rng(seed)
    lp = rng.normal(-0.4, 1.2, n)
    y = (rng.random(n) < expit(slope * lp + 0.2)).astype(int)
    return expit(lp), y


def test_table_has_every_metric_once_for_the_whole_data():
    p, y = _binary()
    v = cd.validate_risk_model(p, y, **FAST)
    m = v.metrics
    assert list(m.columns[:6]) == ["class", "group", "metric", "estimate", "ci_low", "ci_high"]
    assert tuple(m["metric"]) == METRICS and m["group"].isna().all()
    assert (m["events"] == y.sum()).all() and (m["non_events"] == len(y) - y.sum()).all()
    # n_resamples=0: no bootstrap interval, but the profile and DeLong intervals are there
    assert np.isnan(v.metric("ICI")["ci_low"]) and np.isnan(v.metric("O:E")["ci_high"])
    low, high = v.confidence_interval("calibration slope")
    assert low < v.metric("calibration slope")["estimate"] < high < 1
    assert 0 < v.metric("Spiegelhalter z")["p_value"] < 1


def test_the_settings_are_config_and_the_old_name_warns():
    p, y = _binary()
    v = cd.validate_risk_model(p, y, **FAST)
    assert v.config["n_resamples"] == 0 and v.config["calibration_error"] is False
    with pytest.warns(DeprecationWarning, match=r"RiskValidation.settings is deprecated.*use \.config"):
        assert v.settings is v.config


@pytest.mark.slow
def test_intervals_are_ordered_and_reproducible_by_seed():
    p, y = _binary(n=400)
    a = cd.validate_risk_model(p, y, n_resamples=60, random_state=3, calibration_error=False)
    b = cd.validate_risk_model(p, y, n_resamples=60, random_state=3, calibration_error=False)
    c = cd.validate_risk_model(p, y, n_resamples=60, random_state=4, calibration_error=False)
    pd.testing.assert_frame_equal(a.metrics, b.metrics)
    pd.testing.assert_frame_equal(a.decision_curve, b.decision_curve)
    assert not a.metrics["ci_low"].equals(c.metrics["ci_low"])
    boot = a.metrics[a.metrics["interval"] == "bootstrap"]
    assert (boot["ci_low"] <= boot["estimate"]).all() and (boot["estimate"] <= boot["ci_high"]).all()
    assert np.isnan(a.metric("Emax")["ci_low"])  # no interval for a maximum
    curve = a.curve.dropna()
    assert len(curve) > 0.8 * len(a.curve) and (curve["ci_low"] <= curve["ci_high"]).all()
    nb = a.decision_curve
    assert set(nb["strategy"]) == {"model", "treat all", "treat none"}
    assert nb["threshold"].min() == 0.01 and nb["threshold"].max() == 0.99
    assert a.distribution[["events", "non_events"]].to_numpy().sum() == len(y)


@pytest.mark.slow
def test_string_labels_need_the_positive_class_named():
    p, y = _binary()
    labels = np.where(y == 1, "malignant", "benign")
    with pytest.raises(InputError, match="positive=") as e:
        cd.validate_risk_model(p, labels, **FAST)
    assert "'benign'" in str(e.value) and "'malignant'" in str(e.value)
    with pytest.raises(InputError, match="not one of the labels"):
        cd.validate_risk_model(p, labels, positive="cancer", **FAST)
    v = cd.validate_risk_model(p, labels, positive="malignant", **FAST)
    ref = cd.validate_risk_model(p, y, **FAST)
    assert v.classes == ("malignant",)
    pd.testing.assert_series_equal(v.metrics["estimate"], ref.metrics["estimate"])
    # the same risks as an n x 2 array
    two = cd.validate_risk_model(np.column_stack([1 - p, p]), y, **FAST)
    assert two.metrics["estimate"].to_numpy() == pytest.approx(ref.metrics["estimate"].to_numpy(), rel=1e-12, nan_ok=True)


@pytest.mark.parametrize("bad, message", [
    (lambda p, y: (np.where(np.arange(len(p)) == 5, 1.2, p), y), "outside \\[0, 1\\]"),
    (lambda p, y: (np.where(np.arange(len(p)) == 5, np.nan, p), y), "not a number"),
    (lambda p, y: (p[:-1], y), "one outcome per row"),
    (lambda p, y: (p, np.zeros_like(y)), "same outcome"),
    (lambda p, y: (p, y % 3 + (np.arange(len(y)) % 3)), "distinct values"),
])
def test_bad_inputs_are_refused_with_a_message(bad, message):
    p, y = _binary(n=100)
    with pytest.raises(InputError, match=message):
        cd.validate_risk_model(*bad(p, y), **FAST)


def test_bad_settings_are_config_errors():
    p, y = _binary(n=100)
    for kwargs in ({"n_resamples": -1}, {"n_resamples": 2.5}, {"random_state": "abc"}, {"level": 1.0}):
        with pytest.raises(ConfigError):
            cd.validate_risk_model(p, y, **{**FAST, **kwargs})


@pytest.mark.slow
def test_multiclass_is_validated_one_class_against_the_rest():
    rng = np.random.default_rng(2)
    logits = rng.normal(0, 1.5, (500, 3))
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in P])
    v = cd.validate_risk_model(P, y, **FAST)
    assert v.classes == ("0", "1", "2")
    for k in range(3):
        one = cd.validate_risk_model(P[:, k], (y == k).astype(int), **FAST)
        mine = v.metrics[v.metrics["class"] == str(k)]["estimate"].to_numpy()
        assert mine == pytest.approx(one.metrics["estimate"].to_numpy(), rel=1e-12, nan_ok=True)
    only = cd.validate_risk_model(P, y, positive="2", **FAST)
    assert only.classes == ("2",)


@pytest.mark.slow
def test_subgroups_flag_small_groups_and_test_heterogeneity():
    p, y = _binary(n=1200)
    groups = np.array(["north"] * 500 + ["south"] * 500 + ["east"] * 192 + ["tiny"] * 8, dtype=object)
    groups[:5] = None  # missing: in the whole data only
    v = cd.validate_risk_model(p, y, groups=groups, **FAST)
    g = v.groups.set_index("group")
    assert g.loc["tiny", "status"] == "too small" and str(MIN_GROUP_EVENTS) in g.loc["tiny", "note"]
    assert g.loc["north", "n"] == 495 and g.loc["north", "status"] == "judged"
    tiny = v.metrics[v.metrics["group"] == "tiny"]
    assert tiny["estimate"].isna().all() and (tiny["note"] != "").all()
    assert v.heterogeneity["groups"].tolist() == [3, 3] and (v.heterogeneity["df"] == 2).all()
    assert any("5 rows without a value" in note for note in v.notes)
    # a group's metrics are the metrics of its rows alone
    north = cd.validate_risk_model(p[groups == "north"], y[groups == "north"], **FAST)
    assert v.metrics[v.metrics["group"] == "north"]["estimate"].to_numpy() == pytest.approx(
        north.metrics["estimate"].to_numpy(), rel=1e-12, nan_ok=True)


def test_group_columns_that_cannot_be_subgroups_are_refused():
    p, y = _binary(n=300)
    with pytest.raises(InputError, match="1 distinct value"):
        cd.validate_risk_model(p, y, groups=["a"] * 300, **FAST)
    with pytest.raises(InputError, match=f"at most {MAX_GROUPS}"):
        cd.validate_risk_model(p, y, groups=[str(i % 25) for i in range(300)], **FAST)
    with pytest.raises(InputError, match="only a loaded table has columns"):
        cd.validate_risk_model(p, y, groups="site", **FAST)


@pytest.mark.slow
def test_loaded_predictions_with_a_grouping_column(tmp_path):
    p, y = _binary(n=400)
    frame = pd.DataFrame({"p_event": p, "outcome": np.where(y == 1, "event", "none"),
                          "site": np.where(np.arange(400) % 2, "A", "B")})
    path = tmp_path / "study.csv"
    frame.to_csv(path, index=False)
    pred = cd.load_predictions(path, label_column="outcome", groups=["site"])
    v = cd.validate_risk_model(pred, groups="site", **FAST)
    assert v.classes == ("event",) and v.group_name == "site"
    ref = cd.validate_risk_model(p, y, **FAST)
    whole = v.metrics[v.metrics["group"].isna()]["estimate"].to_numpy()
    assert whole == pytest.approx(ref.metrics["estimate"].to_numpy(), rel=1e-9, nan_ok=True)
    with pytest.raises(InputError, match="no grouping column 'hospital'"):
        cd.validate_risk_model(pred, groups="hospital", **FAST)


@pytest.mark.slow
def test_risk_optimised_error_per_group():
    p, y = _binary(n=600)
    groups = np.repeat(["A", "B"], 300)
    v = cd.validate_risk_model(p, y, groups=groups, n_resamples=0, estimators=["kde"])
    ce = v.calibration_error
    assert ce["group"].tolist() == [None, "A", "B"] and (ce["estimator"] == "kde").all()
    assert (ce["ci_low"] <= ce["estimate"]).all() and (ce["estimate"] <= ce["ci_high"]).all()
    direct = cd.evaluate(np.column_stack([1 - p[:300], p[:300]]), y[:300], notion="canonical", estimators=["kde"])
    assert ce["estimate"].iloc[1] == pytest.approx(float(direct.best["estimate"]), rel=1e-12)


@pytest.mark.slow
def test_numbers_do_not_depend_on_the_number_of_workers():
    p, y = _binary(n=300)
    groups = np.repeat(["A", "B"], 150)
    one = cd.validate_risk_model(p, y, groups=groups, n_resamples=40, calibration_error=False)
    two = cd.validate_risk_model(p, y, groups=groups, n_resamples=40, calibration_error=False, n_jobs=2)
    for name in ("metrics", "curve", "decision_curve"):
        pd.testing.assert_frame_equal(getattr(one, name), getattr(two, name))
