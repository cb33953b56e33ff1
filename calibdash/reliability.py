"""Statistics of reliability diagrams: binned confidence against accuracy, with bootstrap bands.

A reliability diagram bins the predictions by confidence and compares, per bin, the mean
confidence with the observed frequency of being right. Top-label: confidence = max_k p_k
and the outcome is "the predicted class is correct". One class k (the per-class panels of
canonical calibration): confidence = p_k and the outcome is "the label is k".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import notions
from .estimators import binning

STRATEGIES = ("uniform", "quantile")


def bin_edges(conf, n_bins=15, strategy="uniform"):
    """Bin edges on [0, 1]: equal width ("uniform") or equal mass ("quantile"), the same
    edges the binning estimator uses (:func:`calibdash.estimators.binning.bin_edges`).

    Repeated quantiles (ties, e.g. many predictions at exactly 1) are merged, so fewer than
    ``n_bins`` bins may result.
    """
    if isinstance(n_bins, bool) or int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive whole number, got {n_bins!r}.")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}.")
    return binning.bin_edges(np.asarray(conf, dtype=np.float64), int(n_bins), strategy)


# Bin b holds edges[b] <= z < edges[b+1] and z = 1 goes in the last bin: the diagram must
# put every point in the bin the estimators put it in.
assign_bins = binning.bin_index


def reliability_table(conf, correct, n_bins=15, strategy="uniform", n_boot=200, level=0.9, random_state=0):
    """Per-bin counts, mean confidence, accuracy and a bootstrap band for the accuracy.

    Parameters
    ----------
    conf : array of shape (n,)
        Confidences in [0, 1].
    correct : array of shape (n,)
        1 where the outcome happened (prediction correct, or label is the class), else 0.
    n_bins : int
    strategy : {"uniform", "quantile"}
    n_boot : int
        Bootstrap resamples of the rows (0 disables the band).
    level : float
        Coverage of the percentile band, e.g. 0.9 for the 5% and 95% quantiles.
    random_state : int
        Seed of the bootstrap, so the picture does not change between reruns.

    Returns
    -------
    pandas.DataFrame
        One row per bin: ``lower``, ``upper`` (edges), ``count``, ``confidence`` (mean),
        ``accuracy``, ``gap`` (accuracy - confidence), ``band_low``, ``band_high``
        (NaN for empty bins). Attribute ``attrs["ece"]`` holds the binned top-label
        ECE (count-weighted mean |gap|).
    """
    conf = np.asarray(conf, dtype=np.float64).ravel()
    correct = np.asarray(correct, dtype=np.float64).ravel()
    if conf.shape != correct.shape:
        raise ValueError("conf and correct must have the same length.")
    edges = bin_edges(conf, n_bins, strategy)
    nb = len(edges) - 1
    b = assign_bins(conf, edges)
    count = np.bincount(b, minlength=nb).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(b, conf, minlength=nb) / count
        acc = np.bincount(b, correct, minlength=nb) / count
    lo = np.full(nb, np.nan)
    hi = np.full(nb, np.nan)
    n = len(conf)
    if n_boot and n:
        # All resamples at once: one bincount over (resample, bin) pairs.
        rng = np.random.default_rng(random_state)
        idx = rng.integers(0, n, size=(n_boot, n))
        keys = (np.arange(n_boot)[:, None] * nb + b[idx]).ravel()
        c_boot = np.bincount(keys, minlength=n_boot * nb).reshape(n_boot, nb)
        s_boot = np.bincount(keys, correct[idx].ravel(), minlength=n_boot * nb).reshape(n_boot, nb)
        with np.errstate(invalid="ignore", divide="ignore"):
            a_boot = np.where(c_boot > 0, s_boot / np.maximum(c_boot, 1), np.nan)
        alpha = (1 - level) / 2
        ok = count > 0
        if ok.any():
            lo[ok] = np.nanquantile(a_boot[:, ok], alpha, axis=0)
            hi[ok] = np.nanquantile(a_boot[:, ok], 1 - alpha, axis=0)
    table = pd.DataFrame(
        {
            "lower": edges[:-1],
            "upper": edges[1:],
            "count": count.astype(np.int64),
            "confidence": mean_conf,
            "accuracy": acc,
            "gap": acc - mean_conf,
            "band_low": lo,
            "band_high": hi,
        }
    )
    gaps = np.abs(np.nan_to_num(acc - mean_conf))
    table.attrs["ece"] = float((count * gaps).sum() / max(n, 1))
    return table


def top_label(P, y):
    """(confidence, correct) of the top-label reliability diagram."""
    c, _, k = notions.top_label(np.asarray(P, dtype=np.float64))
    return c, (k == np.asarray(y)).astype(np.float64)


def one_class(P, y, k):
    """(p_k, 1[y == k]) of the reliability diagram of class k."""
    P = np.asarray(P, dtype=np.float64)
    return P[:, k], (np.asarray(y) == k).astype(np.float64)


def per_class_tables(P, y, classes, **kwargs):
    """{class index: reliability_table} for the given classes (canonical/classwise panels)."""
    return {k: reliability_table(*one_class(P, y, k), **kwargs) for k in classes}


def selected_recalibration(result, P):
    """The recalibration map g(z) of the estimator the risk selected, on the rows of ``P``.

    The Kronecker estimator ("kkkr") and the fixed 15-bin baseline are skipped because
    the first has no map and the second was not tuned; the next best plug-in by
    validation risk is used instead.

    Returns
    -------
    name : str or None
        The estimator used (None when no fitted plug-in is available, e.g. after from_json).
    G : ndarray or None
        (n, 1) for top-label, (n, d) for canonical and classwise.
    """
    if not result.models:
        return None, None
    for name in result.summary.sort_values("val_risk")["estimator"]:
        model = result.models.get(name)
        if model is None or name == "15-bins":
            continue
        try:
            return name, np.clip(model.recalibration(P), 0.0, 1.0)
        except ValueError:
            continue
    return None, None


__all__ = ["STRATEGIES", "bin_edges", "assign_bins", "reliability_table", "top_label", "one_class", "per_class_tables", "selected_recalibration"]
