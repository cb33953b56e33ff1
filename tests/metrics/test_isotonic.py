"""calibdash.metrics.isotonic against scikit-learn, which it replaces in the variational
estimators and the isotonic recalibration map: the same numbers to the last digit."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone as sklearn_clone
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import KFold

from calibdash.errors import NotFittedError
from calibdash.metrics.isotonic import IsotonicMap, shuffled_kfold, tie_groups
from calibdash.metrics.recalibrators import IsotonicRecalibrator, make_recalibrator
from calibdash.params import Parametrized, clone

EPS = np.finfo(np.float64).resolution


def sklearn_tie_groups(x):
    """scikit-learn's _make_unique grouping (sklearn/_isotonic.pyx), as a plain loop."""
    starts, current = [0], x[0]
    for j in range(1, len(x)):
        if x[j] - current >= EPS:
            starts.append(j)
            current = x[j]
    return np.array(starts)


def scores(rng, n, kind):
    """Scores with the ties a classifier's confidences have: exact repeats, values within a
    few units in the last place of 1 and of each other, and chains of near-ties whose span
    exceeds scikit-learn's merging distance."""
    if kind == "plain":
        return rng.uniform(0, 1, n)
    if kind == "rounded":
        return np.round(rng.uniform(0, 1, n), 2)
    if kind == "near-one":
        return 1.0 - rng.integers(0, 30, n) * np.finfo(np.float64).epsneg
    # chains: steps of 0.3e-15 from a few starting points, so that runs span several 1e-15
    base = rng.choice([0.25, 0.5, 0.75], n)
    return base + rng.integers(0, 12, n) * 0.3e-15


@pytest.mark.parametrize("kind", ["plain", "rounded", "near-one", "chains"])
def test_tie_groups_are_scikit_learns(kind):
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 500):
        x = np.sort(scores(rng, n, kind))
        assert np.array_equal(tie_groups(x), sklearn_tie_groups(x)), (kind, n)


def test_the_chain_case_is_exercised():
    """The sequential rule matters: a run whose steps are all below the distance but whose
    span is not splits where scikit-learn splits it, not at its steps, nor as one group."""
    x = 0.5 + np.arange(8) * 0.4e-15
    assert list(sklearn_tie_groups(x)) == [0, 3, 6]
    assert list(tie_groups(x)) == [0, 3, 6]


@pytest.mark.parametrize("kind", ["plain", "rounded", "near-one", "chains"])
@pytest.mark.parametrize("y_min", [0.0, 0.05])
def test_isotonic_map_is_scikit_learns_to_the_last_digit_on_binary_targets(kind, y_min):
    rng = np.random.default_rng(1)
    for n in (1, 2, 40, 2000):
        x = scores(rng, n, kind)
        t = (rng.uniform(0, 1, n) < x).astype(np.float64)
        query = np.concatenate([scores(rng, 300, kind), [-1.0, 2.0, x.min(), x.max()]])
        ours = IsotonicMap(y_min=y_min, y_max=1.0).fit(x, t)
        ref = IsotonicRegression(y_min=y_min, y_max=1.0, out_of_bounds="clip").fit(x, t)
        assert np.array_equal(ours.predict(query), ref.predict(query)), (kind, n)
        assert np.array_equal(ours.x_thresholds_, ref.X_thresholds_)
        assert np.array_equal(ours.y_thresholds_, ref.y_thresholds_)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.floats(-3, 3, allow_nan=False)), min_size=1, max_size=60))
def test_isotonic_map_agrees_with_scikit_learn_on_real_targets(pairs):
    """Targets that are not 0/1: the tie groups' means may round differently (scikit-learn
    sums them one by one), so agreement to 1e-12."""
    x = np.array([a / 20 for a, _ in pairs])
    y = np.array([b for _, b in pairs])
    ours = IsotonicMap().fit(x, y).predict(np.linspace(-0.1, 1.1, 50))
    ref = IsotonicRegression(out_of_bounds="clip").fit(x, y).predict(np.linspace(-0.1, 1.1, 50))
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)


def test_isotonic_map_is_increasing_and_refuses_bad_input():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, 300)
    g = IsotonicMap().fit(x, rng.uniform(0, 1, 300) < x).predict(np.linspace(0, 1, 101))
    assert np.all(np.diff(g) >= 0)
    with pytest.raises(NotFittedError):
        IsotonicMap().predict(x)
    with pytest.raises(ValueError, match="one length"):
        IsotonicMap().fit(x, x[:-1])


@pytest.mark.parametrize("n, k, seed", [(10, 2, 0), (11, 5, 7), (1003, 5, 1), (50, 3, None)])
def test_shuffled_kfold_is_scikit_learns(n, k, seed):
    if seed is None:
        np.random.seed(5)
    ours = shuffled_kfold(n, k, seed)
    if seed is None:
        np.random.seed(5)
    ref = list(KFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(n)))
    assert len(ours) == len(ref) == k
    for (a, b), (c, d) in zip(ours, ref):
        assert np.array_equal(a, c) and np.array_equal(b, d)
    with pytest.raises(ValueError, match="random_state"):
        shuffled_kfold(n, k, "seven")


def test_isotonic_recalibrator_matches_one_vs_rest_scikit_learn():
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(4) * 0.7, 400)
    y = np.array([rng.choice(4, p=p) for p in P])
    Q = rng.dirichlet(np.ones(4), 100)
    G = IsotonicRecalibrator(y_min=0.01).fit(P, y).predict_proba(Q)
    cols = np.column_stack([IsotonicRegression(y_min=0.01, y_max=1.0, out_of_bounds="clip")
                            .fit(P[:, k], (y == k) * 1.0).predict(Q[:, k]) for k in range(4)])
    assert np.array_equal(G, cols / cols.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("kind", ["plain", "rounded", "near-one", "chains"])
def test_a_given_order_that_sorts_the_scores_is_used_and_changes_nothing(kind, monkeypatch):
    """``order=``: the reverse of the order of a score that x falls with (ties then come in
    reverse row order, which 0/1 targets do not feel) gives the map of a fresh sort, bit for
    bit, and spares the sort."""
    rng = np.random.default_rng(4)
    x = scores(rng, 3000, kind)
    t = (rng.uniform(0, 1, x.size) < x).astype(np.float64)
    fresh = IsotonicMap(y_min=0.01, y_max=1.0).fit(x, t)
    order = np.argsort(-x, kind="stable")[::-1]
    assert not np.array_equal(order, np.argsort(x, kind="stable")) or kind == "plain"

    def no_sort(*args, **kwargs):
        raise AssertionError("sorted again")

    monkeypatch.setattr(np, "argsort", no_sort)
    hinted = IsotonicMap(y_min=0.01, y_max=1.0).fit(x, t, order=order)
    monkeypatch.undo()
    for name in ("x_thresholds_", "y_thresholds_", "x_min_", "x_max_"):
        assert np.array_equal(getattr(hinted, name), getattr(fresh, name)), name


def test_an_order_that_does_not_sort_the_scores_is_not_used():
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, 500)
    t = (rng.uniform(0, 1, x.size) < x).astype(np.float64)
    fresh = IsotonicMap().fit(x, t)
    good = np.argsort(x, kind="stable")
    swapped = good.copy()
    swapped[[10, 400]] = swapped[[400, 10]]
    repeated = np.sort(np.concatenate([good[:-1], good[:1]]))  # a row twice, one missing
    repeated = repeated[np.argsort(x[repeated], kind="stable")]
    assert np.all(np.diff(x[repeated]) >= 0)
    for order in (swapped, repeated, good[:-1], good.astype(np.float64), good + 1, good - 1, np.arange(x.size)):
        hinted = IsotonicMap().fit(x, t, order=order)
        assert np.array_equal(hinted.x_thresholds_, fresh.x_thresholds_)
        assert np.array_equal(hinted.y_thresholds_, fresh.y_thresholds_)
    # targets that are not 0/1 are ordered by target within ties: a given order is ignored
    y = rng.uniform(0, 1, x.size)
    assert np.array_equal(IsotonicMap().fit(x, y, order=good).y_thresholds_, IsotonicMap().fit(x, y).y_thresholds_)


@pytest.mark.parametrize("complement", ["exact", "rounded"])
def test_the_two_column_recalibrator_sorts_once_and_equals_scikit_learn(complement, monkeypatch):
    """[z, 1 - z]: the second column's map reuses the first column's order reversed; with a
    complement whose rounding breaks that order (a sum of other probabilities) it sorts anew.
    Either way the maps are scikit-learn's to the last digit."""
    rng = np.random.default_rng(6)
    z = np.concatenate([0.5 + 0.5 * rng.beta(5, 2, 3000), np.full(200, 0.75), 1.0 - rng.integers(0, 5, 100) * 2.0**-53])
    rest = 1.0 - z if complement == "exact" else (1.0 - z) * (1.0 + rng.uniform(-4e-16, 4e-16, z.size))
    S = np.column_stack([z, rest])
    y = (rng.uniform(0, 1, z.size) >= z ** 1.3).astype(np.int64)
    calls = []
    argsort = np.argsort
    monkeypatch.setattr(np, "argsort", lambda *a, **k: calls.append(1) or argsort(*a, **k))
    fitted = IsotonicRecalibrator().fit(S, y)
    monkeypatch.undo()
    assert len(calls) == (1 if complement == "exact" else 2)
    for k, m in enumerate(fitted.maps_):
        ref = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(S[:, k], (y == k) * 1.0)
        assert np.array_equal(m.x_thresholds_, ref.X_thresholds_)
        assert np.array_equal(m.y_thresholds_, ref.y_thresholds_)


def test_the_one_dimensional_recalibrator_takes_a_known_order_of_the_confidence(monkeypatch):
    """order= reaches the isotonic maps, which then sort nothing, and the maps are the same;
    a map that sorts nothing ignores it."""
    from calibdash.metrics.recalibrators import OneDimensionalRecalibrator, TemperatureRecalibrator

    rng = np.random.default_rng(7)
    z = np.round(0.5 + 0.5 * rng.beta(5, 2, 2000), 3)
    S = np.column_stack([z, 1.0 - z])
    t = (rng.uniform(0, 1, z.size) < z).astype(np.float64)
    fresh = OneDimensionalRecalibrator(IsotonicRecalibrator()).fit(S, t)
    order = np.argsort(z, kind="stable")

    def no_sort(*args, **kwargs):
        raise AssertionError("sorted again")

    monkeypatch.setattr(np, "argsort", no_sort)
    hinted = OneDimensionalRecalibrator(IsotonicRecalibrator()).fit(S, t, order=order)
    monkeypatch.undo()
    query = np.column_stack([np.linspace(0.4, 1, 300), 1 - np.linspace(0.4, 1, 300)])
    assert np.array_equal(hinted.predict(query), fresh.predict(query))
    for a, b in zip(hinted.recalibrator_.maps_, fresh.recalibrator_.maps_):
        assert np.array_equal(a.x_thresholds_, b.x_thresholds_) and np.array_equal(a.y_thresholds_, b.y_thresholds_)
    temp = OneDimensionalRecalibrator(TemperatureRecalibrator()).fit(S, t, order=order)
    assert np.array_equal(temp.predict(query), OneDimensionalRecalibrator(TemperatureRecalibrator()).fit(S, t).predict(query))


@pytest.mark.parametrize("name", ["temperature", "isotonic", "logistic", "boosting"])
def test_clone_is_scikit_learns_for_the_recalibrators(name):
    params = {"temperature": {"temperature": 2.0}, "isotonic": {"y_min": 0.1}, "logistic": {"C": 3.0},
              "boosting": {"learning_rate": 0.2}}[name]
    rng = np.random.default_rng(4)
    P = rng.dirichlet(np.ones(3), 60)
    y = rng.integers(0, 3, 60)
    fitted = make_recalibrator(name, **params).fit(P, y)
    ours, ref = clone(fitted), sklearn_clone(fitted)
    assert type(ours) is type(ref) and ours.get_params() == ref.get_params()
    assert not hasattr(ours, "n_classes_")  # unfitted


class Outer(Parametrized):
    def __init__(self, inner=None, values=(1,)):
        self.inner = inner
        self.values = values


def test_clone_clones_nested_parameters_and_copies_the_others():
    inner = make_recalibrator("temperature", temperature=2.0).fit(np.eye(3), np.arange(3))
    outer = Outer(inner=inner, values=[1, 2])
    ours, ref = clone(outer), sklearn_clone(outer)
    assert repr(ours) == repr(ref) == "Outer(inner=TemperatureRecalibrator(temperature=2.0), values=[1, 2])"
    assert ours.inner is not inner and not hasattr(ours.inner, "temperature_")
    assert ours.values == [1, 2] and ours.values is not outer.values


def test_clone_hands_other_objects_to_scikit_learn():
    est = IsotonicRegression(y_min=0.2)
    out = clone(est)
    assert isinstance(out, IsotonicRegression) and out is not est and out.y_min == 0.2
