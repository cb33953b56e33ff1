"""Each clinical statistic against a brute-force version of its formula on small inputs."""

import numpy as np
import pytest
from scipy import optimize, special, stats

from calibdash.clinical import measures, sample_size
from calibdash.clinical.logistic import (
    calibration_in_the_large,
    calibration_slope,
    fit_logistic,
    heterogeneity_test,
    logit,
)


def _data(n=60, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    p = special.expit(rng.normal(-0.3, 1.3, n))
    if ties:
        p = np.round(p, 1).clip(0.05, 0.95)
    y = (rng.random(n) < special.expit(0.7 * logit(p) + 0.3)).astype(float)
    return p, y


def _loglik(beta, X, y, off):
    eta = off + X @ beta
    return np.sum(y * eta - np.logaddexp(0, eta))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_logistic_fit_solves_the_score_equations_and_maximises(seed):
    p, y = _data(seed=seed)
    X = np.column_stack([np.ones_like(p), logit(p)])
    fit = fit_logistic(X, y)
    mu = special.expit(X @ fit.coef)
    assert np.max(np.abs(X.T @ (y - mu))) < 1e-10
    brute = optimize.minimize(lambda b: -_loglik(b, X, y, 0.0), np.zeros(2), method="Nelder-Mead",
                              options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 20000})
    assert fit.coef == pytest.approx(brute.x, abs=1e-6)
    assert fit.loglik == pytest.approx(_loglik(fit.coef, X, y, 0.0), abs=1e-10)


@pytest.mark.parametrize("seed", [0, 3])
def test_profile_interval_ends_are_where_the_likelihood_ratio_is_the_chi2_quantile(seed):
    p, y = _data(n=80, seed=seed)
    lp = logit(p)
    cut = stats.chi2.ppf(0.95, 1)
    cil = calibration_in_the_large(p, y)
    ll_max = _loglik(np.array([cil.estimate]), np.ones((len(y), 1)), y, lp)
    for end in cil.confidence_interval():
        assert 2 * (ll_max - _loglik(np.array([end]), np.ones((len(y), 1)), y, lp)) == pytest.approx(cut, abs=1e-9)
    slope = calibration_slope(p, y)
    X = np.column_stack([np.ones_like(p), lp])
    ll_max = -optimize.minimize(lambda b: -_loglik(b, X, y, 0.0), [0, 1], method="BFGS", options={"gtol": 1e-10}).fun
    for end in slope.confidence_interval():
        # the profile at the end: the intercept maximised by a generic scalar optimiser
        prof = -optimize.minimize_scalar(lambda a, b=end: -_loglik(np.array([a, b]), X, y, 0.0),
                                         bounds=(-20, 20), method="bounded", options={"xatol": 1e-12}).fun
        assert 2 * (ll_max - prof) == pytest.approx(cut, abs=1e-6)
    assert slope.ci_low < slope.estimate < slope.ci_high


def test_separated_data_give_nan_not_a_number_from_a_runaway_fit():
    p = np.linspace(0.1, 0.9, 20)
    y = (p > 0.5).astype(float)
    s = calibration_slope(p, y)
    assert not s.converged and np.isnan(s.estimate) and np.isnan(s.ci_low)


@pytest.mark.parametrize("ties", [False, True])
def test_auroc_and_delong_variance_against_the_pairwise_formula(ties):
    p, y = _data(n=45, seed=4, ties=ties)
    pos, neg = p[y == 1], p[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    auc = psi.mean()
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    var = v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg)
    res = measures.auroc(p, y)
    assert res.estimate == pytest.approx(auc, abs=1e-12)
    assert res.se == pytest.approx(np.sqrt(var), abs=1e-12)
    z = stats.norm.ppf(0.975)
    assert res.ci_low == pytest.approx(max(0, auc - z * np.sqrt(var)), abs=1e-12)
    assert res.ci_high == pytest.approx(min(1, auc + z * np.sqrt(var)), abs=1e-12)


def test_net_benefit_against_a_loop_over_thresholds_with_ties_at_the_threshold():
    p, y = _data(n=50, seed=5, ties=True)  # risks on a 0.1 grid: many equal a threshold exactly
    t = np.round(np.arange(1, 100) / 100, 2)
    brute = []
    for ti in t:
        treat = p >= ti
        tp, fp = np.sum(treat & (y == 1)), np.sum(treat & (y == 0))
        brute.append(tp / len(p) - fp / len(p) * ti / (1 - ti))
    assert measures.net_benefit(p, y, t) == pytest.approx(np.array(brute), abs=1e-12)
    prev = y.mean()
    assert measures.net_benefit_treat_all(y, t) == pytest.approx(prev - (1 - prev) * t / (1 - t), abs=1e-12)
    # treating everyone is the model that gives everyone a risk of 1
    assert measures.net_benefit(np.ones_like(p), y, t) == pytest.approx(measures.net_benefit_treat_all(y, t), abs=1e-12)


def test_spiegelhalter_brier_and_observed_expected_by_loops():
    p, y = _data(n=30, seed=6)
    num = sum((yi - pi) * (1 - 2 * pi) for pi, yi in zip(p, y))
    den = sum((1 - 2 * pi) ** 2 * pi * (1 - pi) for pi in p) ** 0.5
    sp = measures.spiegelhalter(p, y)
    assert sp.statistic == pytest.approx(num / den, abs=1e-12)
    assert sp.pvalue == pytest.approx(2 * (1 - stats.norm.cdf(abs(num / den))), abs=1e-12)
    brier = sum((pi - yi) ** 2 for pi, yi in zip(p, y)) / len(p)
    assert measures.brier(p, y) == pytest.approx(brier, abs=1e-14)
    assert measures.scaled_brier(p, y) == pytest.approx(1 - brier / (y.mean() * (1 - y.mean())), abs=1e-12)
    assert measures.observed_expected(p, y) == pytest.approx(sum(y) / sum(p), abs=1e-14)


def test_heterogeneity_statistic_is_twice_the_gain_of_separate_fits():
    # with an intercept per group and a slope per group, the alternative model is the groups'
    # own slope fits: its log-likelihood is their sum
    p, y = _data(n=120, seed=7)
    g = np.repeat(["a", "b", "c"], 40)
    lp = logit(p)
    alt = 0.0
    for k in "abc":
        m = g == k
        alt += fit_logistic(np.column_stack([np.ones(m.sum()), lp[m]]), y[m]).loglik
    G = (g[:, None] == np.array(list("abc"))[None, :]).astype(float)
    null = fit_logistic(np.column_stack([G, lp]), y).loglik
    t = heterogeneity_test(p, y, g, kind="slope")
    assert t.statistic == pytest.approx(2 * (alt - null), abs=1e-9)
    assert t.pvalue == pytest.approx(stats.chi2.sf(2 * (alt - null), 2), abs=1e-12)


def test_sample_size_targets_are_met_exactly_at_the_sizes_returned():
    p, y = _data(n=400, seed=8)
    prev = y.mean()
    c = measures.auroc(p, y).estimate
    need = sample_size.required_n(p, y, c_statistic=c)
    z = stats.norm.ppf(0.975)
    # O:E (Riley 2021, criterion 1): the interval exp(+-z se) around 1 has width 0.2
    n = need["O:E"]
    assert 2 * np.sinh(z * np.sqrt((1 - prev) / (n * prev))) == pytest.approx(0.2, abs=2e-3)
    # slope (criterion 2): 2 z sqrt(var) = 0.2, var from the information of the calibrated model
    lp, w = logit(p), p * (1 - p)
    info = np.array([[w.mean(), (w * lp).mean()], [(w * lp).mean(), (w * lp**2).mean()]])
    var = np.linalg.inv(info)[1, 1] / need["calibration slope"]
    assert 2 * z * np.sqrt(var) == pytest.approx(0.2, abs=2e-3)
    # C statistic (criterion 3): Newcombe's standard error at n gives the width 0.1
    n = need["AUROC"]
    n1, n0 = n * prev, n * (1 - prev)
    m = n / 2 - 1
    se = np.sqrt(c * (1 - c) * (1 + m * (1 - c) / (2 - c) + m * c / (1 + c)) / (n1 * n0))
    assert 2 * z * se == pytest.approx(0.1, abs=2e-3)
    table = sample_size.sample_size_table(p, y, {"O:E": 0.5, "calibration slope": 0.1, "AUROC": 0.1},
                                          c_statistic=c)
    assert table.set_index("metric").loc["O:E", "adequate"] == False  # noqa: E712
    assert table.set_index("metric").loc["calibration slope", "adequate"] == True  # noqa: E712
    assert list(table["metric"][-2:]) == ["events", "non-events"]
