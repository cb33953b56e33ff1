"""validate_risk_model on what clinical data look like: point scores, risks of exactly 0 and 1,
few events, missing outcomes, constant risks (issue 24, item 1). Each input gives a result or a
clear InputError, never another exception."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit

import calibdash as cd
from calibdash.clinical.logistic import calibration_slope, fit_logistic, logit
from calibdash.clinical.validation import LevelsCurve, clopper_pearson
from calibdash.errors import InputError

QUICK = dict(n_resamples=60, calibration_error=False)


def _statuses(v, **kw):
    return {item["level"]: item["status"] for item in v.verdicts(**kw)}


@pytest.mark.slow
def test_three_level_score_falls_back_to_the_rate_per_level():
    rng = np.random.default_rng(2)
    p = rng.choice([0.1, 0.35, 0.6], 600)
    y = (rng.random(600) < p).astype(int)
    v = cd.validate_risk_model(p, y, **QUICK)
    assert v.curve_method == {"1": "levels"}
    assert v.curve.empty and any("3 distinct values" in note for note in v.notes)
    # ICI from the observed rate per level, by brute force
    rates = {r: y[p == r].mean() for r in (0.1, 0.35, 0.6)}
    ici = np.mean([abs(rates[r] - r) for r in p])
    assert v.metric("ICI")["estimate"] == pytest.approx(ici, abs=1e-12)
    assert v.metric("ICI")["resamples"] == 60
    grouped = v.grouped[v.grouped["group"].isna()]
    assert list(grouped["kind"].unique()) == ["levels"] and len(grouped) == 3
    assert grouped["n"].sum() == 600 and (grouped["ci_low"] <= grouped["observed"]).all()


@pytest.mark.slow
def test_rare_top_level_lost_in_resamples_is_counted_not_fatal():
    rng = np.random.default_rng(5)
    p = np.concatenate([rng.choice([0.05, 0.1, 0.2, 0.35], 597), [0.6, 0.6, 0.6]])
    y = (rng.random(600) < p).astype(int)
    v = cd.validate_risk_model(p, y, n_resamples=200, calibration_error=False)
    assert v.curve_method == {"1": "levels"}
    m = v.metrics.set_index("metric")
    assert (m.loc[["O:E", "ICI", "Brier"], "resamples"] == 200).all()
    assert np.isfinite(m.loc["ICI", "ci_high"])


@pytest.mark.slow
def test_loess_singular_fit_falls_back(monkeypatch):
    """A loess fit that raises (netlib's "near singularities") is replaced, with a note."""
    from calibdash.clinical import validation

    def singular(*args, **kwargs):
        raise ValueError("There are other near singularities as well. 0.0001")

    monkeypatch.setattr(validation, "loess_fit", singular)
    rng = np.random.default_rng(1)
    p = rng.choice(np.linspace(0.05, 0.6, 12), 500)
    y = (rng.random(500) < p).astype(int)
    v = cd.validate_risk_model(p, y, **QUICK)
    assert v.curve_method == {"1": "levels"} and any("singular" in note for note in v.notes)
    p2 = rng.uniform(0.05, 0.6, 500)
    v2 = cd.validate_risk_model(p2, y, **QUICK)
    assert v2.curve_method == {"1": "none"} and np.isnan(v2.metric("ICI")["estimate"])
    assert any(item["level"] == "moderate calibration" and item["status"] == "uncertain" for item in v2.verdicts())


@pytest.mark.slow
def test_failed_bootstrap_resamples_are_counted(monkeypatch):
    """Resamples on which loess fails leave their statistics out and are reported."""
    from calibdash.clinical import validation

    real = validation.loess_fit
    calls = {"n": 0}

    def flaky(x, y, **kw):
        calls["n"] += 1
        if calls["n"] > 1 and calls["n"] % 3 == 0:
            raise ValueError("There are other near singularities")
        return real(x, y, **kw)

    monkeypatch.setattr(validation, "loess_fit", flaky)
    rng = np.random.default_rng(3)
    p = rng.uniform(0.05, 0.8, 400)
    y = (rng.random(400) < p).astype(int)
    v = cd.validate_risk_model(p, y, n_resamples=30, calibration_error=False)
    ici = v.metric("ICI")
    assert 0 < ici["resamples"] < 30 and v.metric("O:E")["resamples"] == 30
    assert any("could not be analysed" in note for note in v.notes)


@pytest.mark.slow
def test_constant_risks():
    rng = np.random.default_rng(0)
    p = np.full(500, 0.3)
    y = (rng.random(500) < 0.3).astype(int)
    v = cd.validate_risk_model(p, y, **QUICK)
    assert np.isnan(v.metric("calibration slope")["estimate"])
    assert v.metric("AUROC")["estimate"] == 0.5
    s = _statuses(v)
    assert s["weak calibration"] == "uncertain" and s["discrimination"] == "uncertain"


def test_six_rows():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    y = np.array([0, 0, 1, 0, 1, 1])
    v = cd.validate_risk_model(p, y, **QUICK)
    assert v.metrics[["ci_low", "ci_high"]].isna().all().all()  # no interval the data cannot support
    assert set(_statuses(v).values()) == {"uncertain"}
    assert all("Too few events" in item["verdict"] for item in v.verdicts()[:-1])


def test_one_event_is_numbers_without_verdicts():
    rng = np.random.default_rng(4)
    p = rng.uniform(0.01, 0.5, 300)
    y = np.zeros(300, int)
    y[3] = 1
    v = cd.validate_risk_model(p, y, **QUICK)
    assert np.isnan(v.metric("AUROC")["ci_low"])  # no DeLong interval from one event
    assert np.isfinite(v.metric("AUROC")["estimate"])
    assert set(_statuses(v).values()) == {"uncertain"}
    assert any("1 event;" in note for note in v.notes)


@pytest.mark.parametrize("bad", [np.nan, None, ""])
def test_missing_outcome_is_refused_with_its_rows(bad):
    rng = np.random.default_rng(5)
    p = rng.uniform(0.01, 0.5, 300)
    y = (rng.random(300) < p).astype(object)
    y[[4, 10, 11]] = bad
    with pytest.raises(InputError, match=r"3 outcomes are missing \(rows 4, 10, 11"):
        cd.validate_risk_model(p, y, **QUICK)


@pytest.mark.slow
def test_risks_of_zero_and_one_are_left_out_of_the_logistic_fits_only():
    rng = np.random.default_rng(6)
    p = rng.uniform(0.02, 0.98, 500)
    p[:6], p[6:10] = 0.0, 1.0
    y = (rng.random(500) < p).astype(int)
    y[0], y[1], y[6] = 1, 1, 0  # two given risk 0 had the event, one given risk 1 did not
    v = cd.validate_risk_model(p, y, **QUICK)
    inside = (p > 0) & (p < 1)
    direct = calibration_slope(p[inside], y[inside])
    assert v.metric("calibration slope")["estimate"] == pytest.approx(direct.estimate, abs=1e-12)
    assert v.metric("calibration slope")["ci_low"] == pytest.approx(direct.ci_low, abs=1e-9)
    # no dependence on the logit clip: the fit on the inside rows by hand
    X = np.column_stack([np.ones(inside.sum()), logit(p[inside])])
    assert fit_logistic(X, y[inside]).coef[1] == pytest.approx(direct.estimate, abs=1e-10)
    note = next(n for n in v.notes if "given risk 0" in n)
    assert "6 patients given risk 0 (2 of whom had the event)" in note
    assert "4 patients given risk 1 (1 of whom did not have the event)" in note
    # every other statistic uses all rows
    assert v.metric("O:E")["estimate"] == pytest.approx(y.sum() / p.sum(), abs=1e-12)
    assert v.metric("Brier")["estimate"] == pytest.approx(np.mean((p - y) ** 2), abs=1e-12)


@pytest.mark.slow
def test_recalibration_parameters_and_recalibrated_risks():
    rng = np.random.default_rng(7)
    lp = rng.normal(-0.5, 1.3, 2000)
    y = (rng.random(2000) < expit(0.4 + 0.7 * lp)).astype(int)
    p = expit(lp)
    v = cd.validate_risk_model(p, y, **QUICK)
    r = v.recalibration.set_index(["model", "parameter"])
    fit = fit_logistic(np.column_stack([np.ones(2000), lp]), y)
    assert r.loc[("logistic recalibration", "a"), "estimate"] == pytest.approx(fit.coef[0], abs=1e-9)
    assert r.loc[("logistic recalibration", "b"), "estimate"] == pytest.approx(fit.coef[1], abs=1e-9)
    assert r.loc[("intercept update", "a"), "estimate"] == pytest.approx(
        v.metric("calibration-in-the-large")["estimate"], abs=1e-12)
    for key in r.index:  # profile ends: the LR statistic equals the chi-square quantile (checked in test_brute for b)
        assert r.loc[key, "ci_low"] < r.loc[key, "estimate"] < r.loc[key, "ci_high"]
    new = v.recalibrate(p)
    assert new == pytest.approx(expit(fit.coef[0] + fit.coef[1] * lp), abs=1e-9)
    # the recalibrated risks are calibrated in the large and in slope on the same data
    w = cd.validate_risk_model(new, y, **QUICK)
    assert w.metric("calibration slope")["estimate"] == pytest.approx(1.0, abs=1e-6)
    assert w.metric("calibration-in-the-large")["estimate"] == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(cd.ConfigError):
        v.recalibrate(p, model="isotonic")


def test_profile_interval_of_the_recalibration_intercept():
    """The ends of a's interval are where the LR statistic (slope maximised out) equals chi2(1)."""
    from calibdash.clinical.logistic import logistic_recalibration

    rng = np.random.default_rng(8)
    lp = rng.normal(0, 1, 400)
    y = (rng.random(400) < expit(0.3 + 0.8 * lp)).astype(float)
    a, _ = logistic_recalibration(expit(lp), y)
    full = fit_logistic(np.column_stack([np.ones(400), lp]), y).loglik
    for end in (a.ci_low, a.ci_high):
        prof = fit_logistic(lp[:, None], y, offset=np.full(400, end)).loglik
        assert 2 * (full - prof) == pytest.approx(stats.chi2.ppf(0.95, 1), abs=1e-6)


def test_the_recalibration_slope_reuses_the_calibration_slope_exactly():
    """b of the logistic recalibration is the calibration slope (the same fit and profile):
    passing the slope already computed gives the same numbers, bit for bit."""
    from calibdash.clinical.logistic import calibration_slope, logistic_recalibration

    rng = np.random.default_rng(9)
    lp = rng.normal(0, 1, 400)
    y = (rng.random(400) < expit(0.3 + 0.8 * lp)).astype(float)
    searched = logistic_recalibration(expit(lp), y, level=0.9)
    reused = logistic_recalibration(expit(lp), y, level=0.9, slope=calibration_slope(expit(lp), y, level=0.9))
    for s, r in zip(searched, reused):
        assert (s.estimate, s.ci_low, s.ci_high, s.se) == (r.estimate, r.ci_low, r.ci_high, r.se)
    # a slope of another level is not taken
    other = logistic_recalibration(expit(lp), y, level=0.9, slope=calibration_slope(expit(lp), y, level=0.95))
    assert (other[1].ci_low, other[1].ci_high) == (searched[1].ci_low, searched[1].ci_high)


def test_clopper_pearson_equals_the_beta_quantiles_and_r():
    # R: binom.test(3, 20)$conf.int = 0.03207094 0.37892683; binom.test(0, 10) = 0 0.3084971
    low, high = clopper_pearson(np.array([3, 0, 10]), np.array([20, 10, 10]))
    assert low[0] == pytest.approx(0.03207094, abs=1e-8) and high[0] == pytest.approx(0.37892683, abs=1e-8)
    assert low[1] == 0 and high[1] == pytest.approx(0.3084971, abs=1e-7)
    assert high[2] == 1 and low[2] == pytest.approx(1 - 0.3084971, abs=1e-7)


def test_levels_curve_predicts_rates_at_levels_only():
    c = LevelsCurve(np.array([0.1, 0.1, 0.3, 0.3, 0.3]), np.array([1, 0, 0, 0, 1]))
    out = c.predict([0.1, 0.3, 0.2])
    assert out[0] == 0.5 and out[1] == pytest.approx(1 / 3) and np.isnan(out[2])


@pytest.mark.slow
def test_tenths_for_continuous_risks():
    rng = np.random.default_rng(9)
    p = rng.uniform(0.01, 0.9, 1003)
    y = (rng.random(1003) < p).astype(int)
    v = cd.validate_risk_model(p, y, **QUICK)
    g = v.grouped[v.grouped["group"].isna()]
    assert list(g["kind"].unique()) == ["tenths"] and len(g) == 10 and g["n"].sum() == 1003
    order = np.sort(p)
    first = order[: g["n"].iloc[0]]
    assert g["mean_risk"].iloc[0] == pytest.approx(first.mean(), abs=1e-12)
    assert g["p_high"].iloc[0] <= g["p_low"].iloc[1]


@pytest.mark.slow
def test_thresholds_are_checked_and_mark_the_range():
    rng = np.random.default_rng(10)
    p = rng.uniform(0.01, 0.9, 400)
    y = (rng.random(400) < p).astype(int)
    with pytest.raises(cd.ConfigError, match="0 < low < high < 1"):
        cd.validate_risk_model(p, y, thresholds=(0.5, 0.1), **QUICK)
    v = cd.validate_risk_model(p, y, thresholds=(0.1, 0.3), **QUICK)
    nb = v.net_benefit[v.net_benefit["group"].isna()]
    assert nb.loc[nb["in_range"], "threshold"].tolist() == pytest.approx(np.round(np.arange(10, 31) / 100, 2))
    # brute force: difference against the better default, interventions avoided per 100
    t = 0.2
    row = nb[np.isclose(nb["threshold"], t)].iloc[0]
    treat = p >= t
    tp, fp = np.sum(treat & (y == 1)) / 400, np.sum(treat & (y == 0)) / 400
    model = tp - fp * t / (1 - t)
    all_ = y.mean() - (1 - y.mean()) * t / (1 - t)
    assert row["model"] == pytest.approx(model, abs=1e-12)
    assert row["difference"] == pytest.approx(model - max(all_, 0), abs=1e-12)
    assert row["avoided_per_100"] == pytest.approx(100 * (model - all_) / (t / (1 - t)), abs=1e-9)
    assert row["difference_low"] <= row["difference"] <= row["difference_high"]


@pytest.mark.slow
def test_net_benefit_per_group():
    rng = np.random.default_rng(11)
    p = rng.uniform(0.01, 0.9, 900)
    y = (rng.random(900) < p).astype(int)
    g = np.repeat(["a", "b", "c"], 300)
    v = cd.validate_risk_model(p, y, groups=g, **QUICK)
    assert set(v.net_benefit["group"].dropna()) == {"a", "b", "c"}
    rows = v.net_benefit[(v.net_benefit["group"] == "b") & np.isclose(v.net_benefit["threshold"], 0.3)].iloc[0]
    pb, yb = p[300:600], y[300:600]
    treat = pb >= 0.3
    expected = np.sum(treat & (yb == 1)) / 300 - np.sum(treat & (yb == 0)) / 300 * 0.3 / 0.7
    assert rows["model"] == pytest.approx(expected, abs=1e-12)
    assert isinstance(v.decision_curve, pd.DataFrame) and set(v.decision_curve["group"].dropna()) == {"a", "b", "c"}


def test_separated_slope_is_not_an_estimate():
    """A perfectly separated sample has no finite slope: NaN, not b = 43 with se 8e5."""
    p = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.8])
    y = np.array([0, 0, 0, 1, 1, 1.0])
    assert not calibration_slope(p, y).converged and np.isnan(calibration_slope(p, y).estimate)
    rng = np.random.default_rng(12)
    q = rng.uniform(0.05, 0.95, 300)
    assert calibration_slope(q, (rng.random(300) < q).astype(float)).converged


def test_bca_interval_against_the_jackknife_and_its_formula():
    """The acceleration from the terms equals the jackknife's; the ends are the draws' quantiles at
    Efron's adjusted levels."""
    from scipy.stats import norm

    from calibdash.clinical.validation import bca_interval, mean_acceleration

    rng = np.random.default_rng(13)
    z = np.where(rng.random(80) < 0.1, -1.0, np.where(rng.random(80) < 0.5, 0.11, 0.0))
    est = np.array([z.mean()])
    draws = np.array([[z[rng.integers(0, 80, 80)].mean()] for _ in range(500)])
    values, counts = np.unique(z, return_counts=True)
    low, high = bca_interval(draws, est, mean_acceleration(values[:, None], counts[:, None]), 0.95)
    loo = np.array([np.delete(z, i).mean() for i in range(80)])
    u = loo.mean() - loo  # jackknife influence
    a = np.sum(u**3) / (6 * np.sum(u**2) ** 1.5)
    z0 = norm.ppf(np.mean(draws[:, 0] < est[0]) + 0.5 * np.mean(draws[:, 0] == est[0]))
    q = [norm.cdf(z0 + (z0 + norm.ppf(x)) / (1 - a * (z0 + norm.ppf(x)))) for x in (0.025, 0.975)]
    assert low[0] == pytest.approx(np.quantile(draws[:, 0], q[0]), abs=1e-12)
    assert high[0] == pytest.approx(np.quantile(draws[:, 0], q[1]), abs=1e-12)
    assert a != 0  # a skewed statistic: the correction is not idle


def test_count_side_interval_by_brute_force():
    """Against treating everyone the model differs only on the untreated rows; the interval maps
    Wilson's interval of their event rate (R: prop.test(3, 20, correct = FALSE)$conf.int =
    0.05236875 0.36041886) through the difference, which it contains."""
    from calibdash.clinical import measures
    from calibdash.clinical.validation import count_side_interval, wilson_interval

    lo, hi = wilson_interval(3, 20)
    assert float(lo) == pytest.approx(0.05236875, abs=1e-8) and float(hi) == pytest.approx(0.36041886, abs=1e-8)
    rng = np.random.default_rng(14)
    p = rng.uniform(0.01, 0.9, 300)
    y = (rng.random(300) < p).astype(float)
    t = np.array([0.1, 0.2, 0.6])
    against_all = np.array([True, True, False])
    low, high = count_side_interval(p, y, t, against_all, 0.95)
    diff = measures.net_benefit(p, y, t) - against_all * measures.net_benefit_treat_all(y, t)
    assert np.all(low <= diff + 1e-15) and np.all(diff <= high + 1e-15)
    below = p < 0.1
    w = 0.1 / 0.9
    r_lo, r_hi = wilson_interval(y[below].sum(), below.sum())
    assert low[0] == pytest.approx(below.mean() * (w - (1 + w) * r_hi), abs=1e-12)
    above = p >= 0.6
    w = 0.6 / 0.4
    r_lo, r_hi = wilson_interval(y[above].sum(), above.sum())
    assert high[2] == pytest.approx(above.mean() * ((1 + w) * r_hi - w), abs=1e-12)



def test_threshold_counts_and_the_net_benefit_terms_by_brute_force():
    """The counts per threshold from one sort equal a pass over the rows per threshold, and the
    BCa acceleration from those counts equals the one from the n x m matrix of per-row terms."""
    from calibdash.clinical.validation import THRESHOLDS, mean_acceleration, threshold_counts

    rng = np.random.default_rng(15)
    p = np.round(rng.uniform(0, 1, 400), 2)  # ties at the thresholds themselves
    y = (rng.random(400) < p).astype(float)
    ea, na, eb, nb = threshold_counts(p, y, THRESHOLDS)
    treated = p[:, None] >= THRESHOLDS[None, :]
    assert np.array_equal(ea, (treated * y[:, None]).sum(axis=0))
    assert np.array_equal(na, (treated * (1 - y[:, None])).sum(axis=0))
    assert np.array_equal(eb, (~treated * y[:, None]).sum(axis=0))
    assert np.array_equal(nb, (~treated * (1 - y[:, None])).sum(axis=0))
    w = THRESHOLDS / (1 - THRESHOLDS)
    terms = ~treated * (w[None, :] * (1 - y[:, None]) - y[:, None])  # model minus treat-all, per row
    u = terms - terms.mean(axis=0)
    ss = np.sum(u**2, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        brute = np.where(ss > 0, np.sum(u**3, axis=0) / (6 * ss**1.5), 0.0)  # no spread: no acceleration
    zero = np.zeros(len(w))
    fast = mean_acceleration([zero, zero, -np.ones(len(w)), w], [ea, na, eb, nb])
    assert fast == pytest.approx(brute, abs=1e-12)


@pytest.mark.slow
def test_lr_pvalues_of_calibration_in_the_large_and_slope():
    """The p-values are the likelihood-ratio tests the profile intervals invert."""
    from calibdash.clinical.logistic import calibration_in_the_large

    for seed, (a, b) in enumerate([(0.0, 1.0), (0.3, 0.8), (-0.2, 1.1)]):
        rng = np.random.default_rng(20 + seed)
        lp = rng.normal(-1, 1.2, 800)
        y = (rng.random(800) < expit(a + b * lp)).astype(float)
        p = expit(lp)
        citl, slope = calibration_in_the_large(p, y), calibration_slope(p, y)
        ll_a = fit_logistic(np.ones((800, 1)), y, offset=lp).loglik
        ll_0 = float(np.sum(y * lp - np.logaddexp(0, lp)))
        assert citl.pvalue == pytest.approx(stats.chi2.sf(2 * (ll_a - ll_0), 1), rel=1e-9)
        ll_ab = fit_logistic(np.column_stack([np.ones(800), lp]), y).loglik
        assert slope.pvalue == pytest.approx(stats.chi2.sf(2 * (ll_ab - ll_a), 1), rel=1e-9)
        assert (citl.pvalue < 0.05) == (citl.ci_low > 0 or citl.ci_high < 0)
        assert (slope.pvalue < 0.05) == (slope.ci_low > 1 or slope.ci_high < 1)
        v = cd.validate_risk_model(p, y, **QUICK)
        assert v.metric("calibration slope")["p_value"] == pytest.approx(slope.pvalue, rel=1e-12)
