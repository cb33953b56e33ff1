"""The statistics of a clinical validation, each a pure function of ``(p, y)``.

Mean calibration (observed:expected), moderate calibration (the loess summaries of Austin &
Steyerberg 2019), overall accuracy (Brier, scaled Brier), discrimination (AUROC with
DeLong's interval), Spiegelhalter's test, and clinical usefulness (net benefit, Vickers &
Elkin 2006). Weak calibration (intercept and slope) is in :mod:`calibdash.clinical.logistic`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from calibdash.clinical.loess import loess_fit
from calibdash.intervals import stored_interval

__all__ = [
    "observed_expected",
    "brier",
    "scaled_brier",
    "auroc",
    "AUROC",
    "spiegelhalter",
    "Spiegelhalter",
    "loess_summaries",
    "LOESS_SUMMARIES",
    "net_benefit",
    "net_benefit_treat_all",
]

# The summaries of |p - loess(p)| over the rows (Austin & Steyerberg 2019), in report order.
LOESS_SUMMARIES = ("ICI", "E50", "E90", "Emax")


def observed_expected(p, y):
    """Observed over expected events, ``sum(y) / sum(p)``."""
    return float(np.sum(y) / np.sum(p))


def brier(p, y):
    """Mean squared difference between predicted risk and outcome."""
    p = np.asarray(p, dtype=float)
    return float(np.mean((p - y) ** 2))


def scaled_brier(p, y):
    """``1 - Brier / Brier_max``, where ``Brier_max = ybar (1 - ybar)`` is the Brier score of
    predicting the observed prevalence for everyone (Steyerberg et al. 2010)."""
    ybar = float(np.mean(y))
    return 1.0 - brier(p, y) / (ybar * (1.0 - ybar))


@dataclass(frozen=True)
class AUROC:
    """The area under the ROC curve (the C statistic) with DeLong's interval."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    level: float = 0.95

    def confidence_interval(self, level=None):
        """DeLong's interval ``estimate +- z se``, clipped to [0, 1] as R's pROC does, a
        :class:`~calibdash.intervals.ConfidenceInterval`; ``level`` may only be None or the
        level it was computed at."""
        return stored_interval(self.ci_low, self.ci_high, self.level, level)


def auroc(p, y, *, level=0.95):
    """AUROC (ties count one half) with DeLong, DeLong & Clarke-Pearson's (1988) interval.

    The placements are computed from mid-ranks (Sun & Xu 2014), in O(n log n), never from
    the n1 x n0 comparison matrix.
    """
    p = np.asarray(p, dtype=float)
    y = np.asarray(y).astype(bool)
    pos, neg = p[y], p[~y]
    n1, n0 = len(pos), len(neg)
    if n1 == 0 or n0 == 0:
        return AUROC(np.nan, np.nan, np.nan, np.nan, level)
    r_all = stats.rankdata(np.concatenate([pos, neg]))
    r_pos = stats.rankdata(pos)
    r_neg = stats.rankdata(neg)
    # V10_i: fraction of negatives below positive i (ties 1/2); V01_j: positives above negative j
    v10 = (r_all[:n1] - r_pos) / n0
    v01 = 1.0 - (r_all[n1:] - r_neg) / n1
    auc = float(np.mean(v10))
    var = (np.var(v10, ddof=1) / n1 if n1 > 1 else 0.0) + (np.var(v01, ddof=1) / n0 if n0 > 1 else 0.0)
    se = float(np.sqrt(var))
    z = stats.norm.ppf(0.5 + level / 2)
    return AUROC(auc, se, max(0.0, auc - z * se), min(1.0, auc + z * se), level)


@dataclass(frozen=True)
class Spiegelhalter:
    """Spiegelhalter's (1986) z test of calibration, as ``rms::val.prob`` reports it."""

    statistic: float
    pvalue: float


def spiegelhalter(p, y):
    """``z = sum((y - p)(1 - 2p)) / sqrt(sum((1 - 2p)^2 p (1 - p)))``, two-sided p-value."""
    p = np.asarray(p, dtype=float)
    num = np.sum((y - p) * (1 - 2 * p))
    den = np.sqrt(np.sum((1 - 2 * p) ** 2 * p * (1 - p)))
    z = float(num / den) if den > 0 else np.nan
    return Spiegelhalter(z, float(2 * stats.norm.sf(abs(z))) if np.isfinite(z) else np.nan)


def loess_summaries(p, y, *, curve=None):
    """ICI, E50, E90 and Emax: the mean, median, 90th percentile and maximum of
    ``|loess(p) - p|`` over the rows (R's ``quantile`` type 7, numpy's default).

    Parameters
    ----------
    curve : LoessCurve, optional
        A loess fit of ``y`` on ``p`` already made.

    Returns
    -------
    dict
        ``{"ICI": ..., "E50": ..., "E90": ..., "Emax": ...}``.
    """
    p = np.asarray(p, dtype=float)
    if curve is None:
        curve = loess_fit(p, y)
    d = np.abs(curve.predict(p) - p)
    return {"ICI": float(np.mean(d)), "E50": float(np.median(d)),
            "E90": float(np.quantile(d, 0.9)), "Emax": float(np.max(d))}


def net_benefit(p, y, thresholds):
    """Net benefit of treating when ``p >= t``: ``TP/n - FP/n * t / (1 - t)`` at each ``t``.

    Computed for all thresholds at once from the sorted risks (O((n + m) log n)).
    """
    p = np.asarray(p, dtype=float)
    y = np.asarray(y, dtype=float)
    t = np.asarray(thresholds, dtype=float)
    order = np.argsort(p)
    ps, ys = p[order], y[order]
    # rows with p >= t are those from searchsorted(left) onwards
    start = np.searchsorted(ps, t, side="left")
    events_above = np.concatenate([np.cumsum(ys[::-1])[::-1], [0.0]])
    tp = events_above[start]
    fp = (len(p) - start) - tp
    n = len(p)
    return tp / n - fp / n * t / (1 - t)


def net_benefit_treat_all(y, thresholds):
    """Net benefit of treating everyone: ``prevalence - (1 - prevalence) t / (1 - t)``."""
    prev = float(np.mean(y))
    t = np.asarray(thresholds, dtype=float)
    return prev - (1 - prev) * t / (1 - t)
