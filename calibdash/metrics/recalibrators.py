"""Recalibration maps g fitted on (P, y): the building blocks of the plug-in estimators
h(p, p') = <p - g(p), p' - g(p')> and of the variational estimator (docs/design.md,
sections 3 and 5).

Every map follows scikit-learn's classifier shape: ``fit(P, y)`` on probabilities and
integer labels, then ``predict_proba(P)`` returns recalibrated probabilities with one column
per class of ``P`` (a class absent from the training labels gets probability 0). The maps
that work on logarithms take ``calibdash.core.simplex.log_clipped(P)``, so exact zeros become
log(2.2e-308) ~ -708 rather than -inf.

One-dimensional problems (the top-label confidence, or one class of the classwise notion)
use the same maps on the two-class simplex [z, 1 - z] with the event as class 0: see
:class:`OneDimensionalRecalibrator`.
"""

from __future__ import annotations

import numbers

import numpy as np

from calibdash.core.notions import validate
from calibdash.core.simplex import log_clipped
from calibdash.core.temperature import fit_temperature, temperature_scale
from calibdash.core.threads import one_blas_thread
from calibdash.core.validation import check_positive
from calibdash.errors import ConfigError, InputError, check_is_fitted
from calibdash.metrics.isotonic import IsotonicMap
from calibdash.params import Parametrized, clone

RECALIBRATORS = ("temperature", "isotonic", "logistic", "boosting")


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ConfigError(f"{name} must be an integer of at least {minimum}, got {value!r}.")


class _Recalibrator(Parametrized):
    """Shared checks: validated inputs, the class count, and the fitted-state test."""

    def _check_params(self):
        """Raise ConfigError for a bad hyperparameter (before any work is done)."""

    def fit(self, P, y):
        """Fit the map on probabilities ``P`` (n, d) and labels ``y`` (n,).

        Returns
        -------
        self
        """
        return self._fit_checked(P, y)

    def _fit_checked(self, P, y, **options):
        """Check the settings and the inputs, then ``_fit(P, y, **options)``."""
        self._check_params()
        P, y = validate(P, y)
        self.n_classes_ = P.shape[1]
        self._fit(P, y, **options)
        return self

    def predict_proba(self, P):
        """Recalibrated probabilities g(P), shape (n, d), rows on the simplex."""
        check_is_fitted(self)
        P, _ = validate(P)
        if P.shape[1] != self.n_classes_:
            raise InputError(f"P has {P.shape[1]} classes but the map was fitted on {self.n_classes_}.")
        return self._predict_proba(P)


class _SklearnClassifierOnLogs(_Recalibrator):
    """A scikit-learn classifier on the features log p. The classifier only knows the
    classes present in the training labels; their columns are put back in place and the
    others get probability 0. With a single training class there is nothing to learn
    (scikit-learn refuses to fit), and that class gets probability 1.

    The classifier runs with one OpenMP and one BLAS thread: their worker threads
    busy-wait, and on shared cores (this project's 2-core machines run several jobs) a
    300-row boosting fit took 158 s with the default threads and under 3 s with one, a
    logistic fit on 2,000 CIFAR-100 rows 21 s instead of 1 s. Parallelism belongs to the
    caller (the pipeline runs folds in parallel, each on one thread)."""

    def _make_classifier(self):
        raise NotImplementedError

    def _fit(self, P, y):
        classes = np.unique(y)
        self.classes_ = classes
        if len(classes) == 1:
            self.classifier_ = None
            return
        with one_blas_thread():
            self.classifier_ = self._make_classifier().fit(log_clipped(P), y)

    def _predict_proba(self, P):
        out = np.zeros(P.shape)
        if self.classifier_ is None:
            out[:, self.classes_[0]] = 1.0
            return out
        with one_blas_thread():
            out[:, self.classifier_.classes_] = self.classifier_.predict_proba(log_clipped(P))
        return out


class TemperatureRecalibrator(_Recalibrator):
    """Temperature scaling, g(p) = softmax(log p / T).

    Parameters
    ----------
    temperature : float or "fit", default="fit"
        A fixed T > 0, or "fit" to minimise the negative log-likelihood on the training
        data (:func:`calibdash.estimators.temperature.fit_temperature`).
    """

    def __init__(self, temperature="fit"):
        self.temperature = temperature

    def _check_params(self):
        if self.temperature != "fit":
            check_positive("temperature", self.temperature)

    def _fit(self, P, y):
        self.temperature_ = fit_temperature(P, y) if self.temperature == "fit" else float(self.temperature)

    def _predict_proba(self, P):
        return temperature_scale(P, self.temperature_)


class IsotonicRecalibrator(_Recalibrator):
    """One-vs-rest isotonic regression, then renormalised rows.

    For each class k an increasing map of p_k is fitted to 1[y = k]
    (:class:`calibdash.metrics.isotonic.IsotonicMap`, scikit-learn's ``IsotonicRegression``
    to the last digit; inputs outside the training range take the nearest end value); the d
    fitted values of a row are then divided by their sum.

    A row whose d fitted values are all 0 (every class's map is 0 there, which happens
    with ``y_min=0`` when a query lies where no training label of its likely classes
    occurred) has nothing to renormalise: it gets the uniform distribution 1/d, as in
    scikit-learn's ``CalibratedClassifierCV``. ``y_min > 0`` avoids such rows.

    Parameters
    ----------
    y_min : float in [0, 1), default=0.0
        Floor on each one-vs-rest value before renormalising. It keeps probabilities off
        exactly 0, which matters for the log loss (an exact 0 costs log(2.2e-308) ~ 708
        there) and barely for the Brier score.
    """

    def __init__(self, y_min=0.0):
        self.y_min = y_min

    def _check_params(self):
        y_min = self.y_min
        if isinstance(y_min, bool) or not isinstance(y_min, numbers.Real) or not 0 <= y_min < 1:
            raise ConfigError(f"y_min must be a number in [0, 1), got {y_min!r}.")

    def fit(self, P, y, *, order=None):
        """Fit the maps on probabilities ``P`` (n, d) and labels ``y`` (n,); returns self.

        ``order``: with two columns, optional rows that sort ``P[:, 0]`` when known (for
        instance merged from sorted parts), checked by :class:`IsotonicMap`; the maps are the
        same with or without it."""
        return self._fit_checked(P, y, order=order)

    def _fit(self, P, y, order=None):
        if P.shape[1] != 2:
            self.maps_ = [IsotonicMap(y_min=float(self.y_min), y_max=1.0).fit(P[:, k], (y == k).astype(np.float64))
                          for k in range(P.shape[1])]
            return
        # Two columns (a one-dimensional problem's [z, 1 - z]): the second falls as the first
        # rises, so the first's order reversed sorts it unless rounding breaks a tie, which the
        # map checks. One sort instead of two (1.2 s each at 6,400,000 rows); the same maps.
        if order is None:
            order = np.argsort(P[:, 0], kind="stable")
        self.maps_ = [IsotonicMap(y_min=float(self.y_min), y_max=1.0).fit(P[:, k], (y == k).astype(np.float64),
                                                                         order=order if k == 0 else order[::-1])
                      for k in range(2)]

    def _predict_proba(self, P):
        G = np.column_stack([m.predict(P[:, k]) for k, m in enumerate(self.maps_)])
        total = G.sum(axis=1, keepdims=True)
        uniform = np.full_like(G, 1.0 / G.shape[1])
        return np.divide(G, total, out=uniform, where=total > 0)


class LogisticRecalibrator(_SklearnClassifierOnLogs):
    """Multinomial logistic regression on the log-probabilities ("matrix scaling" with an
    L2 penalty on the weights; the intercepts are not penalised).

    Parameters
    ----------
    C : float, default=1.0
        Inverse strength of the L2 penalty (scikit-learn's ``C``): large values approach
        unpenalised matrix scaling, small ones shrink towards the training class frequencies.
        The penalty pulls towards those frequencies, not towards the model's own
        probabilities, so with many classes and few rows the map can be worse than no
        recalibration: on 8,000 CIFAR-100 rows (d = 100, 10,100 weights) C = 1 and
        C = 0.01 both raised the held-out Brier score, where temperature scaling lowered it.
    max_iter : int, default=1000
        Iterations of L-BFGS.
    """

    def __init__(self, C=1.0, max_iter=1000):
        self.C = C
        self.max_iter = max_iter

    def _check_params(self):
        check_positive("C", self.C)
        _check_int("max_iter", self.max_iter, 1)

    def _make_classifier(self):
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=float(self.C), max_iter=int(self.max_iter))


class BoostingRecalibrator(_SklearnClassifierOnLogs):
    """Gradient-boosted trees (scikit-learn's ``HistGradientBoostingClassifier``) on the
    log-probabilities.

    Slow for many classes: each boosting iteration grows one tree per class, so d = 100
    means 100 x ``max_iter`` trees per fit (see BENCHMARKS.md for the cost on CIFAR-100).

    Parameters
    ----------
    learning_rate : float, default=0.1
    max_iter : int, default=100
        Boosting iterations. Early stopping is off, so every fit uses all its rows and the
        result does not depend on an internal validation split.
    max_leaf_nodes : int, default=31
    random_state : int, default=0
        Fixed seed: identical results on reruns.
    """

    def __init__(self, learning_rate=0.1, max_iter=100, max_leaf_nodes=31, random_state=0):
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_leaf_nodes = max_leaf_nodes
        self.random_state = random_state

    def _check_params(self):
        check_positive("learning_rate", self.learning_rate)
        _check_int("max_iter", self.max_iter, 1)
        _check_int("max_leaf_nodes", self.max_leaf_nodes, 2)

    def _make_classifier(self):
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(
            learning_rate=float(self.learning_rate),
            max_iter=int(self.max_iter),
            max_leaf_nodes=int(self.max_leaf_nodes),
            early_stopping=False,
            random_state=self.random_state,
        )


_CLASSES = {
    "temperature": TemperatureRecalibrator,
    "isotonic": IsotonicRecalibrator,
    "logistic": LogisticRecalibrator,
    "boosting": BoostingRecalibrator,
}


def make_recalibrator(name, **params):
    """An unfitted recalibration map by name.

    Parameters
    ----------
    name : {"temperature", "isotonic", "logistic", "boosting"}
    **params
        The map's hyperparameters (see each class).

    Raises
    ------
    ConfigError
        For an unknown name or parameter, or a bad value, listing the valid choices.
    """
    if not isinstance(name, str) or name not in _CLASSES:
        raise ConfigError(f"Unknown recalibrator {name!r}; choose one of {', '.join(map(repr, RECALIBRATORS))}.")
    cls = _CLASSES[name]
    valid = list(cls._get_param_names())
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ConfigError(
            f"Unknown parameter(s) {', '.join(map(repr, unknown))} for the {name!r} recalibrator; "
            f"valid parameters: {', '.join(map(repr, valid))}."
        )
    out = cls(**params)
    out._check_params()
    return out


def as_recalibrator(recalibrator, **params):
    """A fresh unfitted map from a name (with ``params``) or from an unfitted object with
    ``fit`` and ``predict_proba`` (cloned, so the caller's object is never fitted)."""
    if isinstance(recalibrator, str):
        return make_recalibrator(recalibrator, **params)
    if not (hasattr(recalibrator, "fit") and hasattr(recalibrator, "predict_proba")):
        raise ConfigError(
            f"recalibrator must be one of {', '.join(map(repr, RECALIBRATORS))} or an object with "
            f"fit(P, y) and predict_proba(P); got {recalibrator!r}."
        )
    if params:
        raise ConfigError("Parameters can only be given with a recalibrator name; set them on the object instead.")
    return clone(recalibrator)


class OneDimensionalRecalibrator:
    """g(z) = estimated P(event | z) for a one-dimensional problem.

    The map is fitted on the two-class simplex S = [z, 1 - z] (the ``S`` of
    :class:`calibdash.core.notions.Problem`, whose complement is computed accurately) with the
    event (t = 1) as class 0. For temperature scaling this is g(z) = z^b / (z^b + (1 - z)^b)
    with b = 1 / T; for logistic regression a logistic map of (log z, log(1 - z)) ("beta
    calibration"); isotonic regression is the usual increasing map of z.

    Parameters
    ----------
    recalibrator : unfitted recalibration map (cloned on fit)
    """

    def __init__(self, recalibrator):
        self.recalibrator = recalibrator

    def fit(self, S, t, *, order=None):
        """Fit on the two-column simplex ``S`` (n, 2) and the 0/1 event indicator ``t``.

        ``order``: optional rows that sort z = ``S[:, 0]``, when known; an isotonic map then
        does not sort again (:meth:`IsotonicRecalibrator.fit`), the others do not sort."""
        t = np.asarray(t).reshape(-1)
        recalibrator = clone(self.recalibrator)
        extra = {"order": order} if order is not None and isinstance(recalibrator, IsotonicRecalibrator) else {}
        self.recalibrator_ = recalibrator.fit(S, (t == 0).astype(np.int64), **extra)
        return self

    def predict(self, S):
        """g(z) of each row of ``S``, shape (n,)."""
        return self.recalibrator_.predict_proba(S)[:, 0]


__all__ = [
    "RECALIBRATORS",
    "make_recalibrator",
    "as_recalibrator",
    "TemperatureRecalibrator",
    "IsotonicRecalibrator",
    "LogisticRecalibrator",
    "BoostingRecalibrator",
    "OneDimensionalRecalibrator",
]
