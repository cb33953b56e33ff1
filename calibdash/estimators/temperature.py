"""Recalibration plug-in with temperature scaling (docs/design.md, section 3).

A temperature map g fitted on the training data gives h(z, z') = <z - g(z), z' - g(z')>.
What g sees is what the notion conditions on:

* canonical: g(p) = softmax(log p / T) on the whole vector, one T (d features p - g(p));
* top-label: g is fitted on the confidence c = max_k p_k alone, on the two-class simplex
  [c, 1 - c] with "correct" as the event, g(c) = c^b / (c^b + (1 - c)^b) with b = 1 / T
  (one feature c - g(c));
* classwise: one such map per class k, fitted on p_k against 1[y = k] (d features
  p_k - g_k(p_k)).

Why not rescale the whole vector for top-label and read off the top class, as temperature
scaling is usually applied? That g depends on the other entries of p, so h estimates
E[(c - P(correct | p))^2], which is larger than the top-label error E[(c - P(correct | c))^2],
and the risk favours it precisely because it sees more than the confidence. The maps here
are the one-dimensional temperature maps of
:class:`calibdash.metrics.recalibrators.OneDimensionalRecalibrator`, like the other plug-ins in
:mod:`calibdash.estimators.recalibration`.
"""

from __future__ import annotations

import numpy as np

from calibdash.core.notions import problems
from calibdash.core.temperature import fit_temperature, temperature_scale
from calibdash.core.validation import check_positive
from calibdash.errors import NotFittedError
from calibdash.estimators.base import CalibrationEstimator


class TemperatureEstimator(CalibrationEstimator):
    """Plug-in estimator from temperature-scaling recalibration.

    Canonical rescales the whole vector, softmax(log p / T). Top-label fits one temperature
    on the confidence alone and classwise one per class on p_k alone, each on the two-class
    simplex [z, 1 - z]: g(z) = z^b / (z^b + (1 - z)^b) with b = 1 / T. (Rescaling the whole
    vector would make the top-label h depend on more than the confidence; see the module
    docstring.)

    Parameters
    ----------
    notion : {"top-label", "canonical", "classwise"}
    temperature : float or "fit", default="fit"
        A fixed temperature T > 0 (a grid value) used for every problem of the notion, or
        "fit" to minimise the negative log-likelihood of each problem on the training data.

    Attributes
    ----------
    temperatures_ : ndarray of shape (n_problems,)
        The temperature of each problem: one for canonical and top-label, one per class
        for classwise.
    temperature_ : float
        The single temperature of canonical and top-label. Classwise has no single one:
        the attribute raises AttributeError there; read ``temperatures_``.
    """

    family = "temperature"
    path_param = "temperature"

    def __init__(self, notion="canonical", temperature="fit"):
        self.notion = notion
        self.temperature = temperature

    def _validate_params(self):
        super()._validate_params()
        check_positive("temperature", self.temperature, allow=("fit",))

    @property
    def temperature_(self):
        if not hasattr(self, "temperatures_"):
            raise NotFittedError("temperature_ is set by fit(P, y).")  # an AttributeError too
        if self.notion == "classwise":
            raise AttributeError("A classwise temperature estimator has one temperature per class: read temperatures_.")
        return float(self.temperatures_[0])

    def _fit(self, P, y):
        if self.temperature != "fit":
            n_problems = P.shape[1] if self.notion == "classwise" else 1
            self.temperatures_ = np.full(n_problems, float(self.temperature))
        elif self.notion == "canonical":
            self.temperatures_ = np.array([fit_temperature(P, y)])
        else:
            # the event (t = 1) is class 0 of the simplex S = [z, 1 - z]
            self.temperatures_ = np.array(
                [fit_temperature(p.S, (T[:, 0] == 0).astype(np.int64)) for p, _, T in self._training_problems(P, y)]
            )

    def _bilinear_form(self, P):
        if self.notion == "canonical":
            return P - temperature_scale(P, self.temperatures_[0]), None
        probs = problems(P, self.notion)
        cols = [p.Z[:, 0] - temperature_scale(p.S, T)[:, 0] for p, T in zip(probs, self.temperatures_)]
        return np.column_stack(cols), None
