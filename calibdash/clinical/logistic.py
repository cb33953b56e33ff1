"""Logistic recalibration models: calibration-in-the-large, the calibration slope, and the
likelihood-ratio test of their heterogeneity between groups.

The models (Cox 1958; Van Calster et al. 2019) regress the outcome on the logit of the
predicted risk, ``lp = logit(p)``:

- calibration-in-the-large: ``logit P(y = 1) = a + lp`` (the slope fixed at 1, an offset);
- calibration slope: ``logit P(y = 1) = a + b lp``.

Intervals are profile-likelihood intervals (the set of values whose likelihood-ratio
statistic against the maximum is below the chi-square(1) quantile), as R's ``confint`` on a
``glm`` computes them; here the end points are found by root finding on the exact profile,
where R interpolates a spline through profile points, so the two agree to about 1e-4.
Fits are Newton-Raphson with step halving, to a gradient of 1e-12, in float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from calibdash.errors import InputError
from calibdash.intervals import stored_interval

__all__ = [
    "LogisticFit",
    "RecalibrationParameter",
    "HeterogeneityTest",
    "fit_logistic",
    "calibration_in_the_large",
    "calibration_slope",
    "heterogeneity_test",
    "logistic_recalibration",
    "logit",
]

# Probabilities are clipped this far from 0 and 1 before taking logits, so that a reported
# p of exactly 0 or 1 gives a finite linear predictor (|logit| <= 34.5) instead of infinity.
LOGIT_CLIP = 1e-15
_MAX_ITER = 100
_GRAD_TOL = 1e-12


def logit(p):
    """``log(p / (1 - p))`` with ``p`` clipped to ``[1e-15, 1 - 1e-15]``."""
    p = np.clip(np.asarray(p, dtype=float), LOGIT_CLIP, 1 - LOGIT_CLIP)
    return np.log(p) - np.log1p(-p)


@dataclass(frozen=True)
class LogisticFit:
    """Maximum-likelihood logistic regression ``logit P(y=1) = offset + X @ coef``."""

    coef: np.ndarray
    loglik: float
    covariance: np.ndarray
    converged: bool


def _loglik(eta, y):
    # sum y*eta - log(1 + exp(eta)), stable for large |eta|
    return float(np.sum(y * eta - np.logaddexp(0.0, eta)))


def fit_logistic(X, y, *, offset=None):
    """Fit a logistic regression by Newton-Raphson with step halving.

    Parameters
    ----------
    X : ndarray of shape (n, k)
        Design matrix (include a column of ones for an intercept).
    y : ndarray of shape (n,)
        Outcomes in {0, 1}.
    offset : ndarray of shape (n,), optional
        Known part of the linear predictor.

    Returns
    -------
    LogisticFit
        ``converged`` is False when the likelihood has no finite maximum (separation) or
        the iterations ran out; ``coef`` is then the last iterate.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    off = np.zeros(len(y)) if offset is None else np.asarray(offset, dtype=float)
    k = X.shape[1]
    beta = np.zeros(k)
    # start the intercept at the log-odds of the mean outcome net of the offset, when there is one
    eta = off + X @ beta
    ll = _loglik(eta, y)
    converged = False
    hess = np.eye(k)
    for _ in range(_MAX_ITER):
        mu = special.expit(eta)
        grad = X.T @ (y - mu)
        w = mu * (1 - mu)
        hess = (X * w[:, None]).T @ X
        if np.max(np.abs(grad)) < _GRAD_TOL * max(1.0, len(y)):
            converged = True
            break
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            break
        t = 1.0
        while t > 1e-10:
            new = beta + t * step
            new_eta = off + X @ new
            new_ll = _loglik(new_eta, y)
            if new_ll >= ll - 1e-12 * abs(ll):
                break
            t /= 2
        else:
            break
        gained = new_ll - ll
        beta, eta, ll = new, new_eta, new_ll
        if abs(gained) < 1e-15 * max(1.0, abs(ll)) and np.max(np.abs(step)) * t < 1e-13:
            converged = True
            break
    try:
        cov = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        cov = np.full((k, k), np.nan)
    if np.any(np.abs(beta) > 50):  # a separated fit runs off towards infinity
        converged = False
    # ... or stops early on a flat likelihood: a standard error above 1,000 on the logit scale
    # is quasi-separation (a 6-row separated centre gave b = 43 with se 8e5), not an estimate
    if not np.all(np.isfinite(np.diag(cov))) or np.any(np.diag(cov) > 1e6):
        converged = False
    return LogisticFit(coef=beta, loglik=ll, covariance=cov, converged=converged)


@dataclass(frozen=True)
class RecalibrationParameter:
    """One parameter of a logistic recalibration model, with its profile-likelihood interval.

    Attributes
    ----------
    estimate : float
    ci_low, ci_high : float
        The profile-likelihood interval at ``level``.
    se : float
        The Wald standard error (inverse observed information), for reference.
    level : float
    converged : bool
        False when the model has no finite maximum-likelihood fit (e.g. separation); the
        numbers are then NaN.
    pvalue : float
        The likelihood-ratio test of the calibrated value (0 for calibration-in-the-large, 1
        for the slope), the test the profile interval inverts: below ``1 - level`` exactly when
        the interval excludes it.
    """

    estimate: float
    ci_low: float
    ci_high: float
    se: float
    level: float = 0.95
    converged: bool = True
    pvalue: float = np.nan

    def confidence_interval(self, level=None):
        """The profile-likelihood interval ``(low, high)``, a
        :class:`~calibdash.intervals.ConfidenceInterval`; ``level`` may only be None or the
        level it was computed at."""
        return stored_interval(self.ci_low, self.ci_high, self.level, level)


_NAN_PARAMETER = dict(estimate=np.nan, ci_low=np.nan, ci_high=np.nan, se=np.nan, converged=False)


def _lr_pvalue(ll_max, ll_null):
    """The chi-square(1) p-value of the likelihood-ratio statistic ``2 (ll_max - ll_null)``."""
    return float(stats.chi2.sf(max(2.0 * (ll_max - ll_null), 0.0), 1))


def _profile_ends(profile, estimate, se, ll_max, level):
    """The two roots of ``2 (ll_max - profile(t)) = chi2_1(level)`` around ``estimate``."""
    cut = stats.chi2.ppf(level, 1) / 2
    # brentq evaluates the bracket's ends again, and both sides start from the estimate: each
    # profile is a full fit (a quarter of a second at 100,000 rows), so remember them
    seen = {}

    def f(t):
        if t not in seen:
            seen[t] = ll_max - profile(t) - cut
        return seen[t]

    ends = []
    for sign in (-1.0, 1.0):
        step = max(se, 1e-3) if np.isfinite(se) else 1.0
        far = estimate + sign * step
        tries = 0
        while f(far) < 0 and tries < 60:
            step *= 2
            far = estimate + sign * step
            tries += 1
        if f(far) < 0:
            ends.append(sign * np.inf)
            continue
        lo, hi = sorted((estimate, far))
        ends.append(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12))
    return ends[0], ends[1]


def calibration_in_the_large(p, y, *, level=0.95):
    """``a`` in ``logit P(y=1) = a + logit(p)``, with its profile-likelihood interval.

    The same as R's ``glm(y ~ 1, offset = qlogis(p), family = binomial)`` and ``confint``.
    """
    lp = logit(p)
    y = np.asarray(y, dtype=float)
    ones = np.ones((len(y), 1))
    fit = fit_logistic(ones, y, offset=lp)
    if not fit.converged:
        return RecalibrationParameter(level=level, **_NAN_PARAMETER)
    a = float(fit.coef[0])
    se = float(np.sqrt(fit.covariance[0, 0]))

    def profile(t):
        return _loglik(lp + t, y)

    low, high = _profile_ends(profile, a, se, fit.loglik, level)
    return RecalibrationParameter(estimate=a, ci_low=low, ci_high=high, se=se, level=level,
                                  pvalue=_lr_pvalue(fit.loglik, profile(0.0)))


def calibration_slope(p, y, *, level=0.95):
    """``b`` in ``logit P(y=1) = a + b logit(p)``, with its profile-likelihood interval.

    The same as R's ``glm(y ~ qlogis(p), family = binomial)`` and ``confint`` (its second row).
    """
    lp = logit(p)
    y = np.asarray(y, dtype=float)
    ones = np.ones((len(y), 1))
    X = np.column_stack([np.ones(len(y)), lp])
    fit = fit_logistic(X, y)
    if not fit.converged or np.ptp(lp) == 0:
        return RecalibrationParameter(level=level, **_NAN_PARAMETER)
    b = float(fit.coef[1])
    se = float(np.sqrt(fit.covariance[1, 1]))

    def profile(t):
        # the intercept maximised with the slope held at t
        return fit_logistic(ones, y, offset=t * lp).loglik

    low, high = _profile_ends(profile, b, se, fit.loglik, level)
    return RecalibrationParameter(estimate=b, ci_low=low, ci_high=high, se=se, level=level,
                                  pvalue=_lr_pvalue(fit.loglik, profile(1.0)))


def logistic_recalibration(p, y, *, level=0.95, slope=None):
    """Both parameters of ``logit P(y=1) = a + b logit(p)``, each with its profile-likelihood
    interval (the other parameter maximised out), as R's ``confint`` on
    ``glm(y ~ qlogis(p), family = binomial)`` gives them.

    Parameters
    ----------
    slope : RecalibrationParameter, optional
        :func:`calibration_slope` of the same ``(p, y)`` at the same ``level``, already
        computed: ``b`` is that slope (the same fit and the same profile), so its profile is
        not searched again (at 100,000 rows each profile takes seconds).

    Returns
    -------
    tuple of RecalibrationParameter
        ``(a, b)``; NaN when the fit has no finite maximum or the risks are all equal.
    """
    lp = logit(p)
    y = np.asarray(y, dtype=float)
    X = np.column_stack([np.ones(len(y)), lp])
    fit = fit_logistic(X, y)
    if not fit.converged or np.ptp(lp) == 0:
        nan = RecalibrationParameter(level=level, **_NAN_PARAMETER)
        return nan, nan
    a, b = (float(c) for c in fit.coef)
    se_a, se_b = (float(np.sqrt(fit.covariance[i, i])) for i in (0, 1))

    def profile_a(t):
        # the slope maximised with the intercept held at t
        return fit_logistic(lp[:, None], y, offset=np.full(len(y), t)).loglik

    def profile_b(t):
        return fit_logistic(np.ones((len(y), 1)), y, offset=t * lp).loglik

    a_lo, a_hi = _profile_ends(profile_a, a, se_a, fit.loglik, level)
    if slope is not None and slope.level == level and slope.estimate == b:
        b_lo, b_hi = slope.ci_low, slope.ci_high
    else:
        b_lo, b_hi = _profile_ends(profile_b, b, se_b, fit.loglik, level)
    return (RecalibrationParameter(estimate=a, ci_low=a_lo, ci_high=a_hi, se=se_a, level=level),
            RecalibrationParameter(estimate=b, ci_low=b_lo, ci_high=b_hi, se=se_b, level=level))


@dataclass(frozen=True)
class HeterogeneityTest:
    """Likelihood-ratio test that a recalibration parameter is the same in every group.

    Attributes
    ----------
    kind : {"intercept", "slope"}
        ``"intercept"``: calibration-in-the-large, ``a + lp`` against ``a_g + lp``;
        ``"slope"``: ``a_g + b lp`` against ``a_g + b_g lp`` (the intercepts free in both,
        so that only the slopes are compared).
    statistic : float
        Twice the log-likelihood gain of the group-specific model.
    df : int
        Number of groups minus one.
    pvalue : float
        From the chi-square distribution with ``df`` degrees of freedom.
    converged : bool
    """

    kind: str
    statistic: float
    df: int
    pvalue: float
    converged: bool = True


def _group_indicators(groups):
    groups = np.asarray(groups)
    levels, codes = np.unique(groups, return_inverse=True)
    G = np.zeros((len(groups), len(levels)))
    G[np.arange(len(groups)), codes] = 1.0
    return G


def heterogeneity_test(p, y, groups, *, kind):
    """Likelihood-ratio test of heterogeneity of calibration-in-the-large or slope.

    Parameters
    ----------
    p : array-like of shape (n,)
        Predicted risks.
    y : array-like of shape (n,)
        Outcomes in {0, 1}.
    groups : array-like of shape (n,)
        Group labels (at least two distinct).
    kind : {"intercept", "slope"}

    Returns
    -------
    HeterogeneityTest
    """
    if kind not in ("intercept", "slope"):
        raise ValueError(f"kind must be 'intercept' or 'slope', not {kind!r}")
    lp = logit(p)
    y = np.asarray(y, dtype=float)
    G = _group_indicators(groups)
    k = G.shape[1]
    if k < 2:
        raise InputError("The heterogeneity test needs at least two groups; the grouping column has one value.")
    if kind == "intercept":
        null = fit_logistic(np.ones((len(y), 1)), y, offset=lp)
        alt = fit_logistic(G, y, offset=lp)
    else:
        null = fit_logistic(np.column_stack([G, lp]), y)
        alt = fit_logistic(np.column_stack([G, G * lp[:, None]]), y)
    ok = null.converged and alt.converged
    stat = max(2.0 * (alt.loglik - null.loglik), 0.0) if ok else np.nan
    pvalue = float(stats.chi2.sf(stat, k - 1)) if ok else np.nan
    return HeterogeneityTest(kind=kind, statistic=float(stat), df=k - 1, pvalue=pvalue, converged=ok)
