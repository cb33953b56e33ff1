"""Statistics of reliability diagrams: binned confidence against accuracy, with bootstrap bands.

A reliability diagram bins the predictions by confidence and compares, per bin, the mean
confidence with the observed frequency of being right. Top-label: confidence = max_k p_k
and the outcome is "the predicted class is correct". One class k (the per-class panels of
canonical calibration): confidence = p_k and the outcome is "the label is k".
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from calibdash.core import notions
from calibdash.deprecation import renamed_parameters
from calibdash.errors import ConfigError, InputError
from calibdash.estimators import binning
from calibdash.limits import RESAMPLES
from calibdash.metrics.ece import (
    bootstrap_count_blocks,
    check_bandwidth,
    kde_problem_ece,
    kde_sums,
    kde_support,
    silverman_bandwidth,
)

STRATEGIES = ("uniform", "quantile")

#: The three 15-bin figures of one result, each named for what it is: the verdict, the app,
#: the report and docs/results.md use these names; :data:`FIFTEEN_BIN_HELP` says why they differ.
FIFTEEN_BIN_NAMES = {
    "estimator": "15-bin L2 estimate (the ranked estimator 15-bins, holdout rows)",
    "ece": "15-bin ECE (L1, holdout rows)",
    "diagram": "15-bin ECE of this diagram (L1, all rows)",
}
FIFTEEN_BIN_HELP = (
    "Three figures use 15 equal-width bins of the confidence, and they differ for stated reasons. "
    "The **15-bin L2 estimate** (estimator 15-bins, ranked by the risk) is the root of the mean squared gap: the "
    "bins' gaps are learnt on the optimisation folds and squared on the holdout rows, so it is an L2 error and "
    "noise in a bin's gap adds to it (it is not debiased). The **15-bin ECE (L1, holdout rows)** of the literature "
    "table is the familiar mean absolute gap, binned on the holdout rows alone. The **15-bin ECE of the reliability "
    "diagram** is the same L1 formula on all rows: computed on the holdout rows it equals the literature's 15-bin "
    "ECE. An L2 error is at least as large as the L1 error of the same gaps, and both binned errors grow with "
    "noise on small samples; only the L2 estimate can be compared with the other ranked estimators."
)


def diagram_ece_name(n_bins, strategy, *, sentence=False):
    """The name of a reliability diagram's binned ECE: :data:`FIFTEEN_BIN_NAMES` ["diagram"] for
    15 equal-width bins, else the same words with its own bins; ``sentence``: to start a sentence."""
    if n_bins == 15 and strategy == "uniform":
        name = FIFTEEN_BIN_NAMES["diagram"]
    else:
        kind = "equal-width" if strategy == "uniform" else "equal-mass"
        name = f"binned ECE of this diagram ({n_bins} {kind} bins, L1, all rows)"
    return name[:1].upper() + name[1:] if sentence else name


def bin_edges(conf, n_bins=15, strategy="uniform"):
    """Bin edges on [0, 1]: equal width ("uniform") or equal mass ("quantile"), the same
    edges the binning estimator uses (:func:`calibdash.estimators.binning.bin_edges`).

    Repeated quantiles (ties, e.g. many predictions at exactly 1) are merged, so fewer than
    ``n_bins`` bins may result.
    """
    if isinstance(n_bins, bool) or int(n_bins) != n_bins or n_bins < 1:
        raise ConfigError(f"n_bins must be a positive whole number, got {n_bins!r}.")
    if strategy not in STRATEGIES:
        raise ConfigError(f"strategy must be one of {STRATEGIES}, got {strategy!r}.")
    return binning.bin_edges(np.asarray(conf, dtype=np.float64), int(n_bins), strategy)


# Bin b holds edges[b] <= z < edges[b+1] and z = 1 goes in the last bin: the diagram must
# put every point in the bin the estimators put it in.
assign_bins = binning.bin_index


#: Rows per pass of :func:`bin_sums`: the bin numbers of one pass take 8 MB, where those of
#: every row at once took 80 MB at 10,000,000 rows, with as much again for each temporary.
BIN_SUM_ROWS = 1 << 20


class BinSums(NamedTuple):
    """Per-bin sums of a reliability diagram: rows, confidences, outcomes, and (0/1 outcomes
    only, else None) the rows of each (bin, outcome) cell, ``cells[2 b + outcome]``."""

    count: np.ndarray
    conf_sum: np.ndarray
    correct_sum: np.ndarray
    cells: np.ndarray | None


def bin_sums(conf, correct, edges):
    """:class:`BinSums` of the rows in passes of :data:`BIN_SUM_ROWS`.

    Each pass's weighted bincount starts from the sums before it (they enter as the first
    weights), so every bin's sum is the one running sum over the rows in order: the same
    bits as a single bincount of all rows, without its row-length temporaries.
    """
    nb = len(edges) - 1
    count = np.zeros(nb, dtype=np.int64)
    cells = np.zeros(2 * nb, dtype=np.int64)
    conf_sum, correct_sum = np.zeros(nb), np.zeros(nb)
    first = np.arange(nb)
    binary = True
    for start in range(0, len(conf), BIN_SUM_ROWS):
        z, t = conf[start : start + BIN_SUM_ROWS], correct[start : start + BIN_SUM_ROWS]
        b = assign_bins(z, edges)
        count += np.bincount(b, minlength=nb)
        keys = np.concatenate([first, b])
        conf_sum = np.bincount(keys, np.concatenate([conf_sum, z]), minlength=nb)
        correct_sum = np.bincount(keys, np.concatenate([correct_sum, t]), minlength=nb)
        binary = binary and bool(np.all((t == 0) | (t == 1)))
        if binary:
            b *= 2
            b += t.astype(np.int64)
            cells += np.bincount(b, minlength=2 * nb)
    return BinSums(count, conf_sum, correct_sum, cells if binary else None)


@renamed_parameters(n_boot="n_resamples")
def reliability_table(conf, correct, n_bins=15, strategy="uniform", n_resamples=200, level=0.9, random_state=0):
    """Per-bin counts, mean confidence, accuracy and a bootstrap band for the accuracy.

    Parameters
    ----------
    conf : array of shape (n,)
        Confidences in [0, 1].
    correct : array of shape (n,)
        1 where the outcome happened (prediction correct, or label is the class), else 0.
    n_bins : int
    strategy : {"uniform", "quantile"}
    n_resamples : int
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
        ECE (count-weighted mean ``|gap|``).
    """
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 0:
        raise ConfigError(f"n_resamples must be 0 (no band) or a positive whole number, got {n_resamples!r}.")
    RESAMPLES.check(int(n_resamples), "the bootstrap band")
    conf = np.asarray(conf, dtype=np.float64).ravel()
    correct = np.asarray(correct, dtype=np.float64).ravel()
    if conf.shape != correct.shape:
        raise InputError("conf and correct must have the same length.")
    edges = bin_edges(conf, n_bins, strategy)
    nb = len(edges) - 1
    stats = bin_sums(conf, correct, edges)
    count = stats.count.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = stats.conf_sum / count
        acc = stats.correct_sum / count
    lo = np.full(nb, np.nan)
    hi = np.full(nb, np.nan)
    n = len(conf)
    if n_resamples and n:
        rng = np.random.default_rng(random_state)
        if stats.cells is not None:
            # A resample of the rows (n draws with replacement) puts Multinomial(n, share) rows
            # in each (bin, right or wrong) cell, and the band needs only those cell counts: the
            # same bootstrap distribution in O(n_resamples x bins) instead of drawing
            # n_resamples x n rows (2e9 draws, minutes, at 10,000,000 rows).
            cells = stats.cells
            drawn = rng.multinomial(n, cells / n, size=n_resamples).reshape(n_resamples, nb, 2)
            c_boot, s_boot = drawn.sum(axis=2), drawn[:, :, 1]
        else:
            # Graded targets: the resamples' row counts, a block at a time, summed per bin.
            # (bin, then bin weighted by the target) indicator columns of the rows
            b = assign_bins(conf, edges)
            cols = sp.csr_matrix((np.concatenate([np.ones(n), correct]), (np.tile(np.arange(n), 2), np.concatenate([b, b + nb]))),
                                 shape=(n, 2 * nb))
            sums = np.vstack([(cols.T @ W.T).T for W in bootstrap_count_blocks(n, int(n_resamples), rng)])
            c_boot, s_boot = sums[:, :nb], sums[:, nb:]
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
    """(confidence, correct) of the top-label reliability diagram: the confidence max_k p_k
    (the value :func:`calibdash.core.notions.top_label` takes at the argmax) and whether the
    argmax is the label, found in passes of :data:`BIN_SUM_ROWS` rows (at 10,000,000 rows
    the row-length index arrays of one pass over all rows took 400 MB)."""
    P, y = np.asarray(P, dtype=np.float64), np.asarray(y)
    correct = np.empty(len(P))
    for start in range(0, len(P), BIN_SUM_ROWS):
        stop = start + BIN_SUM_ROWS
        correct[start:stop] = np.argmax(P[start:stop], axis=1) == y[start:stop]
    return P.max(axis=1), correct


def one_class(P, y, k):
    """(p_k, 1[y == k]) of the reliability diagram of class k."""
    P = np.asarray(P, dtype=np.float64)
    return P[:, k], (np.asarray(y) == k).astype(np.float64)


def per_class_tables(P, y, classes, **kwargs):
    """{class index: reliability_table} for the given classes (canonical/classwise panels)."""
    return {k: reliability_table(*one_class(P, y, k), **kwargs) for k in classes}


def selected_recalibration(result, P):
    """The recalibration map g(z) of the estimator the risk selected, on the rows of ``P``.

    The estimators are tried in the order of
    :attr:`~calibdash.evaluation.result.EvaluationResult.recalibration_candidates` (the tuned
    plug-ins, lowest validation risk first: not the Kronecker estimator, which has no map, nor
    the fixed 15-bin baseline, which was not tuned); the first with a fitted model is used.

    Returns
    -------
    name : str or None
        The estimator used (None when no fitted plug-in is available, e.g. after from_json).
    G : ndarray or None
        (n, 1) for top-label, (n, d) for canonical and classwise.

    Raises
    ------
    InputError
        When the rows of ``P`` are not probabilities (as :func:`calibdash.core.notions.validate` says),
        or not as many classes as the result's.
    """
    if not result.models:
        return None, None
    # Checked once here, not twice by each of the k fold models (at 2,000,000 holdout rows ten
    # checks took 0.9 s), and read-only, so that the models share one top-label problem of it.
    P, _ = notions.validate(P)
    P = P.view()
    P.flags.writeable = False
    with notions.validated_inputs():
        for name in result.recalibration_candidates:
            model = result.models.get(name)
            if model is not None:
                # every candidate has a map: an error here is one to show, not a reason to try the next
                return name, np.clip(model.recalibration(P), 0.0, 1.0)
    return None, None


#: The continuous curve is drawn only where at least this many predictions are within the
#: kernel's reach (Kish's effective number (sum K)^2 / sum K^2 of the kernel weights): with
#: fewer, one prediction moves the estimate by a tenth or more, and a lone wrong one makes
#: it 0, a frequency the data do not show.
MIN_EFFECTIVE_ROWS = 10

BANDWIDTHS = ("auto", "silverman")


def automatic_bandwidth(z, low, high):
    """The continuous curve's automatic bandwidth: Silverman's rule, but at least a third of
    Silverman's bandwidth for ``len(z)`` confidences spread evenly over the support
    [``low``, ``high``], about (high - low) n^(-1/5) / 10.

    Silverman's rule scales with the spread of the bulk of the confidences: when most are
    within a hair of 1 (an accurate, confident model) it is tiny whatever n, and the curve
    is left with almost no point that enough predictions reach. The floor shrinks like
    Silverman's rule as n grows and is below it whenever the confidences are spread out, so
    the curve is then Silverman's, the paper's.
    """
    n = len(z)
    floor = (high - low) / math.sqrt(12) * (0.75 * max(n, 1)) ** (-1 / 5) / 3
    return max(silverman_bandwidth(z), floor)


@renamed_parameters(n_boot="n_resamples")
def continuous_reliability_curve(P, y, notion="top-label", class_index=None, grid=200, n_resamples=200, level=0.9, random_state=0,
                                 bandwidth="auto"):
    """The continuous reliability curve of Posocco & Bonnefoy (2021) with a bootstrap band.

    E[target | z] is estimated on a grid by the kernel regression of their KDE ECE
    estimator (:func:`calibdash.metrics.ece.ece_kde`): triweight kernel, reflection at the
    ends of the support ([1/d, 1] for the top-label confidence, [0, 1] for one class's
    probability). The band is the pointwise percentile band of the same estimate over
    bootstrap resamples of the rows (bandwidth kept). Where fewer than
    :data:`MIN_EFFECTIVE_ROWS` predictions are within the kernel's reach there is no
    estimate (NaN, a gap in the figure).

    Parameters
    ----------
    P : array-like of shape (n, d)
    y : array-like of shape (n,)
    notion : {"top-label", "classwise"}, default="top-label"
        Top-label: confidence max_k p_k against "the prediction is right". Classwise:
        p_k of the class ``class_index`` against 1[y = k].
    class_index : int or None
        Required for "classwise", must be None for "top-label".
    grid : int, default=200
        Number of evenly spaced points of the support, both ends included.
    n_resamples : int, default=200
        Bootstrap resamples (0 disables the band).
    level : float, default=0.9
        Coverage of the percentile band.
    random_state : int, default=0
    bandwidth : "auto", "silverman" or float, default="auto"
        The kernel's standard deviation. "silverman" is Silverman's rule, the paper's: it
        follows the bulk of the confidences, so when most are within a hair of 1 it is tiny
        and the curve has no estimate where predictions are rare. "auto"
        (:func:`automatic_bandwidth`) is Silverman's rule with a floor that shrinks with n.

    Returns
    -------
    pandas.DataFrame
        One row per grid point: ``confidence`` (the point), ``accuracy`` (the estimate of
        E[target | z]), ``lower``, ``upper`` (the band), ``density`` (kernel estimate of the
        density of z, integrating to about 1 over the support) and ``rows`` (the effective
        number of predictions within the kernel's reach). Where ``rows`` is below
        :data:`MIN_EFFECTIVE_ROWS` the other columns but ``density`` are NaN (gaps in a
        plot). ``attrs`` holds ``bandwidth``, ``support`` and ``ece``
        (:func:`calibdash.metrics.ece.ece_kde` of the same problem with the same bandwidth).
    """
    notions.check_notion(notion, supported=("top-label", "classwise"), family="continuous reliability curve")
    P, y = notions.validate(P, y)
    n, d = P.shape
    if isinstance(grid, bool) or int(grid) != grid or grid < 2:
        raise ConfigError(f"grid must be a whole number of at least 2 points, got {grid!r}.")
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 0 or n_resamples == 1:
        raise ConfigError(f"n_resamples must be 0 (no band) or a whole number of at least 2, got {n_resamples!r}.")
    RESAMPLES.check(int(n_resamples), "the bootstrap band")
    if not 0 < level < 1:
        raise ConfigError(f"level must be between 0 and 1 (e.g. 0.9 for a 90% band), got {level!r}.")
    if notion == "top-label":
        if class_index is not None:
            raise ConfigError("class_index is for the classwise curve; leave it None for the top-label curve.")
        z, t = top_label(P, y)
    else:
        if class_index is None or isinstance(class_index, bool) or int(class_index) != class_index or not 0 <= class_index < d:
            raise ConfigError(f"The classwise curve needs class_index, a class between 0 and {d - 1}; got {class_index!r}.")
        z, t = one_class(P, y, int(class_index))
    low, high = kde_support(notion, d)
    if isinstance(bandwidth, str) and bandwidth not in BANDWIDTHS:
        raise ConfigError(f"bandwidth must be 'auto', 'silverman' or a positive number, got {bandwidth!r}.")
    if bandwidth == "auto":
        h = automatic_bandwidth(z, low, high)
    else:
        bandwidth = check_bandwidth(bandwidth)
        h = silverman_bandwidth(z) if bandwidth == "silverman" else bandwidth
    x = np.linspace(low, high, int(grid))
    S = kde_sums(x, z, h, low, high)
    N, D = S @ t, S @ np.ones(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        rows = np.where(D > 0, D**2 / (S.multiply(S) @ np.ones(n)), 0.0)
    enough = rows >= MIN_EFFECTIVE_ROWS
    acc = np.full(x.shape, np.nan)
    acc[enough] = N[enough] / D[enough]
    lo = np.full(x.shape, np.nan)
    hi = np.full(x.shape, np.nan)
    if n_resamples:
        blocks = [(S @ (W.T * t[:, None]), S @ W.T) for W in bootstrap_count_blocks(n, int(n_resamples), random_state)]
        Nb, Db = np.hstack([b[0] for b in blocks]), np.hstack([b[1] for b in blocks])
        with np.errstate(invalid="ignore", divide="ignore"):
            gb = np.where(Db > 0, Nb / np.where(Db > 0, Db, 1.0), np.nan)
        alpha = (1 - level) / 2
        ok = enough & (np.isfinite(gb).sum(axis=1) > 0)
        if ok.any():
            lo[ok] = np.nanquantile(gb[ok], alpha, axis=1)
            hi[ok] = np.nanquantile(gb[ok], 1 - alpha, axis=1)
    curve = pd.DataFrame({"confidence": x, "accuracy": acc, "lower": lo, "upper": hi, "density": D / n, "rows": rows})
    curve.attrs["bandwidth"] = float(h)
    curve.attrs["support"] = (float(low), float(high))
    # the ECE integral uses its own finer grid (the display grid is too coarse for it)
    curve.attrs["ece"] = kde_problem_ece(z, t, low, h)
    return curve


__all__ = ["STRATEGIES", "FIFTEEN_BIN_NAMES", "FIFTEEN_BIN_HELP", "diagram_ece_name", "bin_edges", "assign_bins",
           "reliability_table", "top_label", "one_class", "per_class_tables", "selected_recalibration",
           "MIN_EFFECTIVE_ROWS", "BANDWIDTHS", "automatic_bandwidth", "continuous_reliability_curve"]
