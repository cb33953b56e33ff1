"""L1 expected calibration error (ECE) estimators of Posocco & Bonnefoy (2021).

N. Posocco and A. Bonnefoy, "Estimating expected calibration errors", ICANN 2021
(docs/design.md, section 5). The quantity is the L1 error, not squared:

    ECE = E | c - E[target | c] |

for the *top-label* notion (c = max_k p_k, target = "the predicted class is right") and,
for the *classwise* notion, the mean over the d classes of the same error of p_k against
1[y = k] (the mean, as in the authors' code, so that the figure stays on the scale of one
class's error; multiply by d for the sum).

Estimators
----------
Binned (:func:`ece`): the bins are equal width on [0, 1] or equal mass (quantiles), with
exactly the bin rule of :mod:`calibdash.estimators.binning` (bin m holds
edges[m] <= z < edges[m+1], z = 1 in the last bin; tied quantiles merged). With sample
weights a_ib (1 for the sample's bin, or the convex allocation below) ::

    ECE = (1/n) sum_b | sum_i a_ib (z_i - t_i) | = sum_b w_b | mean conf_b - mean acc_b |,

with w_b = sum_i a_ib / n and the a-weighted means. ``n_bins="sqrt"`` is round(sqrt(n)).

Convex allocation ("linear binning"): bin b is represented by its centre
m_b = (edges[b] + edges[b+1]) / 2; a sample between two neighbouring centres m_b <= z <= m_b+1
gives weight (m_b+1 - z) / (m_b+1 - m_b) to bin b and the rest to bin b+1, so its weights are
linear in the distance and sum to 1. A sample below the first centre or above the last one
(the half bins at the two ends of [0, 1]) gives all its weight to the first or last bin, as in
the authors' code. (Their published code assigns the two weights the other way round, the
larger weight to the farther centre; that contradicts the paper's description and makes the
allocation jump at every centre, so the description is implemented.)

KDE (:func:`ece_kde`), following the authors' code: a triweight kernel
K(u) = 35/32 (1 - u^2)^3 on ``|u| <= 1``, scaled so that the bandwidth h is its standard
deviation (support radius 3h, KDEpy's convention); h by Silverman's rule as KDEpy computes it,
h = min(std, IQR / 1.349) (3n/4)^(-1/5) on the confidences; the boundary handled by
reflection, with the data mirrored about both ends of the support [a, b]
(copies z, 2a - z, 2b - z and 2b - 2a + z). The support is [1/d, 1] for the top-label
confidence (it cannot be below 1/d) and [0, 1] for a class probability. The same kernel and
bandwidth give the density of z and of z among the positives, so their Bayes inversion is the
Nadaraya-Watson regression

    g(x) = sum_j K_r(x, z_j) t_j / sum_j K_r(x, z_j)          (K_r the reflected kernel)

and the ECE is the integral of ``|x - g(x)|`` against the estimated density of z, on a uniform
grid of cell midpoints over [a, b]:

    ECE = sum_g | N(x_g) - x_g D(x_g) | / sum_g D(x_g),  N = sum_j K_r t_j,  D = sum_j K_r.

The grid has max(1024, ceil(4 (b - a) / h)) cells, at most 2**16, so a kernel spans at least
24 cells unless h is below (b - a) / 2**14. Only the (cell, sample) pairs inside the kernel's
support are formed, so the cost is O(n h / cell + cells), never n x n.

Bootstrap standard errors (:func:`ece_bootstrap`) resample the rows; the binned estimators
recompute everything per resample (equal-mass edges included); the KDE keeps the full
sample's bandwidth and support (the resamples then differ only in the weights of the kernel
sums, which is what lets one sparse product serve every resample).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp

from calibdash.core import notions
from calibdash.core.rows import stable_order
from calibdash.deprecation import RETIRED_VALUES, RenamedKeys, renamed_parameters, retired_module_attribute
from calibdash.errors import ConfigError
from calibdash.estimators import binning
from calibdash.limits import RESAMPLES

__all__ = [
    "ECE_NOTIONS",
    "STRATEGIES",
    "ECE_ESTIMATORS",
    "ece",
    "ece_kde",
    "ece_by_name",
    "ece_bootstrap",
    "resolve_n_bins",
    "silverman_bandwidth",
    "kde_support",
    "kde_grid",
    "kde_pairs",
    "kde_sums",
    "kde_regression_sums",
    "kde_problem_ece",
    "bootstrap_counts",
    "bootstrap_count_blocks",
    "top_label_l1_truth",
]

ECE_NOTIONS = ("top-label", "classwise")
STRATEGIES = ("uniform", "quantile")


def __getattr__(name):
    # BINNINGS, the retired name of STRATEGIES, in its old words, for one release (binning= takes them).
    return retired_module_attribute(__name__, name, {"BINNINGS": (("width", "mass"), "STRATEGIES ('uniform', 'quantile')")})


# Largest number of grid cells of the KDE integral (memory of the bootstrap blocks).
MAX_GRID = 2**16
MIN_GRID = 1024
# Bootstrap work arrays hold at most about this many entries (resamples x rows x 2).
BOOT_BLOCK = 2**22

# RenamedKeys: spec['binning'] still reads (in its old words) for one release.
ECE_ESTIMATORS = {
    "ece-15-bins": RenamedKeys({"kind": "bins", "strategy": "uniform", "n_bins": 15, "convex": False, "label": "15-bin ECE (L1)"}),
    "ece-width-sqrt": RenamedKeys({"kind": "bins", "strategy": "uniform", "n_bins": "sqrt", "convex": False,
                       "label": "equal-width ECE, sqrt(n) bins (L1)"}),
    "ece-mass-sqrt": RenamedKeys({"kind": "bins", "strategy": "quantile", "n_bins": "sqrt", "convex": False,
                      "label": "equal-mass ECE, sqrt(n) bins (L1)"}),
    "ece-convex": RenamedKeys({"kind": "bins", "strategy": "uniform", "n_bins": "sqrt", "convex": True,
                   "label": "convex equal-width ECE, sqrt(n) bins (L1)"}),
    "ece-mass-convex": RenamedKeys({"kind": "bins", "strategy": "quantile", "n_bins": "sqrt", "convex": True,
                        "label": "convex equal-mass ECE, sqrt(n) bins (L1)"}),
    "ece-kde": RenamedKeys({"kind": "kde", "bandwidth": "silverman", "label": "KDE ECE, triweight, Silverman bandwidth (L1)"}),
}
"""Stable names of the Posocco-Bonnefoy estimators: their settings and a label for tables."""


# -- input checks -----------------------------------------------------------------------
def _check_notion(notion):
    return notions.check_notion(notion, supported=ECE_NOTIONS, family="ECE")


def _check_strategy(strategy):
    if strategy not in STRATEGIES:
        raise ConfigError(f"strategy must be 'uniform' (equal-width bins) or 'quantile' (equal-mass bins), "
                          f"got {strategy!r}.")
    return strategy


def resolve_n_bins(n_bins, n):
    """The number of bins for ``n`` samples: ``n_bins`` itself, or round(sqrt(n)) for "sqrt"."""
    if isinstance(n_bins, str):
        if n_bins != "sqrt":
            raise ConfigError(f"n_bins must be a positive integer or 'sqrt', got {n_bins!r}.")
        return max(1, int(round(math.sqrt(n))))
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral) or n_bins < 1:
        raise ConfigError(f"n_bins must be a positive integer or 'sqrt', got {n_bins!r}.")
    return int(n_bins)


def _check_convex(convex):
    if not isinstance(convex, (bool, np.bool_)):
        raise ConfigError(f"convex must be True or False, got {convex!r}.")
    return bool(convex)


def check_bandwidth(bandwidth):
    if isinstance(bandwidth, str):
        if bandwidth != "silverman":
            raise ConfigError(f"bandwidth must be 'silverman' or a positive number, got {bandwidth!r}.")
        return bandwidth
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, numbers.Real) or not np.isfinite(bandwidth) or bandwidth <= 0:
        raise ConfigError(f"bandwidth must be 'silverman' or a positive number, got {bandwidth!r}.")
    return float(bandwidth)


def _check_name(name):
    if name not in ECE_ESTIMATORS:
        raise ConfigError(f"Unknown ECE estimator {name!r}; choose one of {', '.join(map(repr, ECE_ESTIMATORS))}.")
    return ECE_ESTIMATORS[name]


def _problems(P, y, notion):
    """[(z, t, low)] per 1-D problem of the notion: inputs, 0/1 targets, support's lower end."""
    _check_notion(notion)
    P, y = notions.validate(P, y)
    low = kde_support(notion, P.shape[1])[0]
    return [(prob.Z[:, 0], T[:, 0], low) for prob, _, T in notions.training_problems(P, y, notion)]


# -- binned estimators ------------------------------------------------------------------
def _allocation(z, edges, convex):
    """(bins, weights), each (n, 2) with the convex allocation (the two bins a sample feeds
    and its weight in each), else (n, 1): the sample's own bin with weight 1."""
    b = binning.bin_index(z, edges)
    if not convex or len(edges) <= 2:
        return b[:, None], np.ones_like(z)[:, None]
    centres = (edges[:-1] + edges[1:]) / 2
    m = len(centres)
    # left centre: the last centre <= z (clipped to the ends, where one bin takes everything)
    left = np.clip(np.searchsorted(centres, z, side="right") - 1, 0, m - 2)
    span = centres[left + 1] - centres[left]
    w_right = np.clip((z - centres[left]) / span, 0.0, 1.0)
    return np.stack([left, left + 1], axis=1), np.stack([1.0 - w_right, w_right], axis=1)


def _binned_ece(z, t, n_bins, strategy, convex):
    """Binned L1 ECE of one 1-D problem."""
    edges = binning.bin_edges(z, n_bins, strategy)
    bins, a = _allocation(z, edges, convex)
    gap = (z - t)[:, None] * a
    sums = np.bincount(bins.ravel(), gap.ravel(), minlength=len(edges) - 1)
    return float(np.abs(sums).sum() / z.shape[0])


def _weighted_quantile_edges(zs, cum, n_bins):
    """``binning.bin_edges(z[idx], n_bins, "quantile")`` of a resample without building it
    (numpy's default linear quantile), from ``zs`` = sort(z) and ``cum``, the cumulative
    resample counts of the rows in that order."""
    m = int(cum[-1])
    pos = (np.arange(1, n_bins) / n_bins) * (m - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, m - 1)
    # the k-th (0-based) order statistic of the resample is the first sorted row whose
    # cumulative count exceeds k
    zlo = zs[np.searchsorted(cum, lo, side="right")]
    zhi = zs[np.searchsorted(cum, hi, side="right")]
    inner = zlo + (pos - lo) * (zhi - zlo)
    return np.unique(np.concatenate([[0.0], inner, [1.0]]))


@renamed_parameters(binning="strategy", values=RETIRED_VALUES)
def ece(P, y, notion="top-label", strategy="uniform", n_bins=15, convex=False):
    """Binned L1 expected calibration error (Posocco & Bonnefoy 2021).

    Parameters
    ----------
    P : array-like of shape (n, d)
        Predicted probabilities (rows on the simplex).
    y : array-like of shape (n,)
        Integer labels in [0, d).
    notion : {"top-label", "classwise"}, default="top-label"
        Top-label: confidence max_k p_k against "the prediction is right". Classwise: the
        mean over classes of the ECE of p_k against 1[y = k].
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width bins on [0, 1] or equal-mass (quantile) bins, with the bin rule of
        :func:`calibdash.estimators.binning.bin_edges` and ``bin_index`` (scikit-learn's
        words, as in ``calibration_curve``). The retired ``binning={"width", "mass"}`` is
        accepted for one release with a :class:`DeprecationWarning`.
    n_bins : int or "sqrt", default=15
        Number of bins, or round(sqrt(n)).
    convex : bool, default=False
        Convex allocation: each sample is shared between its two nearest bin centres with
        weights linear in the distance (see the module docstring for the ends).

    Returns
    -------
    float
        The ECE, in [0, 1] (0.05 means 5 percentage points).

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]]); y = np.array([0, 1, 1])
    >>> round(ece(P, y, n_bins=15), 4)
    0.4
    """
    _check_strategy(strategy)
    convex = _check_convex(convex)
    problems = _problems(P, y, notion)
    m = resolve_n_bins(n_bins, problems[0][0].shape[0])
    return float(np.mean([_binned_ece(z, t, m, strategy, convex) for z, t, _ in problems]))


# -- KDE estimator ----------------------------------------------------------------------
def silverman_bandwidth(z):
    """Silverman's rule as KDEpy computes it: min(std, IQR / 1.349) * (3n/4)^(-1/5).

    KDEpy's fallbacks are kept: with no spread between the quartiles, the 1%-99% range
    / 4.653 replaces the scale, and with none there either the bandwidth is 1. One
    sample gives 1.
    """
    z = np.asarray(z, dtype=np.float64)
    n = z.shape[0]
    if n <= 1:
        return 1.0
    sigma = min(float(np.std(z, ddof=1)), float(np.subtract(*np.percentile(z, [75, 25]))) / 1.3489795003921634)
    if sigma > 0:
        return sigma * (n * 3 / 4.0) ** (-1 / 5)
    spread = float(np.subtract(*np.percentile(z, [99, 1]))) / 4.6526957480816815
    if spread > 0:
        return spread * (n * 3 / 4.0) ** (-1 / 5)
    return 1.0


def kde_support(notion, d):
    """Support [a, b] of the KDE: [1/d, 1] for the top-label confidence, [0, 1] per class."""
    _check_notion(notion)
    return (1.0 / d if notion == "top-label" else 0.0), 1.0


def kde_grid(low, high, bandwidth):
    """Cell midpoints of the uniform grid on [low, high] used for the ECE integral."""
    cells = int(min(MAX_GRID, max(MIN_GRID, math.ceil(4 * (high - low) / bandwidth))))
    step = (high - low) / cells
    return low + (np.arange(cells) + 0.5) * step


def _triweight(u):
    """Triweight kernel with unit variance: support |u| <= 3 (KDEpy's scaling)."""
    v = u / 3.0
    return np.where(np.abs(v) < 1.0, (35.0 / 96.0) * (1.0 - v * v) ** 3, 0.0)


def kde_pairs(x, z, bandwidth, low, high):
    """The nonzero entries (g, j, value) of the reflected kernel matrix K_r(x_g, z_j).

    ``x`` must be an increasing uniform grid. Only the pairs within the kernel's support
    (3h) are formed; each of the four mirror copies z, 2a - z, 2b - z, 2b - 2a + z of a
    sample gives its own entries (a pair may repeat: the entries are to be summed).
    """
    x = np.asarray(x, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    h = float(bandwidth)
    G, n = x.shape[0], z.shape[0]
    radius = 3.0 * h
    x0 = x[0]
    step = (x[-1] - x[0]) / (G - 1) if G > 1 else 1.0
    rows, cols, vals = [], [], []
    for copy in (z, 2 * low - z, 2 * high - z, 2 * high - 2 * low + z):
        first = np.maximum(np.ceil((copy - radius - x0) / step), 0).astype(np.int64)
        last = np.minimum(np.floor((copy + radius - x0) / step), G - 1).astype(np.int64)
        count = np.maximum(last - first + 1, 0)
        total = int(count.sum())
        if total == 0:
            continue
        j = np.repeat(np.arange(n), count)
        # position within each sample's run of cells
        offset = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
        g = np.repeat(first, count) + offset
        k = _triweight((x[g] - copy[j]) / h) / h
        keep = k > 0
        rows.append(g[keep])
        cols.append(j[keep])
        vals.append(k[keep])
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def kde_sums(x, z, bandwidth, low, high):
    """Sparse (len(x), len(z)) matrix of the reflected kernel K_r(x_g, z_j) (see :func:`kde_pairs`)."""
    g, j, k = kde_pairs(x, z, bandwidth, low, high)
    return sp.csr_matrix((k, (g, j)), shape=(len(x), len(z)))


def kde_regression_sums(x, z, t, bandwidth, low, high):
    """N(x_g) = sum_j K_r(x_g, z_j) t_j and D(x_g) = sum_j K_r(x_g, z_j) on the grid ``x``."""
    g, j, k = kde_pairs(x, z, bandwidth, low, high)
    return np.bincount(g, k * t[j], minlength=len(x)), np.bincount(g, k, minlength=len(x))


def _kde_ece_from_sums(x, N, D):
    """sum_g |N_g - x_g D_g| / sum_g D_g, column by column for 2-D N, D (NaN if no mass)."""
    xx = x if N.ndim == 1 else x[:, None]
    mass = D.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(N - xx * D).sum(axis=0) / mass


def _kde_grid_of(z, low, bandwidth):
    h = silverman_bandwidth(z) if bandwidth == "silverman" else float(bandwidth)
    return h, kde_grid(low, 1.0, h)


def kde_problem_ece(z, t, low, bandwidth="silverman"):
    """KDE ECE of one 1-D problem with support [low, 1] (the integral of the module docstring)."""
    h, x = _kde_grid_of(z, low, bandwidth)
    N, D = kde_regression_sums(x, z, t, h, low, 1.0)
    return float(_kde_ece_from_sums(x, N, D))


def ece_kde(P, y, *, notion="top-label", bandwidth="silverman"):
    """KDE estimate of the L1 expected calibration error (Posocco & Bonnefoy 2021).

    A triweight kernel with reflection at the ends of the support ([1/d, 1] for the
    top-label confidence, [0, 1] for a class probability), Silverman's bandwidth, the
    Nadaraya-Watson estimate g of E[target | z] and the integral of ``|z - g(z)|`` against the
    estimated density of z (module docstring).

    Parameters
    ----------
    P : array-like of shape (n, d)
    y : array-like of shape (n,)
    notion : {"top-label", "classwise"}, default="top-label"
        Classwise: the mean over classes, each class with its own Silverman bandwidth.
    bandwidth : "silverman" or float, default="silverman"
        The kernel's standard deviation.

    Returns
    -------
    float
    """
    bandwidth = check_bandwidth(bandwidth)
    return float(np.mean([kde_problem_ece(z, t, low, bandwidth) for z, t, low in _problems(P, y, notion)]))


# -- registry and bootstrap -------------------------------------------------------------
def ece_by_name(name, P, y, *, notion="top-label"):
    """The estimate of the registered estimator ``name`` (a key of :data:`ECE_ESTIMATORS`)."""
    spec = _check_name(name)
    if spec["kind"] == "kde":
        return ece_kde(P, y, notion=notion, bandwidth=spec["bandwidth"])
    return ece(P, y, notion, strategy=spec["strategy"], n_bins=spec["n_bins"], convex=spec["convex"])


def _check_n_resamples(n_resamples):
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral) or n_resamples < 2:
        raise ConfigError(f"n_resamples must be an integer of at least 2, got {n_resamples!r}.")
    RESAMPLES.check(int(n_resamples), "the bootstrap")
    return int(n_resamples)


@renamed_parameters(n_boot="n_resamples")
def bootstrap_counts(n, n_resamples, random_state=0):
    """(n_resamples, n) matrix of how often each row is drawn in each resample (seeded)."""
    rng = np.random.default_rng(random_state)
    idx = rng.integers(0, n, size=(n_resamples, n))
    keys = (np.arange(n_resamples)[:, None] * n + idx).ravel()
    return np.bincount(keys, minlength=n_resamples * n).reshape(n_resamples, n).astype(np.float64)


def bootstrap_count_blocks(n, n_resamples, random_state=0, max_entries=None):
    """The rows of :func:`bootstrap_counts` a block of resamples at a time (each block about
    ``max_entries`` entries, BOOT_BLOCK by default), drawn from one generator: the same counts
    as the whole matrix, which would take 3.2 GB at 2,000,000 rows and 200 resamples."""
    rng = np.random.default_rng(random_state)
    block = max(1, int(max_entries or BOOT_BLOCK) // max(n, 1))
    for s in range(0, n_resamples, block):
        yield bootstrap_counts(n, min(block, n_resamples - s), rng)


def _uniform_allocation(z, t, m, convex):
    """What every resample of an equal-width binned ECE shares: each row's bins, its gap
    z - t times its weight in them, and the number of bins."""
    edges = binning.bin_edges(z, m, "uniform")
    bins, a = _allocation(z, edges, convex)
    return bins, (z - t)[:, None] * a, len(edges) - 1


def _binned_boot(z, t, m, strategy, convex, W, allocation=None):
    """The binned ECE of every resample (rows of counts ``W``); ``allocation``: the problem's
    :func:`_uniform_allocation`, when known (one pass of bin searches instead of one per
    block of resamples: 3 s of a 2,000,000-row bootstrap)."""
    if strategy == "uniform":
        # fixed edges: the allocation is computed once and every resample is one bincount
        bins, gap, nb = allocation or _uniform_allocation(z, t, m, convex)
        out = np.empty(W.shape[0])
        block = max(1, BOOT_BLOCK // (2 * len(z)))  # resamples per bincount, to bound the memory
        for s in range(0, W.shape[0], block):
            Wb = W[s:s + block]
            B = Wb.shape[0]
            keys = (np.arange(B)[:, None, None] * nb + bins[None, :, :]).ravel()
            sums = np.bincount(keys, (Wb[:, :, None] * gap[None]).ravel(), minlength=B * nb).reshape(B, nb)
            out[s:s + block] = np.abs(sums).sum(axis=1) / Wb.sum(axis=1)
        return out
    return _mass_boot(z, t, m, convex, W)


def _mass_boot(z, t, m, convex, W, block=16):
    """Equal-mass binned ECE of every resample (rows of counts ``W``), edges recomputed.

    In the sorted order of z every bin, and every stretch between two neighbouring bin
    centres, is a contiguous run of rows, so each resample needs only its edges and a
    few differences of cumulative sums: sum w (z - t) for the bins, and also
    sum w (z - t) z for the linear weights of the convex allocation.
    """
    order = stable_order(z)
    zs, us = z[order], (z - t)[order]
    n = len(z)
    out = np.empty(W.shape[0])
    for s in range(0, W.shape[0], block):
        Ws = W[s:s + block][:, order]
        counts = np.cumsum(Ws, axis=1)
        pad = np.zeros((Ws.shape[0], 1))
        cu = np.hstack([pad, np.cumsum(Ws * us, axis=1)])
        cuz = np.hstack([pad, np.cumsum(Ws * us * zs, axis=1)]) if convex else None
        for r in range(Ws.shape[0]):
            edges = _weighted_quantile_edges(zs, counts[r], m)
            nb = len(edges) - 1
            if not convex or nb == 1:
                # bin b holds edges[b] <= z < edges[b+1]; the first and last bins are open-ended
                cuts = np.searchsorted(zs, edges, side="left")
                cuts[0], cuts[-1] = 0, n
                sums = cu[r, cuts[1:]] - cu[r, cuts[:-1]]
            else:
                centres = (edges[:-1] + edges[1:]) / 2
                cuts = np.concatenate([[0], np.searchsorted(zs, centres, side="left"), [n]])
                run_u = cu[r, cuts[1:]] - cu[r, cuts[:-1]]  # below c_0, between c_b and c_b+1, above the last
                run_uz = cuz[r, cuts[1:]] - cuz[r, cuts[:-1]]
                span = np.diff(centres)
                # between c_b and c_b+1 the weight of bin b is (c_b+1 - z) / span
                to_left = (centres[1:] * run_u[1:-1] - run_uz[1:-1]) / span
                sums = np.zeros(nb)
                sums[0] += run_u[0]
                sums[-1] += run_u[-1]
                sums[:-1] += to_left
                sums[1:] += run_u[1:-1] - to_left
            out[s + r] = np.abs(sums).sum() / counts[r, -1]
    return out


def _kde_boot(z, t, low, bandwidth, W, block=16):
    h, x = _kde_grid_of(z, low, bandwidth)
    g, j, k = kde_pairs(x, z, h, low, 1.0)
    # cells out of every kernel's reach add nothing to either sum: drop them
    cells, g = np.unique(g, return_inverse=True)
    x = x[cells]
    S = sp.csr_matrix((k, (g, j)), shape=(len(cells), len(z)))
    out = np.empty(W.shape[0])
    for s in range(0, W.shape[0], block):
        Wb = W[s:s + block].T
        out[s:s + block] = _kde_ece_from_sums(x, S @ (Wb * t[:, None]), S @ Wb)
    return out


@renamed_parameters(n_boot="n_resamples")
def ece_bootstrap(name, P, y, *, notion="top-label", n_resamples=200, random_state=0):
    """Estimate of ``name`` and its bootstrap standard error.

    Rows are resampled with replacement ``n_resamples`` times (seeded); the standard error is the
    sample standard deviation of the resampled estimates. Binned estimators are recomputed
    in full on each resample (equal-mass edges included); the KDE keeps the full sample's
    bandwidth. Resamples are represented by row counts, so equal-width bins and the KDE
    handle all resamples with one bincount or sparse product per block.

    Returns
    -------
    (float, float)
        The estimate on all rows and its standard error.
    """
    spec = _check_name(name)
    n_resamples = _check_n_resamples(n_resamples)
    value = ece_by_name(name, P, y, notion=notion)
    problems = _problems(P, y, notion)
    n = problems[0][0].shape[0]
    m = None if spec["kind"] == "kde" else resolve_n_bins(spec["n_bins"], n)
    est = []
    # One problem's allocation kept for all blocks (top-label); the classwise problems' would
    # take as much memory again as their inputs, so theirs are found per block as before.
    keep = m is not None and spec["strategy"] == "uniform" and len(problems) == 1
    allocations = [_uniform_allocation(z, t, m, spec["convex"]) if keep else None for z, t, _ in problems]
    for W in bootstrap_count_blocks(n, n_resamples, random_state):
        if m is None:
            boots = [_kde_boot(z, t, low, spec["bandwidth"], W) for z, t, low in problems]
        else:
            boots = [_binned_boot(z, t, m, spec["strategy"], spec["convex"], W, a)
                     for (z, t, _), a in zip(problems, allocations)]
        est.append(np.mean(boots, axis=0))
    est = np.concatenate(est)
    return value, float(np.nanstd(est, ddof=1))


# -- ground truth for simulations --------------------------------------------------------
def top_label_l1_truth(probs, true_probs, per_bin=2000):
    """True top-label L1 ECE, E|c - P(correct | c)|, from a large simulated sample.

    ``true_probs`` holds P(Y | f) for each row (as :class:`calibdash.lab.simulation.Simulation`
    does), so P(correct | f) = true_probs[argmax f] exactly; conditioning on the confidence c
    alone averages it within groups of ``per_bin`` rows of nearby confidence (as
    :func:`calibdash.lab.simulation.simulation_truth` does for the L2 error).
    """
    probs = np.asarray(probs, dtype=np.float64)
    true_probs = np.asarray(true_probs, dtype=np.float64)
    c, _, k = notions.top_label(probs)
    target = true_probs[np.arange(len(k)), k]
    order = np.argsort(c, kind="stable")
    c, target = c[order], target[order]
    groups = max(1, len(c) // per_bin)
    cuts = np.linspace(0, len(c), groups + 1).astype(int)
    means = np.add.reduceat(target, cuts[:-1]) / np.diff(cuts)
    return float(np.mean(np.abs(c - np.repeat(means, np.diff(cuts)))))
