"""Recalibration plug-in estimators: isotonic, logistic and boosting (docs/design.md, section 3).

A recalibration map g fitted on the training data gives h(p, p') = <p - g(p), p' - g(p')>.
The notion decides what g is fitted on:

* canonical: g maps the whole vector p to a recalibrated vector (d features p - g(p));
* top-label: g is fitted on the confidence c = max_k p_k against correctness, on the
  two-class simplex [c, 1 - c] (one feature c - g(c)); unlike the temperature family, which
  rescales the whole vector and reads off the top class, these maps see only c, the
  quantity the top-label error conditions on;
* classwise: one such one-dimensional map per class, fitted on p_k against 1[y = k]
  (d features p_k - g_k(p_k); h is their sum of products, as the notion's sum over classes).

The maps are in :mod:`calibdash.metrics.recalibrators`; every seed is fixed, so refits are identical.
"""

from __future__ import annotations

import numpy as np

from calibdash.core.notions import problems
from calibdash.estimators.base import CalibrationEstimator
from calibdash.metrics.recalibrators import BoostingRecalibrator, IsotonicRecalibrator, LogisticRecalibrator, OneDimensionalRecalibrator


class RecalibrationEstimator(CalibrationEstimator):
    """Base class of the plug-in families built on a map of :mod:`calibdash.metrics.recalibrators`.

    Subclasses set ``family``, ``path_param`` and implement ``_recalibrator()`` (an
    unfitted map carrying the estimator's hyperparameters).
    """

    def _recalibrator(self):
        raise NotImplementedError

    def _validate_params(self):
        super()._validate_params()
        self._recalibrator()._check_params()

    def _fit(self, P, y):
        base = self._recalibrator()
        if self.notion == "canonical":
            self.maps_ = [base.fit(P, y)]
            return
        self.maps_ = [OneDimensionalRecalibrator(base).fit(p.S, T[:, 0]) for p, _, T in self._training_problems(P, y)]

    def _bilinear_form(self, P):
        if self.notion == "canonical":
            return P - self.maps_[0].predict_proba(P), None
        cols = [p.Z[:, 0] - g.predict(p.S) for p, g in zip(problems(P, self.notion), self.maps_)]
        return np.column_stack(cols), None


class IsotonicEstimator(RecalibrationEstimator):
    """Plug-in estimator from isotonic recalibration (one-vs-rest and renormalised for
    canonical; a single increasing map of the confidence or class probability otherwise).

    Parameters
    ----------
    notion : {"top-label", "canonical", "classwise"}
    y_min : float in [0, 1), default=0.0
        Floor on the isotonic values (see :class:`calibdash.metrics.recalibrators.IsotonicRecalibrator`).
        Isotonic regression has no smoothing parameter; the default grid holds this one value.
    """

    family = "isotonic"
    path_param = "y_min"

    def __init__(self, notion="canonical", y_min=0.0):
        self.notion = notion
        self.y_min = y_min

    def _recalibrator(self):
        return IsotonicRecalibrator(y_min=self.y_min)


class LogisticEstimator(RecalibrationEstimator):
    """Plug-in estimator from logistic recalibration on the log-probabilities (multinomial
    for canonical; on (log c, log(1 - c)) for the one-dimensional notions).

    Parameters
    ----------
    notion : {"top-label", "canonical", "classwise"}
    C : float, default=1.0
        Inverse L2 penalty strength; the tuned hyperparameter.
    max_iter : int, default=1000
    """

    family = "logistic"
    path_param = "C"

    def __init__(self, notion="canonical", C=1.0, max_iter=1000):
        self.notion = notion
        self.C = C
        self.max_iter = max_iter

    def _recalibrator(self):
        return LogisticRecalibrator(C=self.C, max_iter=self.max_iter)


class BoostingEstimator(RecalibrationEstimator):
    """Plug-in estimator from gradient-boosted trees on the log-probabilities.

    Slow for many classes (one tree per class and iteration); the seed is fixed.

    Parameters
    ----------
    notion : {"top-label", "canonical", "classwise"}
    learning_rate : float, default=0.1
        The tuned hyperparameter: with ``max_iter`` fixed it sets how far the trees move
        from the training class frequencies (their starting point) towards the labels.
    max_iter : int, default=100
    max_leaf_nodes : int, default=31
    """

    family = "boosting"
    path_param = "learning_rate"

    def __init__(self, notion="canonical", learning_rate=0.1, max_iter=100, max_leaf_nodes=31):
        self.notion = notion
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_leaf_nodes = max_leaf_nodes

    def _recalibrator(self):
        return BoostingRecalibrator(
            learning_rate=self.learning_rate, max_iter=self.max_iter, max_leaf_nodes=self.max_leaf_nodes, random_state=0
        )


__all__ = ["RecalibrationEstimator", "IsotonicEstimator", "LogisticEstimator", "BoostingEstimator"]
