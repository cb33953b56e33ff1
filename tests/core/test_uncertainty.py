"""Standard errors and intervals: the formulas by brute force, and the claims they make
about the world (reported errors against the spread over splits of real outputs; coverage
of the truth in simulations is in test_coverage.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

import calibdash as cd
from calibdash.core.uncertainty import (
    HoldoutMeans,
    holdout_error,
    normal_interval,
    paired_risks,
    root_interval,
    root_se,
    satterthwaite,
    t_quantile,
)

from ..shared_data import load_npz


def test_holdout_error_by_loops():
    rng = np.random.default_rng(0)
    values = rng.normal(0.01, 0.02, size=(5, 37))
    err = holdout_error(values)
    k, n = values.shape
    rows = [sum(values[f, i] for f in range(k)) / k for i in range(n)]
    mean = sum(rows) / n
    var_rows = sum((r - mean) ** 2 for r in rows) / (n - 1) / n
    folds = [sum(values[f]) / n for f in range(k)]
    fm = sum(folds) / k
    var_fit = (k - 1) / k * sum((v - fm) ** 2 for v in folds)  # the delete-a-fold jackknife
    assert err.estimate == pytest.approx(mean, rel=1e-12)
    assert err.var_rows == pytest.approx(var_rows, rel=1e-12)
    assert err.var_fit == pytest.approx(var_fit, rel=1e-12)
    df = (var_rows + var_fit) ** 2 / (var_rows**2 / (n - 1) + var_fit**2 / (k - 1))
    assert err.df == pytest.approx(df, rel=1e-12)
    q = student_t.ppf(0.9, df)
    low, high = err.confidence_interval(0.8)
    assert (low, high) == pytest.approx((mean - q * math.sqrt(var_rows + var_fit), mean + q * math.sqrt(var_rows + var_fit)))
    assert err.root_interval(0.8) == pytest.approx((math.sqrt(max(low, 0)), math.sqrt(max(high, 0))))


@pytest.mark.parametrize("k", [1, 2, 5])
def test_holdout_means_give_the_tables_error_to_the_last_bit_in_any_order(k):
    """HoldoutMeans keeps n + k numbers instead of the (k, n) table; whatever order the fold
    models' values arrive in, its error is holdout_error's of the table, bit for bit."""
    rng = np.random.default_rng(k)
    n = 1001
    # magnitudes spread over 12 decades, so that a sum in another order rounds differently
    table = rng.normal(size=(k, n)) * 10.0 ** rng.uniform(-6, 6, size=(k, n))
    want = holdout_error(table)
    orders = {tuple(range(k)), tuple(reversed(range(k)))} | {tuple(rng.permutation(k)) for _ in range(4)}
    for order in orders:
        means = HoldoutMeans(k, n)
        for j in order:
            assert not means.complete
            means.add(j, table[j])
        assert means.complete
        assert means.error() == want, order
        assert np.array_equal(means.fold_means, table.mean(axis=1))
    means = HoldoutMeans(k, n)
    means.add(k - 1, table[k - 1])
    with pytest.raises(ValueError, match="twice"):
        means.add(k - 1, table[k - 1])
    with pytest.raises(ValueError, match="expected 1001 values"):
        means.add(0, table[0][:-1])
    if k > 1:
        with pytest.raises(ValueError, match="in order"):
            means.error()


def test_one_model_has_no_fitting_part_and_a_constant_has_no_error():
    err = holdout_error(np.arange(10.0))
    assert err.var_fit == 0 and err.n_folds == 1 and err.df == pytest.approx(9)
    const = holdout_error(np.full((5, 20), 0.25))  # exact in binary: every variance is exactly 0
    assert const.se == 0 and math.isinf(const.df)
    assert const.confidence_interval() == (0.25, 0.25)
    with pytest.raises(ValueError, match="at least 2 rows"):
        holdout_error(np.zeros((5, 1)))


def test_quantiles_intervals_and_roots():
    assert t_quantile(0.95, math.inf) == pytest.approx(norm.ppf(0.975))
    assert t_quantile(0.95, 4) == pytest.approx(student_t.ppf(0.975, 4))
    assert satterthwaite(1.0, 10, 0.0, 4) == pytest.approx(10)
    assert normal_interval(1.0, 0.5) == pytest.approx((1 - 0.98, 1 + 0.98), abs=1e-3)
    assert root_interval(-0.01, 0.04) == (0.0, 0.2)
    assert root_se(0.04, 0.001) == pytest.approx((0.2, 0.001 / 0.4))
    assert root_se(0.001, 0.001)[1] == pytest.approx(math.sqrt(0.002) - math.sqrt(0.001))
    for bad in (0, 1, 1.5, -0.1, True, "0.95"):
        with pytest.raises(ValueError, match="strictly between 0 and 1"):
            t_quantile(bad, 10)


def test_paired_risks_by_hand():
    risks = {"a": np.array([1.0, 2.0, 3.0, 4.0, 5.0]), "b": np.array([1.1, 2.1, 3.3, 4.0, 5.2]),
             "c": np.array([2.0, 3.0, 4.0, 5.0, 6.5])}
    out = paired_risks(risks, "a")
    assert out["a"] == (0.0, 0.0, True)
    d = risks["b"] - risks["a"]
    se = d.std(ddof=1) / math.sqrt(5)
    assert out["b"][:2] == pytest.approx((d.mean(), se))
    # b is worse by 0.14 with paired s.e. 0.051: t = 2.75 > t_0.95(4) = 2.13, so not tied
    assert not out["b"][2]
    # c is worse on every fold by at least 1 (t far beyond), not tied; a noisy tie is tied
    assert not out["c"][2]
    noisy = paired_risks({"a": risks["a"], "e": risks["a"] + np.array([0.1, -0.1, 0.2, -0.05, 0.0])}, "a")
    assert noisy["e"][2]
    # unpaired errors would swamp the differences the pairing sees: the fold-to-fold
    # spread of the risks (s.e. 0.71) is 14 times the paired s.e. of b (0.051)
    assert risks["a"].std(ddof=1) / math.sqrt(5) > 10 * se


@pytest.mark.slow
def test_result_intervals_at_other_levels_nest_and_match_the_summary():
    from calibdash.lab import demo

    res = cd.evaluate(demo.load_demo("digits: naive Bayes"), notion="top-label", estimators=["bins", "temperature"])
    for name in res.summary["estimator"]:
        row = res.summary.set_index("estimator").loc[name]
        assert res.confidence_interval(name) == pytest.approx((row["ci_low"], row["ci_high"]), rel=1e-12, abs=1e-15)
        low80, high80 = res.confidence_interval(name, level=0.8)
        low99, high99 = res.confidence_interval(name, level=0.99)
        assert low99 <= row["ci_low"] <= low80 <= row["estimate"] <= high80 <= row["ci_high"] <= high99
    with pytest.raises(ValueError, match="not an estimator of this result"):
        res.confidence_interval("nope")


@pytest.fixture(scope="module")
def cifar10_over_splits():
    P, y = load_npz("cifar10_wrn16-4")
    pred = cd.load_predictions(P, y)
    rows = []
    for seed in range(10):
        results = cd.evaluate_notions(pred, notions=("top-label", "canonical"), others=[], random_state=seed, n_jobs=2,
                                      keep_models=False)
        for notion, res in results.items():
            rows.append(res.summary.assign(notion=notion, seed=seed))
    return pd.concat(rows, ignore_index=True)


@pytest.mark.slow
@pytest.mark.shared_data
def test_reported_errors_are_at_least_the_spread_over_splits_of_real_outputs(cifar10_over_splits):
    """Over 10 random splits of the same 10,000 CIFAR-10 rows, every ranked estimator's
    reported standard error is at least 0.8 times the standard deviation of its estimate
    across the splits (that spread is itself a lower bound: the rows never change). The
    full table for both CIFAR files is in docs/results.md."""
    g = cifar10_over_splits.groupby(["notion", "estimator"])
    table = pd.DataFrame({"se": g["estimate_se"].mean(), "sd": g["estimate"].std()})
    table["ratio"] = table["se"] / table["sd"]
    assert len(table) == 9  # top-label: 15-bins, bins, kde, kkkr, ukkr; canonical: kde, kkkr, ukkr, temperature
    assert (table["ratio"] >= 0.8).all(), table


def test_intervals_are_confidence_intervals_with_scipys_field_names():
    from calibdash.intervals import ConfidenceInterval

    err = holdout_error(np.random.default_rng(0).normal(0.01, 0.02, size=(5, 200)))
    ci = err.confidence_interval(0.9)
    assert isinstance(ci, ConfidenceInterval) and ci == (ci.low, ci.high) and ci.low < err.estimate < ci.high
    low, high = ci  # still unpacks like the tuple it was
    assert isinstance(err.root_interval(0.9), ConfidenceInterval)
    assert root_interval(-1.0, 4.0) == ConfidenceInterval(low=0.0, high=2.0)
