"""The common shape of every calibration estimation function h(z, z').

Each estimator is bilinear, h(z, z') = f(z)^T G f(z'), with features f of small dimension
(plug-in estimators h = <v(z), v(z')> have G = identity). ``bilinear_form`` returns (F, G);
everything else (h, its diagonal, the squared-error estimate, the risk) follows from it.
"""

from __future__ import annotations

import numpy as np

from calibdash.core.notions import NOTIONS, check_notion, problems, residuals, training_problems, validate
from calibdash.core.risk import quadratic_forms
from calibdash.core.simplex import check_labels
from calibdash.errors import ConfigError, InputError, check_is_fitted
from calibdash.params import Parametrized


def block_diag_or_none(blocks):
    """Block-diagonal matrix of ``blocks``; None when every block is None (identity)."""
    if all(b is None for b in blocks):
        return None
    sizes = [b.shape[0] for b in blocks]
    out = np.zeros((sum(sizes), sum(sizes)))
    s = 0
    for b, m in zip(blocks, sizes):
        out[s : s + m, s : s + m] = b
        s += m
    return out


class CalibrationEstimator(Parametrized):
    """Base class: fit on (P, y), then evaluate h, its diagonal and the estimates.

    Subclasses set ``family``, ``supported_notions`` and ``path_param`` (the hyperparameter
    a grid search varies), implement ``_fit(P, y)`` and ``_bilinear_form(P)``, and may
    implement ``_path_forms`` to share work across a grid.
    """

    family = None
    supported_notions = NOTIONS
    path_param = None
    # Whether h = <v(z), v(z')> (G the identity), so that g(z) = z - v(z) is a recalibration
    # map (:meth:`recalibration`); the Kronecker estimator's h is not of that form.
    plug_in = True

    # -- parameters -------------------------------------------------------------------
    def _validate_params(self):
        check_notion(self.notion, self.supported_notions, self.family)

    # -- fitting ----------------------------------------------------------------------
    def fit(self, P, y):
        """Fit the estimator on training probabilities and labels.

        Parameters
        ----------
        P : array-like of shape (n, d)
            Predicted probabilities; rows on the simplex.
        y : array-like of shape (n,)
            Integer labels in [0, d).

        Returns
        -------
        self
        """
        self._validate_params()
        P, y = validate(P, y)
        self.n_classes_ = P.shape[1]
        self.n_train_ = P.shape[0]
        self._fit(P, y)
        return self

    def _training_problems(self, P, y):
        """(Problem, residual block, target block) for each problem of the notion; computed
        once per :meth:`fit_path`, however many grid values it fits."""
        memo = getattr(self, "_problems_memo", None)
        if memo is not None and "problems" in memo:
            return memo["problems"]
        out = training_problems(P, y, self.notion)
        if memo is not None:
            memo["problems"] = out
        return out

    def _check_fitted(self, P):
        check_is_fitted(self)
        P, _ = validate(P)
        if P.shape[1] != self.n_classes_:
            raise InputError(f"P has {P.shape[1]} classes but the estimator was fitted on {self.n_classes_}.")
        return P

    # -- evaluation -------------------------------------------------------------------
    def bilinear_form(self, P):
        """Features F (n, r) and middle matrix G (r, r) or None (identity) with h = F G F^T."""
        P = self._check_fitted(P)
        return self._bilinear_form(P)

    def recalibration(self, P):
        """The recalibrated values g(z) = z - v(z) of a plug-in estimator h = <v, v'>.

        Returns (n, 1) for top-label (the estimated probability of being correct given the
        confidence) and (n, d) for canonical and classwise. The Kronecker estimator is not
        a plug-in and has no such map.
        """
        if not self.plug_in:
            raise ConfigError(f"The {self.family!r} estimator is not a plug-in, so it has no recalibration map.")
        F, _ = self.bilinear_form(P)
        P = self._check_fitted(P)
        Z = np.hstack([p.Z for p in problems(P, self.notion)])
        return Z - F

    def h(self, P_a, P_b):
        """Matrix of h(z_a, z_b) for all pairs of rows; meant for small inputs and tests."""
        Fa, G = self.bilinear_form(P_a)
        Fb, _ = self.bilinear_form(P_b)
        return Fa @ Fb.T if G is None else Fa @ G @ Fb.T

    def h_diag(self, P):
        """The values h(z_i, z_i), without forming the n x n matrix."""
        F, G = self.bilinear_form(P)
        if G is None:
            return np.einsum("ij,ij->i", F, F)
        return quadratic_forms(F, G)

    def squared_error(self, P):
        """Signed estimate of the squared calibration error: the mean of h(z_i, z_i)."""
        return float(np.mean(self.h_diag(P)))

    def calibration_error(self, P):
        """Estimate of the calibration error: sqrt of the squared error clipped at 0."""
        return float(np.sqrt(max(0.0, self.squared_error(P))))

    def compact(self):
        """Drop fitted state that the estimates and the map do not need, once the estimator's
        grid is ranked (the fold models a result keeps); the numbers change at most at
        rounding. The base class keeps everything; the two-step ridge holds more than its
        map needs (:meth:`calibdash.estimators.UKKREstimator.compact`).

        Returns
        -------
        self
        """
        check_is_fitted(self)
        return self

    # -- grids ------------------------------------------------------------------------
    def fit_path(self, P, y, values, cache=None):
        """Fit one estimator per value of ``path_param``, sharing the expensive work.

        Parameters
        ----------
        P, y : training data, as in :meth:`fit`.
        values : sequence
            Values of the family's tuned hyperparameter (``self.path_param``).
        cache : dict, optional
            Shared between paths fitted on the same (P, y), so that families with common
            work (the kernel ridge estimators' eigenbasis) do it once.

        Returns
        -------
        EstimatorPath
        """
        self._validate_params()
        P, y = validate(P, y)
        values = list(values)
        if not values:
            raise ConfigError(f"Give at least one value of {self.path_param!r}.")
        estimators = [self.__class__(**{**self.get_params(), self.path_param: v}) for v in values]
        for e in estimators:
            e._validate_params()
        # the notion's training blocks (n x d residuals and targets for canonical) serve
        # every path fitted on the same (P, y)
        memo = {} if cache is None else cache.setdefault(("training-problems", self.notion), {})
        for e in (self, *estimators):
            e._problems_memo = memo
        try:
            self._fit_path(estimators, P, y, cache if cache is not None else {})
        finally:
            for e in (self, *estimators):
                del e._problems_memo
        for e in estimators:
            e.n_classes_ = P.shape[1]
            e.n_train_ = P.shape[0]
        return EstimatorPath(self.path_param, values, estimators)

    def _fit_path(self, estimators, P, y, cache):
        for e in estimators:
            e._fit(P, y)

    @classmethod
    def _path_forms(cls, estimators, P):
        return [e._bilinear_form(P) for e in estimators]

    @classmethod
    def _path_risks(cls, estimators, P, U):
        from calibdash.core.risk import path_risks

        return path_risks(U, cls._path_forms(estimators, P))


class EstimatorPath:
    """Fitted estimators along one hyperparameter, sharing the work a grid allows.

    Attributes
    ----------
    param : str
        The hyperparameter that varies.
    values : list
        Its values, in order.
    estimators : list of CalibrationEstimator
        One fitted estimator per value; each works on its own like any other.
    """

    def __init__(self, param, values, estimators):
        self.param = param
        self.values = values
        self.estimators = estimators

    def __len__(self):
        return len(self.estimators)

    def __iter__(self):
        return iter(self.estimators)

    def bilinear_forms(self, P):
        """(F, G) of every estimator on ``P``, computing shared parts once."""
        P = self.estimators[0]._check_fitted(P)
        return type(self.estimators[0])._path_forms(self.estimators, P)

    def risks(self, P, y):
        """Eq. (20) of every estimator on held-out (P, y)."""
        first = self.estimators[0]
        P = first._check_fitted(P)
        y = check_labels(y, P.shape[0], P.shape[1])
        U = residuals(P, y, first.notion)
        return type(first)._path_risks(self.estimators, P, U)
