"""The variational estimator of calibration errors (Berta, Braun, Holzmueller, Bach & Jordan,
"Rethinking early stopping: refine, then calibrate"; docs/design.md, sections 3 and 5).

A proper loss l splits the expected loss of a model f into refinement and calibration: the
calibration error under l is E l(f, Y) - E l(g*(f), Y), with g* the true recalibration
map g*(p) = P(Y | f = p). The estimator replaces g* by a map g fitted by cross-fitting
(k folds: g is fitted on the other folds and evaluated on the held-out fold), and reports
the held-out mean of l(p, y) - l(g(p), y), as the probmetrics package's
``calib-err_<loss>_<calibrator>`` metrics do.

* Brier score, l(q, y) = sum_k (q_k - 1[y = k])^2 (probmetrics' ``brier``, no factor 1/2):
  E||f - e_Y||^2 - E||g(f) - e_Y||^2 = E||f - g*||^2 - E||g - g*||^2 for any g independent
  of the held-out labels, so the gap estimates the squared canonical error CCE_2^2, exactly
  in expectation at g = g* and below it otherwise.
* Log loss, l(q, y) = -log q_y: the gap estimates the KL calibration error E KL(g*(f) || f),
  again from below.

Both are lower bounds in expectation (a poor map g only loses), so among a few candidate
recalibrators the largest estimate is the most informative, not the smallest (taking the
maximum of many on the same data would add an upward selection bias).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from calibdash.core.notions import training_problems, validate
from calibdash.core.rows import take_rows
from calibdash.core.simplex import check_probabilities, log_clipped
from calibdash.deprecation import renamed_attribute
from calibdash.errors import ConfigError, InputError
from calibdash.metrics.isotonic import shuffled_kfold
from calibdash.metrics.recalibrators import OneDimensionalRecalibrator, as_recalibrator
from calibdash.params import clone

LOSSES = ("brier", "log")


@dataclass(frozen=True)
class VariationalEstimate:
    """A cross-fitted variational calibration error.

    Attributes
    ----------
    estimate : float
        Mean over all rows of the held-out loss gap l(p, y) - l(g(p), y) (the fold-size
        weighted mean of ``per_fold``). Brier: an estimate of CCE_2^2; log: of the KL
        calibration error. Signed: a map that only adds noise gives a negative value.
        (The retired name ``value`` still reads it for one release, with a
        :class:`DeprecationWarning`.)
    se : float
        Standard error over folds: sample standard deviation of ``per_fold`` / sqrt(k).
    per_fold : tuple of float
        The mean gap on each held-out fold.
    loss : str
    recalibrator : str
        The map's name (or class name for an object).
    n : int
        Number of rows.
    """

    estimate: float
    se: float
    per_fold: tuple
    loss: str
    recalibrator: str
    n: int

    value = renamed_attribute("estimate", "value")


@dataclass(frozen=True)
class VariationalTopLabel:
    """Cross-fitted variational top-label calibration error, split into over- and
    under-confidence.

    With c the confidence, t = 1[argmax is correct] and g(c) the cross-fitted map of c:

    * p = 1: ``estimate`` is the mean of sign(g(c) - c) (t - c), an estimate of the L1
      top-label error E|c - g*(c)| (probmetrics' proper L1 loss on the top class).
      ``overconfidence`` is the mean of (c - t) 1[g(c) < c], estimating E[(c - g*(c))_+],
      and ``underconfidence`` the mean of (t - c) 1[g(c) > c], estimating E[(g*(c) - c)_+];
      they sum to ``estimate`` exactly.
    * p = 2: ``estimate`` is the Brier gap of the confidence, the mean of (c - t)^2 - (g(c) - t)^2,
      an estimate of the *squared* L2 error E(c - g*(c))^2 (as the rest of calibdash reports
      squared errors). ``overconfidence`` uses the map only where it lowers the confidence,
      min(g(c), c), and so estimates E[(c - g*(c))_+^2]; ``underconfidence`` uses max(g(c), c)
      and estimates E[(g*(c) - c)_+^2]. They again sum to ``estimate`` exactly, so the square
      roots satisfy over^2 + under^2 = error^2 (``error`` and ``*_error`` are those roots).

    Every estimate is a lower bound in expectation. probmetrics' over- and under-confidence
    look at the top class as a binary problem and flip the direction when c < 1/2; here
    over-confidence always means c above the recalibrated g(c).

    Attributes
    ----------
    estimate, se, per_fold : float, float, tuple of float
        The p-th power of the error, its standard error over folds, and its mean on each
        held-out fold.
    overconfidence, overconfidence_se, underconfidence, underconfidence_se : float
        The two parts (p-th powers) and their standard errors over folds.
    p : int
    recalibrator : str
    n : int
    """

    estimate: float
    se: float
    per_fold: tuple
    overconfidence: float
    overconfidence_se: float
    underconfidence: float
    underconfidence_se: float
    p: int
    recalibrator: str
    n: int

    value = renamed_attribute("estimate", "value")

    @property
    def error(self):
        """The Lp error, max(0, estimate) ** (1/p)."""
        return max(0.0, self.estimate) ** (1.0 / self.p)

    @property
    def overconfidence_error(self):
        return max(0.0, self.overconfidence) ** (1.0 / self.p)

    @property
    def underconfidence_error(self):
        return max(0.0, self.underconfidence) ** (1.0 / self.p)


def check_loss(loss):
    if loss not in LOSSES:
        raise ConfigError(f"Unknown loss {loss!r}; choose one of {', '.join(map(repr, LOSSES))}.")
    return loss


def row_losses(Q, y, loss):
    """Per-row loss of probabilities ``Q`` (n, d) at labels ``y``: the Brier score
    sum_k (q_k - 1[y = k])^2 or the log loss -log q_y (clipped log, so finite)."""
    check_loss(loss)
    rows = np.arange(Q.shape[0])
    q_y = Q[rows, y]
    if loss == "log":
        return -log_clipped(q_y)
    # sum_k q_k^2 - 2 q_y + 1, without forming the one-hot matrix
    return np.einsum("ij,ij->i", Q, Q) - 2.0 * q_y + 1.0


def holdout_loss_gap(recalibrator_fitted, P_test, y_test, *, loss="brier"):
    """Per-row loss differences l(p, y) - l(g(p), y) of a fitted map on held-out data.

    Their mean is the variational estimate on that set (so a caller with its own split,
    such as the pipeline's holdout set and fold models, can form the estimate and its
    standard error itself).

    Parameters
    ----------
    recalibrator_fitted : fitted object with ``predict_proba(P)``
    P_test : array-like of shape (n, d)
    y_test : array-like of shape (n,)
    loss : {"brier", "log"}, default="brier"

    Returns
    -------
    ndarray of shape (n,)
    """
    check_loss(loss)
    P, y = validate(P_test, y_test)
    if not hasattr(recalibrator_fitted, "predict_proba"):
        raise ConfigError(f"recalibrator_fitted must have predict_proba(P); got {recalibrator_fitted!r}.")
    G = check_probabilities(recalibrator_fitted.predict_proba(P), name="the recalibrated probabilities")
    if G.shape != P.shape:
        raise ConfigError(f"The recalibrator returned shape {G.shape} for P of shape {P.shape}.")
    return row_losses(P, y, loss) - row_losses(G, y, loss)


def cross_fitting_folds(n, n_folds=5, random_state=0):
    """The (train, test) index pairs of the cross-fitting: scikit-learn's
    ``KFold(n_folds, shuffle=True, random_state=random_state)``, computed without it
    (:func:`calibdash.metrics.isotonic.shuffled_kfold`)."""
    if isinstance(n_folds, bool) or not isinstance(n_folds, numbers.Integral) or n_folds < 2:
        raise ConfigError(f"n_folds must be an integer of at least 2, got {n_folds!r}.")
    if n < 2 * n_folds:
        raise InputError(
            f"{n} rows are too few for {n_folds} folds: every fold needs at least 2 rows. "
            "Use more data or fewer folds."
        )
    return shuffled_kfold(n, int(n_folds), random_state)


def _name(recalibrator):
    return recalibrator if isinstance(recalibrator, str) else type(recalibrator).__name__


def _fold_summary(rows, folds):
    per_fold = np.array([rows[test].mean() for _, test in folds])
    se = float(np.std(per_fold, ddof=1) / np.sqrt(len(folds)))
    return float(np.mean(rows)), se, tuple(float(v) for v in per_fold)


def variational_error(P, y, *, recalibrator="temperature", loss="brier", n_folds=5, random_state=0, **recalibrator_params):
    """Cross-fitted variational calibration error of Berta et al.

    Parameters
    ----------
    P : array-like of shape (n, d)
        Predicted probabilities.
    y : array-like of shape (n,)
        Labels.
    recalibrator : {"temperature", "isotonic", "logistic", "boosting"} or object, default="temperature"
        The map g (see :mod:`calibdash.metrics.recalibrators`), or an unfitted object with
        ``fit(P, y)`` and ``predict_proba(P)`` (cloned for each fold).
    loss : {"brier", "log"}, default="brier"
        "brier" estimates the squared canonical error CCE_2^2; "log" the KL calibration error.
    n_folds : int, default=5
    random_state : int, default=0
        Seed of the folds (:func:`cross_fitting_folds`).
    **recalibrator_params
        Hyperparameters of a named map, e.g. ``C=10.0`` for "logistic".

    Returns
    -------
    VariationalEstimate
    """
    check_loss(loss)
    P, y = validate(P, y)
    base = as_recalibrator(recalibrator, **recalibrator_params)
    folds = cross_fitting_folds(P.shape[0], n_folds, random_state)
    gaps = np.empty(P.shape[0])
    for train, test in folds:
        g = clone(base).fit(take_rows(P, train), take_rows(y, train))
        gaps[test] = holdout_loss_gap(g, take_rows(P, test), take_rows(y, test), loss=loss)
    value, se, per_fold = _fold_summary(gaps, folds)
    return VariationalEstimate(value, se, per_fold, loss, _name(recalibrator), int(P.shape[0]))


def top_label_gaps(c, t, g, p):
    """Per-row (total, over-confidence, under-confidence) contributions of the top-label
    estimator, given the confidence ``c``, correctness ``t`` and the map's values ``g``."""
    below, above = g < c, g > c
    if p == 1:
        return np.sign(g - c) * (t - c), np.where(below, c - t, 0.0), np.where(above, t - c, 0.0)
    gap = (c - t) ** 2 - (g - t) ** 2
    return gap, np.where(below, gap, 0.0), np.where(above, gap, 0.0)


def top_label_inputs(P, y):
    """(c, S, t): the confidence, the two-column simplex [c, 1 - c] the one-dimensional
    maps are fitted on, and the 0/1 correctness, with the top label found once."""
    ((problem, _, T),) = training_problems(P, y, "top-label")
    return problem.Z[:, 0], problem.S, T[:, 0]


def variational_top_label(P, y, *, p=1, recalibrator="isotonic", n_folds=5, random_state=0, **recalibrator_params):
    """Cross-fitted variational top-label calibration error with over- and under-confidence.

    The map g is fitted on the confidence c = max_k p_k against correctness (on the
    two-class simplex [c, 1 - c], see :class:`calibdash.metrics.recalibrators.OneDimensionalRecalibrator`),
    on the other folds; see :class:`VariationalTopLabel` for the estimates.

    Parameters
    ----------
    P, y : probabilities (n, d) and labels (n,)
    p : {1, 2}, default=1
        1 for the L1 error E|c - g*(c)|; 2 for the squared L2 error E(c - g*(c))^2.
    recalibrator : name or object, default="isotonic"
        Isotonic regression is the usual map of a single score; temperature scaling of
        [c, 1 - c] can only bend the confidence symmetrically about 1/2.
    n_folds, random_state, **recalibrator_params : as in :func:`variational_error`

    Returns
    -------
    VariationalTopLabel
    """
    if isinstance(p, bool) or p not in (1, 2):
        raise ConfigError(f"p must be 1 or 2, got {p!r}.")
    P, y = validate(P, y)
    base = as_recalibrator(recalibrator, **recalibrator_params)
    folds = cross_fitting_folds(P.shape[0], n_folds, random_state)
    c, S, t = top_label_inputs(P, y)
    g = np.empty(P.shape[0])
    for train, test in folds:
        g[test] = OneDimensionalRecalibrator(base).fit(take_rows(S, train), take_rows(t, train)).predict(take_rows(S, test))
    total, over, under = top_label_gaps(c, t, g, p)
    value, se, per_fold = _fold_summary(total, folds)
    over_value, over_se, _ = _fold_summary(over, folds)
    under_value, under_se, _ = _fold_summary(under, folds)
    return VariationalTopLabel(
        value, se, per_fold, over_value, over_se, under_value, under_se, int(p), _name(recalibrator), int(P.shape[0])
    )


__all__ = [
    "LOSSES",
    "VariationalEstimate",
    "VariationalTopLabel",
    "variational_error",
    "variational_top_label",
    "holdout_loss_gap",
    "cross_fitting_folds",
    "row_losses",
    "top_label_gaps",
    "top_label_inputs",
]
