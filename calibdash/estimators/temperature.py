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


def fit_temperature(P, y, max_iter=50):
    """Temperature T minimising the negative log-likelihood of softmax(log p / T).

    The NLL is convex in beta = 1/T with derivative mean(E_q[l] - l_y) and second
    derivative mean(Var_q[l]) (q = softmax(beta l)), so safeguarded Newton steps converge
    in a handful of passes over the data; Brent's method on the bracket is the fallback.
    """
    L = log_clipped(P)
    rows = np.arange(P.shape[0])
    Ly = L[rows, y]
    lo, hi = np.exp(_LOG_BETA_BOUNDS)

    def derivatives(beta):
        Z = L * beta
        Z -= Z.max(axis=1, keepdims=True)
        np.exp(Z, out=Z)
        Z /= Z.sum(axis=1, keepdims=True)
        m1 = np.einsum("ij,ij->i", Z, L)
        # no L * L temporary: at 32,000 x 1,000 it would be another 256 MB
        m2 = np.einsum("ij,ij,ij->i", Z, L, L)
        return float(np.mean(m1 - Ly)), float(np.mean(np.maximum(m2 - m1 * m1, 0.0)))

    beta = 1.0
    for _ in range(max_iter):
        grad, curv = derivatives(beta)
        if curv <= 0:
            break
        step = grad / curv
        new = min(max(beta - step, beta / 4, lo), beta * 4, hi)
        if abs(new - beta) <= 1e-12 * beta:
            return float(1.0 / new)
        beta = new
    else:
        return float(1.0 / beta)

    def nll(log_beta):
        Z = L * np.exp(log_beta)
        return float(np.mean(logsumexp(Z, axis=1) - Ly))

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
