"""The grid route of the one-dimensional kernel regression (calibdash/estimators/kde_grid.py)
against the exact route: its statistics exactly, its regression and risks within the stated
bound, on confidences spread over the middle, piled up within 1e-16 of 1 (and at 1), and with
exact zeros (classwise)."""

import numpy as np
import pytest

from calibdash.core.risk import risk
from calibdash.estimators import kde_grid
from calibdash.estimators.kde import KDEEstimator, KernelCentres, kernel_regression
from calibdash.estimators.registry import default_grid

BANDWIDTHS = default_grid("kde", "top-label")["bandwidth"]


def confidences(kind, n, rng):
    if kind == "spread":
        c = rng.beta(5, 2, n)
        r = 1 - c
    elif kind == "confident":  # as a confident network's: many within 1e-16 of 1, some at 1
        r = np.minimum(np.exp(-rng.exponential(8, n)), 0.5)
        r[rng.random(n) < 0.1] = 1e-17
        r[rng.random(n) < 0.1] = 0.0
        c = 1 - r
    else:  # classwise: many exact zeros
        c = rng.beta(0.3, 3, n)
        c[rng.random(n) < 0.2] = 0.0
        r = 1 - c
    return np.column_stack([c, r])


def exact_route(monkeypatch):
    """Keep every regression on the exact route, whatever its size (the reference)."""
    monkeypatch.setattr(kde_grid, "GRID_MIN_PAIRS", np.iinfo(np.int64).max)


def targets(S, rng):
    return (rng.random(S.shape[0]) < S[:, 0] ** 1.2).astype(float)[:, None]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["spread", "confident", "zeros"])
# 20,000 training rows, and the fewest that take the grid route with 1,000 query rows: the
# cells' sums then hold fewer rows each, which the bound must survive as well.
@pytest.mark.parametrize("n_train", [20_000, kde_grid.GRID_MIN_PAIRS // 1_000])
def test_grid_regression_within_bound_of_exact(kind, n_train, monkeypatch):
    rng = np.random.default_rng(3)
    S = confidences(kind, n_train, rng)
    T = targets(S, rng)
    S_query = confidences(kind, 1_000, rng)
    assert kde_grid.use_grid(S_query.shape[0], n_train)
    exact_route(monkeypatch)
    exact = kernel_regression(S_query, KernelCentres.from_targets(S, T), BANDWIDTHS)
    grid = kde_grid.grid_kernel_regression(S_query, kde_grid.statistics_for(S, T, BANDWIDTHS), BANDWIDTHS)
    worst = max(np.max(np.abs(a - b)) for a, b in zip(exact, grid))
    assert worst <= kde_grid.ERROR_BOUND
    # and the bound is not vacuous: the grid is not the exact computation
    assert worst > 0


@pytest.mark.parametrize("kind", ["spread", "confident", "zeros"])
def test_statistics_are_the_sums_over_each_cells_rows_in_zeta_order(kind):
    """Against a plain loop over the rows, grouped by their pair of cell ids: the cells in the
    order of the log-odds, their counts exact, their sums to rounding."""
    rng = np.random.default_rng(4)
    S = confidences(kind, 2_000, rng)
    T = np.column_stack([targets(S, rng), rng.integers(0, 3, S.shape[0])]).astype(float)
    base = kde_grid.cell_width(1e-4)
    zeta = kde_grid.log_odds(S)
    stats = kde_grid.CellStatistics(zeta, T, base)
    cells = {}
    for z, t in zip(zeta, T):
        key = (int(np.floor(kde_grid.kernel_scale(np.array([z]))[0] / base)), int(np.floor(z / kde_grid.ZETA_CELL)))
        c = cells.setdefault(key, [0, 0.0, np.zeros(2), np.zeros(2), z])
        c[0] += 1
        c[1] += z
        c[2] += t
        c[3] += t * z
        c[4] = min(c[4], z)
    order = sorted(cells, key=lambda k: cells[k][4])
    assert len(order) > 20
    np.testing.assert_array_equal(stats.omega_ids, [k[0] for k in order])
    np.testing.assert_array_equal(stats.zeta_ids, [k[1] for k in order])
    np.testing.assert_array_equal(stats.count, [cells[k][0] for k in order])
    np.testing.assert_allclose(stats.zeta_sum, [cells[k][1] for k in order], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(stats.target_sum, [cells[k][2] for k in order])
    np.testing.assert_allclose(stats.target_zeta_sum, [cells[k][3] for k in order], rtol=1e-12, atol=1e-12)


def test_statistics_add_up_over_parts():
    rng = np.random.default_rng(0)
    S = confidences("confident", 3_000, rng)
    T = targets(S, rng)
    base = kde_grid.cell_width(1e-4)
    whole = kde_grid.CellStatistics(kde_grid.log_odds(S), T, base)
    parts = [kde_grid.CellStatistics(kde_grid.log_odds(S[i::3]), T[i::3], base) for i in range(3)]
    merged = kde_grid.CellStatistics.merged(parts)
    np.testing.assert_array_equal(merged.omega_ids, whole.omega_ids)
    np.testing.assert_array_equal(merged.zeta_ids, whole.zeta_ids)
    for name in ("count", "zeta_sum", "target_sum", "target_zeta_sum"):
        np.testing.assert_allclose(getattr(merged, name), getattr(whole, name), rtol=1e-12, atol=1e-9)
    for level in (0, 3):
        for a, b in zip(merged.level(level), whole.level(level)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9)


def test_coarser_levels_are_unions_of_cells():
    rng = np.random.default_rng(1)
    S = confidences("spread", 2_000, rng)
    T = targets(S, rng)
    stats = kde_grid.statistics_for(S, T, [1e-4])
    for level in range(6):
        centre, count, target_sum, target_centre = stats.level(level)
        assert count.sum() == 2_000
        assert target_sum.sum() == T.sum()
        assert np.all(np.diff(centre) > 0)
        # the brute force: a cell's mean log-odds from its rows
        zeta = kde_grid.log_odds(S)
        omega_id = np.floor(kde_grid.kernel_scale(zeta) / stats.base).astype(np.int64) >> level
        zeta_id = np.floor(zeta / kde_grid.ZETA_CELL).astype(np.int64)
        keys = np.unique(np.column_stack([omega_id, zeta_id]), axis=0)
        assert keys.shape[0] == count.size
        first = (omega_id == keys[0, 0]) & (zeta_id == keys[0, 1])
        np.testing.assert_allclose(centre[0], zeta[first].mean(), rtol=1e-12)


def test_coarser_node_ids_equal_the_direct_floor():
    """The nodes of every level come from the finest ids shifted, which must equal
    floor(omega / (half 2**level)) computed from the rows, including the rows on a cell's edge."""
    rng = np.random.default_rng(3)
    half = kde_grid.cell_width(0.001) / 2.0
    omega = np.concatenate([rng.uniform(-np.pi / 2, np.pi / 2, 20_000),
                            half * rng.integers(-4000, 4000, 500),  # exactly on the finest edges
                            np.nextafter(half * rng.integers(-4000, 4000, 500), -np.inf)])
    finest = kde_grid.half_cell_ids(omega, half)
    for level in range(12):
        direct = np.unique(np.floor(omega / (half * 2**level)).astype(np.int64))
        np.testing.assert_array_equal(kde_grid.coarser_ids(finest, level), direct)


def test_fold_models_share_one_prepared_query_and_match_their_own(monkeypatch):
    """kernel_regression_by_parts prepares the query rows once for all k fold models; each
    model's regression equals the one that prepares its own query, exactly."""
    from calibdash.estimators.kde import kernel_regression_by_parts

    rng = np.random.default_rng(4)
    c = 0.5 + 0.5 * rng.beta(5, 2, 5_000)
    S = np.column_stack([c, 1 - c])
    T = (rng.random(c.size) < c**1.3).astype(float)[:, None]
    parts = [KernelCentres.from_targets(S[i::4], T[i::4]) for i in range(4)]
    models = [[f for f in range(4) if f != i] for i in range(4)]
    S_query = np.column_stack([c[:3000] ** 1.1, 1 - c[:3000] ** 1.1])
    monkeypatch.setattr(kde_grid, "GRID_MIN_PAIRS", 1)
    made = []
    real = kde_grid.GridQuery
    monkeypatch.setattr(kde_grid, "GridQuery", lambda *a: made.append(1) or real(*a))
    shared = kernel_regression_by_parts(S_query, parts, 0.01, models)
    assert len(made) == 1
    for members, g in zip(models, shared):
        stats = kde_grid.CellStatistics.merged([p.cell_statistics([0.01]) for p in (parts[f] for f in members)])
        np.testing.assert_array_equal(g, kde_grid.grid_kernel_regression(S_query, stats, [0.01])[0])
    with pytest.raises(ValueError, match="prepared for other"):
        kde_grid.grid_kernel_regression(S_query[:10], stats, [0.01], real(S_query, stats.base))


def test_a_bandwidth_does_not_depend_on_the_others():
    rng = np.random.default_rng(2)
    S = confidences("spread", 4_000, rng)
    T = targets(S, rng)
    S_query = confidences("spread", 500, rng)
    b = BANDWIDTHS[10]
    alone = kde_grid.grid_kernel_regression(S_query, kde_grid.statistics_for(S, T, [b]), [b])[0]
    among = kde_grid.grid_kernel_regression(S_query, kde_grid.statistics_for(S, T, BANDWIDTHS), BANDWIDTHS)
    np.testing.assert_allclose(among[10], alone, rtol=1e-12, atol=1e-14)


def test_every_bandwidth_and_target_comes_back_to_its_own_rows(monkeypatch):
    """The regressions are interpolated in the query rows' sorted order and gathered back to
    their own order a few columns (bandwidths x targets) at a time: each bandwidth's result
    equals the one computed alone, to the last digit, however the columns are grouped, and
    rows given in another order get their own values."""
    rng = np.random.default_rng(6)
    S = confidences("spread", 4_000, rng)
    T = np.column_stack([targets(S, rng)[:, 0], rng.random(S.shape[0])])  # two target columns
    stats = kde_grid.statistics_for(S, T, BANDWIDTHS)
    S_query = confidences("spread", 700, rng)
    alone = [kde_grid.grid_kernel_regression(S_query, stats, [b])[0] for b in BANDWIDTHS]
    for columns in (1, 3, 4, 64):  # one bandwidth a gather, part of one, a ragged last group, all
        monkeypatch.setattr(kde_grid, "_GATHER_COLUMNS", columns)
        together = kde_grid.grid_kernel_regression(S_query, stats, BANDWIDTHS)
        assert len(together) == len(BANDWIDTHS)
        for g, ref in zip(together, alone):
            assert g.shape == (700, 2) and g.flags.c_contiguous
            np.testing.assert_array_equal(g, ref)
    perm = rng.permutation(700)
    for g, ref in zip(kde_grid.grid_kernel_regression(S_query[perm], stats, BANDWIDTHS), alone):
        np.testing.assert_array_equal(g, ref[perm])


def test_kernel_regression_takes_the_grid_route_only_above_the_threshold(monkeypatch):
    rng = np.random.default_rng(4)
    S = confidences("spread", 3_000, rng)
    T = targets(S, rng)
    S_query = confidences("spread", 400, rng)
    centres = KernelCentres.from_targets(S, T)
    below = kernel_regression(S_query, centres, [0.01, 0.1])
    monkeypatch.setattr(kde_grid, "GRID_MIN_PAIRS", 1)
    above = kernel_regression(S_query, centres, [0.01, 0.1])
    expected = kde_grid.grid_kernel_regression(S_query, kde_grid.statistics_for(S, T, [0.01]), [0.01, 0.1])
    for a, b, e in zip(above, below, expected):
        np.testing.assert_array_equal(a, e)
        assert np.max(np.abs(a - b)) <= kde_grid.ERROR_BOUND
        assert not np.array_equal(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("notion", ["top-label", "classwise"])
def test_estimator_risks_and_fold_diagonals_match_the_exact_route(notion, monkeypatch):
    """The risk path, the estimate and the cross-validation's fold diagonals through the grid
    route stay within a relative 1e-3 of the exact route (the risk's sampling error is tens of
    percent at this size), and choose the same bandwidth."""
    rng = np.random.default_rng(5)
    n, d = 12_000, 3
    logits = rng.normal(size=(n, d)) * 2.5
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(d, p=p ** 1.3 / (p ** 1.3).sum()) for p in P])
    train, test = slice(0, 9_000), slice(9_000, None)
    grid = [1e-4, 1e-3, 1e-2, 0.1, 1.0]

    def run():
        path = KDEEstimator(notion=notion).fit_path(P[train], y[train], grid)
        risks = np.array(path.risks(P[test], y[test]))
        est = KDEEstimator(notion=notion, bandwidth=0.01).fit(P[train], y[train])
        diags = KDEEstimator.fold_diagonals(P[test], P[train], y[train], [np.arange(i, 9_000, 3) for i in range(3)],
                                            notion, 0.01)
        return risks, est.squared_error(P[test]), risk(est, P[test], y[test]), diags

    exact_route(monkeypatch)
    exact = run()
    monkeypatch.setattr(kde_grid, "GRID_MIN_PAIRS", 1)
    approx = run()
    np.testing.assert_allclose(approx[0], exact[0], rtol=1e-3)
    assert np.argmin(approx[0]) == np.argmin(exact[0])
    np.testing.assert_allclose(approx[1], exact[1], rtol=1e-3)
    np.testing.assert_allclose(approx[2], exact[2], rtol=1e-3)
    np.testing.assert_allclose(approx[3], exact[3], rtol=1e-3, atol=1e-6)
    assert not np.array_equal(approx[0], exact[0])


def test_fold_diagonals_in_blocks_equal_one_call_per_block(monkeypatch):
    """blocks regresses each block of query rows on its own, on parts fitted once: the same
    numbers, to the last bit, as one call per block (the pipeline's chunks), which the grid
    route need not give for all rows at once; the parts are fitted once, not once per block."""
    rng = np.random.default_rng(8)
    c = 0.5 + 0.5 * rng.beta(5, 2, 6_000)
    P = np.column_stack([c, 1 - c])
    y = (rng.random(c.size) >= c**1.3).astype(np.int64)  # label 0 is the top label when right
    parts = [np.arange(i, 4_000, 4) + 2_000 for i in range(4)]
    query = P[:2_000]
    monkeypatch.setattr(kde_grid, "GRID_MIN_PAIRS", 1)
    sizes = [700, 700, 600]
    fits = []
    real_fit = KDEEstimator.fit
    monkeypatch.setattr(KDEEstimator, "fit", lambda self, *a: fits.append(1) or real_fit(self, *a))
    blocked = KDEEstimator.fold_diagonals(query, P, y, parts, "top-label", 0.003, blocks=sizes)
    assert len(fits) == len(parts)
    edges = np.cumsum([0] + sizes)
    one_by_one = np.concatenate([KDEEstimator.fold_diagonals(query[a:b], P, y, parts, "top-label", 0.003)
                                 for a, b in zip(edges[:-1], edges[1:])], axis=1)
    np.testing.assert_array_equal(blocked, one_by_one)
    whole = KDEEstimator.fold_diagonals(query, P, y, parts, "top-label", 0.003)
    np.testing.assert_allclose(blocked, whole, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="do not split the 2000 query rows"):
        KDEEstimator.fold_diagonals(query, P, y, parts, "top-label", 0.003, blocks=[700, 700])


def test_fold_diagonals_are_linear_only_on_the_grid_route(monkeypatch):
    assert not KDEEstimator.fold_diagonals_linear(2_000_000, [1_600_000] * 5, "canonical")
    assert KDEEstimator.fold_diagonals_linear(2_000_000, [1_600_000] * 5, "top-label")
    assert KDEEstimator.fold_diagonals_linear(2_000_000, [1_600_000] * 5, "classwise")
    assert not KDEEstimator.fold_diagonals_linear(1_000, [1_000] * 5, "top-label")  # 4e6 pairs
    monkeypatch.setattr(kde_grid, "GRID_MIN_PAIRS", 1)
    assert KDEEstimator.fold_diagonals_linear(1_000, [1_000] * 5, "top-label")
    # the training rows are counted as kernel_regression_by_parts counts them: all parts but the smallest
    monkeypatch.setattr(kde_grid, "GRID_MIN_PAIRS", 10 * 9)
    assert KDEEstimator.fold_diagonals_linear(10, [3, 4, 5], "top-label")
    assert not KDEEstimator.fold_diagonals_linear(9, [3, 4, 5], "top-label")
