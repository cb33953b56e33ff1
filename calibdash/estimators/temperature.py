"""Recalibration plug-in with temperature scaling (design note, section 3).

g(p) = softmax(log p / T) recalibrates the model; h(p, p') = <p - g(p), p' - g(p')>.
For the top-label notion the features are the confidence minus the recalibrated
probability of the same class (temperature scaling keeps the argmax).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from ..notions import top_label
from ..simplex import log_clipped, softmax
from .base import CalibrationEstimator, check_positive

# The NLL is convex in beta = 1/T; this bracket covers every temperature anyone fits.
_LOG_BETA_BOUNDS = (np.log(1e-3), np.log(1e3))


def fit_temperature(P, y):
    """Temperature T minimising the negative log-likelihood of softmax(log p / T)."""
    L = log_clipped(P)
    rows = np.arange(P.shape[0])

    def nll(log_beta):
        Z = L * np.exp(log_beta)
        return float(np.mean(logsumexp(Z, axis=1) - Z[rows, y]))

    res = minimize_scalar(nll, bounds=_LOG_BETA_BOUNDS, method="bounded", options={"xatol": 1e-10})
    return float(np.exp(-res.x))


def temperature_scale(P, temperature):
    """softmax(log p / T), with exact zeros kept finite by the log floor."""
    return softmax(log_clipped(P) / temperature)


class TemperatureEstimator(CalibrationEstimator):
    """Plug-in estimator from temperature-scaling recalibration.

    Parameters
    ----------
    notion : {"top-label", "canonical", "classwise"}
    temperature : float or "fit", default="fit"
        A fixed temperature T > 0 (a grid value), or "fit" to minimise the negative
        log-likelihood on the training data.
    """

    family = "temperature"
    path_param = "temperature"

    def __init__(self, notion="canonical", temperature="fit"):
        self.notion = notion
        self.temperature = temperature

    def _validate_params(self):
        super()._validate_params()
        check_positive("temperature", self.temperature, allow=("fit",))

    def _fit(self, P, y):
        self.temperature_ = fit_temperature(P, y) if self.temperature == "fit" else float(self.temperature)

    def _bilinear_form(self, P):
        G = temperature_scale(P, self.temperature_)
        if self.notion == "top-label":
            c, _, k = top_label(P)
            return (c - G[np.arange(P.shape[0]), k])[:, None], None
        return P - G, None
