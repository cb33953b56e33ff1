"""Histogram binning (Eq. 10, 23): the plug-in estimator behind the familiar ECE."""

from __future__ import annotations

import numbers

import numpy as np

from calibdash.core.rows import stable_order
from calibdash.errors import ConfigError
from calibdash.estimators.base import CalibrationEstimator


def bin_edges(z, n_bins, strategy):
    """Bin edges on [0, 1]: equal width, or equal mass from the quantiles of ``z``.

    Quantile edges that coincide (ties in ``z``) are merged, so there may be fewer bins.
    """
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    inner = np.quantile(z, np.arange(1, n_bins) / n_bins)
    return np.unique(np.concatenate([[0.0], inner, [1.0]]))


def bin_index(z, edges):
    """Bin m holds edges[m] <= z < edges[m+1]; z = 1 (and anything above) goes in the last bin."""
    return np.clip(np.searchsorted(edges, z, side="right") - 1, 0, len(edges) - 2)


# Rows from which the binning family works from its rows sorted by z (:class:`SortedRows`).
# The sums then run in another order, which moves the last digits of its numbers: below this
# size the per-row route is about as fast and every number stays as it was, so that older
# result files rerun to identical numbers (`calibdash rerun` compares exactly).
SORTED_MIN_ROWS = 100_000


class SortedRows:
    """The rows of a one-dimensional problem in the order of z, so that every bin of any grid
    is one run of them: a grid value costs a binary search per edge and one sum per run,
    O(B log n), instead of a pass over the rows (a search and a bincount per row)."""

    def __init__(self, z, u):
        order = stable_order(z)
        self.z = z[order]
        self.u = u[order]
        self.n = len(z)

    def runs(self, edges):
        """Start of each bin's run (the rows with edges[m] <= z < edges[m + 1]; the first and
        last bins open-ended, as :func:`bin_index`) and the run lengths."""
        starts = np.concatenate([[0], np.searchsorted(self.z, edges[1:-1], side="left")])
        return starts, np.diff(np.append(starts, self.n))

    def sums(self, values, starts, counts):
        """Per-bin sums of ``values`` (in the sorted order), 0 for an empty bin."""
        out = np.zeros(len(starts))
        filled = counts > 0
        if filled.any():
            out[filled] = np.add.reduceat(values, starts[filled])
        return out


def bin_gaps(z, u, edges):
    """Per-bin mean of the residuals u = z - t over the training rows (the global mean where a
    bin is empty); ``u`` is the residuals in row order or :class:`SortedRows` of them."""
    if isinstance(u, SortedRows):
        starts, counts = u.runs(edges)
        sums, mean = u.sums(u.u, starts, counts), u.u.mean()
    else:
        idx = bin_index(z, edges)
        counts = np.bincount(idx, minlength=len(edges) - 1)
        sums, mean = np.bincount(idx, weights=u, minlength=len(edges) - 1), u.mean()
    gaps = np.full(len(edges) - 1, mean)
    filled = counts > 0
    gaps[filled] = sums[filled] / counts[filled]
    return gaps


class BinningEstimator(CalibrationEstimator):
    """Binning estimator of the top-label or classwise squared calibration error.

    Within each bin the calibration gap is estimated by mean(z) - mean(target) over the
    training points in it, v(z) is the gap of z's bin and h(z, z') = v(z) v(z').
    An empty training bin takes the global gap.

    Parameters
    ----------
    notion : {"top-label", "classwise"}
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width bins on [0, 1], or equal-mass bins from the training quantiles.
    """

    family = "bins"
    supported_notions = ("top-label", "classwise")
    path_param = "n_bins"

    def __init__(self, notion="top-label", n_bins=15, strategy="uniform"):
        self.notion = notion
        self.n_bins = n_bins
        self.strategy = strategy

    def _validate_params(self):
        super()._validate_params()
        if isinstance(self.n_bins, bool) or not isinstance(self.n_bins, numbers.Integral) or self.n_bins < 1:
            raise ConfigError(f"n_bins must be a positive integer, got {self.n_bins!r}.")
        if self.strategy not in ("uniform", "quantile"):
            raise ConfigError(f"strategy must be 'uniform' or 'quantile', got {self.strategy!r}.")

    def _fit(self, P, y):
        self._fit_rows([(p.Z[:, 0], U[:, 0]) for p, U, _ in self._training_problems(P, y)])

    def _fit_rows(self, rows):
        """Fit from (z, u) per problem, u = z - t; ``u`` may be :class:`SortedRows` instead."""
        self.edges_, self.gaps_ = [], []
        for z, u in rows:
            edges = bin_edges(z, int(self.n_bins), self.strategy)
            self.edges_.append(edges)
            self.gaps_.append(bin_gaps(z, u, edges))

    def _fit_path(self, estimators, P, y, cache):
        if P.shape[0] < SORTED_MIN_ROWS:
            return super()._fit_path(estimators, P, y, cache)
        # the training rows sorted once for the whole grid (and for 15-bins beside it)
        key = ("sorted-rows", self.notion)
        if key not in cache:
            cache[key] = [(p.Z[:, 0], SortedRows(p.Z[:, 0], U[:, 0])) for p, U, _ in self._training_problems(P, y)]
        for e in estimators:
            e._fit_rows(cache[key])

    @classmethod
    def _path_risks(cls, estimators, P, U):
        if estimators[0].notion != "top-label" or U.shape[0] < SORTED_MIN_ROWS:
            return super()._path_risks(estimators, P, U)
        # Eq. (20) of the plug-in v(z) = gap of z's bin from per-bin sums of the held-out
        # residuals (docs/design.md, section 2, with r = d = 1): sum_i u_i v_i = sum_b g_b S1_b,
        # sum_i v_i^2 = sum_b g_b^2 N_b and sum_i (u_i^2 - v_i^2)^2 = sum u^4 - 2 sum_b g_b^2 S2_b
        # + sum_b g_b^4 N_b, so no per-row feature is formed.
        from calibdash.core.notions import problems

        n = U.shape[0]
        rows = SortedRows(problems(P, "top-label")[0].Z[:, 0], U[:, 0])
        u2 = rows.u * rows.u
        uu, u4 = float(u2.sum()), float(np.sum(u2 * u2))
        out = []
        for e in estimators:
            g = e.gaps_[0]
            starts, counts = rows.runs(e.edges_[0])
            s1, s2 = rows.sums(rows.u, starts, counts), rows.sums(u2, starts, counts)
            g2 = g * g
            uv, vv = float(g @ s1), float(g2 @ counts)
            pairs = uu * uu - 2.0 * uv * uv + vv * vv - (u4 - 2.0 * float(g2 @ s2) + float((g2 * g2) @ counts))
            out.append(pairs / (n * (n - 1)))
        return np.array(out)

    def _bilinear_form(self, P):
        from calibdash.core.notions import problems

        cols = [gaps[bin_index(p.Z[:, 0], edges)] for p, edges, gaps in zip(problems(P, self.notion), self.edges_, self.gaps_)]
        return np.column_stack(cols), None
