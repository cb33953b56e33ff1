"""The L1 ECE estimators of Posocco & Bonnefoy and the continuous reliability curve."""

import math

import numpy as np
import pytest

import calibdash as cd
from calibdash.display import reliability as rl
from calibdash.lab.simulation import dirichlet_simulation
from calibdash.metrics.ece import (
    ECE_ESTIMATORS,
    ece,
    ece_bootstrap,
    ece_by_name,
    ece_kde,
    kde_problem_ece,
    silverman_bandwidth,
    top_label_l1_truth,
)

from ..shared_data import load_npz


# -- brute force: explicit loops, written from the definitions ---------------------------
def brute_problems(P, y, notion):
    """[(z, t, low)] with explicit loops: the confidence or p_k, the 0/1 target, support start."""
    n, d = P.shape
    if notion == "top-label":
        z, t = [], []
        for i in range(n):
            k = max(range(d), key=lambda j: (P[i, j], -j))  # first index among ties
            z.append(P[i, k])
            t.append(1.0 if k == y[i] else 0.0)
        return [(np.array(z), np.array(t), 1.0 / d)]
    return [(P[:, k].copy(), np.array([1.0 if y[i] == k else 0.0 for i in range(n)]), 0.0) for k in range(d)]


def brute_edges(z, m, strategy):
    if strategy == "uniform":
        # the project's edges are np.linspace's (0.6000000000000001, not 3/5): a confidence of
        # 0.6 is in the bin below, as in the reliability diagram and the binning estimator
        return list(np.linspace(0.0, 1.0, m + 1))
    inner = [float(np.quantile(z, b / m)) for b in range(1, m)]
    return sorted(set([0.0] + inner + [1.0]))


def brute_allocation(v, edges, convex):
    """{bin: weight} of one sample."""
    nb = len(edges) - 1
    if not convex or nb == 1:
        for b in range(nb):
            if edges[b] <= v < edges[b + 1] or (b == nb - 1 and v >= edges[b]):
                return {b: 1.0}
        return {0: 1.0}  # below 0 cannot happen for probabilities
    centres = [(edges[b] + edges[b + 1]) / 2 for b in range(nb)]
    if v <= centres[0]:
        return {0: 1.0}
    if v >= centres[-1]:
        return {nb - 1: 1.0}
    for b in range(nb - 1):
        if centres[b] <= v < centres[b + 1]:
            w_left = (centres[b + 1] - v) / (centres[b + 1] - centres[b])
            return {b: w_left, b + 1: 1.0 - w_left}
    raise AssertionError("unreachable")


def brute_binned(P, y, notion, strategy, n_bins, convex):
    out = []
    for z, t, _ in brute_problems(P, y, notion):
        n = len(z)
        m = int(round(math.sqrt(n))) if n_bins == "sqrt" else n_bins
        edges = brute_edges(z, m, strategy)
        weight = [0.0] * (len(edges) - 1)
        conf = [0.0] * (len(edges) - 1)
        acc = [0.0] * (len(edges) - 1)
        for i in range(n):
            for b, a in brute_allocation(z[i], edges, convex).items():
                weight[b] += a
                conf[b] += a * z[i]
                acc[b] += a * t[i]
        # sum_b w_b |mean conf_b - mean acc_b| with the (soft) bin weights
        out.append(sum((weight[b] / n) * abs(conf[b] / weight[b] - acc[b] / weight[b])
                       for b in range(len(weight)) if weight[b] > 0))
    return sum(out) / len(out)


def brute_silverman(z):
    n = len(z)
    std = np.std(z, ddof=1)
    iqr = (np.percentile(z, 75) - np.percentile(z, 25)) / 1.3489795003921634
    return min(std, iqr) * (0.75 * n) ** -0.2


def triweight(u):
    """Unit-variance triweight: 35/32 (1 - (u/3)^2)^3 / 3 on |u| < 3."""
    return 35 / 96 * (1 - (u / 3) ** 2) ** 3 if abs(u) < 3 else 0.0


def brute_kde(z, t, low, h):
    cells = min(2**16, max(1024, math.ceil(4 * (1 - low) / h)))
    step = (1 - low) / cells
    num = den = 0.0
    for g in range(cells):
        x = low + (g + 0.5) * step
        N = D = 0.0
        for j in range(len(z)):
            for copy in (z[j], 2 * low - z[j], 2 - z[j], 2 - 2 * low + z[j]):
                k = triweight((x - copy) / h) / h
                N += k * t[j]
                D += k
        num += abs(N - x * D)  # |g(x) - x| weighted by the density D
        den += D
    return num / den


def small_data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(d, 0.7), size=n)
    y = rng.integers(0, d, size=n)
    return P, y


@pytest.mark.parametrize("notion", ["top-label", "classwise"])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [1, 4, 15, "sqrt"])
@pytest.mark.parametrize("convex", [False, True])
def test_binned_matches_brute_force(notion, strategy, n_bins, convex):
    P, y = small_data()
    expected = brute_binned(P, y, notion, strategy, n_bins, convex)
    assert ece(P, y, notion, strategy=strategy, n_bins=n_bins, convex=convex) == pytest.approx(expected, abs=1e-12)


def test_binned_with_ties_and_confidences_at_one():
    # merged quantile edges, samples exactly on edges and centres, confidences of exactly 1
    P = np.array([[1.0, 0.0]] * 10 + [[0.75, 0.25]] * 5 + [[0.5, 0.5]] * 3 + [[0.6, 0.4], [0.9, 0.1]])
    y = np.array([0] * 8 + [1] * 2 + [0, 1, 0, 1, 1] + [1, 0, 0] + [0, 1])
    for strategy in ("uniform", "quantile"):
        for convex in (False, True):
            for n_bins in (2, 4, 5):
                expected = brute_binned(P, y, "top-label", strategy, n_bins, convex)
                assert ece(P, y, strategy=strategy, n_bins=n_bins, convex=convex) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("notion", ["top-label", pytest.param("classwise", marks=pytest.mark.slow)])
@pytest.mark.parametrize("bandwidth", [0.03, 0.2, "silverman"])
def test_kde_matches_brute_force(notion, bandwidth):
    P, y = small_data(n=25, d=3, seed=4)
    out = []
    for z, t, low in brute_problems(P, y, notion):
        h = brute_silverman(z) if bandwidth == "silverman" else bandwidth
        out.append(brute_kde(z, t, low, h))
    assert ece_kde(P, y, notion=notion, bandwidth=bandwidth) == pytest.approx(np.mean(out), abs=1e-12)


def test_silverman_matches_formula_and_fallbacks():
    z = np.random.default_rng(2).beta(5, 2, size=500)
    assert silverman_bandwidth(z) == pytest.approx(brute_silverman(z), rel=1e-12)
    # no spread between the quartiles: the 1%-99% range takes over; none at all: 1
    z = np.concatenate([np.full(90, 0.5), np.linspace(0.6, 0.9, 10)])
    assert silverman_bandwidth(z) == pytest.approx((np.percentile(z, 99) - np.percentile(z, 1)) / 4.6526957480816815 * 75 ** -0.2)
    assert silverman_bandwidth(np.full(10, 0.3)) == 1.0


@pytest.mark.slow
def test_kde_ece_is_the_regression_integral_of_a_known_miscalibration():
    # conf uniform on [0.5, 1], P(correct | c) = c - 0.1 exactly: the L1 ECE is 0.1
    rng = np.random.default_rng(5)
    n = 20_000
    c = rng.uniform(0.5, 1.0, n)
    y = (rng.random(n) < c - 0.1).astype(int)  # 0 is the predicted class
    P = np.column_stack([c, 1 - c])
    labels = np.where(y == 1, 0, 1)
    assert ece_kde(P, labels) == pytest.approx(0.1, abs=0.01)


# -- the registry and the bootstrap ------------------------------------------------------
def test_registry_names_and_labels():
    assert list(ECE_ESTIMATORS) == ["ece-15-bins", "ece-width-sqrt", "ece-mass-sqrt", "ece-convex", "ece-mass-convex", "ece-kde"]
    assert ECE_ESTIMATORS["ece-15-bins"]["label"] == "15-bin ECE (L1)"
    assert all(spec["label"] for spec in ECE_ESTIMATORS.values())
    P, y = small_data(n=200)
    assert ece_by_name("ece-mass-convex", P, y) == ece(P, y, strategy="quantile", n_bins="sqrt", convex=True)
    assert ece_by_name("ece-kde", P, y, notion="classwise") == ece_kde(P, y, notion="classwise")
    assert cd.ece_by_name is ece_by_name


# the classwise KDE has one bandwidth per class: test_classwise_bootstrap_is_the_mean_over_classes
@pytest.mark.parametrize("name, notion", [(name, notion) for notion in ("top-label", "classwise") for name in ECE_ESTIMATORS
                                          if (name, notion) != ("ece-kde", "classwise")])
def test_bootstrap_equals_explicit_resamples(name, notion):
    P, y = small_data(n=120, d=3, seed=7)
    n_resamples = 30
    value, se = ece_bootstrap(name, P, y, notion=notion, n_resamples=n_resamples, random_state=3)
    assert value == ece_by_name(name, P, y, notion=notion)
    idx = np.random.default_rng(3).integers(0, len(y), size=(n_resamples, len(y)))
    if ECE_ESTIMATORS[name]["kind"] == "kde":
        h = silverman_bandwidth(P.max(axis=1))  # the bootstrap keeps the full sample's bandwidth
        boots = [ece_kde(P[i], y[i], bandwidth=h) for i in idx]
    else:
        boots = [ece_by_name(name, P[i], y[i], notion=notion) for i in idx]
    assert se == pytest.approx(np.std(boots, ddof=1), rel=1e-9)
    assert ece_bootstrap(name, P, y, notion=notion, n_resamples=n_resamples, random_state=3) == (value, se)  # seeded


@pytest.mark.parametrize("convex", [False, True])
def test_mass_bootstrap_with_ties_equals_explicit_resamples(convex):
    # many rows at exactly the same confidence: merged quantile edges in most resamples
    rng = np.random.default_rng(12)
    c = np.concatenate([np.ones(60), np.full(30, 0.75), rng.uniform(0.5, 1.0, 60)])
    P = np.column_stack([c, 1 - c])
    y = (rng.random(150) > c).astype(int)
    name = "ece-mass-convex" if convex else "ece-mass-sqrt"
    _, se = ece_bootstrap(name, P, y, n_resamples=40, random_state=5)
    idx = np.random.default_rng(5).integers(0, 150, size=(40, 150))
    boots = [brute_binned(P[i], y[i], "top-label", "quantile", "sqrt", convex) for i in idx]
    assert se == pytest.approx(np.std(boots, ddof=1), rel=1e-9)


# Blocks of resamples (8 at a time here, 25 in all) draw the same counts as one matrix.
# (Top-label equal-width bins keep one allocation for every block.)
@pytest.mark.parametrize("name, notion", [("ece-convex", "classwise"), ("ece-kde", "top-label"), ("ece-mass-sqrt", "top-label"),
                                          ("ece-15-bins", "top-label"), ("ece-convex", "top-label")])
def test_bootstrap_blocks_do_not_change_the_result(monkeypatch, name, notion):
    import calibdash.metrics.ece as ece_module  # the module: the package does not re-export the function ece

    P, y = small_data(n=150, d=3, seed=2)
    full = ece_bootstrap(name, P, y, notion=notion, n_resamples=25)
    monkeypatch.setattr(ece_module, "BOOT_BLOCK", 2 * 150 * 4)
    assert ece_bootstrap(name, P, y, notion=notion, n_resamples=25) == pytest.approx(full, rel=1e-12)


def test_classwise_bootstrap_is_the_mean_over_classes():
    P, y = small_data(n=90, d=3, seed=8)
    idx = np.random.default_rng(0).integers(0, len(y), size=(20, len(y)))
    _, se = ece_bootstrap("ece-kde", P, y, notion="classwise", n_resamples=20)
    hs = [silverman_bandwidth(P[:, k]) for k in range(3)]
    boots = [np.mean([kde_problem_ece(P[i, k], (y[i] == k).astype(float), 0.0, hs[k]) for k in range(3)]) for i in idx]
    assert se == pytest.approx(np.std(boots, ddof=1), rel=1e-9)


# -- real outputs: the published 15-bin figures -------------------------------------------
@pytest.mark.parametrize("name, percent", [("cifar10_lenet5", 10.79), ("cifar10_wrn16-4", 5.37), ("cifar100_wrn16-4", 5.81)])
@pytest.mark.shared_data
def test_known_15_bin_figures(name, percent):
    P, y = load_npz(name)
    assert round(100 * ece(P, y), 2) == percent
    assert round(100 * ece_by_name("ece-15-bins", P, y), 2) == percent
    assert rl.reliability_table(*rl.top_label(P, y), n_resamples=0).attrs["ece"] == pytest.approx(ece(P, y), abs=1e-12)


# -- consistency on simulations with a known answer ----------------------------------------
@pytest.fixture(scope="module")
def calibrated():
    sim = dirichlet_simulation(n=20_000, n_classes=5, distortion=1.0, random_state=11)
    return sim.probs, sim.labels


@pytest.fixture(scope="module")
def distorted():
    sim = dirichlet_simulation(n=20_000, n_classes=5, distortion=0.3, random_state=12)
    big = dirichlet_simulation(n=1_000_000, n_classes=5, distortion=0.3, random_state=13)
    return sim.probs, sim.labels, top_label_l1_truth(big.probs, big.true_probs)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ECE_ESTIMATORS))
def test_estimators_are_small_on_a_calibrated_model(calibrated, name):
    # the error of the distorted model below is 0.166: a calibrated one stays an order of
    # magnitude under it (what is left is the estimators' positive bias, largest for sqrt(n) bins)
    P, y = calibrated
    assert ece_by_name(name, P, y) < 0.02
    assert ece_by_name(name, P, y, notion="classwise") < 0.02


@pytest.mark.slow
def test_truth_helper_is_zero_for_a_calibrated_model():
    sim = dirichlet_simulation(n=400_000, n_classes=5, distortion=1.0, random_state=14)
    assert top_label_l1_truth(sim.probs, sim.true_probs) < 0.005
    # and it is the L1 error: at most the L2 error of the same model
    assert top_label_l1_truth(sim.probs, sim.true_probs) <= 0.01


@pytest.mark.parametrize("name", list(ECE_ESTIMATORS))
@pytest.mark.slow
def test_estimators_approach_the_true_error_of_a_distorted_model(distorted, name):
    P, y, truth = distorted
    assert truth > 0.05  # the distortion is large enough for the comparison to mean something
    value, se = ece_bootstrap(name, P, y, n_resamples=50)
    assert abs(value - truth) < max(0.1 * truth, 4 * se)


# -- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda P, y: ece(P, y, notion="canonical"), "does not support the 'canonical' notion"),
        (lambda P, y: ece(P, y, notion="toplabel"), "Unknown notion"),
        (lambda P, y: ece(P, y, strategy="mass"), "strategy must be 'uniform'"),
        (lambda P, y: ece(P, y, n_bins=0), "n_bins must be a positive integer or 'sqrt'"),
        (lambda P, y: ece(P, y, n_bins="log"), "n_bins must be a positive integer or 'sqrt'"),
        (lambda P, y: ece(P, y, n_bins=2.5), "n_bins must be a positive integer or 'sqrt'"),
        (lambda P, y: ece(P, y, convex="yes"), "convex must be True or False"),
        (lambda P, y: ece_kde(P, y, bandwidth=-0.1), "bandwidth must be 'silverman' or a positive number"),
        (lambda P, y: ece_kde(P, y, bandwidth="scott"), "bandwidth must be 'silverman' or a positive number"),
        (lambda P, y: ece_by_name("ece-20-bins", P, y), "Unknown ECE estimator 'ece-20-bins'"),
        (lambda P, y: ece_bootstrap("ece-kde", P, y, n_resamples=1), "n_resamples must be an integer of at least 2"),
        (lambda P, y: ece(P * 3, y), "sums to"),
        (lambda P, y: ece(P, y[:-1]), "labels but there are"),
        (lambda P, y: ece(P, y + 5), "outside the classes"),
        (lambda P, y: rl.continuous_reliability_curve(P, y, class_index=0), "leave it None"),
        (lambda P, y: rl.continuous_reliability_curve(P, y, notion="classwise"), "needs class_index"),
        (lambda P, y: rl.continuous_reliability_curve(P, y, notion="classwise", class_index=3), "needs class_index"),
        (lambda P, y: rl.continuous_reliability_curve(P, y, grid=1), "grid must be"),
        (lambda P, y: rl.continuous_reliability_curve(P, y, n_resamples=1), "n_resamples must be 0"),
        (lambda P, y: rl.continuous_reliability_curve(P, y, level=90), "level must be between 0 and 1"),
        (lambda P, y: rl.continuous_reliability_curve(P, y, notion="canonical"), "does not support the 'canonical'"),
        (lambda P, y: rl.continuous_reliability_curve(P, y, bandwidth=0), "bandwidth must be 'silverman' or a positive"),
    ],
)
def test_bad_input_says_what_is_wrong(call, message):
    P, y = small_data(n=30)
    with pytest.raises(ValueError, match=message):
        call(P, y)


# -- the continuous reliability curve -------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", ["cifar10_lenet5", "cifar10_wrn16-4"])
@pytest.mark.shared_data
def test_curve_band_contains_estimate_and_lies_in_unit_interval(name):
    P, y = load_npz(name)
    curve = rl.continuous_reliability_curve(P, y, n_resamples=100)
    assert list(curve.columns) == ["confidence", "accuracy", "lower", "upper", "density", "rows"]
    assert len(curve) == 200 and curve["confidence"].iloc[0] == pytest.approx(0.1) and curve["confidence"].iloc[-1] == 1.0
    seen = curve["rows"] >= rl.MIN_EFFECTIVE_ROWS
    assert seen.sum() > 100
    c = curve[seen]
    assert (c["lower"] <= c["accuracy"]).all() and (c["accuracy"] <= c["upper"]).all()
    assert ((c[["lower", "accuracy", "upper"]] >= 0) & (c[["lower", "accuracy", "upper"]] <= 1)).all().all()
    assert curve.loc[~seen, ["accuracy", "lower", "upper"]].isna().all().all()
    assert curve.attrs["ece"] == pytest.approx(ece_kde(P, y, bandwidth=curve.attrs["bandwidth"]), abs=1e-12)


def test_curve_matches_brute_force_regression_and_density():
    P, y = small_data(n=40, d=3, seed=9)
    curve = rl.continuous_reliability_curve(P, y, notion="classwise", class_index=1, grid=11, n_resamples=0, bandwidth="silverman")
    assert curve[["lower", "upper"]].isna().all().all()
    z, t = P[:, 1], (y == 1).astype(float)
    h = brute_silverman(z)
    assert curve.attrs["bandwidth"] == pytest.approx(h, rel=1e-12)
    estimated = 0
    for x, acc, dens, rows in curve[["confidence", "accuracy", "density", "rows"]].itertuples(index=False):
        k = [sum(triweight((x - c) / h) / h for c in (v, -v, 2 - v, 2 + v)) for v in z]
        assert dens == pytest.approx(sum(k) / len(z), abs=1e-12)
        effective = sum(k) ** 2 / np.dot(k, k) if sum(k) > 0 else 0.0  # Kish's effective number of rows
        assert rows == pytest.approx(effective, rel=1e-9)
        if effective >= rl.MIN_EFFECTIVE_ROWS:
            assert acc == pytest.approx(np.dot(k, t) / sum(k), abs=1e-12)
            estimated += 1
        else:
            assert np.isnan(acc)
    assert 0 < estimated < len(curve)  # both branches are checked
    fixed = rl.continuous_reliability_curve(P, y, notion="classwise", class_index=1, grid=11, n_resamples=0, bandwidth=0.3)
    assert fixed.attrs["bandwidth"] == 0.3
    x, acc = fixed["confidence"].iloc[4], fixed["accuracy"].iloc[4]
    k = [sum(triweight((x - c) / 0.3) / 0.3 for c in (v, -v, 2 - v, 2 + v)) for v in z]
    assert acc == pytest.approx(np.dot(k, t) / sum(k), abs=1e-12)
    # the density integrates to about 1 over the support (reflection keeps the mass inside)
    dense = rl.continuous_reliability_curve(P, y, notion="classwise", class_index=1, grid=2001, n_resamples=0)
    assert np.trapezoid(dense["density"], dense["confidence"]) == pytest.approx(1.0, abs=0.01)


@pytest.mark.slow
def test_curve_follows_a_known_miscalibration():
    rng = np.random.default_rng(6)
    n = 20_000
    c = rng.uniform(0.5, 1.0, n)
    correct = rng.random(n) < c - 0.1
    P = np.column_stack([c, 1 - c])
    y = np.where(correct, 0, 1)
    curve = rl.continuous_reliability_curve(P, y, n_resamples=50)
    inner = curve[(curve["confidence"] > 0.6) & (curve["confidence"] < 0.95)]
    np.testing.assert_allclose(inner["accuracy"], inner["confidence"] - 0.1, atol=0.04)
    assert curve["confidence"].iloc[0] == 0.5  # two classes: the confidence is at least 1/2


@pytest.mark.slow
def test_continuous_figure_has_curve_band_and_density():
    from calibdash.display import plots

    P, y = small_data(n=300, d=3, seed=1)
    fig = plots.continuous_reliability_figure(rl.continuous_reliability_curve(P, y, n_resamples=20))
    names = [tr.name for tr in fig.data]
    assert "estimated P(correct | confidence)" in names and "bootstrap band" in names and "density of predictions" in names
    fig = plots.continuous_reliability_figure(rl.continuous_reliability_curve(P, y, n_resamples=0))
    assert "bootstrap band" not in [tr.name for tr in fig.data]
