"""Kernel density ratio estimator (Eq. 11, 25; Popordanoska et al. 2022).

g(z) = sum_j k(z; z_j) t_j / sum_j k(z; z_j) with a Dirichlet kernel (a Beta kernel for the
one-dimensional notions), and the plug-in v(z) = z - g(z). In log space

    log k(z_q; z_j) = (1/b) sum_k z_jk log z_qk - log B(alpha_j),   alpha_j = z_j / b + 1,

so one product S = log(Z_query) @ Z_train^T serves every bandwidth b; the weights are a
row-wise log-sum-exp normalisation of S / b - log B(alpha_j). Query rows go in blocks so
memory stays bounded however large the sets are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.special import gammaln, zeta

from calibdash.core.elementwise import at_least
from calibdash.core.notions import problems
from calibdash.core.rows import take_rows
from calibdash.core.simplex import log_clipped
from calibdash.core.validation import check_positive
from calibdash.errors import ConfigError
from calibdash.estimators import kde_grid
from calibdash.estimators.base import CalibrationEstimator

# Entries of one (query block x training set) matrix. The Beta kernel's passes are
# memory-bound and want blocks that stay in cache (0.5 MB); the Dirichlet kernel's
# product per block wants more rows as the number of classes grows (8 MB at 100
# classes, 32 MB at 1,000). Measured on CIFAR-100 folds and a 1,000-class simulation.
_BLOCK_ENTRIES_1D = 65_536
_BLOCK_ENTRIES = 1_000_000
_BLOCK_ENTRIES_WIDE = 4_000_000
# Held-out rows per block of the streamed risk: bandwidths x rows x d numbers at most.
_STREAM_ENTRIES = 32_000_000  # 256 MB
_PASS_ENTRIES = 262_144  # 2 MB: half the per-core L2 cache of the benchmark machine
_LOG_WEIGHT_FLOOR = -60.0
# Below this fraction of nonzero entries a kernel regression's risk cross-products are formed
# from its nonzeros (see _plug_in_cross_products). Per nonzero those cost about ten times what
# the dense products cost per entry (measured at 1,000 classes), so they pay up to ~7 %; the
# bandwidths between 2 % and 7 % are few.
_SPARSE_RISK_DENSITY = 0.02
# Below this fraction of weights above the floor, a block's weights are summed from the
# kept entries alone (gathered, exponentiated and added up by bincount) instead of by
# dense passes over the whole block. Per kept entry the sparse sums cost about five times
# what the dense exp and class sums cost per entry (measured on CIFAR-100 folds), and the
# canonical kernel of a bandwidth below 0.05 keeps under 4 % of the entries.
_SPARSE_FRACTION = 0.15
# The normalisers of a row whose entries are all below _SERIES_X b come from a series in the
# row's power sums (see log_beta_table): 16 passes of about 0.35 ns per entry for every bandwidth
# at once, where lgamma costs 8 to 15 ns per entry and bandwidth. On the 1,000-class simulation
# every row takes it at the grid's 8 bandwidths from 0.2 (the cheapest for lgamma): 21 % less
# time for the table (docs/design.md, section 3).
_SERIES_X = 0.1
_SERIES_TERMS = 16
# lgamma(1 + x) = sum_m _LGAMMA1P_COEF[m - 1] x^m: -euler_gamma, then (-1)^m zeta(m) / m.
_LGAMMA1P_COEF = np.array([-np.euler_gamma] + [(-1) ** m * float(zeta(m)) / m for m in range(2, _SERIES_TERMS + 1)])
# Key of a fit_path cache entry (bandwidths, log_beta_table(P, bandwidths)) for the
# training rows P: a cross-validation computes the table once for all its folds.
NORMALISERS_KEY = "kde-log-beta"


def log_beta_function(alpha):
    """log B(alpha) = sum_k lgamma(alpha_k) - lgamma(sum_k alpha_k), row-wise."""
    return gammaln(alpha).sum(axis=1) - gammaln(alpha.sum(axis=1))


def log_beta_of_centres(S, b):
    """log B(S / b + 1) row-wise: :func:`log_beta_table` of one bandwidth."""
    return log_beta_table(S, [b])[0]


def log_beta_table(P, bandwidths):
    """log B(p_i / b + 1) of every row of ``P`` for every bandwidth, (bandwidths, n): the
    canonical notion's normalisers, which depend on a centre alone, so that the folds of
    a cross-validation, whose training sets overlap, can share them.

    A row whose every entry is below ``_SERIES_X`` b takes sum_k lgamma(1 + p_k / b) from the
    series of lgamma(1 + x) and the row's power sums sum_k p_k^m, which serve every bandwidth
    (:func:`_lgamma1p_sums`); the other rows take one lgamma per entry. A row's value depends on
    that row and b alone, in chunks of rows so that the temporaries stay small (three n x d
    arrays at once would be 768 MB at 32,000 x 1,000).
    """
    P = np.asarray(P, dtype=np.float64)
    n, d = P.shape
    bandwidths = [float(b) for b in bandwidths]
    out = np.empty((len(bandwidths), n))
    rows = max(1, _BLOCK_ENTRIES // max(d, 1))
    for s in range(0, n, rows):
        S = P[s : s + rows]
        # The series pays where a row has many entries (the Dirichlet kernel of many classes).
        series = np.max(S, axis=1)[None, :] < _SERIES_X * np.array(bandwidths)[:, None]
        series &= d > 2
        with_sums = np.flatnonzero(series.any(axis=0))
        sums = _power_sums(S[with_sums]) if len(with_sums) else None
        for i, b in enumerate(bandwidths):
            mine = series[i]
            if not mine.any():
                out[i, s : s + S.shape[0]] = log_beta_function(S / b + 1.0)
                continue
            value = np.empty(S.shape[0])
            # where the rows that take the series at b sit among the rows with power sums
            at = np.flatnonzero(mine[with_sums])
            first = sums[at, 0]
            value[mine] = _lgamma1p_sums(sums[at], b) - gammaln(first / b + d)
            rest = ~mine
            if rest.any():
                value[rest] = log_beta_function(S[rest] / b + 1.0)
            out[i, s : s + S.shape[0]] = value
    return out


def _power_sums(S):
    """sum_k s_k^m of each row for m = 1 .. _SERIES_TERMS, (rows, _SERIES_TERMS)."""
    sums = np.empty((S.shape[0], _SERIES_TERMS))
    power = S.copy()
    sums[:, 0] = power.sum(axis=1)
    for m in range(1, _SERIES_TERMS):
        power *= S
        sums[:, m] = power.sum(axis=1)
    return sums


def _lgamma1p_sums(sums, b):
    """sum_k lgamma(1 + s_k / b) of rows whose entries are all below ``_SERIES_X`` b, from their
    power sums: lgamma(1 + x) = -gamma x + sum_{m >= 2} (-1)^m zeta(m) x^m / m for |x| < 1, an
    alternating series of falling terms, so cut after ``_SERIES_TERMS`` its error per entry is
    below zeta(17) x^17 / 17, under 6e-19 (1e-17 of the entry's value) at x = 0.1
    (tests/estimators/test_estimators.py). Evaluated by Horner's rule in 1 / b."""
    t = 1.0 / b
    acc = np.zeros(sums.shape[0])
    for m in range(_SERIES_TERMS - 1, -1, -1):
        acc = (acc + _LGAMMA1P_COEF[m] * sums[:, m]) * t
    return acc


@dataclass(frozen=True)
class KernelCentres:
    """Training points of a kernel regression. One-hot targets (the canonical notion) are
    kept as label-sorted centres with the offsets of each label's run, not as an n x d
    matrix: then W @ T is a sum of W's columns per label, cheaper as a reduceat than as a
    product, and the fitted model is half the size.

    The normalisers log B(s_j / b + 1) are kept per bandwidth once computed (or once given
    by :meth:`set_log_beta`): at 32,000 x 1,000 each costs as much as the kernel products."""

    S: np.ndarray
    T: np.ndarray | None = None  # targets, when they are not one-hot
    present: np.ndarray | None = None  # labels that occur, sorted
    starts: np.ndarray | None = None  # first row of each present label in S
    n_targets: int = 1
    order: np.ndarray | None = None  # S = the given rows[order]; None when unsorted
    _log_b: dict = field(default_factory=dict, repr=False, compare=False)
    _cells: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_labels(cls, S, labels, n_classes):
        """Centres whose targets are the one-hot vectors of ``labels``."""
        order = np.argsort(labels, kind="stable")
        present, starts = np.unique(labels[order], return_index=True)
        return cls(S[order], None, present, starts, n_classes, order)

    @classmethod
    def from_targets(cls, S, T):
        """Centres with arbitrary targets (the one-dimensional notions)."""
        return cls(S, T, n_targets=T.shape[1])

    def log_beta(self, b):
        """log B(s_j / b + 1) of every centre, kept after first use for the Dirichlet
        kernel (the Beta kernel's are cheap, and classwise has one set per class)."""
        values = self._log_b.get(b)
        if values is None:
            values = log_beta_of_centres(self.S, b)
            if self.S.shape[1] > 2:
                self._log_b[b] = values
        return values

    def set_log_beta(self, b, values):
        """Take the normalisers of bandwidth ``b`` from ``values``, given in the order of
        the rows the centres were built from (see :func:`log_beta_table`)."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.S.shape[0],):
            raise ValueError(f"Expected {self.S.shape[0]} normalisers, got an array of shape {values.shape}.")
        self._log_b[b] = values if self.order is None else values[self.order]

    @property
    def one_dimensional(self):
        return self.T is not None and self.S.shape[1] == 2

    def cell_statistics(self, bandwidths):
        """The grid route's statistics of these centres (:mod:`calibdash.estimators.kde_grid`),
        on the cells of the smallest of ``bandwidths``, kept once computed."""
        base = kde_grid.cell_width(min(bandwidths))
        if base not in self._cells:
            self._cells[base] = kde_grid.CellStatistics(kde_grid.log_odds(self.S), np.asarray(self.T, dtype=np.float64),
                                                        base)
        return self._cells[base]

    def weighted_targets(self, W):
        """(sum_j w_j t_j, sum_j w_j) for every row of the weights ``W`` (rows x centres)."""
        if self.T is not None:
            return W @ self.T, W.sum(axis=1)
        sums = np.add.reduceat(W, self.starts, axis=1)
        num = np.zeros((W.shape[0], self.n_targets))
        num[:, self.present] = sums
        return num, sums.sum(axis=1)  # the class sums add up to the normaliser

    def sparse_weighted_targets(self, rows, cols, w, n_rows):
        """:meth:`weighted_targets` of the weights that are ``w`` at (``rows``, ``cols``) and
        0 elsewhere, for ``n_rows`` rows."""
        if self.T is not None:
            num = np.stack([np.bincount(rows, weights=w * self.T[cols, t], minlength=n_rows)
                            for t in range(self.T.shape[1])], axis=1)
            return num, np.bincount(rows, weights=w, minlength=n_rows)
        # the position of each centre's label among the present ones (centres are sorted)
        codes = np.searchsorted(self.starts, cols, side="right") - 1
        k = len(self.present)
        sums = np.bincount(rows * k + codes, weights=w, minlength=n_rows * k).reshape(n_rows, k)
        num = np.zeros((n_rows, self.n_targets))
        num[:, self.present] = sums
        return num, sums.sum(axis=1)


def _kernel_sums(S, b, lb, centres, W, kept):
    """Kernel-weighted target sums of one block: (sum_j w_j t_j, sum_j w_j, top) with the
    weights w = exp(S / b - lb - top), top the row maxima of S / b - lb, (rows, 1).

    ``W`` (float) and ``kept`` (bool) are contiguous work buffers of S's shape. Weights
    below e^-60 of their row's largest are floored or dropped: exp below about -708 gives
    subnormal numbers, and arithmetic on those is ~100x slower. Either way a row's sums
    move by at most n e^-60 of the largest weight (n centres), far below float64 rounding
    of the sums, which hold that weight. When few weights are above the floor (small
    bandwidths), only those are exponentiated and summed; the others are taken as 0.
    """
    np.multiply(S, 1.0 / b, out=W)
    W -= lb
    top = W.max(axis=1, keepdims=True)
    np.greater(W, top + _LOG_WEIGHT_FLOOR, out=kept)
    n_kept = np.count_nonzero(kept)
    if n_kept <= _SPARSE_FRACTION * W.size:
        idx = np.flatnonzero(kept)
        rows, cols = np.divmod(idx, W.shape[1])
        w = np.exp(W.ravel()[idx] - top[rows, 0])
        num, den = centres.sparse_weighted_targets(rows, cols, w, W.shape[0])
        return num, den, top
    W -= top
    if n_kept < W.size:
        at_least(W, _LOG_WEIGHT_FLOOR, out=W)
    np.exp(W, out=W)
    num, den = centres.weighted_targets(W)
    return num, den, top


def _buffers(rows, cols):
    """Contiguous (float, bool) work buffers of up to rows x cols entries."""
    return np.empty(rows * cols), np.empty(rows * cols, dtype=bool)


def _view(buf, shape):
    """The first entries of a flat buffer as a contiguous array of ``shape``."""
    return buf[: shape[0] * shape[1]].reshape(shape)


def _block_rows(k, n):
    """Query rows per product block and per (cache-sized) weight pass, for ``n`` centres
    of dimension ``k``."""
    entries = _BLOCK_ENTRIES_1D if k <= 2 else _BLOCK_ENTRIES if k <= 200 else _BLOCK_ENTRIES_WIDE
    block = max(1, entries // max(n, 1))
    return block, max(1, min(block, _PASS_ENTRIES // max(n, 1)))


def kernel_regression(S_query, centres, bandwidths):
    """Dirichlet-kernel regression of the training targets at the query points, for each
    bandwidth.

    Parameters
    ----------
    S_query : ndarray (m, k)
        Query points on the simplex.
    centres : KernelCentres
        Training points on the simplex (the kernels' centres) and their targets.
    bandwidths : sequence of float

    Returns
    -------
    list of ndarray (m, t), one per bandwidth.

    Notes
    -----
    For the Beta kernel (the one-dimensional notions) with at least
    ``kde_grid.GRID_MIN_PAIRS`` query x training pairs, the regression is computed from per-cell
    statistics in linear time instead (:mod:`calibdash.estimators.kde_grid`), within
    ``kde_grid.ERROR_BOUND`` of this exact one.
    """
    S_train = centres.S
    m, n = S_query.shape[0], S_train.shape[0]
    if centres.one_dimensional and kde_grid.use_grid(m, n):
        return kde_grid.grid_kernel_regression(S_query, centres.cell_statistics(bandwidths), bandwidths)
    logB = [centres.log_beta(b) for b in bandwidths]
    out = [np.empty((m, centres.n_targets)) for _ in bandwidths]
    block, sub = _block_rows(S_train.shape[1], n)
    # The weight passes per bandwidth are memory-bound: run them on sub-blocks that stay
    # in the core's cache, while the product S is formed on the larger block it needs.
    W_buf, kept_buf = _buffers(min(sub, m), n)
    for s in range(0, m, block):
        S_block = log_clipped(S_query[s : s + block]) @ S_train.T
        for a in range(0, S_block.shape[0], sub):
            S = S_block[a : a + sub]
            W, kept = _view(W_buf, S.shape), _view(kept_buf, S.shape)
            rows = slice(s + a, s + a + S.shape[0])
            for g, b, lb in zip(out, bandwidths, logB):
                num, den, _ = _kernel_sums(S, b, lb, centres, W, kept)
                g[rows] = num / den[:, None]
    return out


def _plug_in_cross_products(U, Z, Gs):
    """Yields (U^T V, V^T V, the rows' ||v_i||^2) of the plug-in residuals V = Z - G for each
    regression G in ``Gs`` in turn (one bandwidth's d x d products at a time: 16 MB each at
    1,000 classes), the same numbers to rounding (1e-15 relative) by the cheaper of two routes.
    Each G is overwritten by its V.

    A canonical regression at a small bandwidth is sparse: a row's weights above the floor
    (e^-60 of its largest) fall on the centres of one or a few labels, and its other classes
    are exactly 0 (1.0 to 3.4 nonzero classes of 1,000 a row for bandwidths up to 0.002 on a
    1,000-class simulation). For such a G the products come from U^T V = U^T Z - U^T G and
    V^T V = Z^T Z - Z^T G - (Z^T G)^T + G^T G, with U^T Z and Z^T Z formed once for all of them
    and the terms in G costing O(nnz d) instead of the O(n d^2) of the dense products.
    """
    sparse = [np.count_nonzero(G) <= _SPARSE_RISK_DENSITY * G.size for G in Gs]
    shared = None
    if sum(sparse) >= 2:  # the shared products cost what one dense bandwidth does
        shared = U.T @ Z, Z.T @ Z
    for G, is_sparse in zip(Gs, sparse):
        Gt = csr_matrix(G).T.tocsr() if shared is not None and is_sparse else None
        V = np.subtract(Z, G, out=G)  # the residuals take the regression's memory
        vv = np.einsum("ij,ij->i", V, V)
        if Gt is None:
            yield U.T @ V, V.T @ V, vv
            continue
        GtZ = Gt @ Z
        yield shared[0] - (Gt @ U).T, shared[1] - GtZ - GtZ.T + (Gt @ Gt.T).toarray(), vv


def _grid_by_parts(n_query, part_sizes):
    """Whether :func:`kernel_regression_by_parts` of ``n_query`` rows on parts of
    ``part_sizes`` rows takes the grid route, counting the training rows as the largest of
    the fold models has them (every part but the smallest): one decision for all models."""
    sizes = list(part_sizes)
    return kde_grid.use_grid(n_query, sum(sizes) - min(sizes))


def kernel_regression_by_parts(S_query, parts, bandwidth, models):
    """Kernel regressions at the query points whose training sets are unions of ``parts``,
    with the kernel products of the query points and each part formed once.

    Model ``i`` regresses on the centres of ``parts[f]`` for every f in ``models[i]``;
    with the k folds of a cross-validation as parts and ``models[i]`` every fold but the
    i-th, these are the k fold models, and the products cost as much as one model's on
    5/4 of its centres instead of k models'. Each part's weights are normalised by its own
    row maximum and rescaled by exp(max_part - max_model) when the parts are combined, which
    is the fold model's weighting up to the floor of weights below e^-60 of the largest
    (a relative change of g below n e^-60, far under float64 rounding).

    Parameters
    ----------
    S_query : ndarray (m, k)
    parts : list of KernelCentres
    bandwidth : float
    models : list of sequences of int

    Returns
    -------
    list of ndarray (m, t), one per model.
    """
    m = S_query.shape[0]
    sizes = [c.S.shape[0] for c in parts]
    if parts[0].one_dimensional and _grid_by_parts(m, sizes):
        # the cell statistics of a union of parts are the sums of the parts'
        stats = [c.cell_statistics([bandwidth]) for c in parts]
        query = kde_grid.GridQuery(S_query, stats[0].base)  # the same rows for every model
        return [kde_grid.grid_kernel_regression(S_query, kde_grid.CellStatistics.merged([stats[f] for f in members]),
                                                [bandwidth], query)[0] for members in models]
    edges = np.concatenate([[0], np.cumsum(sizes)])
    S_all = np.concatenate([c.S for c in parts])
    logB = [c.log_beta(bandwidth) for c in parts]
    n_targets = parts[0].n_targets
    out = [np.empty((m, n_targets)) for _ in models]
    block, _ = _block_rows(S_all.shape[1], S_all.shape[0])
    # the weight passes run per part: sub-blocks sized to a part, and products of at
    # least one sub-block (a single row of a 1-D kernel would leave numpy's per-call
    # overhead to dominate)
    sub = max(1, _PASS_ENTRIES // max(sizes))
    block = max(sub, block // sub * sub)
    W_buf, kept_buf = _buffers(min(sub, m), max(sizes))
    for s in range(0, m, block):
        S_block = log_clipped(S_query[s : s + block]) @ S_all.T
        for a in range(0, S_block.shape[0], sub):
            rows = slice(s + a, s + min(a + sub, S_block.shape[0]))
            tops, nums, dens = [], [], []
            for f, c in enumerate(parts):
                S = S_block[a : a + sub, edges[f] : edges[f + 1]]
                num, den, top = _kernel_sums(S, bandwidth, logB[f], c, _view(W_buf, S.shape), _view(kept_buf, S.shape))
                tops.append(top)
                nums.append(num)
                dens.append(den[:, None])
            for g, members in zip(out, models):
                top = np.max([tops[f] for f in members], axis=0)
                num, den = 0.0, 0.0
                for f in members:
                    scale = np.exp(tops[f] - top)
                    num = num + scale * nums[f]
                    den = den + scale * dens[f]
                g[rows] = num / den
    return out


class KDEEstimator(CalibrationEstimator):
    """Dirichlet / Beta kernel density ratio estimator of the squared calibration error.

    Parameters
    ----------
    notion : {"top-label", "canonical", "classwise"}
        Canonical uses the Dirichlet kernel on the whole vector; top-label and classwise
        use the Beta kernel on one probability.
    bandwidth : float, default=0.1
        Kernel bandwidth b > 0; smaller is sharper.

    Notes
    -----
    The Beta kernel's regressions of large inputs (at least ``kde_grid.GRID_MIN_PAIRS`` query x
    training pairs) are computed in linear time from per-cell statistics, within
    ``kde_grid.ERROR_BOUND`` of the exact ones (:mod:`calibdash.estimators.kde_grid`).
    """

    family = "kde"
    path_param = "bandwidth"

    def __init__(self, notion="canonical", bandwidth=0.1):
        self.notion = notion
        self.bandwidth = bandwidth

    def _validate_params(self):
        super()._validate_params()
        check_positive("bandwidth", self.bandwidth)
        if self.bandwidth < 1e-12:
            raise ConfigError(f"bandwidth {self.bandwidth!r} is below 1e-12, where the kernel overflows.")

    def _fit(self, P, y):
        # The training set itself is the model: centres and targets per problem.
        if self.notion == "canonical":
            # No residual or one-hot matrix: at 32,000 x 1,000 each would be 256 MB.
            self.train_ = [KernelCentres.from_labels(P, y, P.shape[1])]
        else:
            self.train_ = [KernelCentres.from_targets(p.S, T) for p, _, T in self._training_problems(P, y)]

    def _fit_path(self, estimators, P, y, cache):
        estimators[0]._fit(P, y)
        shared = cache.get(NORMALISERS_KEY) if self.notion == "canonical" else None
        if shared is not None:
            # log_beta_table of these training rows, computed once for all folds
            for b, values in zip(*shared):
                estimators[0].train_[0].set_log_beta(float(b), values)
        for e in estimators[1:]:
            e.train_ = estimators[0].train_

    @classmethod
    def fold_diagonals(cls, P_query, P, y, parts, notion, bandwidth, log_beta=None, *, blocks=None):
        """h(z, z) at the query rows of the k fold models of a cross-validation, whose
        model i is fitted on the rows of every part but ``parts[i]``.

        The same as fitting each fold model and calling :meth:`h_diag`, but the kernel
        products are formed once for all models (:func:`kernel_regression_by_parts`).

        Parameters
        ----------
        P_query : ndarray (m, d)
        P, y : training probabilities and labels
        parts : list of index arrays into P, the folds' validation parts
        notion : str
        bandwidth : float
        log_beta : ndarray (n,), optional
            ``log_beta_table(P, [bandwidth])[0]`` for the canonical notion, when known.
        blocks : sequence of int, optional
            Sizes of consecutive blocks of the query rows (summing to m), each regressed on
            its own as if it were the only query, on parts fitted once for all of them; None:
            one block. Under the grid route a row's value can move in its last digit with
            the rows regressed beside it, so a caller that splits its queries into chunks
            gets the same numbers by passing the chunks' sizes here.

        Returns
        -------
        ndarray (k, m)
        """
        pieces = []
        for idx in parts:
            e = cls(notion=notion, bandwidth=bandwidth)
            e.fit(take_rows(P, idx), take_rows(y, idx))
            if log_beta is not None and notion == "canonical":
                e.train_[0].set_log_beta(float(bandwidth), log_beta[idx])
            pieces.append(e)
        first = pieces[0]
        P_query = first._check_fitted(P_query)
        sizes = [P_query.shape[0]] if blocks is None else [int(b) for b in blocks]
        if sum(sizes) != P_query.shape[0] or min(sizes, default=0) < 0:
            raise ValueError(f"blocks {sizes} do not split the {P_query.shape[0]} query rows.")
        models = [[f for f in range(len(parts)) if f != i] for i in range(len(parts))]
        diags = np.zeros((len(parts), P_query.shape[0]))
        for a, b in zip(np.cumsum([0] + sizes[:-1]), np.cumsum(sizes)):
            for j, problem in enumerate(problems(P_query[a:b], notion)):
                gs = kernel_regression_by_parts(problem.S, [e.train_[j] for e in pieces], float(bandwidth), models)
                for i, g in enumerate(gs):
                    V = problem.Z - g
                    diags[i, a:b] += np.einsum("ij,ij->i", V, V)
        return diags

    @staticmethod
    def fold_diagonals_linear(n_query, part_sizes, notion):
        """Whether :meth:`fold_diagonals` of ``n_query`` rows on the fold models of parts of
        ``part_sizes`` rows takes the grid route (the one-dimensional notions,
        :func:`kde_grid.use_grid`), whose cost is linear in the rows: fitting the parts (about
        a second for 8,000,000 rows) then costs more than regressing 2,000,000 query rows, so a
        caller splitting the queries into chunks should give them to one call (``blocks``),
        not one call each."""
        return notion != "canonical" and _grid_by_parts(n_query, part_sizes)

    def _bilinear_form(self, P):
        return self._path_forms([self], P)[0]

    @classmethod
    def _path_risks(cls, estimators, P, U):
        """Risks of the whole bandwidth path in bounded memory.

        The forms of all bandwidths at once would be (bandwidths x n x d) numbers, 2.6 GB
        for 20 bandwidths of 8,000 x 1,000 held-out rows. The feature route's cross-products
        U^T V, V^T V and the diagonal terms are sums over rows, so they are accumulated over
        blocks of held-out rows instead; the normalisers log B of the centres are computed
        once for all blocks (:meth:`KernelCentres.log_beta`).
        """
        from calibdash.core.risk import feature_route_cost, gram_route_cost, path_risks

        n, d = U.shape
        rows = max(1, _STREAM_ENTRIES // max(len(estimators) * d, 1))
        if n <= rows or gram_route_cost(n, d, d, False) < feature_route_cost(n, d, d, False):
            return path_risks(U, cls._path_forms(estimators, P))
        bandwidths = [float(e.bandwidth) for e in estimators]
        train = estimators[0].train_
        UtU = U.T @ U
        const = float(np.sum(UtU * UtU))
        UtV = [np.zeros((d, d)) for _ in bandwidths]
        VtV = [np.zeros((d, d)) for _ in bandwidths]
        diag = np.zeros(len(bandwidths))
        for s in range(0, n, rows):
            Ub = U[s : s + rows]
            uu = np.einsum("ij,ij->i", Ub, Ub)
            block = problems(P[s : s + rows], estimators[0].notion)
            per_problem = [kernel_regression(problem.S, centres, bandwidths) for problem, centres in zip(block, train)]
            Zb = block[0].Z if len(block) == 1 else np.hstack([problem.Z for problem in block])
            Gs = [per_problem[0][i] if len(block) == 1 else np.hstack([gs[i] for gs in per_problem])
                  for i in range(len(bandwidths))]
            for i, (a, b, vv) in enumerate(_plug_in_cross_products(Ub, Zb, Gs)):
                UtV[i] += a
                VtV[i] += b
                diag[i] += float(np.sum((uu - vv) ** 2))
        return np.array([(const - 2.0 * float(np.sum(a * a)) + float(np.sum(b * b)) - t) / (n * (n - 1))
                         for a, b, t in zip(UtV, VtV, diag)])

    @classmethod
    def _path_forms(cls, estimators, P):
        bandwidths = [float(e.bandwidth) for e in estimators]
        per_problem = []
        for problem, centres in zip(problems(P, estimators[0].notion), estimators[0].train_):
            gs = kernel_regression(problem.S, centres, bandwidths)
            per_problem.append([np.subtract(problem.Z, g, out=g) for g in gs])
        if len(per_problem) == 1:  # top-label: the one problem's residuals, not a copy of them
            return [(v, None) for v in per_problem[0]]
        return [(np.hstack([vs[i] for vs in per_problem]), None) for i in range(len(estimators))]
