"""Is the validation set large enough? The four criteria of Riley et al. (2021), planned or checked.

Riley, Debray, Collins et al., "Minimum sample size for external validation of a clinical
prediction model with a binary outcome", Statistics in Medicine 40 (2021) 4230-4251, ask that
a validation study estimate

1. O:E with a 95% interval no wider than 0.2 (``exp(ln O:E +- z SE)``, SE(ln O:E) =
   sqrt((1 - phi) / (n phi)));
2. the calibration slope with one no wider than 0.2 (its variance from the Fisher information
   of the calibration model ``logit P(y = 1) = a + b LP`` at the anticipated (a, b), averaged
   over the distribution of the linear predictor LP);
3. the C statistic with one no wider than 0.1 (Newcombe's 2006 standard error);
4. the standardised net benefit at a risk threshold with one no wider than a target (0.2 here,
   pmvalsampsize's default; SE from the sensitivity, specificity, prevalence and threshold);

and, with Collins et al. (2016), at least 100 events and 100 non-events.

Two uses:

- :func:`plan_sample_size`: planning a study, from anticipated values only (prevalence, C
  statistic, O:E, slope, threshold). The linear predictor is assumed normal within events and
  within non-events with a common variance (Riley et al. 2021, section 4.6.3; pmvalsampsize's
  ``lpcstat``), which gives the anticipated prevalence and C statistic exactly in closed form, or
  normal with a given mean and SD (pmvalsampsize's ``lpnormal``). Expectations over it are
  computed by quadrature, so the numbers are exact and repeatable (pmvalsampsize simulates
  1,000,000 values, and searches the non-events' mean by simulation).
- :func:`sample_size_table`: checking a validation already run, from its risks and outcomes,
  at the observed O:E and calibration slope when they are given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from calibdash.clinical.logistic import logit
from calibdash.errors import ConfigError

__all__ = ["TARGETS", "NET_BENEFIT_TARGET", "DEFAULT_TARGETS", "MIN_EVENTS", "MIN_GROUP_EVENTS", "LPDistribution", "AnticipatedModel",
           "anticipated_model", "plan_sample_size", "sample_size_table", "required_n", "n_for_oe", "n_for_slope",
           "n_for_c", "n_for_net_benefit", "oe_interval_width", "slope_information", "slope_se", "c_statistic_se",
           "net_benefit_se", "standardised_net_benefit", "calibration_intercept", "classification_rates"]

# metric -> target width of its 95% interval (Riley et al. 2021, section 3)
TARGETS = {"O:E": 0.2, "calibration slope": 0.2, "AUROC": 0.1}
#: Target width of the 95% interval of the standardised net benefit (net benefit / prevalence):
#: the default of pmvalsampsize (``nbciwidth``) and of the paper's code (SE 0.051).
NET_BENEFIT_TARGET = 0.2
#: Every criterion's default target width; ``targets=`` replaces any of them.
DEFAULT_TARGETS = {**TARGETS, "net benefit": NET_BENEFIT_TARGET}
# Collins, Ogundimu & Altman (2016): at least 100 events and 100 non-events.
MIN_EVENTS = 100
# Below this many events (or non-events) a group's calibration cannot be judged: the slope's
# interval is several units wide and loess follows single rows. Such groups (and whole data) are
# listed, flagged, and given numbers without intervals or verdicts.
MIN_GROUP_EVENTS = 10

# Gauss-Legendre rule per panel for the expectations over a normal (mixture) linear predictor
_GL_X, _GL_W = np.polynomial.legendre.leggauss(20)
_REACH = 12.0  # standard deviations on each side (the mass beyond is below 1e-32)


def _z(level):
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise ConfigError(f"level must lie strictly between 0 and 1, got {level!r}.")
    return float(stats.norm.ppf(0.5 + level / 2))


def _ceil(x):
    # rounding up, but not a float's last bit (905.0000000000001 is 905 rows)
    return float(math.ceil(x * (1 - 1e-12))) if np.isfinite(x) else float(x)


def _check_fraction(name, value, *, closed=False):
    ok = isinstance(value, (int, float, np.floating)) and np.isfinite(value)
    ok = ok and ((0 <= value <= 1) if closed else (0 < value < 1))
    if not ok:
        where = "between 0 and 1" if closed else "strictly between 0 and 1"
        raise ConfigError(f"{name} must lie {where}, got {value!r}.")
    return float(value)


def _check_positive(name, value):
    if not (isinstance(value, (int, float, np.floating)) and np.isfinite(value) and value > 0):
        raise ConfigError(f"{name} must be a positive number, got {value!r}.")
    return float(value)


# ----------------------------------------------------------------------------- the linear predictor
@dataclass(frozen=True, eq=False)
class LPDistribution:
    """The distribution of a model's linear predictor (the logit of its risk) in the validation population.

    A mixture of normals (``weights``, ``means``, ``sds``) or the discrete distribution of
    observed values (``values`` with probabilities ``weights``). Build it with :meth:`normal`, :meth:`binormal` or
    :meth:`empirical`.
    """

    weights: tuple | np.ndarray = ()
    means: tuple = ()
    sds: tuple = ()
    values: np.ndarray | None = None
    kind: str = "normal"

    @classmethod
    def normal(cls, *, mean, sd):
        """A normal linear predictor (pmvalsampsize's ``lpnormal``)."""
        if not (isinstance(mean, (int, float, np.floating)) and np.isfinite(mean)):
            raise ConfigError(f"The mean of the linear predictor must be a finite number, got {mean!r}.")
        sd = _check_positive("The SD of the linear predictor", sd)
        return cls((1.0,), (float(mean),), (sd,), kind="normal")

    @classmethod
    def binormal(cls, *, prevalence, c_statistic):
        """The calibrated linear predictor with the given prevalence and C statistic.

        Normal within events and within non-events with a common variance (Riley et al. 2021,
        section 4.6.3, their equation for the C statistic of a binormal model; pmvalsampsize's
        ``lpcstat``): ``sigma^2 = 2 Phi^-1(C)^2`` gives ``C = Phi(sigma / sqrt 2)``; the events'
        mean exceeds the non-events' by ``sigma^2``, which makes ``logit P(y = 1 | LP) = LP`` for
        the non-events' mean ``logit(prevalence) - sigma^2 / 2``, and the mixture with weights
        ``1 - prevalence`` and ``prevalence`` then has exactly that event rate. pmvalsampsize finds
        the same mean by a simulated search (steps of 0.1, tolerance 5e-4 on the event rate).
        """
        phi = _check_fraction("prevalence", prevalence)
        c = _check_fraction("c_statistic", c_statistic)
        if c <= 0.5:
            raise ConfigError(f"c_statistic must exceed 0.5 for a model that separates events from non-events, got {c!r}.")
        var = 2 * stats.norm.ppf(c) ** 2
        mu0 = float(logit(phi)) - var / 2
        sd = math.sqrt(var)
        return cls((1 - phi, phi), (mu0, mu0 + var), (sd, sd), kind="binormal")

    @classmethod
    def empirical(cls, lp, *, weights=None):
        """The observed values of the linear predictor, each row weighing the same unless ``weights`` are given."""
        lp = np.asarray(lp, dtype=float).ravel()
        if lp.size == 0 or not np.all(np.isfinite(lp)):
            raise ConfigError("The linear predictor needs at least one value and finite values only.")
        if weights is None:
            w = np.full(lp.size, 1 / lp.size)
        else:
            w = np.asarray(weights, dtype=float).ravel()
            if w.shape != lp.shape or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
                raise ConfigError("weights must be one non-negative number per value of the linear predictor, not all 0.")
            w = w / w.sum()
        return cls(weights=w, values=lp, kind="empirical")

    def affine(self, *, loc=0.0, scale=1.0):
        """The distribution of ``loc + scale * LP``."""
        if self.values is not None:
            return LPDistribution(self.weights, values=loc + scale * self.values, kind=self.kind)
        return LPDistribution(self.weights, tuple(loc + scale * m for m in self.means),
                              tuple(abs(scale) * s for s in self.sds), kind=self.kind)

    def nodes(self, *, split=None):
        """Points ``x`` and weights ``w`` with ``E f(LP) = sum(w f(x))``.

        For a normal mixture: a 20-point Gauss-Legendre rule on panels over +-12 SD of each
        component, no wider than a quarter SD or 0.5 on the logit scale, with ``split`` (a
        threshold where the integrand jumps) a panel edge, so that an expectation of a smooth
        function on each side is exact to rounding.
        """
        if self.values is not None:
            return self.values, self.weights
        xs, ws = [], []
        for weight, mean, sd in zip(self.weights, self.means, self.sds):
            lo, hi = mean - _REACH * sd, mean + _REACH * sd
            panels = max(96, math.ceil((hi - lo) / 0.5))
            edges = np.linspace(lo, hi, panels + 1)
            if split is not None and lo < split < hi:
                edges = np.union1d(edges, [split])
            a, b = edges[:-1, None], edges[1:, None]
            x = (a + b) / 2 + (b - a) / 2 * _GL_X
            xs.append(x.ravel())
            ws.append((weight * (b - a) / 2 * _GL_W * stats.norm.pdf(x, mean, sd)).ravel())
        return np.concatenate(xs), np.concatenate(ws)

    def expect(self, f, *, split=None):
        """``E f(LP)`` for a vectorised ``f``."""
        x, w = self.nodes(split=split)
        return float(w @ f(x))

    @property
    def mean(self):
        if self.values is not None:
            return float(self.weights @ self.values)
        return float(np.dot(self.weights, self.means))

    @property
    def sd(self):
        m = self.mean
        if self.values is not None:
            return float(math.sqrt(self.weights @ (self.values - m) ** 2))
        second = sum(w * (s**2 + mu**2) for w, mu, s in zip(self.weights, self.means, self.sds))
        return float(math.sqrt(max(second - m**2, 0.0)))

    def c_statistic(self, *, intercept=0.0, slope=1.0):
        """The C statistic of the model when ``logit P(y = 1 | LP) = intercept + slope * LP``."""
        if self.values is not None:
            order = np.argsort(self.values, kind="stable")
            x, w = self.values[order], self.weights[order]
            r = special.expit(intercept + slope * x)
            e, ne = w * r, w * (1 - r)
            _, start = np.unique(x, return_index=True)
            ne_tied = np.add.reduceat(ne, start)
            e_tied = np.add.reduceat(e, start)
            below = np.concatenate([[0.0], np.cumsum(ne_tied)[:-1]])
            c = float(np.sum(e_tied * (below + ne_tied / 2)) / (e.sum() * ne.sum()))
            return c if slope >= 0 else 1 - c
        lo = min(m - _REACH * s for m, s in zip(self.means, self.sds))
        hi = max(m + _REACH * s for m, s in zip(self.means, self.sds))
        x = np.linspace(lo, hi, 40001)
        dens = sum(w * stats.norm.pdf(x, m, s) for w, m, s in zip(self.weights, self.means, self.sds))
        r = special.expit(intercept + slope * x)
        e, ne = r * dens, (1 - r) * dens
        h = x[1] - x[0]
        cum_ne = np.concatenate([[0.0], np.cumsum((ne[1:] + ne[:-1]) / 2 * h)])
        integrand = e * cum_ne
        c = float(np.sum((integrand[1:] + integrand[:-1]) / 2 * h) / (np.sum((e[1:] + e[:-1]) / 2 * h) * cum_ne[-1]))
        return c if slope >= 0 else 1 - c

    def describe(self):
        """One sentence: the distribution and its parameters."""
        if self.kind == "empirical":
            return f"the {self.values.size:,} observed values of the linear predictor (mean {self.mean:.3g}, SD {self.sd:.3g})"
        if self.kind == "binormal":
            return (f"a linear predictor normal within non-events (mean {self.means[0]:.3g}) and events (mean "
                    f"{self.means[1]:.3g}) with a common SD {self.sds[0]:.3g} (overall mean {self.mean:.3g}, SD {self.sd:.3g})")
        return f"a normal linear predictor (mean {self.mean:.3g}, SD {self.sd:.3g})"


def _as_lp(lp):
    return lp if isinstance(lp, LPDistribution) else LPDistribution.empirical(lp)


def calibration_intercept(lp, *, slope=1.0, event_rate):
    """The intercept ``a`` with ``E expit(a + slope * LP) = event_rate``.

    ``event_rate`` is the anticipated outcome proportion: ``O:E`` times the mean predicted risk.
    """
    lp = _as_lp(lp)
    rate = _check_fraction("event_rate", event_rate)
    x, w = lp.nodes()
    reach = 60 + float(np.max(np.abs(slope * x)))

    def gap(a):
        return float(w @ special.expit(a + slope * x)) - rate

    return float(optimize.brentq(gap, -reach, reach, xtol=1e-14, rtol=1e-14))


# ----------------------------------------------------------------------------- criterion 1: O:E
def oe_interval_width(*, prevalence, n, oe=1.0, level=0.95):
    """Width of the interval ``exp(ln OE +- z SE)`` with ``SE = sqrt((1 - phi) / (n phi))``: ``2 OE sinh(z SE)``."""
    se = math.sqrt((1 - prevalence) / (n * prevalence))
    return 2 * oe * math.sinh(_z(level) * se)


def n_for_oe(*, prevalence, oe=1.0, width=0.2, level=0.95):
    """Rows for the interval of O:E to be ``width`` wide (Riley et al. 2021, criterion 1); not rounded."""
    phi = _check_fraction("prevalence", prevalence)
    oe = _check_positive("oe", oe)
    width = _check_positive("The target width of O:E", width)
    se = math.asinh(width / (2 * oe)) / _z(level)
    return (1 - phi) / (phi * se**2)


# ----------------------------------------------------------------------------- criterion 2: the slope
def slope_information(lp, *, intercept=0.0, slope=1.0):
    """Fisher information per row of the calibration model ``logit P(y = 1) = a + b LP`` at (a, b).

    ``E[w (1, LP)^T (1, LP)]`` with ``w = p (1 - p)``, ``p = expit(a + b LP)``, over the
    distribution of LP (Riley et al. 2021, criterion 2).
    """
    lp = _as_lp(lp)
    x, wt = lp.nodes()
    p = special.expit(intercept + slope * x)
    v = wt * p * (1 - p)
    i_a, i_ab, i_b = float(v.sum()), float(v @ x), float(v @ x**2)
    return np.array([[i_a, i_ab], [i_ab, i_b]])


def slope_se(lp, *, n, intercept=0.0, slope=1.0):
    """Standard error of the calibration slope with ``n`` rows: ``sqrt(I_aa / (n det I))``."""
    info = slope_information(lp, intercept=intercept, slope=slope)
    det = info[0, 0] * info[1, 1] - info[0, 1] ** 2
    return math.sqrt(info[0, 0] / (n * det)) if det > 0 else math.inf


def n_for_slope(lp, *, intercept=0.0, slope=1.0, width=0.2, level=0.95):
    """Rows for the interval of the calibration slope to be ``width`` wide; not rounded."""
    width = _check_positive("The target width of the calibration slope", width)
    info = slope_information(lp, intercept=intercept, slope=slope)
    det = info[0, 0] * info[1, 1] - info[0, 1] ** 2
    se = width / (2 * _z(level))
    return info[0, 0] / (se**2 * det) if det > 0 else math.inf


# ----------------------------------------------------------------------------- criterion 3: the C statistic
def c_statistic_se(*, c_statistic, prevalence, n):
    """Newcombe's (2006) standard error of the C statistic with ``n`` rows, as Riley et al. use it.

    ``C (1 - C) [1 + (n/2 - 1)(1 - C)/(2 - C) + (n/2 - 1) C/(1 + C)] / (n^2 phi (1 - phi))``:
    Hanley and McNeil's variance with both group sizes ``n / 2`` in the bracket.
    """
    c, phi = c_statistic, prevalence
    m = n / 2 - 1
    return math.sqrt(c * (1 - c) * (1 + m * (1 - c) / (2 - c) + m * c / (1 + c)) / (n * n * phi * (1 - phi)))


def n_for_c(*, c_statistic, prevalence, width=0.1, level=0.95):
    """Rows for the interval of the C statistic to be ``width`` wide; not rounded.

    ``n^2`` times Newcombe's variance is linear in ``n``, so the target is met at the positive
    root of a quadratic (pmvalsampsize searches n = 1, 2, ... instead: the same whole number).
    """
    c = _check_fraction("c_statistic", c_statistic)
    phi = _check_fraction("prevalence", prevalence)
    width = _check_positive("The target width of the C statistic", width)
    s = width / (2 * _z(level))
    u = (1 - c) / (2 - c) + c / (1 + c)
    k, b, d = s * s * phi * (1 - phi), c * (1 - c) * u / 2, c * (1 - c) * (1 - u)
    return (b + math.sqrt(b * b + 4 * k * d)) / (2 * k)


# ----------------------------------------------------------------------------- criterion 4: net benefit
def classification_rates(lp, *, threshold, intercept=0.0, slope=1.0):
    """Sensitivity, specificity and event rate of treating when the model's risk is at least ``threshold``.

    The true risk is ``expit(intercept + slope * LP)``; the model's is ``expit(LP)``.
    """
    lp = _as_lp(lp)
    t = float(logit(_check_fraction("threshold", threshold)))
    x, w = lp.nodes(split=t)
    r = special.expit(intercept + slope * x)
    treat = x >= t
    rate = float(w @ r)
    # quadrature weights sum to 1 only to rounding: a rate computed as 1.0000000000000002 is 1
    sens = min(1.0, max(0.0, float((w * r)[treat].sum()) / rate))
    spec = min(1.0, max(0.0, float((w * (1 - r))[~treat].sum()) / (1 - rate)))
    return sens, spec, rate


def standardised_net_benefit(*, sensitivity, specificity, prevalence, threshold):
    """Net benefit divided by the prevalence: ``sens - (1 - spec) (1 - phi) / phi * t / (1 - t)``."""
    w = (1 - prevalence) / prevalence * threshold / (1 - threshold)
    return sensitivity - w * (1 - specificity)


def _nb_unit_variance(sens, spec, phi, t):
    w = (1 - phi) / phi * t / (1 - t)
    return sens * (1 - sens) / phi + w * w * spec * (1 - spec) / (1 - phi) + w * w * (1 - spec) ** 2 / (phi * (1 - phi))


def net_benefit_se(*, sensitivity, specificity, prevalence, threshold, n):
    """Standard error of the standardised net benefit with ``n`` rows (Riley et al. 2021, criterion 4).

    The delta method on ``sens - w (1 - spec)``, ``w = (1 - phi) / phi * t / (1 - t)``, with the
    sensitivity, specificity and prevalence estimated from the same ``n`` rows.
    """
    return math.sqrt(_nb_unit_variance(sensitivity, specificity, prevalence, threshold) / n)


def n_for_net_benefit(*, sensitivity, specificity, prevalence, threshold, width=NET_BENEFIT_TARGET, level=0.95):
    """Rows for the interval of the standardised net benefit to be ``width`` wide; not rounded."""
    sens = _check_fraction("sensitivity", sensitivity, closed=True)
    spec = _check_fraction("specificity", specificity, closed=True)
    phi = _check_fraction("prevalence", prevalence)
    t = _check_fraction("threshold", threshold)
    width = _check_positive("The target width of the net benefit", width)
    se = width / (2 * _z(level))
    return _nb_unit_variance(sens, spec, phi, t) / se**2


# ----------------------------------------------------------------------------- planning
def _targets(targets):
    out = dict(DEFAULT_TARGETS)
    for key, value in (targets or {}).items():
        if key not in DEFAULT_TARGETS:
            raise ConfigError(f"Unknown target {key!r}; choose from {', '.join(map(repr, DEFAULT_TARGETS))}.")
        out[key] = _check_positive(f"The target width of {key}", value)
    return out


def _pct(x):
    return f"{100 * x:.3g}%"


def _num(x):
    return f"{0.0 if abs(x) < 5e-12 else x:.3g}"


@dataclass(frozen=True, eq=False)
class AnticipatedModel:
    """The model a study is planned for: its linear predictor and its anticipated calibration.

    ``logit P(y = 1 | LP) = intercept + slope * LP``, with LP distributed as ``lp``.
    """

    lp: LPDistribution
    intercept: float
    slope: float

    @property
    def event_rate(self):
        """``E expit(intercept + slope * LP)``: the anticipated outcome proportion."""
        return self.lp.expect(lambda x: special.expit(self.intercept + self.slope * x))

    @property
    def oe(self):
        """Observed over expected events: the event rate over the mean predicted risk ``E expit(LP)``."""
        return self.event_rate / self.lp.expect(special.expit)

    @property
    def c_statistic(self):
        """The model's C statistic under this calibration model."""
        return self.lp.c_statistic(intercept=self.intercept, slope=self.slope)


def anticipated_model(*, prevalence, c_statistic, oe=1.0, slope=1.0, lp_mean=None, lp_sd=None):
    """The linear predictor and calibration model that :func:`plan_sample_size` assumes.

    Without ``lp_mean`` and ``lp_sd``: the true logit is :meth:`LPDistribution.binormal` (the
    anticipated prevalence and C statistic exactly) and the model's LP is ``(truth - a) /
    slope`` with ``a`` such that O:E is ``oe``. With them: LP is normal with that mean and SD and
    ``a`` makes O:E equal ``oe`` (the event rate is then ``oe * E expit(LP)``, which need not be
    ``prevalence``; pmvalsampsize's ``lpnormal`` takes ``a = 0`` and ``slope = 1`` whatever
    ``oe`` and ``cslope``).
    """
    phi = _check_fraction("prevalence", prevalence)
    oe = _check_positive("oe", oe)
    slope = _check_positive("slope", slope)
    if (lp_mean is None) != (lp_sd is None):
        raise ConfigError("Give both lp_mean and lp_sd (a normal linear predictor) or neither.")
    if lp_mean is None:
        if phi / oe >= 1:
            raise ConfigError(f"O:E {oe:g} at prevalence {_pct(phi)} means a mean predicted risk of 100% or more.")
        truth = LPDistribution.binormal(prevalence=phi, c_statistic=c_statistic)
        x, w = truth.nodes()
        reach = 60 * slope + float(np.max(np.abs(x)))
        a = float(optimize.brentq(lambda a: float(w @ special.expit((x - a) / slope)) - phi / oe, -reach, reach,
                                  xtol=1e-14, rtol=1e-14))
        return AnticipatedModel(truth.affine(loc=-a / slope, scale=1 / slope), a, slope)
    lp = LPDistribution.normal(mean=lp_mean, sd=lp_sd)
    mean_risk = lp.expect(special.expit)
    if oe * mean_risk >= 1:
        raise ConfigError(f"O:E {oe:g} with this linear predictor (mean risk {_pct(mean_risk)}) means more events than rows.")
    return AnticipatedModel(lp, calibration_intercept(lp, slope=slope, event_rate=oe * mean_risk), slope)


def plan_sample_size(*, prevalence, c_statistic, oe=1.0, slope=1.0, threshold=None, targets=None, lp_mean=None,
                     lp_sd=None, sensitivity=None, specificity=None, level=0.95):
    """The minimum size of an external validation study, from anticipated values only (no data).

    Riley et al.'s (2021) four criteria. The model's linear predictor LP is either normal with
    ``lp_mean`` and ``lp_sd`` (as published for the model, say), or, when they are not given,
    normal within events and within non-events with a common variance
    (:meth:`LPDistribution.binormal`), which gives exactly the anticipated ``prevalence`` and
    ``c_statistic``. The anticipated miscalibration is ``logit P(y = 1) = a + slope * LP`` with
    ``a`` such that O:E equals ``oe``.

    Parameters
    ----------
    prevalence : float
        Anticipated outcome proportion in the validation population.
    c_statistic : float
        Anticipated C statistic (AUROC), above 0.5.
    oe : float, default=1.0
        Anticipated observed / expected events.
    slope : float, default=1.0
        Anticipated calibration slope (positive).
    threshold : float, optional
        Risk threshold for the net-benefit criterion (none without it).
    targets : dict, optional
        Target widths of the 95% intervals, replacing any of :data:`DEFAULT_TARGETS` (``"O:E"``,
        ``"calibration slope"``, ``"AUROC"``, ``"net benefit"``; the last on the standardised
        scale, net benefit / prevalence).
    lp_mean, lp_sd : float, optional
        A normal linear predictor (give both or neither).
    sensitivity, specificity : float, optional
        Anticipated sensitivity and specificity at ``threshold`` (give both or neither); by
        default they are computed from the linear predictor's distribution at the threshold.
    level : float, default=0.95
        Level of the intervals.

    Returns
    -------
    DataFrame
        One row per criterion, then a row ``metric == "minimum"`` with the largest: columns
        ``criterion``, ``metric``, ``anticipated`` (the value the criterion assumes),
        ``target`` (interval width), ``se`` (the standard error that width means),
        ``rows_needed``, ``events_needed`` (rounded up) and ``note`` (the assumptions).
    """
    phi = _check_fraction("prevalence", prevalence)
    c = _check_fraction("c_statistic", c_statistic)
    if c <= 0.5:
        raise ConfigError(f"c_statistic must exceed 0.5, got {c!r}: a model that does not separate events from "
                          "non-events has no calibration slope to estimate.")
    oe = _check_positive("oe", oe)
    slope = _check_positive("slope", slope)
    z = _z(level)
    goal = _targets(targets)
    if (sensitivity is None) != (specificity is None):
        raise ConfigError("Give both sensitivity and specificity, or neither (then they come from the linear predictor).")
    if sensitivity is not None and threshold is None:
        raise ConfigError("sensitivity and specificity are those at a risk threshold: give threshold too.")
    if threshold is not None:
        threshold = _check_fraction("threshold", threshold)

    model = anticipated_model(prevalence=phi, c_statistic=c, oe=oe, slope=slope, lp_mean=lp_mean, lp_sd=lp_sd)
    lp, a = model.lp, model.intercept
    if lp_mean is None:
        lp_note = f"{lp.describe()}, which gives the anticipated prevalence and C statistic"
    else:
        implied_rate, implied_c = model.event_rate, model.c_statistic
        lp_note = (f"{lp.describe()}; with O:E {oe:g} and slope {slope:g} it implies an event rate of "
                   f"{_pct(implied_rate)} and a C statistic of {implied_c:.3f}")
        if abs(implied_rate - phi) > 0.05 * phi or abs(implied_c - c) > 0.01:
            lp_note += (f" (the anticipated prevalence {_pct(phi)} and C statistic {c:g} are used for the other "
                        "criteria; check that the inputs agree)")
    calib = f"logit P(event) = {_num(a)} + {slope:g} LP (O:E {oe:g}, slope {slope:g})"

    rows = []

    def add(criterion, metric, anticipated, n, note):
        rows.append({"criterion": criterion, "metric": metric, "anticipated": float(anticipated),
                     "target": goal[metric], "se": goal[metric] / (2 * z) if metric != "O:E" else math.asinh(goal[metric] / (2 * oe)) / z,
                     "rows_needed": _ceil(n), "events_needed": _ceil(_ceil(n) * phi), "note": note})

    pct = f"{100 * level:g}%"
    add(f"1. O:E: {pct} interval no wider than {goal['O:E']:g}", "O:E", oe,
        n_for_oe(prevalence=phi, oe=oe, width=goal["O:E"], level=level),
        f"SE(ln O:E) = sqrt((1 - prevalence) / (n prevalence)), prevalence {_pct(phi)}; the interval "
        f"exp(ln O:E +- {z:.3g} SE) is 2 O:E sinh({z:.3g} SE) wide")
    add(f"2. calibration slope: {pct} interval no wider than {goal['calibration slope']:g}", "calibration slope", slope,
        n_for_slope(lp, intercept=a, slope=slope, width=goal["calibration slope"], level=level),
        f"Fisher information of {calib}, averaged over {lp_note}")
    add(f"3. C statistic: {pct} interval no wider than {goal['AUROC']:g}", "AUROC", c,
        n_for_c(c_statistic=c, prevalence=phi, width=goal["AUROC"], level=level),
        f"Newcombe's (2006) standard error at C {c:g} and prevalence {_pct(phi)}")
    if threshold is not None:
        if sensitivity is None:
            sens, spec, _ = classification_rates(lp, threshold=threshold, intercept=a, slope=slope)
            source = f"from the linear predictor at {calib}"
        else:
            sens = _check_fraction("sensitivity", sensitivity, closed=True)
            spec = _check_fraction("specificity", specificity, closed=True)
            source = "as given"
        snb = standardised_net_benefit(sensitivity=sens, specificity=spec, prevalence=phi, threshold=threshold)
        add(f"4. net benefit at threshold {_pct(threshold)}: {pct} interval of the standardised net benefit no wider "
            f"than {goal['net benefit']:g}", "net benefit", snb,
            n_for_net_benefit(sensitivity=sens, specificity=spec, prevalence=phi, threshold=threshold,
                              width=goal["net benefit"], level=level),
            f"sensitivity {sens:.3f} and specificity {spec:.3f} ({source}), prevalence {_pct(phi)}; standardised net "
            f"benefit (net benefit / prevalence) {snb:.3f}")
    table = pd.DataFrame(rows)
    top = int(np.argmax(table["rows_needed"].to_numpy()))
    rows.append({"criterion": "minimum sample size: the largest of the above", "metric": "minimum",
                 "anticipated": np.nan, "target": np.nan, "se": np.nan,
                 "rows_needed": table["rows_needed"].iloc[top], "events_needed": table["events_needed"].iloc[top],
                 "note": f"set by criterion {table['criterion'].iloc[top].split('.')[0]} ({table['metric'].iloc[top]}); "
                         f"at least {MIN_EVENTS} events and {MIN_EVENTS} non-events are also recommended (Collins et al. 2016)"})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- checking a validation
def _data_calibration(p, oe, slope):
    """The LP of the data, the anticipated (a, b) and a phrase saying which values they rest on."""
    lp = LPDistribution.empirical(logit(p))
    b = 1.0 if slope is None else float(slope)
    ratio = 1.0 if oe is None else _check_positive("oe", oe)
    if not np.isfinite(b):
        raise ConfigError(f"slope must be a finite number, got {slope!r}.")
    rate = ratio * float(np.mean(p))
    if not 0 < rate < 1:
        raise ConfigError(f"O:E {ratio:g} with a mean risk of {_pct(float(np.mean(p)))} means more events than rows.")
    a = 0.0 if (oe is None and slope is None) else calibration_intercept(lp, slope=b, event_rate=rate)
    return lp, a, b, ratio


def _assumption(oe, slope):
    parts = []
    parts.append("O:E 1 (assumed)" if oe is None else f"O:E {oe:.3g} (observed)")
    parts.append("slope 1 (assumed)" if slope is None else f"slope {slope:.3g} (observed)")
    return ", ".join(parts)


def _required(p, y, *, c_statistic, oe, slope, goal, threshold, level):
    p = np.asarray(p, dtype=float)
    y = np.asarray(y, dtype=float)
    prev = float(np.mean(y))
    lp, a, b, ratio = _data_calibration(p, oe, slope)
    need = {
        "O:E": n_for_oe(prevalence=prev, oe=ratio, width=goal["O:E"], level=level) if 0 < prev < 1 else math.nan,
        "calibration slope": n_for_slope(lp, intercept=a, slope=b, width=goal["calibration slope"], level=level),
        "AUROC": (n_for_c(c_statistic=c_statistic, prevalence=prev, width=goal["AUROC"], level=level)
                  if 0.5 <= c_statistic < 1 and 0 < prev < 1 else math.nan),
    }
    extra = {}
    if threshold is not None:
        t = _check_fraction("threshold", threshold)
        treat = p >= t
        events = y == 1
        sens = float(np.mean(treat[events])) if events.any() else math.nan
        spec = float(np.mean(~treat[~events])) if (~events).any() else math.nan
        if np.isfinite(sens) and np.isfinite(spec):
            need["net benefit"] = n_for_net_benefit(sensitivity=sens, specificity=spec, prevalence=prev, threshold=t,
                                                    width=goal["net benefit"], level=level)
            extra = {"sensitivity": sens, "specificity": spec, "threshold": t, "prevalence": prev}
        else:
            need["net benefit"] = math.nan
    return need, (a, b), extra


def required_n(p, y, *, c_statistic, oe=None, slope=None, targets=None, threshold=None, level=0.95):
    """Riley's minimum sample size for each target, from this data's characteristics.

    Computed from this data's prevalence, C statistic and distribution of the linear predictor,
    at the observed ``oe`` and calibration ``slope`` when given (at 1, a calibrated model, when
    not); with ``threshold``, also the net-benefit criterion at this data's sensitivity and
    specificity there.

    Returns
    -------
    dict
        metric -> rows needed (rounded up).
    """
    need, _, _ = _required(p, y, c_statistic=c_statistic, oe=oe, slope=slope, goal=_targets(targets),
                           threshold=threshold, level=level)
    return {k: _ceil(v) for k, v in need.items()}


def sample_size_table(p, y, widths, *, c_statistic, oe=None, slope=None, targets=None, threshold=None):
    """The achieved interval widths against Riley's targets.

    Parameters
    ----------
    p, y : array-like
    widths : dict
        metric -> achieved width of its 95% interval (``ci_high - ci_low``), for the keys of
        :data:`TARGETS`; with ``threshold``, ``"net benefit"`` is the width of the standardised
        net benefit's interval (when absent, that of Riley's formula at this size).
    c_statistic : float
        The AUROC of this data (Riley's formula for the C statistic depends on it).
    oe, slope : float, optional
        The observed O:E and calibration slope: the rows needed are computed at them (at 1, a
        calibrated model, when not given).
    targets : dict, optional
        Target widths replacing any of :data:`DEFAULT_TARGETS`.
    threshold : float, optional
        A risk threshold: adds the net-benefit criterion at it.

    Returns
    -------
    DataFrame
        Columns ``criterion``, ``target``, ``achieved``, ``adequate``, ``rows_needed``,
        ``rows``, ``assumption`` (the values the rows needed were computed at): one row per
        precision target, plus one for events and one for non-events (``target`` 100,
        ``achieved`` the count).
    """
    y = np.asarray(y)
    n = len(y)
    goal = _targets(targets)
    need, (a, b), nb = _required(p, y, c_statistic=c_statistic, oe=oe, slope=slope, goal=goal, threshold=threshold,
                                 level=0.95)
    calib = _assumption(oe, slope)
    prev = float(np.mean(y == 1))
    assumption = {
        "O:E": f"{calib}; event rate {_pct(prev)}",
        "calibration slope": (f"{calib}: logit P(event) = {_num(a)} + {_num(b)} LP over this data's {n:,} risks"),
        "AUROC": f"C {c_statistic:.3g}, event rate {_pct(prev)}",
    }
    metrics = list(TARGETS)
    if threshold is not None:
        metrics.append("net benefit")
        if nb:
            assumption["net benefit"] = (f"sensitivity {nb['sensitivity']:.3f}, specificity {nb['specificity']:.3f} "
                                         f"at threshold {_pct(nb['threshold'])}, event rate {_pct(prev)}")
        else:
            assumption["net benefit"] = "no events or no non-events"
    rows = []
    for metric in metrics:
        achieved = widths.get(metric, np.nan)
        if metric == "net benefit" and metric not in widths and nb:
            achieved = 2 * _z(0.95) * net_benefit_se(sensitivity=nb["sensitivity"], specificity=nb["specificity"],
                                                     prevalence=nb["prevalence"], threshold=nb["threshold"], n=n)
        achieved = float(achieved)
        label = "the standardised net benefit" if metric == "net benefit" else metric
        rows.append({
            "criterion": f"width of the 95% interval of {label}",
            "metric": metric,
            "target": goal[metric],
            "achieved": achieved,
            "adequate": bool(np.isfinite(achieved) and achieved <= goal[metric]),
            "rows_needed": _ceil(need[metric]),
            "rows": n,
            "assumption": assumption[metric],
        })
    events = int(np.sum(y))
    for name, count in (("events", events), ("non-events", n - events)):
        rows.append({
            "criterion": f"number of {name} (at least {MIN_EVENTS})",
            "metric": name,
            "target": float(MIN_EVENTS),
            "achieved": float(count),
            "adequate": count >= MIN_EVENTS,
            "rows_needed": np.nan,
            "rows": n,
            "assumption": "",
        })
    return pd.DataFrame(rows)
