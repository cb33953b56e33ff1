"""The clinical verdicts are claims: how often each is said when it is false (level) and when it
is true (power), on simulations with known answers (issue 24, item 2).

Measured when written (seeds below; docs/clinical.md has the table):
- noise model (risks uniform 0.05-0.6, outcomes independent at 30%, n = 600, 200 resamples),
  200 draws: "useful" 0 of 200; discrimination "ok" (better than chance) 3 of 200 and
  "problem" (worse than chance) 5 of 200, otherwise "uncertain";
- a useful model (calibrated, AUROC about 0.8, 30% events, n = 600), 100 draws: "useful" in
  100 of 100;
- three hospitals, each calibrated in slope, one shifted by +1.5 on the logit scale: the
  whole-data weak-calibration verdict names the difference between the groups in every draw
  and never "typical of overfitting".
"""

import numpy as np
import pytest
from scipy.special import expit

import calibdash as cd

SETTINGS = dict(n_resamples=200, calibration_error=False)


def _status(v, level, **kw):
    return next(item for item in v.verdicts(**kw) if item["level"] == level)


@pytest.mark.slow
def test_noise_model_is_not_called_useful_and_its_discrimination_not_better_than_chance():
    draws = 200
    useful = better = worse = 0
    for d in range(draws):
        rng = np.random.default_rng(1000 + d)
        p = rng.uniform(0.05, 0.6, 600)
        y = (rng.random(600) < 0.3).astype(int)
        v = cd.validate_risk_model(p, y, random_state=d, **SETTINGS)
        useful += _status(v, "clinical usefulness")["status"] == "ok"
        disc = _status(v, "discrimination")
        better += disc["status"] == "ok"
        worse += disc["status"] == "problem"
        if disc["status"] == "uncertain" and v.metric("AUROC")["ci_low"] <= 0.5:
            assert "cannot be distinguished from chance" in disc["verdict"]
    assert useful <= 0.05 * draws, f"noise called useful in {useful} of {draws} draws"
    # "better than chance" and "worse than chance" are each one-sided claims at 2.5%
    assert better <= 0.05 * draws and worse <= 0.05 * draws, (better, worse)


@pytest.mark.slow
def test_a_useful_model_is_called_useful():
    draws, useful = 100, 0
    for d in range(draws):
        rng = np.random.default_rng(2000 + d)
        lp = rng.normal(-1.2, 1.3, 600)  # AUROC about 0.8, about 30% events, calibrated
        y = (rng.random(600) < expit(lp)).astype(int)
        v = cd.validate_risk_model(expit(lp), y, random_state=d, **SETTINGS)
        item = _status(v, "clinical usefulness")
        useful += item["status"] == "ok"
        if item["status"] == "ok":
            assert "Useful at thresholds of" in item["verdict"]
    assert useful >= 0.8 * draws, f"useful model called useful in only {useful} of {draws} draws"


def _three_hospitals(seed, n=1000):
    rng = np.random.default_rng(seed)
    lp = rng.normal(-1.5, 1.2, 3 * n)
    site = np.repeat(["north", "south", "east"], n)
    shift = np.where(site == "east", 1.5, 0.0)
    y = (rng.random(3 * n) < expit(lp + shift)).astype(int)
    return expit(lp), y, site


@pytest.mark.slow
def test_centres_that_differ_are_not_called_overfitting():
    for seed in range(5):
        p, y, site = _three_hospitals(seed)
        v = cd.validate_risk_model(p, y, groups=site, n_resamples=50, calibration_error=False)
        het = v.heterogeneity.set_index("metric")["p_value"]
        assert het["calibration-in-the-large"] < 1e-10
        weak = _status(v, "weak calibration")
        assert "overfitting" not in weak["verdict"] or "not by itself evidence of overfitting" in weak["verdict"]
        assert "differs between the groups of 'group'" in weak["verdict"] or weak["status"] != "problem"
        mean = _status(v, "mean calibration")
        assert "differs between the groups" in mean["verdict"]
        # each hospital alone is calibrated in slope
        for g in ("north", "south", "east"):
            lo, hi = v.confidence_interval("calibration slope", group=g)
            assert lo < 1.25 and hi > 0.8
        findings = v.group_findings()
        assert any("'east'" in f and "too low on average" in f for f in findings)
        assert all("'east'" in f for f in findings)  # the calibrated hospitals are not named


def test_overfitting_is_still_named_without_groups():
    rng = np.random.default_rng(3)
    lp = rng.normal(-1, 1.5, 3000)
    y = (rng.random(3000) < expit(0.6 * lp)).astype(int)  # risks too extreme
    v = cd.validate_risk_model(expit(lp), y, n_resamples=0, calibration_error=False)
    weak = _status(v, "weak calibration")
    assert weak["status"] == "problem" and "typical of overfitting" in weak["verdict"]


@pytest.mark.slow
def test_overall_accuracy_status_agrees_with_spiegelhalter():
    rng = np.random.default_rng(4)
    lp = rng.normal(-1, 1.5, 3000)
    y = (rng.random(3000) < expit(lp + 0.4)).astype(int)  # risks too low: Spiegelhalter rejects
    v = cd.validate_risk_model(expit(lp), y, n_resamples=0, calibration_error=False)
    item = _status(v, "overall accuracy")
    assert "rejects calibrated risks" in item["verdict"] and item["status"] == "problem"
    y2 = (rng.random(3000) < expit(lp)).astype(int)
    w = cd.validate_risk_model(expit(lp), y2, n_resamples=0, calibration_error=False)
    item2 = _status(w, "overall accuracy")
    assert "does not reject" in item2["verdict"] and item2["status"] in ("ok", "uncertain")


@pytest.mark.slow
def test_slope_sentence_words_the_curve_it_shows():
    """Risks too low up to about 60% (where most patients are), slightly high above: the sentence
    says where the curve lies above and below the diagonal, not the textbook pattern."""
    rng = np.random.default_rng(5)
    lp = rng.normal(-2.0, 1.0, 4000)
    truth = expit(0.8 + 0.75 * lp)  # underestimation at low risks, overestimation only at the top
    y = (rng.random(4000) < truth).astype(int)
    v = cd.validate_risk_model(expit(lp), y, n_resamples=100, calibration_error=False)
    weak = _status(v, "weak calibration")["verdict"]
    assert "underestimated from" in weak
    assert "high risks are overestimated and low risks underestimated" not in weak
    assert expit(0.8 / 0.25) > 0.95  # the true curve crosses the diagonal only where 0.8 + 0.75 lp = lp


@pytest.mark.slow
def test_useful_needs_a_stretch_not_one_threshold():
    from calibdash.clinical.verdicts import useful_thresholds

    rng = np.random.default_rng(6)
    lp = rng.normal(-1.2, 1.3, 600)
    y = (rng.random(600) < expit(lp)).astype(int)
    v = cd.validate_risk_model(expit(lp), y, n_resamples=100, calibration_error=False)
    runs = useful_thresholds(v, min_run=1)
    strict = useful_thresholds(v)
    assert all(round((b - a) * 100) + 1 >= 5 for a, b in strict)
    assert len(runs) >= len(strict)
    # outside the range nothing counts
    nb = v.net_benefit[v.net_benefit["group"].isna()]
    outside = nb[~nb["in_range"]]
    assert outside["threshold"].min() == 0.01 and not any(a < 0.05 for a, _ in strict)


@pytest.mark.slow
def test_rows_needed_are_computed_at_the_observed_calibration():
    """A model whose risks are too low (O:E about 1.4) needs more rows for the same O:E width
    than a calibrated one; the sentence says at which values it computed."""
    from calibdash.clinical.sample_size import sample_size_table

    rng = np.random.default_rng(1)
    lp = rng.normal(-2.4, 1.0, 3000)
    p = expit(lp)
    y = (rng.random(3000) < expit(lp + 0.5)).astype(int)
    v = cd.validate_risk_model(p, y, n_resamples=100, calibration_error=False)
    size = _status(v, "sample size")["verdict"]
    oe = v.metric("O:E")["estimate"]
    assert oe > 1.3 and f"computed at the observed O:E {oe:.2f}" in size
    table = v.sample_size.set_index("metric")
    calibrated = sample_size_table(p, y, {"O:E": 0.21}, c_statistic=0.74).set_index("metric")
    assert table.loc["O:E", "rows_needed"] > 1.3 * calibrated.loc["O:E", "rows_needed"]
    assert f"{table.loc['O:E', 'rows_needed']:,.0f} rows would reach it" in size


def _twelve_centres(seed, shift=0.0):
    rng = np.random.default_rng(seed)
    lp = rng.normal(-1.2, 1.2, 12 * 150)
    centre = np.repeat([f"h{j:02d}" for j in range(12)], 150)
    y = (rng.random(len(lp)) < expit(lp + shift * (centre == "h03"))).astype(int)
    return expit(lp), y, centre


@pytest.mark.slow
@pytest.mark.parametrize("how, draws", [("clusters", 200), ("groups", 100)])
def test_groups_named_off_level_and_power(how, draws):
    """"Centre/Group X: risks too low on average" is a claim about X. Twelve calibrated centres of
    150 patients: at least one named in 7 of 200 studies as clusters and 8 of 200 as groups
    (measured when written on 200 studies each; 58 of 100 before Holm's adjustment). One centre
    shifted by +0.8 on the logit scale: it, and only it, named in 45 of 50 studies either way
    (the test runs a quarter of the draws)."""
    false = 0
    for d in range(draws):
        p, y, centre = _twelve_centres(7000 + d)
        v = cd.validate_risk_model(p, y, n_resamples=0, calibration_error=False, **{how: centre})
        false += bool(v.group_findings())
    assert false <= 0.05 * draws, f"calibrated centres named off in {false} of {draws} studies"
    found = 0
    for d in range(draws // 4):
        p, y, centre = _twelve_centres(9000 + d, shift=0.8)
        findings = cd.validate_risk_model(p, y, n_resamples=0, calibration_error=False,
                                          **{how: centre}).group_findings()
        found += (any("'h03'" in f and "too low on average" in f and "Holm-adjusted" in f for f in findings)
                  and all("'h03'" in f for f in findings))
    assert found >= 0.8 * (draws // 4), f"the shifted centre named alone in {found} of {draws // 4} studies"


def test_holm_by_brute_force():
    from calibdash.clinical.verdicts import holm

    p = np.array([0.01, 0.04, np.nan, 0.03, 0.2])
    got = holm(p)
    finite = [0.01, 0.04, 0.03, 0.2]
    # Holm: sorted p_(i) times (m - i + 1), running maximum, capped at 1
    order = sorted(finite)
    adj = {}
    running = 0
    for i, x in enumerate(order):
        running = max(running, min(1, (4 - i) * x))
        adj[x] = running
    assert np.isnan(got[2])
    assert [got[0], got[1], got[3], got[4]] == pytest.approx([adj[0.01], adj[0.04], adj[0.03], adj[0.2]])
