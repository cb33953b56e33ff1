"""The Beta-kernel regression of the one-dimensional notions in linear time, from per-cell
statistics of the confidence (docs/design.md, section 3, "The Beta kernel in linear time").

The exact regression (:func:`calibdash.estimators.kde.kernel_regression`) weighs every
training row for every query row: O(m n) per bandwidth, 15 minutes for a 100,000-row binary
classifier. Here both sides go through cells of the log-odds zeta = log z - log(1 - z):

* the cells partition zeta twice over: by the angle omega = arctan(sinh(zeta / 2))
  (:func:`kernel_scale`), in which the kernel of bandwidth b is about sqrt(b) wide wherever it
  sits, in steps of :func:`cell_width` (CELL_FRACTION * sqrt(b), rounded down to a power of two);
  and by zeta itself in steps of ZETA_CELL, for queries within b of 0 or 1;
* per cell: the count, the sums of zeta, of the targets and of target times zeta (sums over
  rows, so they add up over partitions of the data);
* the regression at a node is sum_j k(node; s_j) T_j / sum_j k(node; c_j) n_j, each sum's centre
  at its own mean log-odds (c_j the rows', s_j the targets'), which cancels the first-order
  change of the kernel across a cell;
* it is evaluated at nodes (half a cell of either partition) and linearly interpolated in zeta
  to each query row;
* per node, only the cells whose log-weight is within 60 of the node's largest are formed (the
  exact route floors the others at e^-60 of the largest already): the log-kernel is concave in
  the centre, so these cells form one run of the sorted cells, found from a coarse subsample.

tests/estimators/test_kde_grid.py bounds the result against the exact route (:data:`ERROR_BOUND`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, gammaln

from calibdash.core.elementwise import at_least
from calibdash.core.rows import stable_order
from calibdash.core.simplex import log_clipped

# Width in log-odds of the cells' second partition, which no bandwidth coarsens: a row whose
# z is within b of 0 or 1 weighs the training rows beyond it by a kernel that rises steeply
# in z (log-weight slope about |zeta| / b), which the kernel-scale cells, wide in log-odds
# there, would blur; and the nodes' spacing (half of it) for the same reason.
ZETA_CELL = 1.0 / 64.0
# Cell width as a fraction of the kernel's width sqrt(b) in kernel_scale units; nodes sit at
# half a cell. With each sum's centre at its own mean, a weight changes by about
# (CELL_FRACTION)^2 / 24 relative, 1e-4 at 1/16.
CELL_FRACTION = 1.0 / 16.0
# |g_grid - g_exact| <= ERROR_BOUND on the test inputs of tests/estimators/test_kde_grid.py (20,000
# training rows, and 5,000, the fewest that take the grid route with 1,000 query rows; the largest
# error found there is 1.4e-4, with 5,000 rows of classwise confidences, many of them exact zeros).
ERROR_BOUND = 1e-3
# Query x training pairs from which kernel regressions of the one-dimensional notions take the
# grid route: where it is the faster one (issue 26, item 2). Measured on one thread with the
# default 20 bandwidths (CIFAR-100's confidences, training rows 4 x the query rows): at 3e6
# pairs the exact route takes 0.125 s and the grid route 0.139 s, at 6e6 0.207 s against 0.180 s,
# at 1e7 (a fold of a 10,000-row file) 0.35 s against 0.21 s, and at 2e7 0.70 s against 0.26 s.
# Below it every number is the exact route's.
GRID_MIN_PAIRS = 5_000_000
_LOG_WEIGHT_WINDOW = 60.0  # cells further below a node's largest log-weight are left out
_BLOCK_ENTRIES = 1_000_000  # nodes x cells per dense block (8 MB)
# Nodes whose cell windows are joined into one dense block: the block computes the union of its
# nodes' windows, so the fewer nodes, the fewer weights outside a node's own window (at 256 the
# blocks held 1.25 times the weights the nodes' windows do on CIFAR-100's confidences); below 64
# the per-block overhead wins (a 10,000-row top-label evaluation on one core: 1.27 s at 256,
# 1.15 at 128, 1.13 at 64, 1.22 at 32).
_NODE_BLOCK = 64
# Columns (bandwidths x targets) gathered back to the query rows' order at once: one random
# access per row fetches all of them, and the sorted block (8 bytes x rows x columns: 64 MB at
# 2,000,000 rows) stays a small part of the regressions it returns.
_GATHER_COLUMNS = 4


def log_odds(S):
    """zeta = log z - log(1 - z) of the rows [z, 1 - z] of ``S``, with the complement as given
    (accurate where z is within 1e-16 of 1) and both clipped as the exact route clips them."""
    L = log_clipped(S)
    return L[:, 0] - L[:, 1]


def kernel_scale(zeta):
    """omega = arctan(sinh(zeta / 2)), in which the Beta kernel of bandwidth b has a width of
    about sqrt(b) wherever it sits: d omega / d zeta = sqrt(z (1 - z)), and the kernel's
    width in log-odds is sqrt(b / (z (1 - z))) (wider still where z (1 - z) < b). It equals
    arcsin(2 z - 1), the variance-stabilising angle of a proportion."""
    return np.arctan(np.sinh(np.clip(zeta, -1400.0, 1400.0) / 2.0))


def cell_width(bandwidth):
    """Width in ``kernel_scale`` units of the cells used for ``bandwidth``: CELL_FRACTION *
    sqrt(b) rounded down to a power of two, so that the cells of every bandwidth are unions of
    the finest ones and a bandwidth's result does not depend on which others are computed."""
    return 2.0 ** np.floor(np.log2(CELL_FRACTION * np.sqrt(float(bandwidth))))


class CellStatistics:
    """Counts and sums of training rows per grid cell: of the log-odds, of the targets and of
    the targets times the log-odds (non-negative targets, the one-dimensional notions' 0/1).

    A cell is a pair (``floor(kernel_scale(zeta) / base)``, ``floor(zeta / ZETA_CELL)``);
    coarser levels (the first id's width ``base * 2**level``) are unions of them, so the statistics are computed once from the rows
    and merged for each bandwidth. Every statistic is a sum over rows: the statistics of a
    union of row sets are the sums of theirs (:meth:`merged`).

    Parameters
    ----------
    zeta : ndarray (n,)
        Log-odds of the training rows.
    T : ndarray (n, t)
        Their targets, non-negative.
    base : float
        Width of the finest cells.
    """

    def __init__(self, zeta, T, base):
        if np.any(T < 0):
            raise ValueError("The grid route needs non-negative targets.")
        self.base = float(base)
        omega_ids = np.floor(kernel_scale(zeta) / self.base).astype(np.int64)
        zeta_ids = np.floor(zeta / ZETA_CELL).astype(np.int64)
        # Both ids grow with zeta, so their sum grows strictly from one cell (pair of ids) to
        # the next: it numbers the cells in zeta's order, at most a few hundred thousand of
        # them, and the sums per cell are bincounts, linear in the rows (sorting the rows
        # first took a fifth of a 2,000,000-row evaluation).
        key = omega_ids + zeta_ids
        key -= key.min()
        size = int(key.max()) + 1
        count = np.bincount(key, minlength=size)
        cells = np.flatnonzero(count)
        ids = np.zeros((2, size), dtype=np.int64)
        ids[0, key], ids[1, key] = omega_ids, zeta_ids  # the same pair for every row of a cell
        self.omega_ids, self.zeta_ids = ids[0, cells], ids[1, cells]
        self.count = count[cells].astype(np.float64)
        self.zeta_sum = np.bincount(key, weights=zeta, minlength=size)[cells]
        self.target_sum = np.column_stack([np.bincount(key, weights=t, minlength=size)[cells] for t in T.T])
        self.target_zeta_sum = np.column_stack([np.bincount(key, weights=t * zeta, minlength=size)[cells]
                                                for t in T.T])

    _SUMS = ("count", "zeta_sum", "target_sum", "target_zeta_sum")

    @classmethod
    def merged(cls, parts):
        """The statistics of the union of the rows of ``parts`` (all with one ``base``)."""
        out = cls.__new__(cls)
        out.base = parts[0].base
        pairs = np.column_stack([np.concatenate([p.omega_ids for p in parts]),
                                 np.concatenate([p.zeta_ids for p in parts])])
        cells, inverse = np.unique(pairs, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        out.omega_ids, out.zeta_ids = cells[:, 0], cells[:, 1]
        for name in cls._SUMS:
            values = np.concatenate([getattr(p, name) for p in parts])
            summed = np.zeros((cells.shape[0],) + values.shape[1:])
            np.add.at(summed, inverse, values)
            setattr(out, name, summed)
        return out

    def level(self, level):
        """The cells of width ``base * 2**level``: (mean log-odds, count, target sums, the
        targets' own mean log-odds per target column)."""
        if level == 0:
            sums = [getattr(self, name) for name in self._SUMS]
        else:
            ids = self.omega_ids >> level  # an arithmetic shift: floor division by 2**level
            starts = np.flatnonzero((np.diff(ids, prepend=ids[0] - 1) != 0)
                                    | (np.diff(self.zeta_ids, prepend=self.zeta_ids[0] - 1) != 0))
            sums = [np.add.reduceat(getattr(self, name), starts, axis=0) for name in self._SUMS]
        count, zeta_sum, target_sum, target_zeta_sum = sums
        centre = zeta_sum / count
        # where a cell's targets are all 0 its target centre is never used (its weight is 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            target_centre = np.where(target_sum > 0, target_zeta_sum / target_sum, centre[:, None])
        return centre, count, target_sum, target_centre


def _level_of(bandwidth, base):
    """The level whose cells are the bandwidth's (both widths are powers of two)."""
    level = int(round(np.log2(cell_width(bandwidth) / base)))
    if level < 0:
        raise ValueError(f"Cells of width {base} are too coarse for bandwidth {bandwidth}.")
    return level


def _log_beta_1d(c, r, b):
    """log B(c / b + 1, r / b + 1), the Beta kernel's normaliser."""
    a, d = c / b + 1.0, r / b + 1.0
    return gammaln(a) + gammaln(d) - gammaln(a + d)


def _simplex(zeta):
    """[z, 1 - z] at log-odds ``zeta``, both accurate."""
    return np.column_stack([expit(zeta), expit(-zeta)])


def _windows(x, cell_c, lb):
    """For a block of nodes, the run of cells [lo, hi) holding every cell whose log-weight is
    within the window of the node's largest (a superset of it)."""
    n_cells = cell_c.size
    step = max(1, int(np.sqrt(n_cells / 2)))
    coarse = np.arange(0, n_cells, step)
    lw = _log_weights(x, cell_c[coarse], lb[coarse])
    keep = lw >= lw.max(axis=1, keepdims=True) - _LOG_WEIGHT_WINDOW
    first = np.argmax(keep, axis=1)
    last = keep.shape[1] - 1 - np.argmax(keep[:, ::-1], axis=1)
    # a unimodal sequence: the run above the threshold ends less than one step beyond the
    # outermost coarse cell inside it
    return int(max(coarse[first].min() - step, 0)), int(min(coarse[last].max() + step + 1, n_cells))


def _log_weights(x, c, lb):
    """log k(z_q; centre j) up to a constant per node, x_q = zeta_q / b: the Beta kernel's
    (z_j log z_q + (1 - z_j) log(1 - z_q)) / b - log B_j is z_j zeta_q / b - log B_j plus
    log(1 - z_q) / b, which every weight of the node shares. One product per entry instead of
    a two-column matrix product."""
    W = np.multiply.outer(x, c)
    W -= lb
    return W


def _regress_nodes(node_zeta, cells, b):
    """The kernel regression at the nodes from the cells: sum_j w(s_j) T_j / sum_j w(c_j) n_j,
    with w the Beta kernel, c_j the cell's mean log-odds and n_j its count, s_j the targets'
    own mean log-odds and T_j their sum. Placing each sum's centre at its own mean cancels the
    first-order term of the kernel's change across the cell, so the error is second order in
    the cell width (a single centre for both leaves a first-order error where the targets sit
    unevenly in their cell, as 0/1 targets do)."""
    centre, count, target_sum, target_centre = cells
    x = node_zeta / b
    cell_S = _simplex(centre)
    # the count enters the log-weight, so that the window and the floor compare whole cells
    lb = _log_beta_1d(cell_S[:, 0], cell_S[:, 1], b) - np.log(count)
    target_c, target_lb = [], []
    for k in range(target_sum.shape[1]):
        S_k = _simplex(target_centre[:, k])
        with np.errstate(divide="ignore"):
            lb_k = _log_beta_1d(S_k[:, 0], S_k[:, 1], b) - np.log(target_sum[:, k])
        target_c.append(S_k[:, 0])
        target_lb.append(np.where(np.isfinite(lb_k), lb_k, np.inf))  # no targets: weight 0
    out = np.empty((node_zeta.size, target_sum.shape[1]))
    dense = node_zeta.size * centre.size <= _BLOCK_ENTRIES
    for s in range(0, node_zeta.size, _NODE_BLOCK):
        xs = x[s : s + _NODE_BLOCK]
        lo, hi = (0, centre.size) if dense else _windows(xs, cell_S[:, 0], lb)
        W = _log_weights(xs, cell_S[lo:hi, 0], lb[lo:hi])
        top = W.max(axis=1, keepdims=True)
        W -= top
        at_least(W, -_LOG_WEIGHT_WINDOW, out=W)
        den = np.exp(W, out=W).sum(axis=1)
        for k in range(target_sum.shape[1]):
            W = _log_weights(xs, target_c[k][lo:hi], target_lb[k][lo:hi])
            W -= top
            # the same floor as the denominator's, relative to its largest weight; cells
            # without targets (log-weight -inf) stay at 0
            np.maximum(W, np.where(np.isinf(target_lb[k][lo:hi]), -np.inf, -_LOG_WEIGHT_WINDOW), out=W)
            out[s : s + xs.size, k] = np.exp(W, out=W).sum(axis=1) / den
    return out


def half_cell_ids(omega, half):
    """The distinct floor(omega / half), sorted."""
    return np.unique(np.floor(omega / half).astype(np.int64))


def coarser_ids(ids, level):
    """The distinct ids of cells 2**level times as wide, from the sorted distinct ``ids`` of
    :func:`half_cell_ids`: floor(omega / (half 2**level)) is floor(omega / half) >> level
    exactly (dividing by a power of two only changes the exponent), and a sorted sequence
    stays sorted under the shift, so the duplicates are neighbours."""
    shifted = ids >> level
    return shifted[np.diff(shifted, prepend=shifted[:1] - 1) != 0]


class GridQuery:
    """The query rows' side of the grid route, for cell statistics of finest width ``base``:
    computed once when several regressions (the k fold models' of ``fold_diagonals``) are
    evaluated at the same rows.

    The rows' half-cell ids are found once for every bandwidth (a coarser level's are the
    finest shifted), and the rows are kept in sorted order for the interpolation: each value
    is the same (the nodes are distinct), but np.interp starts its search for the bracketing
    nodes at the previous row's, so sorted rows cost a step or two each instead of a binary
    search through the nodes (5x faster at 2,000,000 rows and 3,000 nodes, scattering back
    included). The values go back to the rows' own order by a gather of whole rows of several
    bandwidths at once (:attr:`inverse`), not a scatter per bandwidth.
    """

    def __init__(self, S_query, base):
        zeta = log_odds(S_query)
        self.base = float(base)
        self.size = zeta.size
        zeta_ids = np.unique(np.floor(zeta / (ZETA_CELL / 2.0)).astype(np.int64))
        self.zeta_nodes = np.union1d(zeta_ids, zeta_ids + 1) * (ZETA_CELL / 2.0)
        self.finest = half_cell_ids(kernel_scale(zeta), self.base / 2.0)
        self.order = stable_order(zeta)
        self.sorted_zeta = zeta[self.order]
        # row j's place in the sorted order: g[j] = g_sorted[inverse[j]], the same values as
        # the scatter g[order] = g_sorted
        self.inverse = np.empty_like(self.order)
        self.inverse[self.order] = np.arange(self.order.size, dtype=self.order.dtype)


def grid_kernel_regression(S_query, stats, bandwidths, query=None):
    """The Beta-kernel regression at the query rows for each bandwidth, from the training
    rows' cell statistics.

    Parameters
    ----------
    S_query : ndarray (m, 2)
        Query rows [z, 1 - z].
    stats : CellStatistics
        Of the training rows, with ``base`` no wider than the smallest bandwidth's cell.
    bandwidths : sequence of float
    query : GridQuery or None
        ``GridQuery(S_query, stats.base)``, when the caller evaluates several regressions at
        these rows; None prepares it here.

    Returns
    -------
    list of ndarray (m, t), one per bandwidth.
    """
    if query is None:
        query = GridQuery(S_query, stats.base)
    elif query.base != stats.base or query.size != S_query.shape[0]:
        raise ValueError("The query was prepared for other rows or cells.")
    bandwidths = list(bandwidths)
    t = stats.target_sum.shape[1]
    out = []
    # The values are interpolated in the rows' sorted order, then gathered back to their own
    # order a few bandwidths at a time: one random access per row fetches all of their columns
    # (a scatter per bandwidth and column took a sixth of a 10,000,000-row evaluation).
    per_gather = max(1, _GATHER_COLUMNS // t)
    for s in range(0, len(bandwidths), per_gather):
        group = bandwidths[s : s + per_gather]
        in_order = np.empty((query.size, len(group) * t))
        for j, b in enumerate(group):
            level = _level_of(b, stats.base)
            cells = stats.level(level)
            half = stats.base * 2**level / 2.0  # nodes at half a cell
            ids = coarser_ids(query.finest, level)
            node_omega = np.union1d(ids, ids + 1) * half
            node_zeta = 2.0 * np.arcsinh(np.tan(np.clip(node_omega, -np.pi / 2 + 1e-12, np.pi / 2 - 1e-12)))
            node_zeta = np.union1d(node_zeta, query.zeta_nodes)
            g_nodes = _regress_nodes(node_zeta, cells, float(b))
            for k in range(t):
                in_order[:, j * t + k] = np.interp(query.sorted_zeta, node_zeta, g_nodes[:, k])
        gathered = np.take(in_order, query.inverse, axis=0)
        del in_order
        out.extend(np.ascontiguousarray(gathered[:, j * t : (j + 1) * t]) for j in range(len(group)))
    return out


def statistics_for(S_train, T, bandwidths):
    """The cell statistics of training rows ``S_train`` (n, 2) with targets ``T`` (n, t), on
    cells fine enough for the smallest of ``bandwidths``."""
    return CellStatistics(log_odds(S_train), np.asarray(T, dtype=np.float64), cell_width(min(bandwidths)))


def use_grid(n_query, n_train):
    """Whether the grid route pays: above GRID_MIN_PAIRS query x training pairs."""
    return n_query * n_train >= GRID_MIN_PAIRS
