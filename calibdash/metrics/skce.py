"""Squared kernel calibration error (SKCE) and calibration tests.

Widmann, Lindsten & Zachariah, "Calibration tests in multi-class classification: a
unifying framework" (NeurIPS 2019); docs/design.md, section 5. With the matrix-valued kernel
k(p, p') I_d the SKCE is estimated from the pair terms

    h_ij = k(p_i, p_j) <e_{y_i} - p_i, e_{y_j} - p_j>
         = k(p_i, p_j) (1[y_i = y_j] - p_i[y_j] - p_j[y_i] + <p_i, p_j>),

whose second form needs no one-hot matrix. The squared error is zero exactly when the
model is calibrated (for a characteristic kernel such as the two offered here), so the
estimators double as test statistics for H0 "the model is calibrated".

Memory: the quadratic estimators work in row blocks of at most ``MAX_BLOCK_ELEMENTS``
matrix entries, so n x n is never held for large n. The resampling tests do hold one n x n
matrix, and refuse above ``MAX_RESAMPLING_N`` rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist, pdist

from calibdash.core.notions import validate
from calibdash.core.simplex import one_hot, sample_labels
from calibdash.core.tails import norm_sf
from calibdash.deprecation import renamed_attribute
from calibdash.errors import ConfigError, InputError
from calibdash.limits import RESAMPLES
from calibdash.metrics.ece import bootstrap_counts

__all__ = ["skce", "calibration_test", "SKCEEstimate", "CalibrationTest", "median_bandwidth"]

ESTIMATORS = ("biased", "unbiased", "linear", "block")
KERNELS = ("laplacian", "gaussian")
METHODS = ("bootstrap", "consistency", "asymptotic")

# Entries of one row block of the kernel matrix (16 MB in float64; a block needs a few such
# temporaries). Module-level so tests can force the blocked path on small inputs.
MAX_BLOCK_ELEMENTS = 2_000_000
# Largest n for which the bootstrap and the quadratic consistency test build the n x n
# matrix (800 MB at the limit).
MAX_RESAMPLING_N = 10_000
# The median heuristic is exact up to this many rows (2 million pairs) and uses a seeded
# random subsample of MEDIAN_PAIRS distinct pairs above it.
EXACT_MEDIAN_MAX_N = 2_000
MEDIAN_PAIRS = 100_000


@dataclass(frozen=True)
class SKCEEstimate:
    """An estimate of the squared kernel calibration error.

    Attributes
    ----------
    estimate : float
        The estimate (the unbiased estimators can be negative). Named like
        ``HoldoutError.estimate``; the retired ``value`` still reads it for one release,
        with a :class:`DeprecationWarning`.
    se : float
        Its standard error (see :func:`skce`); NaN where it cannot be estimated.
    estimator : str
        "biased", "unbiased", "linear" or "block".
    kernel : str
        "laplacian" or "gaussian".
    bandwidth : float
        The bandwidth used (resolved from "median" when that was asked for).
    n : int
        Number of predictions.
    block_size : int or None
        Block size of the linear (2) and block estimators; None for the quadratic ones.
    """

    estimate: float
    se: float
    estimator: str
    kernel: str
    bandwidth: float
    n: int
    block_size: int | None = None

    value = renamed_attribute("estimate", "value")


@dataclass(frozen=True)
class CalibrationTest:
    """Result of a test of H0 "the model is calibrated".

    Attributes
    ----------
    statistic : float
        What the p-value is computed from: the SKCE estimate for the resampling methods,
        the z value (estimate / se) for the asymptotic normal test.
    p_value : float
        One-sided p-value (large estimates speak against calibration).
    method : str
        "bootstrap", "consistency" or "asymptotic".
    estimator, kernel : str
    bandwidth : float
    n : int
    n_resamples : int or None
        None for the asymptotic test, which does not resample.
    estimate : SKCEEstimate
        The estimate the test is built on.
    """

    statistic: float
    p_value: float
    method: str
    estimator: str
    kernel: str
    bandwidth: float
    n: int
    n_resamples: int | None
    estimate: SKCEEstimate

    def rejects(self, alpha=0.05):
        """True when H0 is rejected at level ``alpha`` (p <= alpha)."""
        return bool(self.p_value <= _check_alpha(alpha))

    def text(self, alpha=0.05):
        """One plain-English sentence for a report.

        Parameters
        ----------
        alpha : float, default=0.05
            Significance level, in (0, 1).

        Returns
        -------
        str
        """
        verdict = "are not" if self.rejects(alpha) else "are"
        # three significant digits, so a p-value just below alpha never prints as alpha
        p = "p < 0.001" if self.p_value < 0.001 else f"p = {self.p_value:.3g}"
        how = {
            "bootstrap": f"bootstrap test, {self.n_resamples} resamples",
            "consistency": f"consistency resampling test, {self.n_resamples} resamples",
            "asymptotic": "asymptotic normal test",
        }[self.method]
        return (
            f"At level {alpha:g} the data {verdict} consistent with a calibrated model "
            f"({p}; {self.estimator} SKCE, {how}, n = {self.n})."
        )


# -- input checks -------------------------------------------------------------------------
def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating, np.integer)) or not 0 < alpha < 1:
        raise ConfigError(f"alpha must be a number strictly between 0 and 1 (e.g. 0.05), got {alpha!r}.")
    return float(alpha)


def _check_choice(value, choices, what):
    if value not in choices:
        raise ConfigError(f"Unknown {what} {value!r}; choose one of {', '.join(map(repr, choices))}.")
    return value


def _check_inputs(P, y, estimator, kernel):
    _check_choice(estimator, ESTIMATORS, "estimator")
    _check_choice(kernel, KERNELS, "kernel")
    P, y = validate(P, y)
    if P.shape[0] < 2:
        raise InputError(f"The SKCE needs at least 2 predictions, got {P.shape[0]}.")
    return P, y


def _check_block_size(estimator, block_size, n):
    if estimator == "block":
        if block_size is None:
            return max(2, math.isqrt(n))
        if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 2:
            raise ConfigError(f"block_size must be an integer >= 2, got {block_size!r}.")
        if block_size > n:
            raise ConfigError(f"block_size {block_size} exceeds the {n} predictions; choose at most {n}.")
        return int(block_size)
    if estimator == "linear":
        if block_size not in (None, 2):
            raise ConfigError(
                f"The linear estimator uses pairs (block_size 2), got block_size={block_size!r}; "
                "use estimator='block' for larger blocks."
            )
        return 2
    if block_size is not None:
        raise ConfigError(
            f"block_size applies only to estimator='block' (and 'linear', which is 2); "
            f"leave it None for the {estimator!r} estimator."
        )
    return None


def _resolve_bandwidth(P, bandwidth, rng):
    if isinstance(bandwidth, str):
        if bandwidth != "median":
            raise ConfigError(f"bandwidth must be 'median' or a positive number, got {bandwidth!r}.")
        nu = median_bandwidth(P, random_state=rng)
        if not nu > 0:
            raise InputError(
                "The median heuristic gives bandwidth 0: most pairs of predictions are identical. "
                "Pass bandwidth=<positive number> instead."
            )
        return nu
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float, np.integer, np.floating)):
        raise ConfigError(f"bandwidth must be 'median' or a positive number, got {bandwidth!r}.")
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise ConfigError(f"bandwidth must be a positive finite number (or 'median'), got {bandwidth!r}.")
    return float(bandwidth)


def median_bandwidth(P, random_state=0):
    """The median heuristic: the median of the pairwise distances ||p_i - p_j||, i < j.

    Exact (over all n(n-1)/2 pairs) up to ``EXACT_MEDIAN_MAX_N`` = 2,000 rows; above that
    the median of ``MEDIAN_PAIRS`` = 100,000 distinct pairs drawn uniformly at random with
    ``random_state`` (its relative error is well below 1 %).

    Parameters
    ----------
    P : array-like of shape (n, d)
        Probability vectors.
    random_state : int, numpy Generator or None, default=0
        Seed of the pair subsample (unused when exact).

    Returns
    -------
    float
    """
    P = np.asarray(P, dtype=np.float64)
    n = P.shape[0]
    if n < 2:
        raise InputError("The median heuristic needs at least 2 predictions.")
    if n <= EXACT_MEDIAN_MAX_N:
        return float(np.median(pdist(P)))
    rng = np.random.default_rng(random_state)
    i = rng.integers(0, n, size=MEDIAN_PAIRS)
    j = rng.integers(0, n - 1, size=MEDIAN_PAIRS)
    j += j >= i  # uniform over the n - 1 rows other than i
    dist = np.empty(MEDIAN_PAIRS)
    step = max(1, MAX_BLOCK_ELEMENTS // P.shape[1])
    for s in range(0, MEDIAN_PAIRS, step):
        diff = P[i[s : s + step]] - P[j[s : s + step]]
        dist[s : s + step] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    return float(np.median(dist))


# -- kernel matrix pieces ---------------------------------------------------------------
def _kernel(dist, kernel, bandwidth):
    if kernel == "laplacian":
        return np.exp(-dist / bandwidth)
    return np.exp(-(dist * dist) / (2.0 * bandwidth * bandwidth))


def _row_blocks(n):
    """Slices of at most MAX_BLOCK_ELEMENTS // n rows (one row at least) covering 0..n."""
    step = max(1, min(n, MAX_BLOCK_ELEMENTS // n))
    return [slice(s, min(n, s + step)) for s in range(0, n, step)]


def _h_rows(P, y, rows, kernel, bandwidth, PT):
    """Rows ``rows`` of the matrix h_ij (shape (len(rows), n)); ``PT`` is P.T in C order,
    which makes the gather p_j[y_i] a copy of whole rows."""
    Pr, yr = P[rows], y[rows]
    K = _kernel(cdist(Pr, P), kernel, bandwidth)
    G = Pr @ PT
    G -= np.take(Pr, y, axis=1)  # p_i[y_j]
    G -= PT[yr]  # p_j[y_i]
    G += yr[:, None] == y[None, :]
    K *= G
    return K


def _quadratic_row_stats(P, y, kernel, bandwidth):
    """Row sums of h and its diagonal, computed block by block.

    Only the row sums are needed, and sum_j k_ij <r_i, r_j> = <r_i, (K R)_i> with the
    residuals R = onehot(y) - P: one product per block, no cheaper than the distances
    themselves, replaces the elementwise terms of h.
    """
    n = P.shape[0]
    R = one_hot(y, P.shape[1]) - P
    rowsum = np.empty(n)
    for rows in _row_blocks(n):
        K = _kernel(cdist(P[rows], P), kernel, bandwidth)
        rowsum[rows] = np.einsum("ij,ij->i", K @ R, R[rows])
    # k(p, p) = 1, so h_ii = ||e_yi - p_i||^2
    diag = 1.0 - 2.0 * P[np.arange(n), y] + np.einsum("ij,ij->i", P, P)
    return rowsum, diag


def _quadratic_estimate(rowsum, diag, estimator):
    n = rowsum.shape[0]
    total = rowsum.sum()
    # First-order (Hoeffding) standard error of the U-statistic: Var(U) ~ 4 zeta_1 / n,
    # zeta_1 estimated by the sample variance of the leave-one-out row means.
    loo = (rowsum - diag) / (n - 1)
    se = 2.0 * np.sqrt(np.var(loo, ddof=1) / n) if n > 2 else np.nan
    if estimator == "biased":
        return total / n**2, se
    return (total - diag.sum()) / (n * (n - 1)), se


def _block_values(P, y, block_size, kernel, bandwidth):
    """The unbiased estimate within each of the n // block_size disjoint consecutive blocks
    (rows past the last full block are dropped)."""
    B = block_size
    nb = P.shape[0] // B
    d = P.shape[1]
    out = np.empty(nb)
    # exact differences (not ||a||^2 + ||b||^2 - 2ab): duplicate predictions, common in
    # saturated networks, must get distance 0, not the square root of a rounding error
    group = max(1, MAX_BLOCK_ELEMENTS // (B * B * d))
    for s in range(0, nb, group):
        e = min(nb, s + group)
        Pb = P[s * B : e * B].reshape(e - s, B, d)
        yb = y[s * B : e * B].reshape(e - s, B)
        diff = Pb[:, :, None, :] - Pb[:, None, :, :]
        K = _kernel(np.sqrt(np.einsum("gijk,gijk->gij", diff, diff)), kernel, bandwidth)
        del diff
        A = np.take_along_axis(Pb, np.broadcast_to(yb[:, None, :], (e - s, B, B)), axis=2)  # p_i[y_j]
        G = Pb @ Pb.transpose(0, 2, 1) - A - A.transpose(0, 2, 1) + (yb[:, :, None] == yb[:, None, :])
        H = K * G
        off = H.sum(axis=(1, 2)) - np.trace(H, axis1=1, axis2=2)
        out[s:e] = off / (B * (B - 1))
    return out


def _block_estimate(values):
    m = values.shape[0]
    se = np.std(values, ddof=1) / np.sqrt(m) if m > 1 else np.nan
    return float(np.mean(values)), float(se)


def _estimate(P, y, estimator, kernel, bandwidth, block_size):
    n = P.shape[0]
    if estimator in ("biased", "unbiased"):
        value, se = _quadratic_estimate(*_quadratic_row_stats(P, y, kernel, bandwidth), estimator)
    else:
        value, se = _block_estimate(_block_values(P, y, block_size, kernel, bandwidth))
    return SKCEEstimate(float(value), float(se), estimator, kernel, float(bandwidth), n, block_size)


def skce(P, y, *, estimator="unbiased", kernel="laplacian", bandwidth="median", block_size=None, random_state=0):
    """Estimate the squared kernel calibration error (Widmann et al., 2019).

    Parameters
    ----------
    P : array-like of shape (n, d)
        Predicted probabilities (rows on the simplex; convert logits with ``cd.softmax``).
    y : array-like of shape (n,)
        Labels in 0..d-1.
    estimator : {"unbiased", "biased", "linear", "block"}, default="unbiased"
        "biased": the mean of h_ij over all n^2 pairs, i = j included (O(n^2), positive bias
        of order 1/n). "unbiased": the U-statistic, the mean over pairs i < j (O(n^2)).
        "linear": the mean of h over the pairs (1, 2), (3, 4), ... (O(n)). "block": the mean
        of the unbiased estimator over disjoint consecutive blocks of ``block_size`` rows
        (O(n B)); block size 2 is the linear estimator. Rows past the last full block
        (or pair) are not used.
    kernel : {"laplacian", "gaussian"}, default="laplacian"
        k(p, p') = exp(-||p - p'|| / nu) or exp(-||p - p'||^2 / (2 nu^2)), Euclidean norm.
    bandwidth : "median" or float, default="median"
        nu; "median" takes the median pairwise distance of the predictions
        (:func:`median_bandwidth`: exact up to 2,000 rows, else 100,000 random pairs).
    block_size : int or None, default=None
        Only for "block": rows per block, default floor(sqrt(n)) (at least 2), which makes
        both the block size and the number of blocks grow like sqrt(n), at O(n^1.5) cost.
    random_state : int, numpy Generator or None, default=0
        Seed of the median heuristic's pair subsample (n > 2,000 only).

    Returns
    -------
    SKCEEstimate
        ``se`` is, for "linear" and "block", the standard deviation of the block terms over
        sqrt(number of blocks) (NaN with a single block). For "unbiased" it is the
        U-statistic's first-order (Hoeffding) standard error 2 sqrt(zeta_1 / n), zeta_1 the
        sample variance of the leave-one-out row means of h; for "biased" the same number,
        which describes the spread but not the O(1/n) bias. Under calibration the U-statistic
        is degenerate (zeta_1 = 0) and this se is not a reliable scale: use
        :func:`calibration_test` to test.

    Notes
    -----
    The quadratic estimators work in row blocks of at most ``MAX_BLOCK_ELEMENTS`` kernel
    entries, so memory stays bounded whatever n; their time is O(n^2 d).
    """
    P, y = _check_inputs(P, y, estimator, kernel)
    block_size = _check_block_size(estimator, block_size, P.shape[0])
    rng = np.random.default_rng(random_state)
    nu = _resolve_bandwidth(P, bandwidth, rng)
    return _estimate(P, y, estimator, kernel, nu, block_size)


# -- tests --------------------------------------------------------------------------------
_DEFAULT_METHOD = {"unbiased": "bootstrap", "biased": "consistency", "linear": "asymptotic", "block": "asymptotic"}
_ALLOWED_METHODS = {
    "unbiased": ("bootstrap", "consistency"),
    "biased": ("consistency",),
    "linear": ("asymptotic", "consistency"),
    "block": ("asymptotic", "consistency"),
}


def _refuse_large(n, what):
    if n > MAX_RESAMPLING_N:
        raise ConfigError(
            f"The {what} needs an n x n matrix and n = {n} exceeds {MAX_RESAMPLING_N:,} rows. "
            "Use estimator='block' (or 'linear') with its asymptotic test, which needs O(n) memory, "
            "or test a random subsample of the rows."
        )


def _centred_matrix(P, y, kernel, bandwidth):
    """The doubly centred matrix h_ij - hbar_i - hbar_j + hbarbar, with the row sums and
    diagonal of h (for the estimate), filled block by block."""
    n = P.shape[0]
    H = np.empty((n, n))
    PT = np.ascontiguousarray(P.T)
    for rows in _row_blocks(n):
        H[rows] = _h_rows(P, y, rows, kernel, bandwidth, PT)
    rowsum = H.sum(axis=1)
    diag = H.diagonal().copy()
    mean = rowsum / n
    H -= mean[:, None]
    H -= mean[None, :]
    H += mean.mean()
    return H, rowsum, diag


def _bootstrap_statistics(Hc, counts):
    """Bootstrapped U-statistics of the centred kernel: for each count vector c,
    (c^T Hc c - sum_a c_a Hc_aa) / (n (n - 1)), the mean over ordered pairs of distinct
    positions of the resample."""
    n = Hc.shape[0]
    quad = np.einsum("bi,bi->b", counts @ Hc, counts)
    return (quad - counts @ np.diagonal(Hc)) / (n * (n - 1))


def _bootstrap_pvalue(P, y, kernel, bandwidth, n_resamples, rng):
    n = P.shape[0]
    Hc, rowsum, diag = _centred_matrix(P, y, kernel, bandwidth)
    est = SKCEEstimate(*_float_pair(_quadratic_estimate(rowsum, diag, "unbiased")), "unbiased", kernel, bandwidth, n)
    # As CalibrationTests.jl's AsymptoticSKCETest: under H0 the U-statistic is degenerate
    # and its limit is approximated by bootstrapping the kernel doubly centred at the
    # empirical distribution (Arcones & Gine 1992); the observed value is compared on
    # CalibrationTests.jl's scale n/(n-1) * estimate.
    threshold = n / (n - 1) * est.estimate
    exceed = 0
    chunk = max(1, MAX_BLOCK_ELEMENTS // n)
    for s in range(0, n_resamples, chunk):
        counts = bootstrap_counts(n, min(chunk, n_resamples - s), rng)
        exceed += int(np.count_nonzero(_bootstrap_statistics(Hc, counts) >= threshold))
    return est, est.estimate, exceed


def _float_pair(pair):
    return float(pair[0]), float(pair[1])


def _consistency_draws(rng, P, n_draws):
    """Resampled row indices (n_draws, n) and labels drawn from the resampled predictions:
    consistency resampling, data that are calibrated by construction."""
    n = P.shape[0]
    idx = rng.integers(0, n, size=(n_draws, n))
    labels = sample_labels(rng, P[idx.ravel()]).reshape(n_draws, n)
    return idx, labels


def _consistency_quadratic(P, K, idx, labels, estimator):
    """The quadratic estimates of resamples (idx, labels), from the fixed kernel matrix K.

    sum_{i,j} K[I_i, I_j] <r_i, r_j> = sum_c R[:, c]^T K R[:, c] with R[a] the summed
    residuals of the copies of row a, so one product K @ R per resample does it all.
    """
    n_draws, n = idx.shape
    d = P.shape[1]
    flat = (np.arange(n_draws)[:, None] * n + idx) * d + labels
    N = np.bincount(flat.ravel(), minlength=n_draws * n * d).reshape(n_draws, n, d).astype(np.float64)
    counts = N.sum(axis=2)
    R = N - counts[:, :, None] * P[None]
    R = R.transpose(1, 0, 2).reshape(n, n_draws * d)
    quad = np.einsum("ab,ab->b", K @ R, R).reshape(n_draws, d).sum(axis=1)
    if estimator == "biased":
        return quad / n**2
    Pi = P[idx]
    diag = 1.0 - 2.0 * np.take_along_axis(Pi, labels[:, :, None], axis=2)[:, :, 0] + np.einsum("bij,bij->bi", Pi, Pi)
    return (quad - diag.sum(axis=1)) / (n * (n - 1))


def _consistency_pvalue(P, y, estimator, kernel, bandwidth, block_size, n_resamples, rng):
    n, d = P.shape
    est = _estimate(P, y, estimator, kernel, bandwidth, block_size)
    exceed = 0
    if estimator in ("biased", "unbiased"):
        K = np.empty((n, n))
        for rows in _row_blocks(n):
            K[rows] = _kernel(cdist(P[rows], P), kernel, bandwidth)
        chunk = max(1, MAX_BLOCK_ELEMENTS // (n * d))
        for s in range(0, n_resamples, chunk):
            idx, labels = _consistency_draws(rng, P, min(chunk, n_resamples - s))
            exceed += int(np.count_nonzero(_consistency_quadratic(P, K, idx, labels, estimator) >= est.estimate))
    else:
        used = (n // block_size) * block_size
        chunk = max(1, MAX_BLOCK_ELEMENTS // (n * d))
        for s in range(0, n_resamples, chunk):
            m = min(chunk, n_resamples - s)
            idx, labels = _consistency_draws(rng, P, m)
            # each resample's rows past its last full block are dropped, so blocks never
            # straddle two resamples
            vals = _block_values(
                P[idx[:, :used].ravel()], labels[:, :used].ravel(), block_size, kernel, bandwidth
            ).reshape(m, used // block_size)
            exceed += int(np.count_nonzero(vals.mean(axis=1) >= est.estimate))
    return est, est.estimate, exceed


def calibration_test(
    P,
    y,
    *,
    estimator="unbiased",
    method=None,
    kernel="laplacian",
    bandwidth="median",
    n_resamples=1000,
    block_size=None,
    random_state=0,
):
    """Test H0 "the model is calibrated" with an SKCE estimator.

    Parameters
    ----------
    P : array-like of shape (n, d)
        Predicted probabilities.
    y : array-like of shape (n,)
        Labels in 0..d-1.
    estimator : {"unbiased", "biased", "linear", "block"}, default="unbiased"
        See :func:`skce`.
    method : {None, "bootstrap", "consistency", "asymptotic"}, default=None
        None picks the estimator's default: "bootstrap" for "unbiased", "consistency" for
        "biased", "asymptotic" for "linear" and "block".

        * "bootstrap" (unbiased only): as CalibrationTests.jl's ``AsymptoticSKCETest``.
          Under H0 the U-statistic is degenerate; its null distribution is approximated by
          bootstrapping the doubly centred matrix of h (Arcones & Gine), as
          ``n_resamples`` multinomial count vectors times that matrix. O(n^2) memory:
          refused above ``MAX_RESAMPLING_N`` = 10,000 rows.
        * "consistency" (any estimator): resample the rows and draw each label from its own
          prediction, which makes the resample calibrated, then recompute the estimate with
          the same bandwidth. For the quadratic estimators O(n^2) memory and
          O(n_resamples n^2 d) time, refused above 10,000 rows.
        * "asymptotic" (linear, block): one-sided z test of estimate / se against the
          standard normal, O(n) memory.
    kernel, bandwidth, block_size
        See :func:`skce`. The bandwidth is fixed once from the data and kept for every
        resample.
    n_resamples : int, default=1000
        Resamples of the resampling methods (ignored by "asymptotic").
    random_state : int, numpy Generator or None, default=0
        Seeds the median heuristic's subsample and the resampling.

    Returns
    -------
    CalibrationTest
        The resampling p-value is (1 + #{resampled >= observed}) / (1 + n_resamples), which
        is never 0 and keeps the level exactly for exchangeable resamples.
    """
    P, y = _check_inputs(P, y, estimator, kernel)
    n = P.shape[0]
    if method is None:
        method = _DEFAULT_METHOD[estimator]
    _check_choice(method, METHODS, "method")
    if method not in _ALLOWED_METHODS[estimator]:
        raise ConfigError(
            f"method {method!r} does not apply to the {estimator!r} estimator; choose one of "
            f"{', '.join(map(repr, _ALLOWED_METHODS[estimator]))}"
            + (" (or estimator='unbiased' for the bootstrap)." if method == "bootstrap" else ".")
        )
    block_size = _check_block_size(estimator, block_size, n)
    if method != "asymptotic":
        if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
            raise ConfigError(f"n_resamples must be a positive integer (e.g. 1000), got {n_resamples!r}.")
        RESAMPLES.check(int(n_resamples), f"the {method} test")
        if estimator in ("biased", "unbiased"):
            _refuse_large(n, f"{method} test of the {estimator} estimator")
    rng = np.random.default_rng(random_state)
    nu = _resolve_bandwidth(P, bandwidth, rng)

    if method == "asymptotic":
        est = _estimate(P, y, estimator, kernel, nu, block_size)
        if not np.isfinite(est.se) or est.se <= 0:
            raise ConfigError(
                f"The asymptotic test needs at least 2 blocks with some spread; with n = {n} and "
                f"block_size = {block_size} there are {n // block_size}. Use a smaller block_size "
                "or method='consistency'."
            )
        z = est.estimate / est.se
        return CalibrationTest(float(z), float(norm_sf(z)), method, estimator, kernel, nu, n, None, est)
    if method == "bootstrap":
        est, stat, exceed = _bootstrap_pvalue(P, y, kernel, nu, int(n_resamples), rng)
    else:
        est, stat, exceed = _consistency_pvalue(P, y, estimator, kernel, nu, block_size, int(n_resamples), rng)
    p = (1 + exceed) / (1 + int(n_resamples))
    return CalibrationTest(float(stat), float(p), method, estimator, kernel, nu, n, int(n_resamples), est)
