"""Multicentre validation: a random-effects meta-analysis of per-centre performance.

A risk model validated in several centres (hospitals, regions, studies) performs
differently in each; the question is how it performs on average and, more to the point
for a new centre, how far its performance may stray (Debray et al. 2017; Riley et al.
2021). Each centre j gives an estimate ``y_j`` of a performance measure on a scale where it
is close to normal, with a within-centre variance ``v_j``; the random-effects model is

    y_j = mu + u_j + e_j,   u_j ~ N(0, tau^2),   e_j ~ N(0, v_j),

and is fitted as R's ``metafor::rma(yi, vi, method = "REML", test = "knha")`` fits it:

- ``tau^2`` by restricted maximum likelihood, by metafor's Fisher scoring (started at the
  Hedges estimate, step halving to keep ``tau^2 >= 0``, stopped when a step changes
  ``tau^2`` by at most 1e-5, at most 100 steps, and ``tau^2`` set to 0 when the restricted
  likelihood is higher there; when full steps cycle, as they occasionally do, half steps,
  up to 1000 of them, metafor's ``control = list(stepadj = 0.5, maxiter = 1000)``);
- ``mu`` by inverse-variance weighting with ``w_j = 1 / (v_j + tau^2)``; its interval by
  Hartung & Knapp (2001) and Sidik & Jonkman (2002): the variance ``1 / sum(w)`` multiplied
  by ``q = sum(w_j (y_j - mu)^2) / (k - 1)`` and the t distribution with ``k - 1`` degrees
  of freedom (IntHout et al. 2014);
- the prediction interval, the range in which a new centre's true value is expected, as
  metafor's ``predict()`` gives it after ``test = "knha"``:
  ``mu +- t_{k-1} sqrt(q / sum(w) + tau^2)``. (Riley et al. 2011 use ``t_{k-2}`` and the
  unscaled variance; metafor's default is reproduced here so that the numbers can be checked.)

The per-centre inputs (:func:`centre_estimates`), on their analysis scales:

- O:E: ``log(O / E)`` with variance ``1/O - 1/N`` (Debray et al. 2017, Table 2);
- calibration-in-the-large: ``a`` of ``logit P(y=1) = a + logit(p)`` and its variance from
  the inverse Fisher information of the ``glm`` fit;
- calibration slope: ``b`` of ``logit P(y=1) = a + b logit(p)``, likewise;
- AUROC: ``logit(c)`` with variance ``var_DeLong(c) / (c (1 - c))^2`` (the delta method).

Risks of exactly 0 or 1 are left out of the two logistic fits (their logit is infinite), as
``rms::val.prob`` leaves them out; O:E and AUROC use every row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special, stats

from calibdash.clinical.logistic import fit_logistic, logit
from calibdash.clinical.measures import auroc
from calibdash.errors import ConfigError, InputError
from calibdash.intervals import stored_interval

__all__ = [
    "META_METRICS",
    "MetaAnalysis",
    "random_effects",
    "restricted_loglik",
    "centre_estimates",
    "pooled_table",
]

# The metrics pooled across centres, in report order, with their analysis scales.
META_METRICS = ("O:E", "calibration-in-the-large", "calibration slope", "AUROC")
_SCALES = {"O:E": "log O:E", "calibration-in-the-large": None, "calibration slope": None, "AUROC": "logit AUROC"}
_BACK = {"O:E": np.exp, "AUROC": special.expit}
CENTRE_COLUMNS = ("cluster", "metric", "estimate", "ci_low", "ci_high", "yi", "vi", "n", "events", "note")
POOLED_COLUMNS = ("metric", "estimate", "ci_low", "ci_high", "pi_low", "pi_high", "tau2", "n_clusters", "method")

# metafor's rma.uni controls for REML: threshold, maxiter, and tol for its "ll0check"
# (is the restricted likelihood higher at tau^2 = 0 than where Fisher scoring stopped?).
REML_THRESHOLD = 1e-5
REML_MAX_ITER = 100
# The second try when full steps do not converge, as metafor's help suggests:
# control = list(stepadj = 0.5, maxiter = 1000).
HALF_STEP, HALF_STEP_MAX_ITER = 0.5, 1000
_LL0_TOL = np.finfo(float).eps ** 0.25


@dataclass(frozen=True)
class MetaAnalysis:
    """A random-effects meta-analysis of ``k`` estimates (one per centre).

    Attributes
    ----------
    estimate : float
        The pooled (mean) effect ``mu``, on the analysis scale.
    se : float
        Its Hartung-Knapp standard error ``sqrt(q / sum(w))``.
    ci_low, ci_high : float
        The Hartung-Knapp interval ``estimate +- t_{k-1} se``.
    pi_low, pi_high : float
        The prediction interval ``estimate +- t_{k-1} sqrt(se^2 + tau2)`` (metafor's
        ``predict()`` after ``test = "knha"``): where a new centre's true value is expected.
    tau2 : float
        The REML estimate of the between-centre variance (analysis scale).
    k : int
        The number of centres.
    level : float
    method : str
        How the numbers were obtained, or why there are none (one centre, no convergence).
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    pi_low: float
    pi_high: float
    tau2: float
    k: int
    level: float
    method: str

    def confidence_interval(self, level=None):
        """The Hartung-Knapp interval ``(low, high)`` of the pooled estimate, a
        :class:`~calibdash.intervals.ConfidenceInterval`; ``level`` may only be None or
        the level it was computed at."""
        return stored_interval(self.ci_low, self.ci_high, self.level, level)

    def prediction_interval(self):
        """The prediction interval ``(low, high)`` of a new centre's true value."""
        return self.pi_low, self.pi_high


def _check_level(level):
    if isinstance(level, bool) or not isinstance(level, (int, float, np.integer, np.floating)) or not 0 < level < 1:
        raise ConfigError(f"level must be a number between 0 and 1 (e.g. 0.95), got {level!r}.")
    return float(level)


def restricted_loglik(tau2, yi, vi):
    """The restricted (REML) log-likelihood of ``tau2`` in the intercept-only model.

    ``-1/2 [(k-1) log(2 pi) + sum log(v_j + tau2) + log sum w_j + sum w_j (y_j - mu_w)^2]``
    with ``w_j = 1 / (v_j + tau2)`` and ``mu_w`` the weighted mean (metafor's ``ll.REML``
    with ``REMLf = FALSE``).
    """
    yi = np.asarray(yi, dtype=float)
    vi = np.asarray(vi, dtype=float)
    w = 1.0 / (vi + tau2)
    sw = np.sum(w)
    mu = np.sum(w * yi) / sw
    return float(-0.5 * ((len(yi) - 1) * math.log(2 * math.pi) + np.sum(np.log(vi + tau2)) + math.log(sw)
                         + np.sum(w * (yi - mu) ** 2)))


def _reml_tau2(yi, vi, threshold, max_iter, step):
    """metafor's Fisher scoring for the REML tau^2 (rma.uni, method = "REML", intercept only),
    each step multiplied by ``step`` (metafor's ``stepadj``).

    Returns ``(tau2, iterations, converged)``.
    """
    k = len(yi)
    ymc = yi - np.mean(yi)  # metafor works with the centred outcomes (the same fit)
    # the Hedges (HE) estimate as the start: (RSS - tr(P V)) / (k - 1), P the centring matrix
    tau2 = max(0.0, (np.sum(ymc ** 2) - np.sum(vi) * (k - 1) / k) / (k - 1))
    change = threshold + 1
    it = 0
    while change > threshold:
        it += 1
        old = tau2
        w = 1.0 / (vi + tau2)
        sw = np.sum(w)
        # P = W - w w' / sum(w);  P y = w (y - mu_w);  tr(P) and tr(P P) in closed form
        py = w * (ymc - np.sum(w * ymc) / sw)
        tr_p = sw - np.sum(w ** 2) / sw
        tr_pp = np.sum(w ** 2) - 2 * np.sum(w ** 3) / sw + np.sum(w ** 2) ** 2 / sw ** 2
        adj = (np.sum(py ** 2) - tr_p) / tr_pp * step
        if not np.isfinite(adj):
            adj = 0.0
        while tau2 + adj < 0:  # step halving, as metafor (tau2.min = 0)
            adj /= 2
        tau2 = tau2 + adj
        change = abs(old - tau2)
        if it > max_iter:
            return tau2, it, False
    # metafor's ll0check: the likelihood may be higher at the boundary
    if tau2 > threshold and restricted_loglik(0.0, yi, vi) - restricted_loglik(tau2, yi, vi) > _LL0_TOL:
        tau2 = 0.0
    return max(0.0, tau2), it, True


def random_effects(yi, vi, *, level=0.95, threshold=REML_THRESHOLD, max_iter=REML_MAX_ITER):
    """Random-effects meta-analysis: REML tau^2, Hartung-Knapp interval, prediction interval.

    The numbers of R's ``metafor::rma(yi, vi, method = "REML", test = "knha")`` and
    ``predict()`` (module docstring).

    Parameters
    ----------
    yi : array-like of shape (k,)
        The centres' estimates, on a scale where they are roughly normal.
    vi : array-like of shape (k,)
        Their within-centre (sampling) variances, all positive.
    level : float, default=0.95
        Coverage of the confidence and prediction intervals.
    threshold : float, default=1e-5
        Fisher scoring stops when a step changes tau^2 by at most this (metafor's
        ``control = list(threshold = ...)``).
    max_iter : int, default=100
        At most this many Fisher scoring steps (metafor's ``maxiter``); at least 1000 in
        the second try at half steps.

    Returns
    -------
    MetaAnalysis
        With ``k = 1`` no meta-analysis is possible: the estimate is the one centre's, and
        tau2 and the intervals are NaN, as ``method`` says. Full Fisher scoring steps can
        cycle without converging (metafor then stops with an error and suggests a shorter
        step): the scoring is then rerun at half steps, the numbers of ``rma(...,
        control = list(stepadj = 0.5, maxiter = 1000))``, and ``method`` says so. When
        that fails too, every number is NaN and ``method`` says why.

    Raises
    ------
    InputError
        When there is no estimate, the lengths differ, or an estimate or variance is not a
        finite number (variances must be positive).
    ConfigError
        When ``level``, ``threshold`` or ``max_iter`` is not a valid setting.
    """
    level = _check_level(level)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)) or not threshold > 0:
        raise ConfigError(f"threshold must be a positive number (metafor's default is 1e-5), got {threshold!r}.")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ConfigError(f"max_iter must be a positive integer (metafor's default is 100), got {max_iter!r}.")
    yi = np.atleast_1d(np.asarray(yi, dtype=float))
    vi = np.atleast_1d(np.asarray(vi, dtype=float))
    if yi.ndim != 1 or yi.shape != vi.shape:
        raise InputError(f"yi and vi must be two sequences of the same length; got shapes {yi.shape} and {vi.shape}.")
    k = len(yi)
    if k == 0:
        raise InputError("A meta-analysis needs at least one estimate; yi is empty.")
    if not np.all(np.isfinite(yi)):
        raise InputError(f"Every estimate must be a finite number; yi has {int(np.sum(~np.isfinite(yi)))} that are not.")
    if not np.all(np.isfinite(vi)) or np.any(vi <= 0):
        raise InputError("Every sampling variance must be a positive finite number; vi has "
                         f"{int(np.sum(~(np.isfinite(vi) & (vi > 0))))} that are not.")
    nan = float("nan")
    if k == 1:
        return MetaAnalysis(float(yi[0]), nan, nan, nan, nan, nan, nan, 1, level,
                            "one centre: no meta-analysis is possible (the between-centre variance cannot be "
                            "estimated); the estimate is that centre's own")
    method = "random effects (REML, Hartung-Knapp)"
    tau2, _, converged = _reml_tau2(yi, vi, threshold, max_iter, 1.0)
    if not converged:
        # Full Fisher scoring steps can cycle (metafor then stops with an error); its
        # documented remedy is a shorter step, control = list(stepadj = 0.5, maxiter = 1000).
        tau2, _, converged = _reml_tau2(yi, vi, threshold, max(max_iter, HALF_STEP_MAX_ITER), HALF_STEP)
        method = "random effects (REML by Fisher scoring at half steps, Hartung-Knapp)"
    if not converged:
        return MetaAnalysis(nan, nan, nan, nan, nan, nan, nan, k, level,
                            "random effects: REML Fisher scoring did not converge, at full steps nor at half "
                            "steps (no estimate)")
    w = 1.0 / (vi + tau2)
    sw = float(np.sum(w))
    mu = float(np.sum(w * yi) / sw)
    rss = float(np.sum(w * (yi - mu) ** 2))
    q = 0.0 if rss <= np.finfo(float).eps else rss / (k - 1)  # metafor's s2w (0 when all yi are equal)
    var = q / sw
    se = math.sqrt(var)
    crit = float(stats.t.ppf(0.5 + level / 2, k - 1))
    pi_se = math.sqrt(var + tau2)
    return MetaAnalysis(mu, se, mu - crit * se, mu + crit * se, mu - crit * pi_se, mu + crit * pi_se, float(tau2), k,
                        level, method)


# ----------------------------------------------------------------------------- per-centre inputs
def _check_data(p, y, clusters):
    p = np.asarray(p, dtype=float).ravel()
    y_raw = np.asarray(y)
    if y_raw.ndim != 1 or len(y_raw) != len(p):
        raise InputError(f"The outcomes must be one per risk: {len(p)} risks and {y_raw.size} outcomes.")
    clusters = np.asarray(clusters, dtype=object).ravel()
    if len(clusters) != len(p):
        raise InputError(f"The clusters must give one centre per row: {len(p)} risks and {len(clusters)} cluster labels.")
    if len(p) == 0:
        raise InputError("There are no rows: the per-centre validation needs risks, outcomes and centres.")
    bad = ~np.isfinite(p) | (p < 0) | (p > 1)
    if np.any(bad):
        rows = ", ".join(str(i) for i in np.flatnonzero(bad)[:5])
        raise InputError(f"Risks must be numbers between 0 and 1; {int(bad.sum())} are not (rows {rows}).")
    try:
        y = y_raw.astype(float)
    except (TypeError, ValueError):
        raise InputError("The outcomes must be 0 or 1.") from None
    bad = ~np.isin(y, (0.0, 1.0))
    if np.any(bad):
        rows = ", ".join(str(i) for i in np.flatnonzero(bad)[:5])
        raise InputError(f"The outcomes must be 0 or 1; {int(bad.sum())} are not (rows {rows}).")
    missing = np.array([c is None or (isinstance(c, float) and math.isnan(c)) for c in clusters])
    if np.any(missing):
        rows = ", ".join(str(i) for i in np.flatnonzero(missing)[:5])
        raise InputError(f"{int(missing.sum())} rows have no centre (rows {rows}); give every row a cluster label.")
    return p, y, clusters


def _centre_order(clusters):
    labels = list(dict.fromkeys(clusters.tolist()))
    try:
        return sorted(labels)
    except TypeError:  # labels of mixed types: the order of first appearance
        return labels


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _oe_row(p, y, z):
    n, o, e = len(y), float(np.sum(y)), float(np.sum(p))
    row = dict(n=n, events=int(o))
    if e <= 0:
        return dict(row, estimate=np.nan, note="every risk is 0 (no expected events): O:E is undefined")
    if o == 0:
        return dict(row, estimate=0.0, note="no events: log O:E is undefined")
    if o == n:
        return dict(row, estimate=o / e, note="every patient had the event: the variance of log O:E is 0")
    yi, vi = math.log(o / e), 1.0 / o - 1.0 / n
    return dict(row, estimate=o / e, yi=yi, vi=vi, ci_low=math.exp(yi - z * math.sqrt(vi)),
                ci_high=math.exp(yi + z * math.sqrt(vi)))


def _separated(lp, y):
    """True when a threshold on ``lp`` separates events from non-events, ties at it allowed
    (complete or quasi-complete separation): then ``a + b lp`` has no finite maximum-
    likelihood fit. (Newton's iterates can stall at a large slope with a tiny gradient
    before the size check of :func:`fit_logistic` catches them: 6 separated rows stop at
    b = 43, so separation is tested directly.)"""
    ev, non = lp[y == 1], lp[y == 0]
    return bool(np.max(non) <= np.min(ev) or np.max(ev) <= np.min(non))


def _logistic_rows(p, y, z):
    """Calibration-in-the-large and slope of one centre (rows with 0 < p < 1)."""
    inside = (p > 0) & (p < 1)
    out = int(np.sum(~inside))
    left_out = ""
    if out:
        contradicted = int(np.sum((p == 0) & (y == 1)) + np.sum((p == 1) & (y == 0)))
        left_out = (f"{_plural(out, 'row')} with risk exactly 0 or 1 left out of the fit"
                    + (f" ({contradicted} contradicted by the outcome)" if contradicted else ""))
    p, y = p[inside], y[inside]
    n, events = len(y), int(np.sum(y))
    base = dict(n=n, events=events)

    def undefined(reason):
        return dict(base, estimate=np.nan, note="; ".join(s for s in (reason, left_out) if s))

    def defined(est, var):
        return dict(base, estimate=est, yi=est, vi=var, ci_low=est - z * math.sqrt(var), ci_high=est + z * math.sqrt(var),
                    note=left_out)

    if n == 0:
        reason = "no rows with risk strictly between 0 and 1"
        return undefined(reason), undefined(reason)
    if events == 0 or events == n:
        reason = "no events" if events == 0 else "every patient had the event"
        reason += ": the logistic fit has no finite maximum"
        return undefined(reason), undefined(reason)
    lp = logit(p)
    fit = fit_logistic(np.ones((n, 1)), y, offset=lp)
    var = float(fit.covariance[0, 0])
    citl = (defined(float(fit.coef[0]), var) if fit.converged and np.isfinite(var) and var > 0
            else undefined("the logistic fit did not converge"))
    if np.ptp(lp) == 0:
        return citl, undefined("every risk is the same: the slope is not defined")
    if _separated(lp, y):
        return citl, undefined("the risks separate events from non-events: the slope fit has no finite maximum")
    fit = fit_logistic(np.column_stack([np.ones(n), lp]), y)
    var = float(fit.covariance[1, 1])
    if not fit.converged:
        slope = undefined("the slope fit did not converge")
    elif not (np.isfinite(var) and var > 0):
        slope = undefined("the slope fit is singular")
    else:
        slope = defined(float(fit.coef[1]), var)
    return citl, slope


def _auroc_row(p, y, z, level):
    n, events = len(y), int(np.sum(y))
    row = dict(n=n, events=events)
    if events == 0 or events == n:
        return dict(row, estimate=np.nan, note="no events" if events == 0 else "every patient had the event")
    a = auroc(p, y, level=level)
    c = a.estimate
    if c <= 0 or c >= 1:
        return dict(row, estimate=c, note=f"AUROC is {c:g} (perfect separation): its logit is infinite")
    vi = a.se ** 2 / (c * (1 - c)) ** 2
    if not (np.isfinite(vi) and vi > 0):
        return dict(row, estimate=c, note="the DeLong variance is 0 (too few patients)")
    yi = float(logit(c))
    return dict(row, estimate=c, yi=yi, vi=vi, ci_low=float(special.expit(yi - z * math.sqrt(vi))),
                ci_high=float(special.expit(yi + z * math.sqrt(vi))))


def centre_estimates(p, y, clusters, *, level=0.95):
    """The per-centre inputs of the meta-analysis, one row per centre and metric.

    Parameters
    ----------
    p : array-like of shape (n,)
        Predicted risks in [0, 1].
    y : array-like of shape (n,)
        Outcomes, 0 or 1.
    clusters : array-like of shape (n,)
        The centre of each row.
    level : float, default=0.95
        Coverage of the per-centre intervals.

    Returns
    -------
    DataFrame
        Columns ``cluster, metric, estimate, ci_low, ci_high, yi, vi, n, events, note``,
        ordered by metric (:data:`META_METRICS`) and then by centre. ``estimate`` is on the
        reported scale (O:E, AUROC as such), ``yi`` and ``vi`` the analysis-scale estimate
        and its variance (module docstring); ``ci_low, ci_high`` are the Wald interval
        ``yi +- z sqrt(vi)`` at ``level``, back-transformed: the interval the meta-analysis
        sees (not the profile-likelihood interval of the whole-data results). ``n`` and
        ``events`` count the rows the metric used (the logistic fits leave out risks of
        exactly 0 or 1). A metric undefined in a centre (no events, every patient an event,
        AUROC 0 or 1, a singular or separated slope fit) keeps its row with NaN ``yi``,
        ``vi`` and interval, and ``note`` says why; ``note`` is empty otherwise unless rows
        were left out of a logistic fit.

    Raises
    ------
    InputError
        When the lengths differ, a risk is outside [0, 1] or not a number, an outcome is
        not 0 or 1, or a row has no centre.
    """
    level = _check_level(level)
    p, y, clusters = _check_data(p, y, clusters)
    z = float(stats.norm.ppf(0.5 + level / 2))
    per_metric = {m: [] for m in META_METRICS}
    for c in _centre_order(clusters):
        rows = clusters == c
        pc, yc = p[rows], y[rows]
        citl, slope = _logistic_rows(pc, yc, z)
        for metric, rec in (("O:E", _oe_row(pc, yc, z)), ("calibration-in-the-large", citl),
                            ("calibration slope", slope), ("AUROC", _auroc_row(pc, yc, z, level))):
            per_metric[metric].append(dict(dict(yi=np.nan, vi=np.nan, ci_low=np.nan, ci_high=np.nan, note=""), **rec,
                                           cluster=c, metric=metric))
    table = pd.DataFrame([r for m in META_METRICS for r in per_metric[m]], columns=list(CENTRE_COLUMNS))
    for col in ("estimate", "ci_low", "ci_high", "yi", "vi"):
        table[col] = table[col].astype(float)
    table["n"] = table["n"].astype(int)
    table["events"] = table["events"].astype(int)
    return table


# ----------------------------------------------------------------------------- pooling
def pooled_table(centres, *, level=0.95):
    """The random-effects meta-analysis of each metric over the centres.

    Parameters
    ----------
    centres : DataFrame
        The table of :func:`centre_estimates` (for one class: a ``class`` column, if there
        is one, must hold a single value).
    level : float, default=0.95
        Coverage of the confidence and prediction intervals.

    Returns
    -------
    DataFrame
        One row per metric of :data:`META_METRICS`, columns ``metric, estimate, ci_low,
        ci_high, pi_low, pi_high, tau2, n_clusters, method``. The estimate and both
        intervals are back-transformed to the reported scale (``exp`` for O:E, ``expit``
        for AUROC); ``tau2`` stays on the analysis scale (log O:E, logit AUROC; the
        intercept and slope scales for the other two), as ``method`` names it.
        ``n_clusters`` counts the centres pooled (those with a defined ``yi``); centres
        left out are counted in ``method``. With one centre the estimate is that centre's
        and the rest NaN; with none every number is NaN.

    Raises
    ------
    InputError
        When ``centres`` lacks a column of :func:`centre_estimates` or holds several classes.
    """
    level = _check_level(level)
    missing = [c for c in ("cluster", "metric", "yi", "vi") if c not in centres.columns]
    if missing:
        raise InputError("pooled_table needs the table of centre_estimates; the columns "
                         + ", ".join(missing) + " are missing.")
    if "class" in centres.columns and centres["class"].nunique(dropna=False) > 1:
        raise InputError("pooled_table pools one class at a time; the table holds "
                         f"{centres['class'].nunique(dropna=False)} classes (select one class's rows).")
    rows = []
    nan = float("nan")
    for metric in META_METRICS:
        sub = centres[centres["metric"] == metric]
        yi, vi = sub["yi"].to_numpy(dtype=float), sub["vi"].to_numpy(dtype=float)
        ok = np.isfinite(yi) & np.isfinite(vi) & (vi > 0)
        left = int(np.sum(~ok))
        scale = _SCALES[metric]
        back = _BACK.get(metric, lambda x: x)
        if not ok.any():
            rows.append(dict(metric=metric, estimate=nan, ci_low=nan, ci_high=nan, pi_low=nan, pi_high=nan, tau2=nan,
                             n_clusters=0, method=f"no centre has a defined {metric} (see the centres' notes)"))
            continue
        m = random_effects(yi[ok], vi[ok], level=level)
        method = m.method + (f", {scale}" if scale and m.k > 1 else "")
        if left:
            method += f"; {_plural(left, 'centre')} left out (see the centres' notes)"
        rows.append(dict(metric=metric, estimate=float(back(m.estimate)), ci_low=float(back(m.ci_low)),
                         ci_high=float(back(m.ci_high)), pi_low=float(back(m.pi_low)), pi_high=float(back(m.pi_high)),
                         tau2=m.tau2, n_clusters=m.k, method=method))
    table = pd.DataFrame(rows, columns=list(POOLED_COLUMNS))
    table["n_clusters"] = table["n_clusters"].astype(int)
    return table
