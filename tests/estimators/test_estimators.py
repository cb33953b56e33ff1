"""Every estimator against a brute-force transcription of its formula, and the risk
against the explicit double sum."""

from __future__ import annotations

import math

import numpy as np
import pytest

import calibdash as cd
from calibdash.core.risk import pair_loss_sum

from .. import brute


def random_problem(seed, n=40, d=3, concentration=1.0):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(d, concentration), size=n)
    y = np.array([rng.choice(d, p=p) for p in P])
    return P, y


def assert_rel_close(actual, expected, rtol):
    """Max-abs error relative to the largest magnitude: element-wise rtol is meaningless
    for entries that are zero up to rounding."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    scale = max(np.max(np.abs(expected)), 1e-300)
    err = np.max(np.abs(actual - expected)) / scale
    assert err <= rtol, f"relative error {err:.3e} > {rtol:.0e}"


DIMS = [2, 3, 5]
# The recalibration plug-ins (isotonic, logistic, boosting) wrap scikit-learn maps; their
# brute-force tests are in test_variational.py.
RECALIBRATION_PLUG_INS = ("isotonic", "logistic", "boosting")
SUPPORTED = [
    (fam, notion) for fam, cls in cd.FAMILIES.items() if fam not in RECALIBRATION_PLUG_INS
    for notion in cls.supported_notions
]


def brute_h(fam, est, P_tr, y_tr, P_a, P_b, notion):
    if fam == "bins":
        return brute.binning_h(P_tr, y_tr, P_a, P_b, notion, est.n_bins, est.strategy)
    if fam == "kde":
        return brute.kde_h(P_tr, y_tr, P_a, P_b, notion, est.bandwidth)
    kernel = lambda a, b: brute.rbf(a, b, est.gamma)  # noqa: E731
    if fam == "ukkr":
        return brute.ukkr_h(P_tr, y_tr, P_a, P_b, notion, est.lam, kernel)
    if fam == "kkkr":
        return brute.kkkr_h(P_tr, y_tr, P_a, P_b, notion, est.lam, kernel)
    if fam == "temperature":
        T = est.temperatures_ if notion == "classwise" else est.temperature_
        return brute.temperature_h(P_a, P_b, notion, T)
    raise AssertionError(fam)


PARAMS = {
    "bins": [dict(n_bins=5), dict(n_bins=7, strategy="quantile")],
    "kde": [dict(bandwidth=0.3), dict(bandwidth=0.05)],
    "ukkr": [dict(lam=1e-2), dict(lam=1e-4, gamma=2.0)],
    "kkkr": [dict(lam=1e-3), dict(lam=1e-6)],
    "temperature": [dict(temperature=0.7), dict(temperature="fit")],
}


@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("fam,notion", [pytest.param(*s, marks=pytest.mark.slow) if s[0] in ("kkkr", "kde") else s for s in SUPPORTED])
def test_h_matches_brute_force(fam, notion, d):
    P, y = random_problem(seed=d * 7 + len(fam), n=42, d=d)
    P_tr, y_tr, P_a, P_b = P[:30], y[:30], P[30:38], P[34:42]
    for params in PARAMS[fam]:
        est = cd.make_estimator(fam, notion=notion, **params).fit(P_tr, y_tr)
        expected = brute_h(fam, est, P_tr, y_tr, P_a, P_b, notion)
        assert_rel_close(est.h(P_a, P_b), expected, 1e-8)
        assert_rel_close(est.h_diag(P_a), np.diag(brute_h(fam, est, P_tr, y_tr, P_a, P_a, notion)), 1e-8)


@pytest.mark.parametrize("fam,notion", SUPPORTED)
def test_risk_matches_double_sum(fam, notion):
    P, y = random_problem(seed=11, n=70, d=4)
    est = cd.make_estimator(fam, notion=notion).fit(P[:40], y[:40])
    P_ev, y_ev = P[40:], y[40:]
    expected = brute.risk(est.h(P_ev, P_ev), brute.residual_matrix(P_ev, y_ev, notion))
    for route in ("features", "gram", "auto"):
        got = cd.risk(est, P_ev, y_ev, route=route)
        assert abs(got - expected) <= 1e-10 * abs(expected), (route, got, expected)


def test_pair_loss_with_general_middle_matrix_both_routes():
    rng = np.random.default_rng(3)
    U, F = rng.normal(size=(25, 3)), rng.normal(size=(25, 6))
    A = rng.normal(size=(6, 6))
    G = A + A.T
    H, Aij = F @ G @ F.T, U @ U.T
    off = ~np.eye(25, dtype=bool)
    expected = np.sum((Aij - H)[off] ** 2)
    for route in ("features", "gram"):
        assert abs(pair_loss_sum(U, F, G, route=route) - expected) <= 1e-10 * expected


def test_squared_error_and_calibration_error():
    P, y = random_problem(seed=5, n=60, d=3)
    est = cd.make_estimator("kkkr", notion="canonical", lam=1e-6).fit(P[:40], y[:40])
    diag = np.diag(est.h(P[40:], P[40:]))
    assert est.squared_error(P[40:]) == pytest.approx(diag.mean(), rel=1e-12)
    assert est.calibration_error(P[40:]) == pytest.approx(np.sqrt(max(0.0, diag.mean())), rel=1e-12)


def test_fitted_temperature_minimises_nll():
    P, y = random_problem(seed=9, n=200, d=4, concentration=0.5)
    est = cd.make_estimator("temperature", notion="canonical", temperature="fit").fit(P, y)
    T = est.temperature_
    best = brute.temperature_nll(P, y, T)
    for factor in (0.99, 1.01, 0.9, 1.1):
        assert brute.temperature_nll(P, y, T * factor) > best


@pytest.mark.slow
@pytest.mark.parametrize("notion", ["top-label", "classwise"])
def test_fitted_one_dimensional_temperatures_minimise_the_binary_nll(notion):
    """Top-label fits T on (c, correct), classwise one T per class on (p_k, 1[y = k]):
    each the minimiser of the binary NLL of g(z) = z^b / (z^b + (1 - z)^b), b = 1 / T."""
    from scipy.optimize import minimize_scalar

    P, y = random_problem(seed=9, n=200, d=4, concentration=0.5)
    est = cd.make_estimator("temperature", notion=notion, temperature="fit").fit(P, y)
    temps = [est.temperature_] if notion == "top-label" else est.temperatures_
    problems = brute.notion_problems(P, y, notion)
    assert len(temps) == len(problems)
    for (z, zc, t), T in zip(problems, temps):

        def nll(log_T, z=z, zc=zc, t=t):
            return brute.binary_temperature_nll(z[:, 0], zc, t[:, 0], np.exp(log_T))

        res = minimize_scalar(nll, bounds=(-5, 5), method="bounded", options={"xatol": 1e-10})
        assert T == pytest.approx(np.exp(res.x), rel=1e-6)
        assert nll(np.log(T)) <= res.fun + 1e-12


@pytest.mark.parametrize("d", [2, 4])
def test_temperature_objective_of_the_fallback_is_the_nll(d):
    """Brent's fallback (taken when the Newton curvature vanishes) minimises the NLL itself,
    on the general and on the two-class route."""
    from calibdash.core.temperature import _binary_nll, _multiclass_nll

    P, y = random_problem(seed=12, n=80, d=d, concentration=0.5)
    routes = [_multiclass_nll] + ([_binary_nll] if d == 2 else [])
    for route in routes:
        _, nll = route(P, y)
        for T in (0.3, 1.0, 2.5):
            assert nll(np.log(1 / T)) == pytest.approx(brute.temperature_nll(P, y, T), rel=1e-12)


def test_classwise_temperature_has_one_temperature_per_class():
    P, y = random_problem(seed=10, n=120, d=3)
    est = cd.make_estimator("temperature", notion="classwise").fit(P, y)
    assert est.temperatures_.shape == (3,)
    with pytest.raises(AttributeError, match="temperatures_"):
        est.temperature_  # noqa: B018 - the attribute access is what must raise
    fixed = cd.make_estimator("temperature", notion="classwise", temperature=1.5).fit(P, y)
    np.testing.assert_array_equal(fixed.temperatures_, [1.5, 1.5, 1.5])


@pytest.mark.slow
@pytest.mark.parametrize("fam", ["ukkr", "kkkr"])
@pytest.mark.parametrize("notion", ["top-label", "canonical", "classwise"])
def test_low_rank_path_is_exact_ridge_of_the_nystroem_kernel(fam, notion):
    """Forced onto the Nystroem path (exact_max_n below n), the estimator must equal the
    brute-force ridge estimator with the approximate kernel k~ = k(., C) K_CC^+ k(C, .)."""
    P, y = random_problem(seed=21, n=46, d=3)
    P_tr, y_tr, P_a = P[:36], y[:36], P[36:]
    est = cd.make_estimator(fam, notion=notion, lam=1e-3, exact_max_n=10, n_components=4).fit(P_tr, y_tr)
    assert est.low_rank_
    H = est.h(P_a, P_a)
    expected = 0.0
    worst_cond = 1.0
    for j, basis in enumerate(est.bases_):
        C = basis.centres
        KCC = brute.gram(C, C, lambda a, b: brute.rbf(a, b, 0.5))
        eig = np.linalg.eigvalsh(KCC)
        worst_cond = max(worst_cond, eig.max() / eig[eig > 1e-10 * eig.max()].min())
        Kpinv = np.linalg.pinv(KCC, rcond=1e-10, hermitian=True)

        def ktilde(a, b, C=C, Kpinv=Kpinv):
            ka = np.array([brute.rbf(a, c, 0.5) for c in C])
            kb = np.array([brute.rbf(b, c, 0.5) for c in C])
            return float(ka @ Kpinv @ kb)

        # one problem at a time, with the approximate kernel k~
        probs_tr = brute.notion_problems(P_tr, y_tr, notion)[j]
        probs_a = brute.notion_problems(P_a, np.zeros(len(P_a), int), notion)[j]
        z_tr, t_tr, za = probs_tr[0], probs_tr[2], probs_a[0]
        n = len(z_tr)
        U = z_tr - t_tr
        K = brute.gram(z_tr, z_tr, ktilde)
        Ka = brute.gram(za, z_tr, ktilde)
        if fam == "ukkr":
            W = np.linalg.solve(K + 1e-3 * n * np.eye(n), Ka.T)
            expected = expected + W.T @ U @ U.T @ W
        else:
            Cm = np.linalg.solve(np.kron(K, K) + 1e-3 * n**2 * np.eye(n * n), (U @ U.T).reshape(-1)).reshape(n, n)
            expected = expected + Ka @ Cm @ Ka.T
    # The brute force inverts K_CC explicitly, so its own rounding error is about
    # a small multiple of cond(K_CC) * 1e-16; the implementation never forms that inverse.
    assert worst_cond < 1e8, worst_cond
    assert_rel_close(H, expected, max(1e-8, 1e-14 * worst_cond))


@pytest.mark.parametrize("notion", ["top-label", "classwise"])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_binning_from_sorted_rows_equals_the_per_row_route(notion, strategy, monkeypatch):
    """Above SORTED_MIN_ROWS the binning family sorts the rows once per fold and sums runs of
    them (O(B log n) per grid value); the same gaps and risks as binning each row, empty bins,
    ties at an edge and confidences of exactly 1 included."""
    from calibdash.estimators import binning

    P, y = random_problem(seed=11, n=400, d=3)
    P[:40] = [0.5, 0.25, 0.25]  # ties exactly at a uniform edge for even bin counts
    P[40:50] = [1.0, 0.0, 0.0]
    bins = [1, 2, 7, 40, 300]  # 300 bins: many empty
    kw = dict(notion=notion, strategy=strategy)
    per_row = cd.make_estimator("bins", **kw).fit_path(P[:300], y[:300], bins)
    per_row_risks = per_row.risks(P[300:], y[300:])  # the route is chosen when the risks are computed
    monkeypatch.setattr(binning, "SORTED_MIN_ROWS", 0)
    calls = []
    real = binning.SortedRows.runs
    monkeypatch.setattr(binning.SortedRows, "runs", lambda self, edges: calls.append(len(edges)) or real(self, edges))
    sorted_rows = cd.make_estimator("bins", **kw).fit_path(P[:300], y[:300], bins)
    assert len(calls) == len(bins) * (1 if notion == "top-label" else 3)
    for a, b in zip(sorted_rows, per_row):
        for ea, eb, ga, gb in zip(a.edges_, b.edges_, a.gaps_, b.gaps_):
            np.testing.assert_array_equal(ea, eb)
            np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(sorted_rows.risks(P[300:], y[300:]), per_row_risks, rtol=1e-10)


@pytest.mark.parametrize("notion", ["top-label", "canonical"])
def test_nystroem_path_in_row_chunks_equals_one_block(notion, monkeypatch):
    """A large training set's pivoted factor and the query features are formed a few rows at a
    time (a kernel block between a million rows and 64 pivots would take 0.5 GB): the same
    estimators, to rounding."""
    from calibdash.estimators import kernel_ridge

    P, y = random_problem(seed=5, n=300, d=3)
    kw = dict(notion=notion, exact_max_n=10, n_components=24)
    lams = [1e-4, 1e-2]
    whole = {fam: cd.make_estimator(fam, **kw).fit_path(P[:200], y[:200], lams) for fam in ("ukkr", "kkkr")}
    # the held-out features too are computed before the chunk size changes
    expected = {fam: (path.risks(P[200:], y[200:]), [e.h(P[200:], P[200:]) for e in path]) for fam, path in whole.items()}
    rows = []
    real = kernel_ridge.rbf_kernel
    monkeypatch.setattr(kernel_ridge, "rbf_kernel", lambda A, *a, **k: rows.append(A.shape[0]) or real(A, *a, **k))
    monkeypatch.setattr(kernel_ridge, "_CHUNK_ENTRIES", 7 * 24)  # 7 rows per block
    monkeypatch.setattr(kernel_ridge, "_WHOLE_FACTOR_ENTRIES", 0)  # the factor of a large training set
    for fam in ("ukkr", "kkkr"):
        rows.clear()
        chunked = cd.make_estimator(fam, **kw).fit_path(P[:200], y[:200], lams)
        # the pivots' own block (at most 24 rows) and the 200 rows 7 at a time
        assert max(rows) <= 24 and sum(r <= 7 for r in rows) >= 200 / 7
        risks, hs = expected[fam]
        # To rounding, as the products' kernels round blocks of 7 and of 200 rows: the basis
        # keeps eigenvalues down to 1e-10 of the largest (_EIG_RTOL), which amplify it up to
        # eps * 1e10 ~ 2e-6 relative to the largest |h|. With OpenBLAS's Haswell kernels the
        # risks differ by 1.2e-12 relative and h by 7e-9 of its largest value (SkylakeX: 1e-14).
        np.testing.assert_allclose(chunked.risks(P[200:], y[200:]), risks, rtol=1e-10)
        for a, h in zip(chunked, hs):
            assert np.max(np.abs(a.h(P[200:], P[200:]) - h)) <= 1e-7 * np.max(np.abs(h))


@pytest.mark.parametrize("fam,notion", SUPPORTED)
def test_fit_path_equals_individual_fits(fam, notion):
    P, y = random_problem(seed=4, n=90, d=3)
    values = {
        "bins": [3, 10],
        "kde": [0.5, 0.05, 0.005],
        "ukkr": [1e-1, 1e-3, 1e-5],
        "kkkr": [1e-1, 1e-4, 1e-7],
        "temperature": [0.5, 2.0],
    }[fam]
    base = cd.make_estimator(fam, notion=notion)
    path = base.fit_path(P[:60], y[:60], values)
    risks = path.risks(P[60:], y[60:])
    for value, est, r in zip(values, path.estimators, risks):
        single = cd.make_estimator(fam, notion=notion, **{base.path_param: value}).fit(P[:60], y[:60])
        assert_rel_close(est.h(P[60:], P[60:]), single.h(P[60:], P[60:]), 1e-12)
        assert r == pytest.approx(cd.risk(single, P[60:], y[60:]), rel=1e-12)


@pytest.mark.parametrize("fam,notion", [s for s in SUPPORTED if s[0] != "kkkr"])
def test_recalibration_map_is_z_minus_v(fam, notion):
    P, y = random_problem(seed=13, n=60, d=3)
    est = cd.make_estimator(fam, notion=notion).fit(P[:40], y[:40])
    g = est.recalibration(P[40:])
    H = est.h(P[40:], P[40:])
    from calibdash.core.notions import problems

    Z = np.hstack([p.Z for p in problems(P[40:], notion)])
    # h(z, z) = ||z - g(z)||^2 for a plug-in
    np.testing.assert_allclose(np.sum((Z - g) ** 2, axis=1), np.diag(H), rtol=1e-10, atol=1e-15)
    if fam == "kde" and notion == "canonical":
        np.testing.assert_allclose(g.sum(axis=1), 1.0, rtol=1e-12)  # a probability vector


@pytest.mark.parametrize("fam,notion", SUPPORTED)
def test_the_plug_in_flag_says_whether_h_is_an_inner_product(fam, notion):
    """``plug_in`` (which the reliability views and the app's results go by, without fitting) is
    what the fitted estimator's bilinear form shows: G the identity."""
    P, y = random_problem(seed=15, n=40, d=3)
    est = cd.make_estimator(fam, notion=notion).fit(P, y)
    assert est.plug_in == (est.bilinear_form(P)[1] is None)


def test_kkkr_has_no_recalibration_map():
    P, y = random_problem(seed=14, n=40, d=3)
    est = cd.make_estimator("kkkr", notion="canonical").fit(P, y)
    with pytest.raises(ValueError, match="not a plug-in"):
        est.recalibration(P)


def test_shared_feature_loss_equals_the_direct_route():
    from calibdash.core.risk import SharedFeatureLoss, pair_loss_sum

    rng = np.random.default_rng(8)
    U, F = rng.normal(size=(30, 3)), rng.normal(size=(30, 12))
    shared = SharedFeatureLoss(U, F)
    for _ in range(3):
        A = rng.normal(size=(12, 12))
        G = A + A.T
        assert shared(G) == pytest.approx(pair_loss_sum(U, F, G, route="gram") / (30 * 29), rel=1e-12)


@pytest.mark.parametrize("chunk_rows", [None, 7])
def test_quadratic_forms_by_triangular_blocks_equal_the_brute_force(chunk_rows, monkeypatch):
    """f_i^T G f_i, from the upper triangle of G (diagonal halved) whole below
    risk._BLOCKED_MIN_FEATURES features and in column blocks above it, equals the brute-force
    double sum, for features in either memory order (a column-major F is read through its
    transpose), on an indefinite G spanning 12 decades, blocks of unequal widths included, in
    one row chunk or in chunks of 7 rows (the last one shorter); an unhalved diagonal, a block
    row started after its diagonal block, a missing factor 2 or a chunk written to the wrong
    rows misses by O(1)."""
    from calibdash.core import risk

    rng = np.random.default_rng(21)
    for n, r in ((130, 47), (40, risk._BLOCKED_MIN_FEATURES + 173)):
        if chunk_rows is not None:
            monkeypatch.setattr(risk, "_FORM_CHUNK_ENTRIES", chunk_rows * r)
        F = rng.normal(size=(n, r))
        A = rng.normal(size=(r, r))
        G = (A + A.T) * np.logspace(0, 6, r)[:, None] * np.logspace(0, 6, r)[None, :]
        brute_force = np.array([math.fsum((f[:, None] * G * f[None, :]).ravel()) for f in F])
        scale = (np.abs(F) @ np.abs(G) * np.abs(F)).sum(axis=1)
        for features in (F, np.asfortranarray(F)):
            got = risk.quadratic_forms(features, G)
            assert np.all(np.abs(got - brute_force) <= 1e-13 * scale), (n, r)
        G_before = G.copy()
        risk.quadratic_forms(F, G)
        np.testing.assert_array_equal(G, G_before)  # G is not changed


def _truncated_ridge_h(fam, P_tr, y_tr, P_a, P_b, notion, lam, gram):
    """Brute force of the kernel ridges below LAM_FLOOR on the exact path: the ridge of the
    kernel's truncation K_r = Q_r diag(l_r) Q_r^T (eigenvalues above 1e-10 l_max), queries
    projected on span(Q_r): UKKR v(z) = (Q_r^T U)^T diag(1 / (l_r + lam n)) Q_r^T k(z), KKKR
    h = psi(a)^T [(Q_r^T U)(Q_r^T U)^T / (l_r l_r^T + lam n^2)] psi(b). ``gram(A, B)`` gives the
    kernel's entries."""
    total = 0.0
    for (z_tr, _c, t_tr), (za, _ca, _ta), (zb, _cb, _tb) in zip(
            brute.notion_problems(P_tr, y_tr, notion), brute.notion_problems(P_a, np.zeros(len(P_a), int), notion),
            brute.notion_problems(P_b, np.zeros(len(P_b), int), notion)):
        n = len(z_tr)
        l, Q = np.linalg.eigh(gram(z_tr, z_tr))
        keep = l > 1e-10 * l.max()
        l, Q = l[keep], Q[:, keep]
        M = Q.T @ (z_tr - t_tr)
        pa, pb = Q.T @ gram(z_tr, za), Q.T @ gram(z_tr, zb)
        if fam == "ukkr":
            total = total + (M.T @ (pa / (l + lam * n)[:, None])).T @ (M.T @ (pb / (l + lam * n)[:, None]))
        else:
            total = total + pa.T @ ((M @ M.T) / (np.outer(l, l) + lam * n**2)) @ pb
    return total


@pytest.mark.parametrize("fam", ["ukkr", "kkkr"])
@pytest.mark.parametrize("notion", ["top-label", "canonical", "classwise"])
def test_below_the_ridges_floor_the_exact_path_is_the_ridge_of_the_truncated_kernel(fam, notion):
    """Exact kernel ridge regression below LAM_FLOOR would follow the rounding (docs/design.md,
    "The ridge's floor"); there the exact path truncates the kernel at its numerical rank, as
    the Nystroem path does. At the floor and above it is the exact ridge (test_h_matches_brute_force).

    The truncated ridge keeps eigenvalues down to 1e-10 of the largest, so rounding in any step,
    of the package or of the formula, may be amplified up to 1e10 times: the two may differ by up
    to eps / 1e-10 = 2.2e-6 relative, whether the formula takes the package's kernel entries or
    the brute-force ones (which differ from them in the last digit). That bound is what makes the
    test reproducible on another CPU. With the package's entries they agreed to 1e-10 on the hosts
    before 2026-11-30; on an AMD EPYC host where OpenBLAS runs its SkylakeX (AVX-512) kernels, to
    1.1e-9 - 2.3e-8. A cut at 1e-9 or at 1e-11 instead of 1e-10 fails the top-label and canonical
    cases (checked); in the classwise ones it changes one class's rank at most, and the ridge by
    less than the bound."""
    from calibdash.estimators.kernel_ridge import LAM_FLOOR, rbf_kernel

    P, y = random_problem(seed=23, n=46, d=3)
    P_tr, y_tr, P_a, P_b = P[:36], y[:36], P[36:44], P[38:46]
    package_gram = lambda A, B: rbf_kernel(A, B, 0.5)  # noqa: E731
    brute_gram = lambda A, B: brute.gram(A, B, lambda a, b: brute.rbf(a, b, 0.5))  # noqa: E731
    for lam in (1e-11, 1e-16):
        est = cd.make_estimator(fam, notion=notion, lam=lam).fit(P_tr, y_tr)
        assert est.low_rank_
        H = est.h(P_a, P_b)
        bound = np.finfo(float).eps / 1e-10  # kernel_ridge keeps eigenvalues above 1e-10 l_max
        for gram in (package_gram, brute_gram):
            assert_rel_close(H, _truncated_ridge_h(fam, P_tr, y_tr, P_a, P_b, notion, lam, gram), bound)
    at_floor = cd.make_estimator(fam, notion=notion, lam=LAM_FLOOR).fit(P_tr, y_tr)
    assert not at_floor.low_rank_
    kernel = lambda a, b: brute.rbf(a, b, 0.5)  # noqa: E731
    exact = (brute.ukkr_h if fam == "ukkr" else brute.kkkr_h)(P_tr, y_tr, P_a, P_b, notion, LAM_FLOOR, kernel)
    assert_rel_close(at_floor.h(P_a, P_b), exact, 1e-4)  # the exact ridge, as well as its conditioning allows


@pytest.mark.parametrize("fam,d", [("ukkr", 3), ("ukkr", 30), ("kkkr", 3)])
def test_a_grid_across_the_floor_gives_every_value_its_own_estimator(fam, d):
    """One path over values above and below LAM_FLOOR, in no order, equals one fit per value:
    each run of values shares its basis (the exact one, or its truncation), and UKKR's risks
    from r x r cross-products (d = 30) take the truncated basis too."""
    from calibdash.estimators.kernel_ridge import LAM_FLOOR

    P, y = random_problem(seed=24, n=100, d=d, concentration=0.3)
    lams = [1e-3, 1e-12, 1e-6, 1e-16, LAM_FLOOR, 1e-11]
    path = cd.make_estimator(fam, notion="canonical").fit_path(P[:40], y[:40], lams)
    risks = path.risks(P[40:], y[40:])
    for lam, est, got in zip(lams, path.estimators, risks):
        single = cd.make_estimator(fam, notion="canonical", lam=lam).fit(P[:40], y[:40])
        assert est.low_rank_ == single.low_rank_ == (lam < LAM_FLOOR)
        assert got == pytest.approx(cd.risk(single, P[40:], y[40:]), rel=1e-10)
        np.testing.assert_allclose(est.h_diag(P[40:]), single.h_diag(P[40:]), rtol=1e-10, atol=1e-14)
    assert len({id(e.bases_) for e in path.estimators}) == 2


def test_ukkr_path_risk_from_cross_products_equals_direct_risk():
    """With many classes and a low-rank basis the UKKR path computes its risks from r x r
    cross-products; they must equal the generic computation."""
    P, y = random_problem(seed=15, n=100, d=30, concentration=0.3)
    lams = [1e-1, 1e-3, 1e-5]
    path = cd.make_estimator("ukkr", notion="canonical", exact_max_n=10, n_components=5).fit_path(P[:40], y[:40], lams)
    b = path.estimators[0].bases_[0]
    n, d, r = 60, 30, b.rank
    assert n * r * r + r**3 < n * r * d + 2 * n * d * d  # the structured route is taken
    for est, got in zip(path.estimators, path.risks(P[40:], y[40:])):
        assert got == pytest.approx(cd.risk(est, P[40:], y[40:]), rel=1e-10)


@pytest.mark.parametrize("notion", ["top-label", "canonical", "classwise"])
@pytest.mark.parametrize("lam, rtol", [(1e-3, 1e-11), (1e-12, 1e-6)])
def test_a_compacted_two_step_ridge_keeps_its_map_to_rounding_in_a_fraction_of_the_memory(notion, lam, rtol):
    """compact() replaces each low-rank basis (the Nystroem path; the exact one below LAM_FLOOR,
    truncated) by its RidgeMap k(z, C) @ coef, and keeps an exact basis with its null-space term
    whole. The map is the same products associated the other way, so it moves by rounding times
    the coefficients, which grow as 1 / (l + lam n): at lam = 1e-3 measured 1e-13 of the largest
    value; below LAM_FLOOR up to 1.7e-8, within the kernel ridges' stated rounding there (eps /
    1e-10 per kept direction, 2.2e-6)."""
    import pickle

    from calibdash.estimators.kernel_ridge import LAM_FLOOR, RidgeMap

    P, y = random_problem(seed=9, n=400, d=4, concentration=0.5)
    P_q, y_q = random_problem(seed=10, n=300, d=4, concentration=0.5)
    for exact_max_n in (100, 10**6):  # the Nystroem path, then the exact one
        est = cd.make_estimator("ukkr", notion=notion, lam=lam, exact_max_n=exact_max_n, n_components=60).fit(P, y)
        F, G = est.bilinear_form(P_q)
        recal, diag, bases, size = est.recalibration(P_q), est.h_diag(P_q), est.bases_, len(pickle.dumps(est))
        risk = cd.risk(est, P_q, y_q)
        assert est.compact() is est
        if exact_max_n > 400 and lam >= LAM_FLOOR:
            assert est.bases_ is bases
            continue
        assert all(isinstance(b, RidgeMap) for b in est.bases_)
        assert len(pickle.dumps(est)) < size / 2
        F_c, G_c = est.bilinear_form(P_q)
        assert G is G_c is None
        assert_rel_close(F_c, F, rtol)
        assert_rel_close(est.recalibration(P_q), recal, rtol)
        assert_rel_close(est.h_diag(P_q), diag, 2 * rtol)
        assert cd.risk(est, P_q, y_q) == pytest.approx(risk, rel=2 * rtol)
        maps = est.bases_
        assert all(a is b for a, b in zip(est.compact().bases_, maps, strict=True))  # a second keeps the maps
        path = cd.make_estimator("ukkr", notion=notion, exact_max_n=exact_max_n, n_components=60).fit_path(P, y, [lam])
        path_risk = path.risks(P_q, y_q)[0]
        path.estimators[0].compact()
        assert path.risks(P_q, y_q)[0] == pytest.approx(path_risk, rel=2 * rtol)
        with pytest.raises(ValueError, match="fitted at lam"):
            maps[0].ridge_values(maps[0].features(maps[0].centres), 2 * lam)


def test_a_compacted_path_s_risks_leave_the_cross_product_route_for_the_maps():
    """The cross-product route of the two-step ridge's risks (many classes, a low-rank basis) needs
    the basis's eigenpairs; once an estimator of the path is compacted, its risk comes from its
    map's features, the same to rounding."""
    P, y = random_problem(seed=15, n=100, d=30, concentration=0.3)
    path = cd.make_estimator("ukkr", notion="canonical", exact_max_n=10, n_components=5).fit_path(P[:40], y[:40],
                                                                                                 [1e-1, 1e-3])
    want = path.risks(P[40:], y[40:])
    for est in path.estimators:
        est.compact()
    np.testing.assert_allclose(path.risks(P[40:], y[40:]), want, rtol=1e-10)


def test_a_compacted_two_step_ridge_interpolates_its_map_of_many_confidences():
    """From 100,000 rows (and 8 per interpolation node) the one-dimensional kernel products are
    interpolated; the map's coefficients enter linearly, so the compacted map keeps
    the interpolated values to rounding too."""
    from calibdash.estimators.kernel_ridge import interpolates

    P, y = random_problem(seed=11, n=400, d=3)
    P_q = np.random.default_rng(12).dirichlet(np.ones(3), size=100_000)
    est = cd.make_estimator("ukkr", notion="top-label", exact_max_n=100, n_components=60).fit(P, y)
    assert interpolates(P_q.max(axis=1, keepdims=True), est.gamma)
    before = est.recalibration(P_q)
    assert_rel_close(est.compact().recalibration(P_q), before, 1e-11)


def test_compacting_an_unfitted_estimator_says_fit_first():
    for fam in ("ukkr", "bins"):
        with pytest.raises(cd.NotFittedError, match="call fit"):
            cd.make_estimator(fam, notion="top-label").compact()


@pytest.mark.slow
def test_a_shorter_pivoted_factor_is_the_leading_blocks_of_a_longer_one():
    """The Kronecker estimator's 512 pivots are the leading blocks of the two-step
    estimator's 1,000, so it gives the same numbers whether or not UKKR ran beside it."""
    from calibdash.estimators.kernel_ridge import randomly_pivoted_cholesky

    Z = np.random.default_rng(0).dirichlet(np.full(6, 0.3), 900)
    long, short = randomly_pivoted_cholesky(Z, 0.5, 400, 1), randomly_pivoted_cholesky(Z, 0.5, 150, 1)
    lead = long.leading(150)
    assert lead.n_pivots == short.n_pivots >= 150 and long.n_pivots > lead.n_pivots
    for a, b in [(lead.C, short.C), (lead.F, short.F), (lead.A, short.A)]:
        assert np.array_equal(a, b)
    # F = k(Z, C) A up to rounding amplified by the coefficients (up to ~1e4 here)
    assert np.allclose(rbf_kernel_for_test(Z, lead.C) @ lead.A, lead.F, rtol=0, atol=1e-8)

    P, y = random_problem(seed=4, n=700, d=5)
    P_tr, y_tr, P_ev, y_ev = P[:500], y[:500], P[500:], y[500:]
    lams = [1e-2, 1e-4]
    # A narrow kernel, so that the factor is not exhausted before the pivots asked for.
    kw = dict(notion="canonical", exact_max_n=100, gamma=20.0)
    alone = cd.make_estimator("kkkr", n_components=100, **kw).fit_path(P_tr, y_tr, lams)
    cache = {}
    cd.make_estimator("ukkr", n_components=250, **kw).fit_path(P_tr, y_tr, lams, cache=cache)
    shared = cd.make_estimator("kkkr", n_components=100, **kw).fit_path(P_tr, y_tr, lams, cache=cache)
    assert np.array_equal(alone.risks(P_ev, y_ev), shared.risks(P_ev, y_ev))
    factor = cache[next(k for k in cache if k[0] == "pivoted-factor")]
    assert alone.estimators[0].bases_[0].centres.shape[0] < factor.n_pivots and not factor.exhausted
    # The other order, the pipeline's: UKKR continues KKKR's factor and extends its cross-products
    # with the residuals (FactorProducts), and gives the numbers it gives alone.
    ukkr_alone = cd.make_estimator("ukkr", n_components=250, **kw).fit_path(P_tr, y_tr, lams)
    cache = {}
    cd.make_estimator("kkkr", n_components=100, **kw).fit_path(P_tr, y_tr, lams, cache=cache)
    products = cache[next(k for k in cache if k[0] == "factor-products")]
    first = list(products.blocks)
    ukkr_after = cd.make_estimator("ukkr", n_components=250, **kw).fit_path(P_tr, y_tr, lams, cache=cache)
    assert products is cache[next(k for k in cache if k[0] == "factor-products")]
    assert len(products.blocks) > len(first) and all(a is b for a, b in zip(products.blocks, first))
    assert np.array_equal(ukkr_alone.risks(P_ev, y_ev), ukkr_after.risks(P_ev, y_ev))
    assert cd.make_estimator("kkkr").default_n_components(5) == 512 < cd.make_estimator("ukkr").default_n_components(5)


def test_factor_products_by_block_rows_equal_the_whole_products():
    """FactorProducts forms F^T F and F^T U block row by block row of the pivot blocks: the
    products to rounding, for a factor and for its leading part, in either layout."""
    from calibdash.estimators import kernel_ridge

    rng = np.random.default_rng(2)
    U = rng.normal(size=(600, 7))
    for n_rows in (600, 64_000):  # formed whole (C order) and in row chunks (F order)
        Z = rng.dirichlet(np.full(6, 0.3), n_rows)
        factor = kernel_ridge.randomly_pivoted_cholesky(Z, 20.0, 200, 1)
        Un = U if n_rows == 600 else rng.normal(size=(n_rows, 7))
        products = kernel_ridge.FactorProducts(Un)
        for part in (factor.leading(100), factor):
            FtF, FtU = products.of(part)
            F = part.F
            scale = np.abs(F.T @ F).max()
            np.testing.assert_allclose(FtF, F.T @ F, rtol=0, atol=1e-13 * scale)
            np.testing.assert_allclose(FtU, F.T @ Un, rtol=0, atol=1e-13 * np.abs(F.T @ Un).max())
        assert len(factor.bounds) > 2 and products.serves(factor) and products.serves(factor.leading(100))
        assert (n_rows == 600) != factor.F.flags.f_contiguous

def rbf_kernel_for_test(A, B, gamma=0.5):
    return np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))


@pytest.mark.parametrize("notion", ["canonical", "classwise"])
@pytest.mark.slow
def test_kde_path_risks_streamed_over_row_blocks_equal_the_one_shot_risks(notion, monkeypatch):
    """On large held-out sets the kernel density path accumulates the risk's cross-products
    over blocks of rows instead of holding every bandwidth's features at once."""
    from calibdash.estimators import kde

    P, y = random_problem(seed=8, n=290, d=4)
    bandwidths = [0.02, 0.1, 0.5]
    path = cd.make_estimator("kde", notion=notion).fit_path(P[:200], y[:200], bandwidths)
    one_shot = path.risks(P[200:], y[200:])
    calls = []
    real = kde.kernel_regression
    monkeypatch.setattr(kde, "kernel_regression", lambda *a, **k: calls.append(len(a[0])) or real(*a, **k))
    monkeypatch.setattr(kde, "_STREAM_ENTRIES", len(bandwidths) * 4 * 40)  # 40 rows per block
    streamed = path.risks(P[200:], y[200:])
    assert max(calls) <= 40 and sum(calls) == 90 * (1 if notion == "canonical" else 4)
    np.testing.assert_allclose(streamed, one_shot, rtol=1e-12)
    A = brute.residual_matrix(P[200:], y[200:], notion)
    brute_risk = [brute.risk(brute.kde_h(P[:200], y[:200], P[200:], P[200:], notion, b), A) for b in bandwidths]
    np.testing.assert_allclose(streamed, brute_risk, rtol=1e-10)


@pytest.mark.parametrize("density", [0.0, 1.0])
def test_plug_in_cross_products_are_the_same_by_either_route(density, monkeypatch):
    """The risk's cross-products of V = Z - G from the nonzeros of G (U^T Z - U^T G and
    Z^T Z - Z^T G - G^T Z + G^T G) equal the dense products of V, here on regressions with and
    without exact zeros, each route forced in turn (density 0: none is sparse enough; 1: all)."""
    from calibdash.estimators import kde

    rng = np.random.default_rng(3)
    U, Z = rng.standard_normal((70, 30)), rng.dirichlet(np.ones(30), size=70)
    dense_G = rng.dirichlet(np.ones(30), size=70)
    sparse_G = np.zeros((70, 30))
    sparse_G[np.arange(70), rng.integers(0, 30, size=70)] = rng.uniform(size=70)
    Gs = [dense_G, sparse_G, sparse_G[::-1].copy()]
    monkeypatch.setattr(kde, "_SPARSE_RISK_DENSITY", density)
    residuals = [Z - G for G in Gs]
    for (a, b, vv), V, G in zip(kde._plug_in_cross_products(U, Z, Gs), residuals, Gs, strict=True):
        np.testing.assert_array_equal(G, V)  # each regression's memory now holds its residuals
        assert_rel_close(a, U.T @ V, 1e-14)
        assert_rel_close(b, V.T @ V, 1e-14)
        np.testing.assert_array_equal(vv, np.einsum("ij,ij->i", V, V))


@pytest.mark.slow
def test_kde_streamed_risks_from_sparse_regressions_equal_the_formula(monkeypatch):
    """Canonical regressions at small bandwidths put each row's weight on one or two labels
    (exact zeros elsewhere): the streamed risk then takes their cross-products from the
    nonzeros, and still equals the one-shot risks and the brute-force formula."""
    from calibdash.estimators import kde

    P, y = random_problem(seed=9, n=450, d=100, concentration=0.3)
    bandwidths = [1e-4, 3e-4, 0.5]
    path = cd.make_estimator("kde", notion="canonical").fit_path(P[:200], y[:200], bandwidths)
    one_shot = path.risks(P[200:], y[200:])
    taken = []
    real = kde.csr_matrix
    monkeypatch.setattr(kde, "csr_matrix", lambda G: taken.append(np.count_nonzero(G) / G.size) or real(G))
    monkeypatch.setattr(kde, "_STREAM_ENTRIES", len(bandwidths) * 100 * 40)  # 40 rows per block
    streamed = path.risks(P[200:], y[200:])
    assert len(taken) == 2 * 7 and max(taken) <= kde._SPARSE_RISK_DENSITY  # the two small bandwidths, 7 blocks
    np.testing.assert_allclose(streamed, one_shot, rtol=1e-12)
    A = brute.residual_matrix(P[200:], y[200:], "canonical")
    brute_risk = [brute.risk(brute.kde_h(P[:200], y[:200], P[200:], P[200:], "canonical", b), A) for b in bandwidths]
    np.testing.assert_allclose(streamed, brute_risk, rtol=1e-10)


@pytest.mark.parametrize("notion", ["top-label", "canonical", "classwise"])
@pytest.mark.slow
def test_kde_fold_diagonals_equal_each_fold_model_and_the_formula(notion):
    """The k fold models' holdout diagonals from one set of kernel products per part equal
    the fold models fitted one by one, and the brute-force Eq. (25) regression."""
    from calibdash.estimators.kde import KDEEstimator, log_beta_table
    from calibdash.evaluation.config import make_split

    P, y = random_problem(seed=12, n=120, d=3)
    test, folds = make_split(len(y), 0.25, 3, 4)
    parts = [v for _, v in folds]
    for b in (1e-3, 0.05, 0.7):
        log_beta = log_beta_table(P, [b])[0] if notion == "canonical" else None
        got = KDEEstimator.fold_diagonals(P[test], P, y, parts, notion, b, log_beta=log_beta)
        for k, (tr, _) in enumerate(folds):
            one = cd.make_estimator("kde", notion=notion, bandwidth=b).fit(P[tr], y[tr]).h_diag(P[test])
            formula = np.diag(brute.kde_h(P[tr], y[tr], P[test], P[test], notion, b))
            scale = np.abs(one).max()
            np.testing.assert_allclose(got[k], one, rtol=0, atol=1e-12 * scale)
            np.testing.assert_allclose(got[k], formula, rtol=0, atol=1e-10 * scale)


def test_kde_normalisers_given_for_all_folds_equal_the_ones_computed_per_fold():
    from calibdash.estimators.kde import NORMALISERS_KEY, log_beta_table

    P, y = random_problem(seed=13, n=300, d=5)
    bandwidths = [1e-4, 0.01, 0.3]
    rows = np.arange(40, 240)
    P_ev, y_ev = P[240:], y[240:]
    alone = cd.make_estimator("kde").fit_path(P[rows], y[rows], bandwidths).risks(P_ev, y_ev)
    table = log_beta_table(P, bandwidths)  # every row, as the pipeline computes it once
    cache = {NORMALISERS_KEY: (bandwidths, table[:, rows])}
    path = cd.make_estimator("kde").fit_path(P[rows], y[rows], bandwidths, cache=cache)
    assert np.array_equal(path.risks(P_ev, y_ev), alone)
    with pytest.raises(ValueError, match="Expected 200 normalisers"):
        path.estimators[0].train_[0].set_log_beta(0.01, table[0])



def test_kde_normalisers_by_the_lgamma_series_equal_one_lgamma_per_entry():
    """Rows whose entries are all below _SERIES_X b take sum_k lgamma(1 + p_k / b) from their
    power sums (kde.log_beta_table): the same as one lgamma per entry to rounding, beside rows
    that do not; the series alone matches math.lgamma where that is accurate to the last digits,
    up to an entry just below the threshold, where a series cut too early would miss."""
    import math

    from calibdash.estimators import kde

    rng = np.random.default_rng(3)
    d = 400
    flat = rng.dirichlet(np.full(d, 5.0), size=30)  # entries near 1/d
    spiky = rng.dirichlet(np.full(d, 0.05), size=30)  # a few large entries
    even = np.full((1, d), 1.0 / d)
    zeros = flat[:1].copy()
    zeros[0, : d // 2] = 0.0
    zeros /= zeros.sum()
    edge = np.full((1, d), (1.0 - 0.0999) / (d - 1))  # x = 0.0999 at b = 1
    edge[0, 7] = 0.0999
    P = np.vstack([flat, spiky, even, zeros, edge])
    bandwidths = [1e-4, 0.01, 0.05, 0.1, 0.3, 1.0, 3.0]
    takes_series = P.max(axis=1)[None, :] < kde._SERIES_X * np.array(bandwidths)[:, None]
    assert 100 < takes_series.sum() < takes_series.size - 100  # both routes, mixed within bandwidths
    assert takes_series[bandwidths.index(1.0), -1]
    table = kde.log_beta_table(P, bandwidths)
    direct = np.stack([kde.log_beta_function(P / b + 1.0) for b in bandwidths])
    np.testing.assert_allclose(table, direct, rtol=1e-14)
    for i, b in enumerate(bandwidths):
        np.testing.assert_array_equal(kde.log_beta_of_centres(P, b), table[i])
    checked = 0
    near = np.full(11, 0.0999)  # ten entries at x = 0.0999 for b = 1
    near[-1] = 1.0 - near[:-1].sum()
    for row in (P[0], P[-1], P[-3], near):
        for b in (0.3, 1.0, 3.0):
            if row.max() >= kde._SERIES_X * b:
                continue
            checked += 1
            series = kde._lgamma1p_sums(kde._power_sums(row[None, :]), b)[0]
            # math.lgamma(1 + x) is accurate to about eps absolute near x = 0 (x is rounded in 1 + x)
            np.testing.assert_allclose(series, math.fsum(math.lgamma(1.0 + p / b) for p in row), rtol=0,
                                       atol=1e-15 * len(row))
    assert checked == 10

# -- what each notion conditions on --------------------------------------------------------
# The top-label error conditions on the confidence alone, the classwise error of class k
# on p_k alone: an estimator that reads more of the vector estimates a different (larger)
# quantity and the risk favours it for that. Every family is covered, new ones included.
TOP_LABEL_FAMILIES = [fam for fam, cls in cd.FAMILIES.items() if "top-label" in cls.supported_notions]
CLASSWISE_FAMILIES = [fam for fam, cls in cd.FAMILIES.items() if "classwise" in cls.supported_notions]


def same_confidences(P, rng):
    """Rows with P's maximum, moved to a random position, and the rest of the mass spread
    differently over the other classes (each kept below the maximum)."""
    n, d = P.shape
    out = np.empty_like(P)
    for i, p in enumerate(P):
        k = int(np.argmax(p))
        c = p[k]
        others = np.delete(p, k)
        rest = others.sum()
        for _ in range(100):
            trial = rest * rng.dirichlet(np.ones(d - 1))
            if trial.max() < c:
                others = trial
                break
        else:
            others = others[::-1]  # little room below c: at least reorder the others
        top = int(rng.integers(d))
        out[i] = np.insert(others, top, c)
    return out


def class_blocks(F, G, d):
    """Column slices of F per class for a classwise form: one column each for a plug-in
    (G = identity), otherwise the diagonal blocks of the block-diagonal G, in class order."""
    if G is None:
        assert F.shape[1] == d
        return [slice(k, k + 1) for k in range(d)]
    blocks, start = [], 0
    for end in range(1, G.shape[0] + 1):
        if not G[start:end, end:].any() and not G[end:, start:end].any():
            blocks.append(slice(start, end))
            start = end
    assert len(blocks) == d, "G is not block-diagonal with one block per class"
    return blocks


@pytest.mark.slow
@pytest.mark.parametrize("fam", TOP_LABEL_FAMILIES)
def test_top_label_estimators_use_the_confidence_alone(fam):
    """Two inputs with equal confidences get equal h, whatever the other entries are and
    wherever the top class sits."""
    P, y = random_problem(seed=17, n=300, d=4)
    est = cd.make_estimator(fam, notion="top-label").fit(P, y)
    rng = np.random.default_rng(5)
    P_a = random_problem(seed=18, n=60, d=4)[0]
    P_b = same_confidences(P_a, rng)
    np.testing.assert_array_equal(P_a.max(axis=1), P_b.max(axis=1))
    assert np.abs(np.sort(P_a, axis=1) - np.sort(P_b, axis=1)).max() > 0.1  # the inputs do differ
    np.testing.assert_allclose(est.h_diag(P_b), est.h_diag(P_a), rtol=0, atol=1e-12)
    H = est.h(P_a, P_a)
    np.testing.assert_allclose(est.h(P_a, P_b), H, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.h(P_b, P_b), H, rtol=0, atol=1e-12)


@pytest.mark.parametrize("fam", CLASSWISE_FAMILIES)
@pytest.mark.slow
def test_classwise_features_of_a_class_use_its_probability_alone(fam):
    """Moving mass between two other classes j, l leaves class k's features unchanged."""
    d = 4
    P, y = random_problem(seed=19, n=300, d=d)
    est = cd.make_estimator(fam, notion="classwise").fit(P, y)
    P_a = random_problem(seed=20, n=60, d=d)[0]
    F_a, G_a = est.bilinear_form(P_a)
    blocks = class_blocks(F_a, G_a, d)
    rng = np.random.default_rng(6)
    for k in range(d):
        j, l = rng.choice([m for m in range(d) if m != k], size=2, replace=False)
        P_b = P_a.copy()
        moved = rng.uniform(0.2, 1.0, size=len(P_a)) * P_a[:, j]
        P_b[:, j] -= moved
        P_b[:, l] += moved
        F_b, G_b = est.bilinear_form(P_b)
        if G_a is not None:
            np.testing.assert_array_equal(G_b, G_a)
        np.testing.assert_allclose(F_b[:, blocks[k]], F_a[:, blocks[k]], rtol=0, atol=1e-12)
        # and the features of j and l do see the change (the test has teeth)
        assert np.abs(F_b[:, blocks[j]] - F_a[:, blocks[j]]).max() > 1e-6


@pytest.mark.parametrize("notion", ["top-label", "canonical", "classwise"])
@pytest.mark.parametrize("fraction", [0.0, 1.0])
@pytest.mark.slow
def test_kde_sparse_and_dense_kernel_sums_equal_the_formula(notion, fraction, monkeypatch):
    """A block's kernel sums come from the weights above the floor alone (few kept: small
    bandwidths) or from dense passes over the block; both are Eq. (25) and agree with each
    other, whichever a block takes (fraction 0 forces the dense sums, 1 the sparse ones)."""
    from calibdash.estimators import kde

    P, y = random_problem(seed=14, n=80, d=4)
    bandwidths = [1e-3, 0.02, 0.3, 2.0]
    path = cd.make_estimator("kde", notion=notion).fit_path(P[:50], y[:50], bandwidths)
    default = path.risks(P[50:], y[50:])
    monkeypatch.setattr(kde, "_SPARSE_FRACTION", fraction)
    forced = path.risks(P[50:], y[50:])
    np.testing.assert_allclose(forced, default, rtol=1e-12)
    A = brute.residual_matrix(P[50:], y[50:], notion)
    for b, got in zip(bandwidths, forced):
        H = brute.kde_h(P[:50], y[:50], P[50:], P[50:], notion, b)
        np.testing.assert_allclose(got, brute.risk(H, A), rtol=1e-10)
        e = cd.make_estimator("kde", notion=notion, bandwidth=b).fit(P[:50], y[:50])
        assert_rel_close(e.h_diag(P[50:]), np.diag(H), 1e-10)


@pytest.mark.parametrize("whole", [True, False, "mixed"])
def test_a_longer_pivoted_factor_goes_on_from_a_shorter_one_to_the_last_digit(monkeypatch, whole):
    """The Kronecker estimator (512 pivots) fits before the two-step one (1,000) in a fold
    task; the two-step estimator's factor continues the shorter one instead of drawing
    again, and is exactly the factor it would draw alone, whether the factor is formed
    whole or in row chunks (they round differently, so a factor formed the other way is
    not continued)."""
    from calibdash.estimators import kernel_ridge

    if whole is not True:
        # "mixed": the shorter factor (900 x 214 entries) is formed whole, the longer in chunks
        monkeypatch.setattr(kernel_ridge, "_WHOLE_FACTOR_ENTRIES", 10 if whole is False else 300_000)
        monkeypatch.setattr(kernel_ridge, "_CHUNK_ENTRIES", 5_000)
    Z = np.random.default_rng(3).dirichlet(np.full(6, 0.3), 900)
    short = kernel_ridge.randomly_pivoted_cholesky(Z, 20.0, 150, 1)
    fresh = kernel_ridge.randomly_pivoted_cholesky(Z, 20.0, 400, 1)
    calls = []
    real_rbf = kernel_ridge.rbf_kernel
    monkeypatch.setattr(kernel_ridge, "rbf_kernel", lambda *a, **k: calls.append(a[1].shape[0]) or real_rbf(*a, **k))
    went_on = kernel_ridge.randomly_pivoted_cholesky(Z, 20.0, 400, 1, start=short)
    continued, calls[:] = list(calls), []
    kernel_ridge.randomly_pivoted_cholesky(Z, 20.0, 400, 1)
    assert short.n_pivots < went_on.n_pivots == fresh.n_pivots >= 400 and not fresh.exhausted
    for a, b in [(went_on.C, fresh.C), (went_on.F, fresh.F), (went_on.A, fresh.A)]:
        assert np.array_equal(a, b)
    assert went_on.bounds == fresh.bounds and went_on.draws.chosen == fresh.draws.chosen
    # only the blocks beyond the shorter factor's were drawn
    if whole is True:
        assert sum(continued) == went_on.n_pivots - short.n_pivots
    if whole == "mixed":
        assert short.draws.whole and not went_on.draws.whole and sum(continued) == sum(calls)  # drawn again
    else:
        assert 0 < sum(continued) < sum(calls)
    # the shorter factor is left as it was (a continued generator is a copy)
    again = kernel_ridge.randomly_pivoted_cholesky(Z, 20.0, 400, 1, start=short)
    assert np.array_equal(again.F, fresh.F)


def test_the_two_kernel_ridges_in_one_fold_draw_one_factor(monkeypatch):
    """KKKR then UKKR with one cache (their order in a fold task) compute one pivoted factor
    between them, and each gives the numbers it gives alone."""
    from calibdash.estimators import kernel_ridge

    P, y = random_problem(seed=4, n=700, d=5)
    P_tr, y_tr, P_ev, y_ev = P[:500], y[:500], P[500:], y[500:]
    lams = [1e-2, 1e-4]
    kw = dict(notion="canonical", exact_max_n=100, gamma=20.0)
    alone = {name: cd.make_estimator(name, n_components=m, **kw).fit_path(P_tr, y_tr, lams).risks(P_ev, y_ev)
             for name, m in [("kkkr", 100), ("ukkr", 250)]}
    starts = []
    real = kernel_ridge.randomly_pivoted_cholesky
    monkeypatch.setattr(kernel_ridge, "randomly_pivoted_cholesky",
                        lambda *a, start=None, **k: starts.append(start) or real(*a, start=start, **k))
    cache = {}
    shared = {name: cd.make_estimator(name, n_components=m, **kw).fit_path(P_tr, y_tr, lams, cache=cache).risks(P_ev, y_ev)
              for name, m in [("kkkr", 100), ("ukkr", 250)]}
    assert len(starts) == 2 and starts[0] is None and starts[1] is not None and starts[1].n_pivots < 250
    for name in alone:
        assert np.array_equal(alone[name], shared[name])
@pytest.mark.parametrize("d", [1, 7])
def test_the_rbf_kernel_rounds_as_the_norm_identity_did(d):
    """The kernel formed in place gives the same bits as the earlier expression (which the
    pinned numbers and older result files were computed with), in one dimension through an
    outer product instead of a k = 1 matrix product; and the kernel to 1e-12."""
    from calibdash.estimators.kernel_ridge import rbf_kernel

    rng = np.random.default_rng(d)
    A, B = rng.random((3_000, d)), rng.random((70, d))
    for gamma in (0.5, 20.0):
        an, bn = np.einsum("ij,ij->i", A, A), np.einsum("ij,ij->i", B, B)
        earlier = np.exp(-gamma * np.maximum(an[:, None] + bn[None, :] - 2.0 * (A @ B.T), 0.0))
        assert np.array_equal(rbf_kernel(A, B, gamma), earlier)
        assert np.array_equal(rbf_kernel(A, B, gamma, an), earlier)
        brute = np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2))
        assert np.allclose(rbf_kernel(A, B, gamma), brute, rtol=0, atol=1e-12)


@pytest.mark.parametrize("gamma", [0.5, 5.0, 200.0])
def test_interpolated_kernel_products_are_within_the_rounding_of_the_exact_ones(gamma):
    """k(z, C) @ coef by cubic Hermite interpolation between nodes 1 / cells apart: the cells
    are the fewest (a power of two) that keep its error bound, h^4 / 384 * 12 gamma^2 * sum_j
    |coef_j|, under eps / 16 * sum_j |coef_j|, and the error against an extended-precision
    reference stays within the rounding of the products; 16 times coarser nodes do not."""
    from calibdash.estimators.kernel_ridge import interpolated_products, interpolation_cells

    rng = np.random.default_rng(3)
    centres = rng.uniform(0, 1, 40)
    # columns of mixed signs over eight decades, as a pivoted factor's coefficients are
    coef = rng.normal(size=(40, 3)) * 10.0 ** rng.uniform(-3, 5, size=(40, 1))
    z = np.concatenate([rng.uniform(0, 1, 20_000), [0.0, 1.0], np.linspace(0, 1, 257)])
    zl, cl = z.astype(np.longdouble), centres.astype(np.longdouble)
    exact = np.exp(-np.longdouble(gamma) * (zl[:, None] - cl[None, :]) ** 2) @ coef.astype(np.longdouble)
    scale = np.abs(coef).sum(axis=0)
    eps = np.finfo(np.float64).eps
    cells = interpolation_cells(gamma)
    bound = lambda c: (1 / c) ** 4 / 384 * 12 * gamma**2  # noqa: E731
    assert bound(cells) <= eps / 16 < bound(cells / 2)
    err = np.max(np.abs(interpolated_products(z, centres, coef, gamma) - exact), axis=0) / scale
    assert (err <= 4 * eps).all(), err / eps
    coarse = np.max(np.abs(interpolated_products(z, centres, coef, gamma, cells=cells // 16) - exact), axis=0) / scale
    assert coarse.max() > 16 * eps, coarse / eps


def test_interpolated_kernel_products_are_the_hermite_formula_to_the_last_digit(monkeypatch):
    """The interpolation's sums are formed in place by chunks, in the order of the formula
    h00 v_i + h10 s_i + h01 v_i+1 - h11 s_i+1: the same numbers as the formula evaluated whole,
    whatever the chunk size (a ragged last chunk included), into a new array or into the
    column-major block of a pivoted factor."""
    from calibdash.estimators import kernel_ridge
    from calibdash.estimators.kernel_ridge import interpolated_products, interpolation_cells

    rng = np.random.default_rng(8)
    gamma, r = 5.0, 7
    centres = rng.uniform(0, 1, 12)
    coef = rng.normal(size=(12, r))
    z = np.concatenate([rng.uniform(0, 1, 3_001), [0.0, 1.0]])
    cells = interpolation_cells(gamma)
    nodes = np.linspace(0.0, 1.0, cells + 1)
    diff = nodes[:, None] - centres[None, :]
    K = np.exp(-gamma * diff * diff)
    values, slopes = K @ coef, ((-2.0 * gamma) * diff * K) @ coef / cells
    t = z * cells
    i = np.minimum(t.astype(np.int64), cells - 1)
    f = t - i
    g = 1.0 - f
    formula = (((1.0 + 2.0 * f) * g * g)[:, None] * values[i] + (f * g * g)[:, None] * slopes[i]
               + ((3.0 - 2.0 * f) * f * f)[:, None] * values[i + 1] - (f * f * g)[:, None] * slopes[i + 1])
    for entries in (1, 5 * r, 700 * r, 10**9):
        monkeypatch.setattr(kernel_ridge, "_HERMITE_CHUNK_ENTRIES", entries)
        assert np.array_equal(interpolated_products(z, centres, coef, gamma), formula)
        block = np.full((z.size, r + 3), np.nan, order="F")
        interpolated_products(z, centres, coef, gamma, out=block[:, 2 : 2 + r])
        assert np.array_equal(block[:, 2 : 2 + r], formula)
        assert np.isnan(block[:, :2]).all() and np.isnan(block[:, 2 + r :]).all()


@pytest.mark.parametrize("n_train,exact_max_n", [(600, 2000), (1200, 400), (120_000, 2000)])
def test_kernel_ridges_on_many_rows_equal_the_per_row_kernel_route(n_train, exact_max_n, monkeypatch):
    """From INTERPOLATED_MIN_ROWS one-dimensional rows on, the Nystroem basis's features (of
    the query rows) and the pivoted factor's columns (of the training rows) come from
    interpolated kernel products. The features stay within the rounding of the exact
    products; the risks agree to 1e-12 and every diagonal of both kernel ridges within what
    moving the inputs by one ulp does to the per-row route itself (at lam = 1e-8, where the
    ridge barely regularises, that is about 1e-8 to 1e-7 relative; at lam = 0.1, 1e-14). The exact
    basis keeps the per-row route: the same numbers to the last bit."""
    from calibdash.core.notions import problems
    from calibdash.estimators import kernel_ridge

    P_tr, y_tr = random_problem(seed=8, n=n_train, d=2, concentration=3.0)
    P_q, y_q = random_problem(seed=9, n=kernel_ridge.INTERPOLATED_MIN_ROWS, d=2, concentration=3.0)
    lams = [1e-8, 1e-6, 1e-3, 1e-1]
    kw = dict(notion="top-label", exact_max_n=exact_max_n)

    def run(P_tr, P_q):
        paths = {fam: cd.make_estimator(fam, **kw).fit_path(P_tr, y_tr, lams) for fam in ("ukkr", "kkkr")}
        out = {fam: (path.risks(P_q, y_q), [e.h_diag(P_q) for e in path]) for fam, path in paths.items()}
        basis = next(iter(paths["ukkr"])).bases_[0]
        assert next(iter(paths["ukkr"])).low_rank_ == (exact_max_n < n_train)
        return out, basis, basis.features(problems(P_q, "top-label")[0].Z)

    assert kernel_ridge.interpolates(problems(P_q, "top-label")[0].Z, 0.5)
    fast, _, (psi_fast, w_fast) = run(P_tr, P_q)
    monkeypatch.setattr(kernel_ridge, "INTERPOLATED_MIN_ROWS", 10**9)
    slow, basis, (psi, w) = run(P_tr, P_q)
    assert (w is None) == (w_fast is None) == (exact_max_n < n_train)
    if w is not None:
        assert np.array_equal(psi_fast, psi) and np.array_equal(w_fast, w)
        for fam in ("ukkr", "kkkr"):
            assert np.array_equal(fast[fam][0], slow[fam][0])
            assert all(np.array_equal(a, b) for a, b in zip(fast[fam][1], slow[fam][1]))
        return
    # the interpolated route did run (the comparisons below would pass without it too)
    assert not np.array_equal(psi_fast, psi)
    if n_train < kernel_ridge.INTERPOLATED_MIN_ROWS:  # the same basis: the features within rounding
        eps = np.finfo(np.float64).eps
        assert np.all(np.abs(psi_fast - psi) <= 8 * eps * np.abs(basis.projection).sum(axis=0) + 8 * eps * np.abs(psi))
    # the per-row route on inputs moved by one ulp up and one down: how far rounding alone moves
    # its numbers (one direction alone can say 4-9 times less: on an AVX2-only CPU, lam = 1e-8
    # moved by 2.0e-8 up and 9.6e-8 down, against 9.3e-8 between the routes)
    ulps = [run(*[P / P.sum(axis=1, keepdims=True) for P in (np.nextafter(P_tr, to), np.nextafter(P_q, to))])[0]
            for to in (1.0, 0.0)]
    for fam in ("ukkr", "kkkr"):
        np.testing.assert_allclose(fast[fam][0], slow[fam][0], rtol=1e-12)
        for i, (a, b) in enumerate(zip(fast[fam][1], slow[fam][1])):
            spread = max(np.max(np.abs(ulp[fam][1][i] - b)) for ulp in ulps) / np.max(np.abs(b))
            assert_rel_close(a, b, max(4 * spread, 1e-14))


def test_the_rbf_kernel_of_rows_of_different_widths_fails_instead_of_reading_one_column():
    """The one-dimensional route forms a_i b_j as an outer product of first columns; rows of one
    column against centres of four must not be read as the centres' first column."""
    from calibdash.estimators.kernel_ridge import rbf_kernel

    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        rbf_kernel(rng.random((5, 1)), rng.random((3, 4)), 0.5)
    A, B = rng.random((5, 1)), rng.random((3, 1))
    np.testing.assert_allclose(rbf_kernel(A, B, 0.5), np.exp(-0.5 * (A - B.T) ** 2), rtol=1e-14)
