"""Kernel ridge estimators: two-step (UKKR, Eq. 32) and Kronecker (KKKR, Eq. 28, 29).

Both rest on the eigendecomposition of the training kernel K = Q diag(l) Q^T and on
psi(z) = Q^T k(z), the query's kernel vector in that basis:

* UKKR  h(z, z') = <v(z), v(z')>,  v(z) = (Q^T U)^T diag(1 / (l + lam n)) psi(z)
  (kernel ridge regression of the residuals, a plug-in);
* KKKR  h(z, z') = psi(z)^T G psi(z'),  G = L o (Q^T U)(Q^T U)^T,  L_ab = 1 / (l_a l_b + lam n^2).

The basis does not depend on ``lam``, so one decomposition serves a whole grid.

Below ``LAM_FLOOR`` the exact path keeps only the eigenvalues above ``_EIG_RTOL`` l_max, as the
Nystroem path always does, and drops its null-space term: exact kernel ridge regression there
would depend on the rounding of the arithmetic rather than on the data (docs/design.md, "The
ridge's floor").

Above ``exact_max_n`` training rows the basis comes from a Nystroem approximation
K ~ F F^T with F = k(Z, landmarks) W: the estimators are then *exactly* the kernel ridge
estimators of the approximate kernel F F^T, whose eigenpairs come from the small matrix
F^T F in O(n m^2). The approximation's effect on risk and estimate is tested against the
exact path on real classifier outputs.
"""

from __future__ import annotations

import copy
import numbers
from dataclasses import dataclass, field

import numpy as np

from calibdash.core.elementwise import at_least
from calibdash.core.notions import problems
from calibdash.core.validation import check_positive
from calibdash.errors import ConfigError, check_is_fitted
from calibdash.estimators.base import CalibrationEstimator, block_diag_or_none

# Below this ridge lambda exact kernel ridge regression is not computable in float64: its risk
# carries the rounding of the kernel's eigenpairs, about eps * l_max, amplified by l_max / ridge
# (UKKR: ridge = lam n) or l_max^2 / ridge (KKKR: lam n^2), a relative error of up to
# eps * l_max^2 / (lam n^2) <= eps / lam (l_max <= n for a kernel bounded by 1). Measured between
# OpenBLAS's Haswell and SkylakeX kernels on the digits demo it is 1.1 eps / lam (docs/design.md,
# "The ridge's floor"). There the exact path truncates the kernel at its numerical rank
# (eigenvalues above _EIG_RTOL * l_max), as the Nystroem path always does: then a kept
# direction's rounding is at most eps / _EIG_RTOL relative, whatever lam is.
LAM_FLOOR = float(np.finfo(np.float64).eps / 1e-6)
# Eigenvalues below this fraction of the largest are numerical noise of a PSD kernel
# matrix; dividing by them would amplify rounding errors (the Nystroem path's basis, and the
# exact one below LAM_FLOOR).
_EIG_RTOL = 1e-10
# Entries of a kernel block between query rows and centres formed at once (32 MB in float64):
# the blocks are consumed right away (a product with a few columns, a row sum), and a whole
# one would take 0.5 GB per 64 centres at 1,000,000 rows.
_CHUNK_ENTRIES = 4_000_000
# Rows x columns of one chunk of the interpolated products' sums: 512 kB per buffer.
_HERMITE_CHUNK_ENTRIES = 65_536
# A pivoted factor up to this many entries (rows x (pivots + a block), 128 MB) is formed whole.
_WHOLE_FACTOR_ENTRIES = 16_000_000


def rbf_kernel(A, B, gamma, A_norms=None):
    """exp(-gamma ||a - b||^2) for all rows a of A and b of B (``A_norms``: the squared
    row norms of A, when the caller has them)."""
    if A_norms is None:
        A_norms = np.einsum("ij,ij->i", A, A)
    # ||a||^2 + ||b||^2 - 2 a.b, formed in place (two n x m arrays instead of six). For
    # one-dimensional inputs the product A B^T is an outer product, which BLAS computes
    # entry by entry as a_i b_j too: the same numbers, without its slow k = 1 path.
    # (both one-dimensional: rows of another width must fail in the product, not be read as
    # their first column)
    cross = np.multiply.outer(A[:, 0], B[:, 0]) if A.shape[1] == 1 == B.shape[1] else A @ B.T
    cross *= 2.0
    sq = np.add.outer(A_norms, np.einsum("ij,ij->i", B, B))
    sq -= cross
    at_least(sq, 0.0, out=sq)
    sq *= -gamma
    return np.exp(sq, out=sq)


# Query rows from which the features of one-dimensional inputs come from cubic Hermite
# interpolation between nodes (:func:`interpolated_products`) instead of one kernel entry
# per row and centre. Below, every number stays as it was to the last digit, so that older
# result files rerun identically (`calibdash rerun` compares exactly).
INTERPOLATED_MIN_ROWS = 100_000
# The interpolation's error bound as a fraction of eps (see interpolation_cells).
_INTERPOLATION_FRACTION = 1 / 16


def interpolation_cells(gamma):
    """The number of equal cells of [0, 1] for :func:`interpolated_products` at ``gamma``.

    The smallest power of two whose width h keeps cubic Hermite interpolation's error bound,
    h^4 / 384 times the largest fourth derivative, which for exp(-gamma (z - c)^2) is
    12 gamma^2, under eps / 16 (eps: the relative rounding of one product). A column's error is
    then under eps / 16 times sum_j abs(coef_j), below the rounding bound of the exact product.
    8,192 cells at gamma = 0.5.
    """
    h = (384 * _INTERPOLATION_FRACTION * np.finfo(np.float64).eps / (12 * gamma * gamma)) ** 0.25
    return 1 << max(0, int(np.ceil(np.log2(1.0 / h))))


def interpolated_products(z, centres, coef, gamma, cells=None, out=None):
    """k(z, centres) @ coef for one-dimensional z in [0, 1], from its values and slopes at the
    nodes j / cells by cubic Hermite interpolation: O(cells m + n r) instead of O(n m) kernel
    entries (exponentials) for n rows, m centres and r columns of ``coef``.

    Each column is a sum of Gaussians sum_j coef_j exp(-gamma (z - c_j)^2), whose slope is
    known in closed form; the error is at most h^4 / 384 * 12 gamma^2 * sum_j abs(coef_j) per
    column (h = 1 / cells), which :func:`interpolation_cells` keeps under eps / 16 times
    sum_j abs(coef_j): below what rounding already allows the exact product. ``out``: an
    (n, r) array to write into, a few thousand rows at a time.
    """
    cells = interpolation_cells(gamma) if cells is None else int(cells)
    nodes = np.linspace(0.0, 1.0, cells + 1)
    # Direct differences, not rbf_kernel's norm identity: the slopes need them, and the node
    # values then carry no cancellation error.
    diff = nodes[:, None] - centres[None, :]
    K = np.exp(-gamma * diff * diff)
    values = K @ coef
    slopes = ((-2.0 * gamma) * diff * K) @ coef / cells  # d/dt at the nodes, t = z * cells
    r = coef.shape[1]
    out = np.empty((len(z), r)) if out is None else out
    # The four terms in place, in two buffers of a chunk that stay in the core's cache: the
    # same operations in the same order as the expression
    # h00 v_i + h10 s_i + h01 v_i+1 - h11 s_i+1, so the same numbers to the last digit, at
    # half the time of forming it whole by chunks of _CHUNK_ENTRIES (its eight temporaries of
    # 8 MB each went through memory).
    step = max(1, _HERMITE_CHUNK_ENTRIES // max(r, 1))
    acc, term = np.empty((min(step, len(z)), r)), np.empty((min(step, len(z)), r))
    for s in range(0, len(z), step):
        e = min(s + step, len(z))
        t = z[s:e] * cells
        i = np.minimum(t.astype(np.int64), cells - 1)
        f = t - i
        g = 1.0 - f
        a, b = acc[: e - s], term[: e - s]
        np.take(values, i, axis=0, out=a)
        a *= ((1.0 + 2.0 * f) * g * g)[:, None]
        np.take(slopes, i, axis=0, out=b)
        b *= (f * g * g)[:, None]
        a += b
        i += 1
        np.take(values, i, axis=0, out=b)
        b *= ((3.0 - 2.0 * f) * f * f)[:, None]
        a += b
        np.take(slopes, i, axis=0, out=b)
        b *= (f * f * g)[:, None]
        a -= b
        out[s:e] = a
    return out


def interpolates(Z, gamma):
    """Whether the kernel products of the rows Z are interpolated (:func:`interpolated_products`):
    one-dimensional rows in [0, 1], at least :data:`INTERPOLATED_MIN_ROWS` of them and eight
    per node (a very narrow kernel needs many nodes, which would not pay)."""
    n = Z.shape[0]
    return (n >= INTERPOLATED_MIN_ROWS and Z.shape[1] == 1 and 8 * interpolation_cells(gamma) <= n
            and 0.0 <= Z.min() and Z.max() <= 1.0)


def row_chunks(n, width):
    """Row slices of an n x ``width`` computation holding at most _CHUNK_ENTRIES entries each,
    so that a kernel block between millions of rows and the centres is never formed whole."""
    rows = max(1, _CHUNK_ENTRIES // max(int(width), 1))
    return [slice(s, min(s + rows, n)) for s in range(0, n, rows)]


@dataclass(frozen=True)
class KernelBasis:
    """Eigenbasis of a training kernel, exact or low-rank.

    psi(z) = k(z, centres) @ projection are the coordinates of k(z) on the kept
    eigenvectors Q, with eigenvalues ``eigenvalues`` and ``QtU`` = Q^T U. For the exact
    path, ``U`` holds the training residuals so that the part of k(z) outside span(Q)
    (the kernel's numerical null space, where the eigenvalues are 0) is accounted for
    exactly: w(z) = U^T k(z) - QtU^T psi(z). The Nystroem kernel has no such part.
    """

    centres: np.ndarray
    projection: np.ndarray
    eigenvalues: np.ndarray
    QtU: np.ndarray
    gamma: float
    n_train: int
    U: np.ndarray | None = None

    @property
    def exact(self):
        return self.U is not None

    @property
    def rank(self):
        return self.eigenvalues.shape[0]

    def features(self, Z):
        """(psi, w): coordinates in the basis and the null-space term (None if low-rank).

        A low-rank basis's features of many one-dimensional rows (:func:`interpolates`) come
        from cubic Hermite interpolation of the kernel products
        (:func:`interpolated_products`, within the rounding of the exact products): one kernel
        entry per row and centre was most of the kernel ridges' time at millions of rows. Not
        the exact basis's: its null-space term is a difference of nearly equal products, which
        the rounding of either route dominates (and its training sets are small)."""
        if self.U is None:
            return kernel_products(Z, self.centres, self.projection, self.gamma), None
        n = Z.shape[0]
        psi = np.empty((n, self.projection.shape[1]))
        KU = np.empty((n, self.U.shape[1]))
        for rows in row_chunks(n, self.centres.shape[0]):
            K = rbf_kernel(Z[rows], self.centres, self.gamma)
            psi[rows] = K @ self.projection
            KU[rows] = K @ self.U
        return psi, KU - psi @ self.QtU

    def ridge_values(self, features, lam):
        """The two-step ridge's regression v = U^T (K + lam n I)^-1 k(z) of the rows whose
        :meth:`features` are ``features``, (rows, d)."""
        psi, w = features
        v = psi @ self._scaled_QtU(lam)  # scaling the r x d side, not psi
        return v if w is None else v + w / (lam * self.n_train)

    def _scaled_QtU(self, lam):
        """diag(1 / (l + lam n)) Q^T U, (r, d)."""
        return self.QtU / (self.eigenvalues + lam * self.n_train)[:, None]

    def ridge_map(self, lam):
        """The same regression as a :class:`RidgeMap` at one ``lam``: only for a basis without
        a null-space term (low-rank), whose regression is k(z, centres) times one matrix."""
        if self.exact:
            raise ValueError("An exact basis's regression has a null-space term; it has no RidgeMap.")
        return RidgeMap(self.centres, self.projection @ self._scaled_QtU(lam), self.gamma, float(lam))


@dataclass(frozen=True)
class RidgeMap:
    """The two-step ridge's fitted regression of one problem on a low-rank basis at one ``lam``:
    v(z) = k(z, centres) @ coef, with coef = projection diag(1 / (l + lam n)) Q^T U (r x d).

    It stands in for the :class:`KernelBasis` in a fitted estimator once the grid is ranked
    (:meth:`UKKREstimator.compact`): the basis keeps the r x r projection and the eigenpairs
    that the risk of every ``lam`` needs (3.3 MB per fold model with 640 pivots), the map r x d
    (0.5 MB at 100 classes). Its values equal the basis's route to rounding: the same products,
    associated the other way (tests/estimators/test_estimators.py)."""

    centres: np.ndarray
    coef: np.ndarray
    gamma: float
    lam: float
    exact = False

    def features(self, Z):
        """(the regression's values at the rows Z, None): a map's features are its values."""
        return kernel_products(Z, self.centres, self.coef, self.gamma), None

    def ridge_values(self, features, lam):
        """The values themselves (:meth:`KernelBasis.ridge_values`), at the map's own ``lam`` only."""
        self.ridge_map(lam)
        return features[0]

    def ridge_map(self, lam):
        """Itself, at its own ``lam`` only (:meth:`KernelBasis.ridge_map`)."""
        if lam != self.lam:
            raise ValueError(f"This map was fitted at lam={self.lam!r}, not {lam!r}.")
        return self


def kernel_products(Z, centres, M, gamma):
    """k(Z, centres) @ M, by row chunks, or interpolated for many one-dimensional rows
    (:func:`interpolated_products`)."""
    if centres.shape[1] == 1 and interpolates(Z, gamma):
        return interpolated_products(Z[:, 0], centres[:, 0], M, gamma)
    out = np.empty((Z.shape[0], M.shape[1]))
    for rows in row_chunks(Z.shape[0], centres.shape[0]):
        out[rows] = rbf_kernel(Z[rows], centres, gamma) @ M
    return out


def exact_basis(Z, U, gamma):
    """Eigendecomposition of K = k(Z, Z): O(n^3), for small training sets.

    Only the numerical rank is kept (numpy.linalg.matrix_rank's tolerance,
    l_max * n * eps): smaller eigenvalues are indistinguishable from rounding error and
    are treated as exactly 0 through the null-space term of :class:`KernelBasis`. A
    one-dimensional kernel of 2,000 points keeps about ten directions.
    """
    K = rbf_kernel(Z, Z, gamma)
    l, Q = np.linalg.eigh(K)
    keep = l > l.max() * Z.shape[0] * np.finfo(np.float64).eps
    l, Q = l[keep], Q[:, keep]
    return KernelBasis(Z, Q, l, Q.T @ U, gamma, Z.shape[0], U)


def truncated_bases(bases):
    """The kernel ridges' bases for ``lam`` below :data:`LAM_FLOOR`: an exact basis keeps the
    eigenvalues above ``_EIG_RTOL`` l_max and no null-space term (kernel ridge regression with
    the kernel's truncation Q_r diag(l_r) Q_r^T, computable at any lam). Nystroem bases are
    truncated so already: their list is returned as it is (the problems of one notion all take
    the same path)."""
    if not any(b.exact for b in bases):
        return bases
    out = []
    for b in bases:
        keep = b.eigenvalues > _EIG_RTOL * b.eigenvalues.max()
        out.append(KernelBasis(b.centres, b.projection[:, keep], b.eigenvalues[keep], b.QtU[keep], b.gamma, b.n_train))
    return out


@dataclass(frozen=True)
class DrawState:
    """The random generator and residual diagonal of a pivoted factor where it stopped, and
    whether its factor was formed whole (which fixes how its products round)."""

    rng: np.random.Generator
    resid: np.ndarray
    chosen: tuple
    whole: bool


@dataclass(frozen=True)
class PivotedFactor:
    """K ~ F F^T with F = k(Z, C) A, built block by block.

    ``bounds`` holds the (pivots, columns) counts after each block. The draws do not
    depend on how many pivots were asked for, so the first blocks of a longer factor are
    exactly the factor a shorter request computes: :meth:`leading` gives it without
    recomputation.
    """

    C: np.ndarray
    F: np.ndarray
    A: np.ndarray
    bounds: tuple
    exhausted: bool  # stopped by the tolerance before reaching the pivots asked for
    block: int  # draws per block
    # Where the drawing stopped, so that a longer request can go on from here (see
    # randomly_pivoted_cholesky's ``start``); None for a leading part.
    draws: DrawState | None = field(default=None, repr=False, compare=False)

    @property
    def n_pivots(self):
        return self.C.shape[0]

    def leading(self, n_components):
        """The factor of the first blocks holding at least ``n_components`` pivots (all of
        them when there are fewer): the Nystroem approximation on those pivots."""
        for p, c in self.bounds:
            if p >= n_components:
                return PivotedFactor(self.C[:p], self.F[:, :c], self.A[:p, :c],
                                     tuple(b for b in self.bounds if b[0] <= p), False, self.block)
        return self


_BLOCK = 64


def randomly_pivoted_cholesky(Z, gamma, n_components, random_state, rtol=1e-7, block=_BLOCK, start=None):
    """Low-rank factor of the RBF kernel, K ~ F F^T, by block randomly pivoted Cholesky
    (Chen, Epperly, Tropp & Webber 2022).

    Pivots are drawn in proportion to the diagonal of the residual kernel K - F F^T, i.e.
    where the current approximation is worst, so sparse regions of the simplex get
    centres and near-duplicate confident predictions do not crowd them out. Each block
    draws min(``block``, ``n_components``) times (duplicates dropped), whatever the
    pivots chosen so far, so that requests differ only in where they stop. Drawing stops when the residual trace
    falls below ``rtol * n`` (the approximation is then uniformly good:
    ``|K - K~|_ij <= max residual diagonal``) or once ``n_components`` pivots are reached, so
    the last block may take up to ``block - 1`` more. F F^T is the Nystroem
    approximation on the pivots C, and F = k(Z, C) A with the coefficients A tracked
    along, so that new points get consistent features k(z, C) A.

    ``start``, a factor of the same Z, ``gamma``, ``random_state`` and ``rtol`` with fewer
    pivots, is continued from where it stopped instead of drawn again: the result is the
    factor this call computes without it, to the last digit (tests/estimators). When the
    two would not round alike (another block size, or a factor formed whole against one
    formed in row chunks), it is ignored. Many one-dimensional rows (:func:`interpolates`)
    take each block's kernel columns k(Z, S) T from :func:`interpolated_products`, within the
    rounding of the per-row kernel (docs/design.md, section 3).

    Returns
    -------
    PivotedFactor
    """
    n = Z.shape[0]
    block = min(block, n_components)
    norms = np.einsum("ij,ij->i", Z, Z)
    # F grows by at most ``block`` columns per block up to n_components + block - 1:
    # filled in place, where appending would copy it once per block (2 s at 32,000 x 1,000).
    # A large factor is column-major and its kernel blocks are formed in row chunks: the
    # columns a smooth one-dimensional kernel never reaches (it stops after a few) are then
    # never touched and take no memory (row-major, writing one column touches every page:
    # 2.1 GB at 1,000,000 rows and 200 pivots), nor is G = k(Z, Z[S]) - F F[S]^T formed whole
    # (n x 64). A small one is computed as it always was, to the last digit, which the
    # Nystroem path amplifies to about 1e-9 relative: older result files rerun identically.
    whole = n * (n_components + block) <= _WHOLE_FACTOR_ENTRIES
    # Many one-dimensional rows: k(Z, S) T by interpolation (see interpolated_products).
    interpolate = not whole and interpolates(Z, gamma)
    F_buf = np.empty((n, n_components + block), order="C" if whole else "F")
    if start is not None and start.draws is not None and start.draws.whole == whole and start.block == block:
        rng, resid = copy.deepcopy(start.draws.rng), start.draws.resid.copy()
        chosen, bounds, A = list(start.draws.chosen), list(start.bounds), start.A
        F_buf[:, : start.F.shape[1]] = start.F
        F = F_buf[:, : start.F.shape[1]]
    else:
        rng = np.random.default_rng(random_state)
        resid = np.ones(n)  # k(z, z) = 1 for the RBF kernel
        F = F_buf[:, :0]
        A = np.empty((0, 0))
        chosen, bounds = [], []
    exhausted = False
    while len(chosen) < n_components:
        total = resid.sum()
        if total <= rtol * n:
            exhausted = True
            break
        S = np.unique(rng.choice(n, size=block, p=resid / total))
        FS = F[S]
        if whole:
            G = rbf_kernel(Z, Z[S], gamma, norms) - F @ FS.T
            GS = G[S]
        else:
            GS = rbf_kernel(Z[S], Z[S], gamma, norms[S]) - FS @ FS.T
        lh, Vh = np.linalg.eigh(GS)
        keep = lh > _EIG_RTOL * max(lh.max(), 1e-300)
        if not keep.any():
            exhausted = True
            break
        T = Vh[:, keep] / np.sqrt(lh[keep])
        # G = k(Z, C u S) [[-A F[S]^T], [I]], so the new columns G T have coefficients
        # [[-A F[S]^T T], [T]] on the enlarged set of centres.
        A = np.block([[A, -(A @ FS.T) @ T], [np.zeros((len(S), A.shape[1])), T]])
        cols = F.shape[1]
        if whole:
            Fb = G @ T
            F_buf[:, cols : cols + Fb.shape[1]] = Fb
        elif interpolate:
            # G T = k(Z, S) T - F (F[S]^T T): the kernel part from its values at the nodes
            # (first block: the only one a smooth one-dimensional kernel usually needs).
            Fb = interpolated_products(Z[:, 0], Z[S, 0], T, gamma, out=F_buf[:, cols : cols + T.shape[1]])
            if cols:
                W = FS.T @ T
                for rows in row_chunks(n, cols):
                    Fb[rows] -= F[rows] @ W
        else:
            Fb = F_buf[:, cols : cols + T.shape[1]]
            for rows in row_chunks(n, len(S)):
                Fb[rows] = (rbf_kernel(Z[rows], Z[S], gamma, norms[rows]) - F[rows] @ FS.T) @ T
        F = F_buf[:, : cols + T.shape[1]]
        resid = np.maximum(resid - np.einsum("ij,ij->i", Fb, Fb), 0.0)
        resid[S] = 0.0
        chosen.extend(S.tolist())
        bounds.append((len(chosen), F.shape[1]))
    return PivotedFactor(Z[np.array(chosen, dtype=np.int64)], F, A, tuple(bounds), exhausted, block,
                         DrawState(rng, resid, tuple(chosen), whole))


class FactorProducts:
    """F^T F and F^T U of a pivoted factor and of its leading parts, for training residuals U.

    They are formed block row by block row of the factor's pivot blocks (block j: F_j^T F and
    F_j^T U over the columns up to its own), so that a leading part's products are the first
    blocks' numbers, whichever request came first: the Kronecker ridge's 512 pivots are the
    first blocks of the two-step ridge's 640, whose products then cost only their last blocks
    (0.7 s a fold at 32,000 x 1,000). The numbers depend on the factor's values and memory
    layout alone, so a factor continued from a shorter one (the same layout, the same leading
    columns) extends them.
    """

    def __init__(self, U):
        self.U = U
        self.layout = None
        self.bounds = ()
        self.blocks = []  # (F_j^T F[:, :c_j], F_j^T U) per block

    def serves(self, factor):
        """Whether ``factor`` extends the factor these products were formed for."""
        n = len(self.bounds)
        return self.layout in (None, _layout(factor.F)) and tuple(factor.bounds[:n]) == self.bounds[:len(factor.bounds)]

    def of(self, factor):
        """(F^T F, F^T U) of ``factor``; the upper triangle of F^T F's diagonal blocks is what the
        products give (eigh reads the lower one)."""
        F, cols = factor.F, [c for _, c in factor.bounds]
        if self.layout is None:
            self.layout = _layout(F)
        starts = [0] + cols[:-1]
        for j in range(len(self.blocks), len(cols)):
            block = F[:, starts[j] : cols[j]]
            self.blocks.append((block.T @ F[:, : cols[j]], block.T @ self.U))
        self.bounds = max(self.bounds, tuple(factor.bounds), key=len)
        c = cols[-1] if cols else 0
        FtF, FtU = np.empty((c, c)), np.empty((c, self.U.shape[1]))
        for j, (a, b) in enumerate(zip(starts, cols)):
            lower, FjU = self.blocks[j]
            FtF[a:b, :b] = lower
            FtF[:a, a:b] = lower[:, :a].T
            FtU[a:b] = FjU
        return FtF, FtU


def _layout(F):
    return "F" if F.flags.f_contiguous else "C"


def nystroem_basis(factor, U, gamma, products=None):
    """Eigenbasis of the Nystroem kernel F F^T of a :class:`PivotedFactor`, O(n m^2), with the
    cross-products of ``products`` (a :class:`FactorProducts` of U serving this factor) or
    formed here."""
    C, F, A = factor.C, factor.F, factor.A
    FtF, FtU = (FactorProducts(U) if products is None else products).of(factor)
    s2, R = np.linalg.eigh(FtF)
    keep = s2 > _EIG_RTOL * s2.max()
    s2, R = s2[keep], R[:, keep]
    s = np.sqrt(s2)
    # Q = F R diag(1/s) are the eigenvectors of F F^T with eigenvalues s^2, and
    # psi(z) = Q^T k~(z) = diag(s) R^T A^T k(C, z).
    projection = A @ (R * s)
    QtU = (R.T @ FtU) / s[:, None]
    return KernelBasis(C, projection, s2, QtU, gamma, F.shape[0])


class _KernelRidgeEstimator(CalibrationEstimator):
    path_param = "lam"
    # Most Nystroem pivots for one-dimensional and for multidimensional inputs: 1-D
    # kernels are of very low numerical rank. 640 is the fewest (in blocks of 64) that keep
    # the estimate within 0.1 % of the exact ridge on CIFAR-100 just above exact_max_n
    # (tests/estimators/test_behaviour.py; 512 missed at lam = 1e-3 with 0.16 %); the
    # two-step estimator's forms and risk cost O(n r^2), 2.4 times less than at 1,000.
    _n_components = (200, 640)

    @classmethod
    def default_n_components(cls, dim):
        """Default number of Nystroem pivots for inputs of dimension ``dim``."""
        return cls._n_components[0] if dim == 1 else cls._n_components[1]

    def __init__(self, notion="canonical", lam=1e-3, gamma=0.5, exact_max_n=2000, n_components=None, random_state=0):
        self.notion = notion
        self.lam = lam
        self.gamma = gamma
        self.exact_max_n = exact_max_n
        self.n_components = n_components
        self.random_state = random_state

    def _validate_params(self):
        super()._validate_params()
        check_positive("lam", self.lam)
        check_positive("gamma", self.gamma)
        for name in ("exact_max_n",) + (("n_components",) if self.n_components is not None else ()):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ConfigError(f"{name} must be a positive integer, got {v!r}.")

    def _fit_bases(self, P, y, cache=None):
        bases = []
        for i, (problem, U, _) in enumerate(self._training_problems(P, y)):
            Z = problem.Z
            if Z.shape[0] <= self.exact_max_n:
                key = ("exact-basis", self.notion, self.gamma, i)
                if cache is None or key not in cache:
                    basis = exact_basis(Z, U, float(self.gamma))
                    if cache is not None:
                        cache[key] = basis
                bases.append(basis if cache is None else cache[key])
                continue
            m = int(self.n_components or self.default_n_components(Z.shape[1]))
            # One pivoted factor per training set and seed: a shorter request (the
            # Kronecker estimator's) takes the leading blocks of a longer one, which are
            # exactly what it would compute itself.
            key = ("pivoted-factor", self.notion, self.gamma, self.random_state, i)
            # A longer request goes on from the shorter factor's last draw.
            factor = None if cache is None else cache.get(key)
            if factor is None or factor.block != min(_BLOCK, m) or (factor.n_pivots < m and not factor.exhausted):
                factor = randomly_pivoted_cholesky(Z, float(self.gamma), m, self.random_state, start=factor)
                if cache is not None:
                    cache[key] = factor
            # ... and the leading blocks of its cross-products with the residuals
            pkey = ("factor-products",) + key[1:]
            products = None if cache is None else cache.get(pkey)
            if products is None or not products.serves(factor):
                products = FactorProducts(U)
                if cache is not None:
                    cache[pkey] = products
            bases.append(nystroem_basis(factor.leading(m), U, float(self.gamma), products))
        return bases

    def _fit(self, P, y):
        bases = self._fit_bases(P, y)
        self.bases_ = bases if self.lam >= LAM_FLOOR else truncated_bases(bases)

    def _fit_path(self, estimators, P, y, cache):
        # UKKR and KKKR with the same kernel share the exact eigenbasis, or the pivoted
        # factor of the Nystroem path; the values of lam below the floor share its truncation.
        key = ("kernel-bases", self.family, self.notion, self.gamma, self.exact_max_n, self.n_components, self.random_state)
        if key not in cache:
            cache[key] = self._fit_bases(P, y, cache)
        bases = cache[key]
        truncated = None
        for e in estimators:
            if e.lam >= LAM_FLOOR:
                e.bases_ = bases
                continue
            if truncated is None:
                truncated = truncated_bases(bases)
            e.bases_ = truncated

    @property
    def low_rank_(self):
        """True when the kernel was replaced by a low-rank one: the Nystroem path, or the exact
        eigenbasis truncated at its numerical rank (``lam`` below ``LAM_FLOOR``)."""
        return not self.bases_[0].exact

    def _bilinear_form(self, P):
        return self._path_forms([self], P)[0]

    @classmethod
    def _path_forms(cls, estimators, P):
        return _per_basis(estimators, lambda group: cls._basis_forms(group, P))

    @classmethod
    def _basis_forms(cls, estimators, P):
        bases = estimators[0].bases_
        feats = [b.features(p.Z) for b, p in zip(bases, problems(P, estimators[0].notion))]
        return cls._forms_from_features(estimators, feats)


def _per_basis(estimators, compute):
    """``compute(run)`` for each run of consecutive estimators sharing one basis (a grid's values
    above and below LAM_FLOOR on the exact path), concatenated in the estimators' order."""
    out, start = [], 0
    for i in range(1, len(estimators) + 1):
        if i == len(estimators) or estimators[i].bases_ is not estimators[start].bases_:
            out.extend(compute(estimators[start:i]))
            start = i
    return out


class UKKREstimator(_KernelRidgeEstimator):
    """Two-step kernel ridge estimator (UKKR, Eq. 32).

    Kernel ridge regression of the residuals u = z - t on z, v(z) = U^T (K + lam n I)^-1 k(z),
    and the plug-in h(z, z') = <v(z), v(z')>.

    Parameters
    ----------
    notion : {"top-label", "canonical", "classwise"}
    lam : float, default=1e-3
        Ridge parameter; enters as K + lam * n * I with n the number of training rows. Below
        :data:`LAM_FLOOR` (2.2e-10) the exact path truncates K at its numerical rank (see the
        module's docstring).
    gamma : float, default=0.5
        RBF kernel exp(-gamma ||z - z'||^2).
    exact_max_n : int, default=2000
        Training sets up to this size use the exact eigendecomposition; larger ones the
        Nystroem approximation.
    n_components : int or None
        Nystroem pivots (landmarks); None means 200 for one-dimensional inputs, 640
        otherwise. The last block of pivots may add up to 63 more.
    random_state : int, default=0
        Seed of the landmark choice.
    """

    family = "ukkr"

    @classmethod
    def _path_risks(cls, estimators, P, U):
        return np.array(_per_basis(estimators, lambda group: cls._basis_risks(group, P, U)))

    @classmethod
    def _basis_risks(cls, estimators, P, U):
        bases = estimators[0].bases_
        b = bases[0]
        if not isinstance(b, KernelBasis):  # compacted: a map's features are its values
            return super()._path_risks(estimators, P, U)
        n, d = U.shape
        r = b.rank
        # With many classes the risk is cheaper from r x r cross-products, computed once
        # for the whole grid, than from the n x d features V = psi D M of every value.
        structured = len(bases) == 1 and not b.exact and n * r * r + r**3 < n * r * d + 2 * n * d * d
        if not structured:
            return super()._path_risks(estimators, P, U)  # path_risks of _basis_forms (one basis here)
        psi, _ = b.features(problems(P, estimators[0].notion)[0].Z)
        E = U.T @ psi
        H, C, B = E.T @ E, psi.T @ psi, b.QtU @ b.QtU.T
        UtU = U.T @ U
        const, uu = float(np.sum(UtU * UtU)), np.einsum("ij,ij->i", U, U)
        out = []
        for e in estimators:
            dv = 1.0 / (b.eigenvalues + e.lam * b.n_train)
            DD = np.outer(dv, dv)
            DBD = B * DD
            cross = float(np.sum(H * DBD))  # ||U^T V||^2 = tr(D H D B)
            X = (C * DD) @ B
            gram = float(np.sum(X * X.T))  # ||V^T V||^2 = tr((D C D B)^2)
            vv = np.einsum("ij,ij->i", psi @ DBD, psi)  # ||v_i||^2
            out.append((const - 2.0 * cross + gram - float(np.sum((uu - vv) ** 2))) / (n * (n - 1)))
        return np.array(out)

    @classmethod
    def _forms_from_features(cls, estimators, feats):
        return [(np.hstack([b.ridge_values(f, e.lam) for b, f in zip(e.bases_, feats)]), None) for e in estimators]

    def compact(self):
        """Keep only what the fitted map needs (the fold models a result keeps, after their grid
        was ranked): each low-rank basis becomes its :class:`RidgeMap` at this ``lam``, r x d
        numbers instead of r x r and the eigenpairs; its values change only at rounding. An exact
        basis with its null-space term is kept as it is (its map is not one product).

        Returns
        -------
        self
        """
        check_is_fitted(self)
        if not any(b.exact for b in self.bases_):
            self.bases_ = [b.ridge_map(self.lam) for b in self.bases_]
        return self


class KKKREstimator(_KernelRidgeEstimator):
    """Kronecker kernel ridge estimator (KKKR, Eq. 28, 29).

    Kernel ridge regression of the pair targets <u_i, u_j> on pairs (z_i, z_j) with the
    Kronecker kernel k(z, z~) k(z', z~'). Its diagonal, and so its squared-error
    estimate, can be negative.

    Parameters
    ----------
    notion : {"top-label", "canonical", "classwise"}
    lam : float, default=1e-3
        Ridge parameter; enters as K (x) K + lam * n^2 * I with n the number of training rows.
        Below :data:`LAM_FLOOR` (2.2e-10) the exact path truncates K at its numerical rank.
    n_components : int or None
        Nystroem pivots; None means 200 for one-dimensional inputs and 512 otherwise: the
        leading blocks of the factor UKKR uses with the same seed (identical whether or
        not UKKR runs too). Its risk costs O(r^3 + n r^2) per ``lam``, eight times less
        at 512 than at 1,000 pivots, and on CIFAR-100 the estimate moves by under 0.1 %
        (against the exact ridge, tests/estimators/test_behaviour.py).
    gamma, exact_max_n, random_state
        As in :class:`UKKREstimator`.
    """

    family = "kkkr"
    plug_in = False
    _n_components = (200, 512)

    @classmethod
    def _forms_from_features(cls, estimators, feats):
        # One feature matrix for the whole grid (only G depends on lam), so the risk can
        # reuse its cross-products.
        F = np.hstack([psi if w is None else np.hstack([psi, w]) for psi, w in feats])
        bases = estimators[0].bases_
        MMt = [b.QtU @ b.QtU.T for b in bases]
        forms = []
        for e in estimators:
            Gs = []
            for b, A, (_psi, w) in zip(bases, MMt, feats):
                ridge = e.lam * b.n_train**2
                G = A / (np.outer(b.eigenvalues, b.eigenvalues) + ridge)
                if w is not None:
                    # Null-space rows and columns: there l_a l_b = 0, so L is 1 / ridge.
                    M, du = b.QtU, w.shape[1]
                    G = np.block([[G, M / ridge], [M.T / ridge, np.eye(du) / ridge]])
                Gs.append(G)
            forms.append((F, block_diag_or_none(Gs)))
        return forms
