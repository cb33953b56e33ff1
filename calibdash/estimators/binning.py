"""Histogram binning (Eq. 10, 23): the plug-in estimator behind the familiar ECE."""

from __future__ import annotations

import numbers

import numpy as np

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
        self.edges_, self.gaps_ = [], []
        for problem, U, _ in self._training_problems(P, y):
            z, u = problem.Z[:, 0], U[:, 0]
            edges = bin_edges(z, int(self.n_bins), self.strategy)
            idx = bin_index(z, edges)
            m = len(edges) - 1
            counts = np.bincount(idx, minlength=m)
            sums = np.bincount(idx, weights=u, minlength=m)
            gaps = np.full(m, u.mean())
            filled = counts > 0
            gaps[filled] = sums[filled] / counts[filled]
            self.edges_.append(edges)
            self.gaps_.append(gaps)

    def _bilinear_form(self, P):
        from calibdash.core.notions import problems

        cols = [gaps[bin_index(p.Z[:, 0], edges)] for p, edges, gaps in zip(problems(P, self.notion), self.edges_, self.gaps_)]
        return np.column_stack(cols), None
