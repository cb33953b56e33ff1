"""The variational estimator of Berta et al., the recalibration maps and the plug-in
families built on them: brute force against scikit-learn fitted by hand, the Brier identity,
the paper's simulation with its known answer, the pipeline, and bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

import calibdash as cd
from calibdash.estimators.registry import DEFAULT_ESTIMATORS, REGISTRY
from calibdash.lab.simulation import dirichlet_simulation, simulation_truth
from calibdash.metrics.recalibrators import RECALIBRATORS, TemperatureRecalibrator, make_recalibrator
from calibdash.metrics.variational import holdout_loss_gap, variational_error, variational_top_label

from .. import brute

NEW_FAMILIES = ("isotonic", "logistic", "boosting")
NOTIONS = ("top-label", "canonical", "classwise")
# small trees and few rounds keep boosting cheap in the tests; the maths is the same
HAND_PARAMS = {"temperature": {}, "isotonic": {}, "logistic": {"C": 3.0}, "boosting": {"max_iter": 15, "max_leaf_nodes": 7}}


@pytest.fixture(autouse=True)
def _one_openmp_thread():
    """OpenMP and BLAS threads busy-wait on shared cores (see calibdash.metrics.recalibrators);
    the maps fitted by hand here get the single thread the package's maps use."""
    with threadpool_limits(limits=1):
        yield


def small_problem(seed, n=300, d=4):
    sim = dirichlet_simulation(n=n, n_classes=d, alpha=0.6, distortion=0.5, random_state=seed)
    return sim.probs, sim.labels


# -- scikit-learn fitted by hand ----------------------------------------------------------
def hand_fit(name, P, y, params):
    """The map g as a function of P, fitted on (P, y) with scikit-learn / scipy directly."""
    d = P.shape[1]
    logs = np.log(np.maximum(P, brute.TINY))
    if name == "temperature":
        T = brute_temperature(P, y)
        return lambda Q: softmax_rows(np.log(np.maximum(Q, brute.TINY)) / T)
    if name == "isotonic":
        maps = [IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(P[:, k], (y == k) * 1.0) for k in range(d)]

        def g(Q):
            G = np.column_stack([m.predict(Q[:, k]) for k, m in enumerate(maps)])
            out = np.empty_like(G)
            for i, row in enumerate(G):
                out[i] = row / row.sum() if row.sum() > 0 else np.full(d, 1.0 / d)
            return out

        return g
    if name == "logistic":
        clf = LogisticRegression(C=params["C"], max_iter=1000).fit(logs, y)
    else:
        clf = HistGradientBoostingClassifier(
            max_iter=params["max_iter"], max_leaf_nodes=params["max_leaf_nodes"], early_stopping=False, random_state=0
        ).fit(logs, y)

    def g(Q):
        out = np.zeros(Q.shape)
        out[:, clf.classes_] = clf.predict_proba(np.log(np.maximum(Q, brute.TINY)))
        return out

    return g


def softmax_rows(Z):
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def brute_temperature(P, y):
    """Temperature by a dense scan refined by golden-section search on the NLL."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda lt: brute.temperature_nll(P, y, np.exp(lt)), bounds=(-5, 5), method="bounded", options={"xatol": 1e-12})
    return float(np.exp(res.x))


def brier_rows(Q, y):
    E = np.eye(Q.shape[1])[y]
    return np.array([sum((Q[i, k] - E[i, k]) ** 2 for k in range(Q.shape[1])) for i in range(Q.shape[0])])


def log_rows(Q, y):
    return np.array([-np.log(max(Q[i, y[i]], brute.TINY)) for i in range(Q.shape[0])])


# -- the variational estimate against an explicit loop -----------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", RECALIBRATORS)
@pytest.mark.parametrize("loss", ["brier", "log"])
def test_variational_error_equals_explicit_fold_loop(name, loss):
    P, y = small_problem(seed=3)
    params = HAND_PARAMS[name]
    est = variational_error(P, y, recalibrator=name, loss=loss, n_folds=4, random_state=7, **params)
    per_fold, sizes, rows = [], [], np.empty(len(y))
    for train, test in KFold(n_splits=4, shuffle=True, random_state=7).split(P):
        g = hand_fit(name, P[train], y[train], params)
        f = brier_rows if loss == "brier" else log_rows
        gap = f(P[test], y[test]) - f(g(P[test]), y[test])
        rows[test] = gap
        per_fold.append(gap.mean())
        sizes.append(len(test))
    # temperature is found by two different optimisers: agreement to their tolerance
    tol = 1e-7 if name == "temperature" else 1e-12
    assert est.estimate == pytest.approx(np.average(per_fold, weights=sizes), abs=tol)
    np.testing.assert_allclose(est.per_fold, per_fold, rtol=0, atol=tol)
    assert est.se == pytest.approx(np.std(per_fold, ddof=1) / 2.0, abs=tol)
    assert (est.loss, est.recalibrator, est.n) == (loss, name, len(y))


def test_top_label_equals_explicit_fold_loop_and_parts_sum():
    P, y = small_problem(seed=4, n=400, d=5)
    (z, zc, t), = brute.notion_problems(P, y, "top-label")
    z, t = z[:, 0], t[:, 0]
    for p in (1, 2):
        res = variational_top_label(P, y, p=p, recalibrator="isotonic", n_folds=5, random_state=1)
        total, over, under, per_fold = np.empty(len(y)), np.empty(len(y)), np.empty(len(y)), []
        for train, test in KFold(n_splits=5, shuffle=True, random_state=1).split(P):
            a = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(z[train], t[train]).predict(z[test])
            b = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(zc[train], 1 - t[train]).predict(zc[test])
            g = np.where(a + b > 0, a / np.where(a + b > 0, a + b, 1), 0.5)
            c, tt = z[test], t[test]
            for j, i in enumerate(test):
                if p == 1:
                    total[i] = np.sign(g[j] - c[j]) * (tt[j] - c[j])
                    over[i] = (c[j] - tt[j]) if g[j] < c[j] else 0.0
                    under[i] = (tt[j] - c[j]) if g[j] > c[j] else 0.0
                else:
                    gap = (c[j] - tt[j]) ** 2 - (g[j] - tt[j]) ** 2
                    low, high = min(g[j], c[j]), max(g[j], c[j])
                    total[i] = gap
                    over[i] = (c[j] - tt[j]) ** 2 - (low - tt[j]) ** 2
                    under[i] = (c[j] - tt[j]) ** 2 - (high - tt[j]) ** 2
            per_fold.append(total[test].mean())
        assert res.estimate == pytest.approx(total.mean(), abs=1e-12)
        assert res.overconfidence == pytest.approx(over.mean(), abs=1e-12)
        assert res.underconfidence == pytest.approx(under.mean(), abs=1e-12)
        np.testing.assert_allclose(res.per_fold, per_fold, rtol=0, atol=1e-12)
        assert res.overconfidence + res.underconfidence == pytest.approx(res.estimate, abs=1e-14)
        assert res.error == pytest.approx(max(0, res.estimate) ** (1 / p))
        assert res.se > 0 and res.overconfidence_se > 0 and res.underconfidence_se > 0


def test_brier_identity_row_by_row_at_the_true_conditional():
    """With g = the true conditional (temperature 0.3 inverts the simulation's distortion):
    brier(P) - brier(G) = ||P - G||^2 + 2 <P - G, G - e_y> for every row, and the cross
    term averages to ~0, so the gap's mean is the squared canonical error."""
    sim = dirichlet_simulation(n=20_000, n_classes=5, distortion=0.3, random_state=0)
    P, y = sim.probs, sim.labels
    g = TemperatureRecalibrator(temperature=0.3).fit(P, y)
    G = g.predict_proba(P)
    np.testing.assert_allclose(G, sim.true_probs, rtol=0, atol=1e-9)
    gap = holdout_loss_gap(g, P, y, loss="brier")
    E = np.eye(5)[y]
    sq = np.sum((P - G) ** 2, axis=1)
    cross = np.sum((P - G) * (G - E), axis=1)
    np.testing.assert_allclose(gap, sq + 2 * cross, rtol=0, atol=1e-12)
    np.testing.assert_allclose(gap[:200], brier_rows(P[:200], y[:200]) - brier_rows(G[:200], y[:200]), rtol=0, atol=1e-12)
    assert abs(cross.mean()) < 4 * cross.std() / np.sqrt(len(y))
    assert gap.mean() == pytest.approx(sq.mean(), abs=4 * 2 * cross.std() / np.sqrt(len(y)))


def test_log_loss_gap_is_the_log_ratio():
    P, y = small_problem(seed=5)
    g = make_recalibrator("temperature").fit(P, y)
    gap = holdout_loss_gap(g, P, y, loss="log")
    G = g.predict_proba(P)
    rows = np.arange(len(y))
    np.testing.assert_allclose(gap, np.log(G[rows, y]) - np.log(P[rows, y]), rtol=0, atol=1e-12)


# -- the paper's simulation ---------------------------------------------------------------
@pytest.fixture(scope="module")
def simulation_runs():
    """Brier variational estimates over 10 seeds (n = 10,000, 5 classes, distortion 0.3),
    the same gap with the true map g* (temperature 0.3 inverts the distortion), and the
    top-label estimates with isotonic regression."""
    out = {name: [] for name in ("temperature", "isotonic", "logistic", "oracle")}
    tl = {1: [], 2: []}
    for seed in range(10):
        sim = dirichlet_simulation(n=10_000, n_classes=5, distortion=0.3, random_state=seed)
        for name in ("temperature", "isotonic", "logistic"):
            out[name].append(variational_error(sim.probs, sim.labels, recalibrator=name).estimate)
        g_star = TemperatureRecalibrator(temperature=0.3).fit(sim.probs, sim.labels)
        out["oracle"].append(holdout_loss_gap(g_star, sim.probs, sim.labels).mean())
        for p in tl:
            tl[p].append(variational_top_label(sim.probs, sim.labels, p=p))
    return {k: np.array(v) for k, v in out.items()}, tl, simulation_truth(n_mc=500_000)


def mean_and_se(values):
    return values.mean(), values.std(ddof=1) / np.sqrt(len(values))


@pytest.mark.slow
def test_temperature_brier_estimate_matches_the_true_squared_error(simulation_runs):
    runs, _, truth = simulation_runs
    target = truth["canonical"] ** 2  # ~0.0633
    print(f"\nCCE_2^2 truth {target:.5f}")
    for name, v in runs.items():
        print(f"  {name:12s} mean over seeds {v.mean():.5f} +- {mean_and_se(v)[1]:.5f}")
    mean, se = mean_and_se(runs["temperature"])
    assert mean <= target + 2 * se
    assert abs(mean - target) <= 0.2 * target
    # Paired with the gap at the true map on the same data, the sampling noise of the
    # data cancels: temperature scaling contains g*, and cross-fitting loses almost nothing.
    assert abs(np.mean(runs["temperature"] - runs["oracle"])) <= 0.01 * target


@pytest.mark.slow
def test_isotonic_and_logistic_are_lower_bounds(simulation_runs):
    runs, _, truth = simulation_runs
    target = truth["canonical"] ** 2
    for name in ("isotonic", "logistic"):
        mean, se = mean_and_se(runs[name])
        assert mean <= target + 2 * se, name
        # against the gap of the true map on the same data: below it, paired
        diff, diff_se = mean_and_se(runs[name] - runs["oracle"])
        assert diff <= 2 * diff_se, name
        assert mean > 0.5 * target, name  # and they find most of it
    # logistic regression on log p contains the true map (10/3 times the identity), and
    # isotonic one-vs-rest does not: the family that contains g* gets closer
    assert runs["logistic"].mean() > runs["isotonic"].mean()


@pytest.mark.slow
def test_top_label_over_and_under_confidence_on_the_simulation(simulation_runs):
    _, tl, truth = simulation_runs
    target2 = truth["top-label"] ** 2  # TCE_2^2 ~ 0.036
    v2 = np.array([r.estimate for r in tl[2]])
    print(f"\nTCE_2^2 truth {target2:.5f}; isotonic p=2 mean {v2.mean():.5f}; "
          f"p=1 mean {np.mean([r.estimate for r in tl[1]]):.5f} "
          f"(over {np.mean([r.overconfidence for r in tl[1]]):.5f}, under {np.mean([r.underconfidence for r in tl[1]]):.5f})")
    assert v2.mean() <= target2 + 2 * v2.std(ddof=1) / np.sqrt(len(v2))
    assert v2.mean() > 0.7 * target2
    for p in (1, 2):
        for r in tl[p]:
            # the simulated model (distortion 0.3) is under-confident
            assert r.underconfidence > r.overconfidence
            assert r.overconfidence + r.underconfidence == pytest.approx(r.estimate, abs=1e-14)
    # E|c - g*| <= sqrt(E (c - g*)^2), and both estimates keep that order on average
    assert np.mean([r.estimate for r in tl[1]]) <= np.sqrt(target2) * 1.02


# -- the plug-in families -----------------------------------------------------------------
def hand_features(name, params, P_tr, y_tr, P, notion):
    """V with h(p, p') = <v(p), v(p')>, from maps fitted by hand."""
    if notion == "canonical":
        return P - hand_fit(name, P_tr, y_tr, params)(P)
    cols = []
    for (z_tr, zc_tr, t_tr), (z, zc, _) in zip(
        brute.notion_problems(P_tr, y_tr, notion), brute.notion_problems(P, np.zeros(len(P), int), notion)
    ):
        S_tr, S = np.column_stack([z_tr[:, 0], zc_tr]), np.column_stack([z[:, 0], zc])
        g = hand_fit(name, S_tr, (t_tr[:, 0] == 0).astype(int), params)  # the event is class 0
        cols.append(z[:, 0] - g(S)[:, 0])
    return np.column_stack(cols)


@pytest.mark.parametrize("notion", NOTIONS)
@pytest.mark.parametrize("fam", NEW_FAMILIES)
def test_plug_in_h_is_the_inner_product_of_recalibration_residuals(fam, notion):
    P, y = small_problem(seed=8, n=160, d=3)
    P_tr, y_tr, P_a, P_b = P[:120], y[:120], P[120:140], P[140:]
    params = HAND_PARAMS[fam]
    est = cd.make_estimator(fam, notion=notion, **params).fit(P_tr, y_tr)
    Va, Vb = hand_features(fam, params, P_tr, y_tr, P_a, notion), hand_features(fam, params, P_tr, y_tr, P_b, notion)
    H = np.array([[float(np.dot(Va[i], Vb[j])) for j in range(len(Vb))] for i in range(len(Va))])
    np.testing.assert_allclose(est.h(P_a, P_b), H, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.h_diag(P_a), np.diag(est.h(P_a, P_a)), rtol=0, atol=1e-14)
    Z = P_a if notion != "top-label" else P_a.max(axis=1, keepdims=True)
    np.testing.assert_allclose(est.recalibration(P_a), Z - Va, rtol=0, atol=1e-12)
    # the risk of Eq. (20) against its explicit double sum
    expected = brute.risk(est.h(P_b, P_b), brute.residual_matrix(P_b, y[140:], notion))
    assert cd.risk(est, P_b, y[140:]) == pytest.approx(expected, rel=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("notion", NOTIONS)
@pytest.mark.parametrize("fam", NEW_FAMILIES)
def test_edge_inputs_give_finite_results(fam, notion):
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(4), size=60)
    P[:10] = np.eye(4)[rng.integers(0, 4, 10)]  # exact 0 and 1
    P[10:15] = [0.5, 0.5, 0.0, 0.0]
    y = rng.integers(0, 3, 60)  # class 3 never occurs
    est = cd.make_estimator(fam, notion=notion).fit(P[:40], y[:40])
    assert np.all(np.isfinite(est.h(P[40:], P[40:])))
    assert np.isfinite(cd.risk(est, P[40:], y[40:]))
    # every prediction equal, and a single training label: nothing to learn, still finite
    Q = np.tile([0.7, 0.2, 0.1], (30, 1))
    for labels in (rng.integers(0, 3, 30), np.zeros(30, int)):
        e = cd.make_estimator(fam, notion=notion).fit(Q[:20], labels[:20])
        assert np.all(np.isfinite(e.h(Q[20:], Q[20:])))
    # two classes
    p = rng.beta(2, 2, 80)
    P2, y2 = np.column_stack([1 - p, p]), (rng.random(80) < p).astype(int)
    assert np.isfinite(cd.risk(cd.make_estimator(fam, notion=notion).fit(P2[:50], y2[:50]), P2[50:], y2[50:]))
    # float32 exports whose rows sum to 1 only within 1e-6 give (nearly) the float64 risk
    P5 = rng.dirichlet(np.ones(5), size=80)
    P32 = (P5 * (1 + rng.uniform(-1e-6, 1e-6, size=(80, 1)))).astype(np.float32)
    y5 = rng.integers(0, 5, 80)
    r64 = cd.risk(cd.make_estimator(fam, notion=notion).fit(P5[:50], y5[:50]), P5[50:], y5[50:])
    r32 = cd.risk(cd.make_estimator(fam, notion=notion).fit(P32[:50], y5[:50]), P32[50:], y5[50:])
    assert r32 == pytest.approx(r64, rel=1e-3)


def test_isotonic_all_zero_rows_become_uniform():
    # class 0 is never the label: its map is 0, class 1's is 1, and outside the training
    # range both clip to their end values
    P = np.array([[0.6, 0.4], [0.7, 0.3], [0.8, 0.2], [0.9, 0.1]])
    y = np.array([1, 1, 1, 1])
    g = make_recalibrator("isotonic").fit(P, y)
    G = g.predict_proba(np.array([[0.5, 0.5], [0.75, 0.25]]))
    np.testing.assert_allclose(G, [[0.0, 1.0], [0.0, 1.0]])
    # each of classes 0-2 is the label only where its probability is not the smallest,
    # so below the training range its map is 0; class 3 is never the label (map 0)
    P4 = np.array([[0.5, 0.3, 0.2, 0.0], [0.2, 0.5, 0.3, 0.0], [0.3, 0.2, 0.5, 0.0]])
    g4 = make_recalibrator("isotonic").fit(P4, np.array([1, 2, 0]))
    np.testing.assert_allclose(g4.predict_proba(np.array([[0.1, 0.1, 0.1, 0.7]])), [[0.25] * 4])
    assert np.allclose(make_recalibrator("isotonic", y_min=0.01).fit(P, y).predict_proba(P).sum(1), 1)


@pytest.mark.slow
def test_reruns_are_identical():
    P, y = small_problem(seed=9, n=200)
    for fam in NEW_FAMILIES:
        a = cd.make_estimator(fam, notion="canonical", **HAND_PARAMS[fam] if fam != "isotonic" else {}).fit(P, y)
        b = cd.make_estimator(fam, notion="canonical", **HAND_PARAMS[fam] if fam != "isotonic" else {}).fit(P, y)
        np.testing.assert_array_equal(a.h_diag(P), b.h_diag(P))
    r1 = variational_error(P, y, recalibrator="boosting", **HAND_PARAMS["boosting"])
    r2 = variational_error(P, y, recalibrator="boosting", **HAND_PARAMS["boosting"])
    assert r1 == r2


def test_grids_and_specs():
    from calibdash.estimators.registry import default_grid

    for fam in NEW_FAMILIES:
        assert fam in cd.FAMILIES and fam in REGISTRY
        assert all(fam not in names for names in DEFAULT_ESTIMATORS.values())
        for notion in NOTIONS:
            grid = default_grid(fam, notion)
            assert list(grid) == [cd.FAMILIES[fam].path_param] and grid[cd.FAMILIES[fam].path_param]
    # a path fits one estimator per grid value and ranks them by risk
    P, y = small_problem(seed=10, n=300)
    path = cd.make_estimator("logistic", notion="canonical").fit_path(P[:200], y[:200], [0.01, 1.0, 100.0])
    risks = path.risks(P[200:], y[200:])
    for e, r in zip(path, risks):
        assert r == pytest.approx(cd.risk(e, P[200:], y[200:]), rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("notion", ["top-label", "canonical"])
def test_evaluate_runs_the_new_plug_ins(notion):
    sim = dirichlet_simulation(n=1000, n_classes=4, alpha=0.5, distortion=0.5, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no convergence warning from the logistic maps
        res = cd.evaluate(sim.probs, sim.labels, notion=notion, estimators=["temperature", "isotonic", "logistic"])
    table = res.summary
    assert len(table) == 3
    numeric = table.select_dtypes("number")
    assert np.all(np.isfinite(numeric.to_numpy(dtype=float)))


# -- bad input ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call,message",
    [
        (lambda P, y: variational_error(P, y, recalibrator="platt"), "choose one of 'temperature', 'isotonic', 'logistic', 'boosting'"),
        (lambda P, y: variational_error(P, y, loss="hinge"), "choose one of 'brier', 'log'"),
        (lambda P, y: variational_error(P, y, n_folds=1), "n_folds must be an integer of at least 2"),
        (lambda P, y: variational_error(P[:7], y[:7], n_folds=5), "too few for 5 folds"),
        (lambda P, y: variational_error(P, y, recalibrator="logistic", C=-1.0), "C must be a positive finite number"),
        (lambda P, y: variational_error(P, y, recalibrator="logistic", gamma=2), "valid parameters: 'C', 'max_iter'"),
        (lambda P, y: variational_error(P, y, recalibrator=object()), "an object with fit(P, y) and predict_proba(P)"),
        (lambda P, y: variational_top_label(P, y, p=3), "p must be 1 or 2"),
        (lambda P, y: variational_error(P * 2, y), "sums to"),
        (lambda P, y: variational_error(P, y[:-1]), "labels but there are"),
        (lambda P, y: make_recalibrator("isotonic", y_min=1.0), "y_min must be a number in [0, 1)"),
        (lambda P, y: make_recalibrator("boosting", max_leaf_nodes=1), "max_leaf_nodes must be an integer of at least 2"),
        (lambda P, y: make_recalibrator("isotonic").predict_proba(P), "not fitted yet"),
        (lambda P, y: make_recalibrator("temperature").fit(P, y).predict_proba(P[:, :2] / P[:, :2].sum(1, keepdims=True)), "fitted on 4"),
        (lambda P, y: holdout_loss_gap(object(), P, y), "must have predict_proba"),
        (lambda P, y: cd.make_estimator("logistic", C=0), "C must be a positive finite number"),
        (lambda P, y: cd.make_estimator("boosting", notion="top-label", lam=1.0), "valid parameters: 'learning_rate'"),
    ],
)
def test_bad_input_is_refused_with_a_message(call, message):
    P, y = small_problem(seed=1, n=40)
    with pytest.raises(ValueError) as info:
        call(P, y)
    assert message in str(info.value)
    assert isinstance(info.value, cd.CalibdashError)  # InputError, ConfigError or NotFittedError
