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
from scipy.optimize import minimize_scalar
from scipy.special import expit, logsumexp

from calibdash.core.notions import problems
from calibdash.core.simplex import log_clipped, softmax
from calibdash.estimators.base import CalibrationEstimator, check_positive

# The NLL is convex in beta = 1/T; this bracket covers every temperature anyone fits.
_LOG_BETA_BOUNDS = (np.log(1e-3), np.log(1e3))


# Entries per block of the Newton passes: 1 MB, so that the block's exponentials and the
# moments read from it stay in the core's cache instead of streaming n x d temporaries
# through memory eight times per step (3.5x faster at 32,000 x 1,000).
_BLOCK_ENTRIES = 131_072


def fit_temperature(P, y, max_iter=50):
    """Temperature T minimising the negative log-likelihood of softmax(log p / T).

    The NLL is convex in beta = 1/T, so safeguarded Newton steps converge in a handful of
    passes over the data; Brent's method on the bracket is the fallback. Two classes (the
    simplex [z, 1 - z] of a one-dimensional problem) take a cheaper route to the same
    minimiser (:func:`_binary_nll`).
    """
    derivatives, nll = (_binary_nll if P.shape[1] == 2 else _multiclass_nll)(P, y)
    lo, hi = np.exp(_LOG_BETA_BOUNDS)
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
    res = minimize_scalar(nll, bounds=_LOG_BETA_BOUNDS, method="bounded", options={"xatol": 1e-10})
    return float(np.exp(-res.x))


def _multiclass_nll(P, y):
    """(derivatives(beta), nll(log beta)) of the NLL of softmax(beta l), l = log p.

    The derivative is mean(E_q[l] - l_y) and the second derivative mean(Var_q[l])
    (q = softmax(beta l)). The logs are shifted by their row maximum once (both moments
    and the NLL's derivatives are unchanged by a per-row shift), so that beta * l <= 0
    needs no further shift before the exponential.
    """
    L = log_clipped(P)
    L -= L.max(axis=1, keepdims=True)
    Ly = L[np.arange(P.shape[0]), y]
    step_rows = max(1, _BLOCK_ENTRIES // max(P.shape[1], 1))
    buf = np.empty((min(step_rows, P.shape[0]), P.shape[1]))

    def derivatives(beta):
        m1, m2 = np.empty(P.shape[0]), np.empty(P.shape[0])
        for s in range(0, P.shape[0], step_rows):
            Lb = L[s : s + step_rows]
            Z = buf[: Lb.shape[0]]
            np.multiply(Lb, beta, out=Z)
            np.exp(Z, out=Z)
            total = Z.sum(axis=1)
            # E_q[l] and E_q[l^2] from the unnormalised weights, divided once per row
            m1[s : s + step_rows] = np.einsum("ij,ij->i", Z, Lb) / total
            m2[s : s + step_rows] = np.einsum("ij,ij,ij->i", Z, Lb, Lb) / total
        return float(np.mean(m1 - Ly)), float(np.mean(np.maximum(m2 - m1 * m1, 0.0)))

    def nll(log_beta):
        beta = np.exp(log_beta)
        return float(np.mean(logsumexp(L * beta, axis=1) - beta * Ly))

    return derivatives, nll


def _binary_nll(P, y):
    """(derivatives(beta), nll(log beta)) of the same NLL for two classes.

    With w = log p_y - log p_other, q_y = sigmoid(beta w): the NLL is
    mean(log(1 + exp(-beta w))), its derivative mean(-w sigmoid(-beta w)) and its second
    derivative mean(w^2 sigmoid(beta w) sigmoid(-beta w)). A pass costs a few operations
    on n numbers instead of row reductions over pairs, which matters for classwise: one
    fit per class (3x faster at 40,000 rows).
    """
    L = log_clipped(P)
    rows = np.arange(P.shape[0])
    w = L[rows, y] - L[rows, 1 - y]

    def derivatives(beta):
        wrong = expit(-beta * w)
        return float(np.mean(-w * wrong)), float(np.mean(w * w * wrong * expit(beta * w)))

    def nll(log_beta):
        return float(np.mean(np.logaddexp(0.0, -np.exp(log_beta) * w)))

    return derivatives, nll


def temperature_scale(P, temperature):
    """softmax(log p / T), with exact zeros kept finite by the log floor.

    Two classes use softmax([a, b]) = [sigmoid(a - b), sigmoid(b - a)], which avoids row
    reductions over pairs (classwise scales one such problem per class; 3x faster).
    """
    if P.shape[1] == 2:
        x = (log_clipped(P[:, 0]) - log_clipped(P[:, 1])) / temperature
        return np.column_stack([expit(x), expit(-x)])
    return softmax(log_clipped(P) / temperature)


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
            raise AttributeError("temperature_ is set by fit(P, y).")
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
