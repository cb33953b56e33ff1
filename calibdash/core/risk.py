"""The mean-squared-error risk of a calibration estimation function (Eq. 20).

    R(h) = 1/(n(n-1)) * sum_{i != j} ( <u_i, u_j> - h(z_i, z_j) )^2

Every estimator here is bilinear, h(z, z') = f(z)^T G f(z') (plug-ins have G = I), so the
double sum never needs an n x n matrix (docs/design.md, section 2):

    sum_{i != j} (a_ij - h_ij)^2 = ||U^T U||^2 - 2 tr(U^T F G F^T U) + tr(G F^T F G F^T F)
                                   - sum_i (||u_i||^2 - f_i^T G f_i)^2

That costs O(n (d + r)^2 + r^3); when n is the smaller dimension the Gram route
O(n^2 (d + r)), done in row blocks so memory stays bounded, is cheaper. Both are exact.
"""

from __future__ import annotations

import numpy as np

from calibdash.core.notions import residuals, validate
from calibdash.errors import ConfigError, InputError

# Row-block size of the Gram route: blocks of this many matrix entries (32 MB in float64).
_BLOCK_ENTRIES = 4_000_000
# Column blocks of quadratic_forms' triangular product, from this many features on (below it
# one product F G costs little): 4 blocks do 5/8 of F G's multiplications in products wide
# enough for BLAS's full speed; 8 do 9/16 in narrower ones, no faster at 1,600 x 564.
_FORM_BLOCKS = 4
_BLOCKED_MIN_FEATURES = 128
# Entries of F per row chunk of quadratic_forms (2 MB): a chunk's products stay in the cache.
_FORM_CHUNK_ENTRIES = 262_144


def feature_route_cost(n, d, r, has_G):
    cost = n * (d + r) ** 2
    if has_G:
        cost += 2 * r**3 + n * r**2
    return cost


def gram_route_cost(n, d, r, has_G):
    cost = n * n * (d + r)
    if has_G:
        cost += n * r**2
    return cost


def pair_loss_sum(U, F, G=None, route="auto"):
    """Exact ``sum_{i != j} (<u_i, u_j> - f_i^T G f_j)^2``.

    Parameters
    ----------
    U : ndarray of shape (n, d)
        Residuals.
    F : ndarray of shape (n, r)
        Features f(z_i) of the estimator.
    G : ndarray of shape (r, r) or None
        Symmetric middle matrix; None means the identity (a plug-in estimator).
    route : {"auto", "features", "gram"}
        "auto" picks the cheaper exact route by operation count.

    Returns
    -------
    float
    """
    U = np.asarray(U, dtype=np.float64)
    F = np.asarray(F, dtype=np.float64)
    n, d = U.shape
    r = F.shape[1]
    if route == "auto":
        cheaper_gram = gram_route_cost(n, d, r, G is not None) < feature_route_cost(n, d, r, G is not None)
        route = "gram" if cheaper_gram else "features"
    if route == "features":
        return _feature_route(U, F, G)
    if route == "gram":
        return _gram_route(U, F, G)
    raise ConfigError(f"Unknown route {route!r}; choose 'auto', 'features' or 'gram'.")


def _feature_route(U, F, G):
    if G is None:
        UtU = U.T @ U
        uu = np.einsum("ij,ij->i", U, U)
        return _plug_in_feature_loss(U, float(np.sum(UtU * UtU)), uu, F)
    return SharedFeatureLoss(U, F).pair_loss(G)


def _gram_route(U, F, G):
    n = U.shape[0]
    FG = F if G is None else F @ G
    diag = np.einsum("ij,ij->i", U, U) - np.einsum("ij,ij->i", FG, F)
    block = max(1, _BLOCK_ENTRIES // max(n, 1))
    total = 0.0
    for s in range(0, n, block):
        A = U[s : s + block] @ U.T
        A -= FG[s : s + block] @ F.T
        total += float(np.sum(A * A))
    return total - float(np.sum(diag * diag))


def quadratic_forms(F, G):
    """f_i^T G f_i for every row f_i of F, G symmetric.

    With T the upper triangle of G and its diagonal halved, G = T + T^T and f^T G f = 2 f^T T f,
    taken in ``_FORM_BLOCKS`` column blocks of F: block i multiplies F_i by T's block row
    i from its diagonal block on, (k + 1) / 2k of the multiplications of F G (5/8 at k = 4;
    1,600 x 564 features: 13 ms against 18). NumPy's matrix product, not BLAS's triangular one
    (trmm, 12 ms): SciPy's BLAS wrappers hold the GIL for the whole call, and the pipeline's
    tasks run in threads, so a trmm stopped the other task and took twice as long with two
    (docs/design.md, section 2). Rows go in chunks of ``_FORM_CHUNK_ENTRIES`` entries, so that
    each chunk's product stays in the cache for its row sums: at 1,600,000 x 200 (a fold of ten
    million one-dimensional rows) the products whole took 2.5 s against trmm's 1.9, in chunks
    1.9. A column-major F (the large factors of the one-dimensional kernel ridges) is read
    through its transpose, row-major. The same numbers to rounding."""
    n, r = F.shape
    edges = [0, r] if r < _BLOCKED_MIN_FEATURES else np.linspace(0, r, _FORM_BLOCKS + 1).astype(int)
    blocks = []
    for a, b in zip(edges[:-1], edges[1:]):
        W = G[a:b, a:].copy()  # block row of T: the diagonal block's upper triangle, halved on its diagonal
        W[:, : b - a] = np.triu(W[:, : b - a])
        W[np.arange(b - a), np.arange(b - a)] *= 0.5
        blocks.append((a, b, W))
    transposed = F.flags.f_contiguous and not F.flags.c_contiguous
    Ft = F.T
    out = np.empty(n)
    step = max(1, _FORM_CHUNK_ENTRIES // max(r, 1))
    for s in range(0, n, step):
        e = min(s + step, n)
        total = np.zeros(e - s)
        for a, b, W in blocks:
            if transposed:
                total += np.einsum("ij,ij->j", W.T @ Ft[a:b, s:e], Ft[a:, s:e])
            else:
                total += np.einsum("ij,ij->i", F[s:e, a:b] @ W, F[s:e, a:])
        out[s:e] = 2.0 * total
    return out


class SharedFeatureLoss:
    """Pair losses of several middle matrices G with one feature matrix F (a Kronecker
    path over ``lam``): the cross-products F^T F, F^T U (F^T U U^T F for the cross term) and
    the residual terms are computed once, so each G costs O(r^3 + n r^2) instead of
    O(n (d + r)^2 + r^3)."""

    def __init__(self, U, F):
        self.F = F
        self.uu = np.einsum("ij,ij->i", U, U)
        UtU = U.T @ U
        self.const = float(np.sum(UtU * UtU))
        FtU = F.T @ U
        self.FtUUtF = FtU @ FtU.T  # tr(U^T F G F^T U) = sum(G * F^T U U^T F), O(r^2) per G
        self.FtF = F.T @ F
        self.n = U.shape[0]

    def pair_loss(self, G):
        """sum_{i != j} (<u_i, u_j> - f_i^T G f_j)^2, G symmetric."""
        GC = G @ self.FtF
        ff = quadratic_forms(self.F, G)
        full = self.const - 2.0 * np.sum(G * self.FtUUtF) + np.sum(GC * GC.T)
        return float(full - np.sum((self.uu - ff) ** 2))

    def __call__(self, G):
        """The risk, Eq. (20)."""
        return self.pair_loss(G) / (self.n * (self.n - 1))


def _plug_in_feature_loss(U, UtU_sq, uu, V):
    """The plug-in pair loss by the feature route, with the residual terms given."""
    UtV = U.T @ V
    VtV = V.T @ V
    vv = np.einsum("ij,ij->i", V, V)
    full = UtU_sq - 2.0 * np.sum(UtV * UtV) + np.sum(VtV * VtV)
    return float(full - np.sum((uu - vv) ** 2))


def path_risks(U, forms):
    """Eq. (20) for each (F, G) of a path, sharing the work the forms have in common:
    the residual terms always, and the feature cross-products of forms that share F."""
    n, d = U.shape
    if n < 2:
        raise InputError("The risk needs at least 2 held-out rows (it averages over pairs).")
    shared = {}
    residual_terms = None
    out = []
    for F, G in forms:
        r = F.shape[1]
        reuse = G is not None and sum(f is F for f, _ in forms) > 1
        if reuse and gram_route_cost(n, d, r, True) >= r**3 + n * r**2:
            if id(F) not in shared:
                shared[id(F)] = SharedFeatureLoss(U, F)
            out.append(shared[id(F)](G))
        elif G is None and feature_route_cost(n, d, r, False) <= gram_route_cost(n, d, r, False):
            if residual_terms is None:
                UtU = U.T @ U
                residual_terms = (float(np.sum(UtU * UtU)), np.einsum("ij,ij->i", U, U))
            out.append(_plug_in_feature_loss(U, *residual_terms, F) / (n * (n - 1)))
        else:
            out.append(risk_from_features(U, F, G))
    return np.array(out)


def risk_from_features(U, F, G=None, route="auto"):
    """Eq. (20) from residuals and features: the pair loss divided by n(n - 1)."""
    n = U.shape[0]
    if n < 2:
        raise InputError("The risk needs at least 2 held-out rows (it averages over pairs).")
    return pair_loss_sum(U, F, G, route=route) / (n * (n - 1))


def risk(estimator, P, y, *, route="auto"):
    """Mean-squared-error risk (Eq. 20) of a fitted estimator on held-out data.

    Parameters
    ----------
    estimator : CalibrationEstimator
        A fitted estimator from :func:`calibdash.make_estimator`.
    P : array-like of shape (n, d)
        Held-out probabilities (not used to fit the estimator).
    y : array-like of shape (n,)
        Held-out labels.
    route : {"auto", "features", "gram"}
        Exact computation route; "auto" picks the cheaper one.

    Returns
    -------
    float
        The U-statistic over ordered pairs i != j. The paper reports sqrt(R) x 100.
    """
    P, y = validate(P, y)
    U = residuals(P, y, estimator.notion)
    F, G = estimator.bilinear_form(P)
    return risk_from_features(U, F, G, route=route)


def zero_risk(P, y, notion):
    """Eq. (20) of the trivial estimator h = 0 ("the model is perfectly calibrated"): the
    mean over pairs i != j of <u_i, u_j>^2, by the cheaper exact route.

    An estimator whose risk is not clearly below this one's has not shown that the data
    hold any miscalibration at all.
    """
    P, y = validate(P, y)
    U = residuals(P, y, notion)
    return risk_from_features(U, np.zeros((U.shape[0], 0)))
