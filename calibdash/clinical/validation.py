"""Validating a clinical risk model: the calibration hierarchy, discrimination, net benefit,
sample-size adequacy and subgroups (:func:`validate_risk_model`).

The task function only dispatches: the statistics are in :mod:`~calibdash.clinical.measures`
and :mod:`~calibdash.clinical.logistic`, the precision targets in
:mod:`~calibdash.clinical.sample_size`, and the wording and figures in
:mod:`calibdash.display.clinical`.

Intervals, and the randomness they include (the rows are a sample; nothing is fitted but the
statistics themselves):

- calibration-in-the-large and slope: profile likelihood (R's ``confint`` on a ``glm``);
- AUROC: DeLong's;
- O:E, ICI, E50, E90, Brier, scaled Brier, the flexible curve and net benefit: the
  nonparametric bootstrap of rows, ``n_resamples`` times (percentile intervals);
- ICI, E50 and E90 cannot be negative and are biased upwards by the noise of the curve, which
  the bootstrap sees twice, so the percentile interval alone sits too high where the model is
  mildly miscalibrated (it covered the true ICI in 87% and E90 in 73% of simulated draws with
  a slope of 0.9). Their interval's lower end is therefore the lower of the percentile's and
  the basic (reverse-percentile, ``2 theta - q(1 - alpha/2)``) interval's, clipped at 0 (the
  upper end is the percentile's); and the lower end is 0 whenever the data are consistent with perfect calibration: when a test of
  ``P(y = 1 | p) = p`` whose statistic is the ICI itself, with its null distribution
  simulated by drawing outcomes from the model's own risks, does not reject at
  ``1 - level`` (the table gives its p-value on the ICI row). Without that rule no interval
  built from the bootstrap contains the truth of a calibrated model, 0. Emax is reported
  without an interval: the bootstrap is not valid for a maximum (its estimand, the largest
  error over the observed risks, moves with n).

tests/clinical/test_coverage.py checks the coverage of every interval against simulations
with known truth, including calibrated and non-logistic miscalibration.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from calibdash import limits
from calibdash.clinical import measures
from calibdash.clinical.loess import loess_fit
from calibdash.clinical.logistic import calibration_in_the_large, calibration_slope, heterogeneity_test
from calibdash.clinical.sample_size import MIN_EVENTS, sample_size_table
from calibdash.errors import ConfigError, InputError

__all__ = [
    "METRICS",
    "MAX_GROUPS",
    "MIN_GROUP_EVENTS",
    "THRESHOLDS",
    "RiskValidation",
    "validate_risk_model",
]

# The metrics of the table, in the order of the calibration hierarchy (Van Calster et al. 2019):
# mean, weak and moderate calibration, then overall accuracy, discrimination and the test.
METRICS = ("O:E", "calibration-in-the-large", "calibration slope", "ICI", "E50", "E90", "Emax",
           "Brier", "scaled Brier", "AUROC", "Spiegelhalter z")
# How each metric's interval is obtained (the table's "interval" column).
INTERVAL_METHOD = {
    "O:E": "bootstrap", "calibration-in-the-large": "profile likelihood",
    "calibration slope": "profile likelihood", "ICI": "bootstrap", "E50": "bootstrap",
    "E90": "bootstrap", "Emax": "none (the bootstrap is not valid for a maximum)", "Brier": "bootstrap", "scaled Brier": "bootstrap",
    "AUROC": "DeLong", "Spiegelhalter z": "none (a test statistic; see p_value)",
}
_BOOTSTRAPPED = ("O:E", "ICI", "E50", "E90", "Emax", "Brier", "scaled Brier")

# A grouping variable is categorical (sex, age band, hospital): more distinct values than this
# is almost always a continuous column chosen by mistake.
MAX_GROUPS = 20
# Below this many events (or non-events) a group's calibration cannot be judged: the slope's
# interval is several units wide and loess follows single rows. Such groups are listed, flagged,
# and left out of the metrics and of the heterogeneity tests.
MIN_GROUP_EVENTS = 10
# Resamples per unit of work (and of progress) of the bootstrap.
CHUNK = 100
# Thresholds of the decision curve (Vickers & Elkin 2006), 0.01 to 0.99.
THRESHOLDS = np.round(np.arange(1, 100) / 100, 2)
# Points of the flexible curve's grid, and the share of resamples that must reach a grid point
# (lie inside the resample's range of p) for the band to be drawn there.
CURVE_POINTS = 100
BAND_MIN_SHARE = 0.9
# Bins of the distribution of predicted risk by outcome (the histograms under the curve).
HIST_BINS = 50


@dataclass
class RiskValidation:
    """The result of :func:`validate_risk_model`.

    Attributes
    ----------
    metrics : DataFrame
        One row per class block, group and metric. Columns: ``class``, ``group`` (None for
        the whole data), ``metric`` (the names in :data:`METRICS`), ``estimate``, ``ci_low``,
        ``ci_high``, ``interval`` (how the interval was obtained), ``p_value`` (for
        ``"Spiegelhalter z"``), ``n``, ``events``, ``non_events`` and ``note`` (why a group
        is not judged or is imprecise; empty otherwise).
    curve : DataFrame
        The flexible calibration curve (loess of the outcome on the predicted risk) with its
        bootstrap band, for the whole data of each class block: ``class``, ``p``,
        ``estimate``, ``ci_low``, ``ci_high``. The band is NaN where fewer than 90% of the
        resamples reach the point (at the very ends of the range).
    distribution : DataFrame
        The distribution of predicted risk by outcome: ``class``, ``bin_low``, ``bin_high``,
        ``events``, ``non_events``.
    decision_curve : DataFrame
        Net benefit over the thresholds 0.01 to 0.99: ``class``, ``threshold``, ``strategy``
        (``"model"``, ``"treat all"``, ``"treat none"``), ``net_benefit``, ``ci_low``,
        ``ci_high``.
    sample_size : DataFrame
        The achieved interval widths against Riley et al.'s (2021) targets, per class block
        (see :func:`calibdash.clinical.sample_size.sample_size_table`).
    groups : DataFrame
        One row per class block and group: ``class``, ``group``, ``n``, ``events``,
        ``non_events``, ``status`` (``"judged"``, ``"imprecise"`` or ``"too small"``) and
        ``note``. Empty without groups.
    heterogeneity : DataFrame
        Likelihood-ratio tests of heterogeneity between the judged groups: ``class``,
        ``metric`` (calibration-in-the-large or slope), ``statistic``, ``df``, ``p_value``,
        ``groups``. Empty without groups.
    calibration_error : DataFrame
        The risk-optimised canonical calibration error of Gruber & Bach (the square root of
        the squared error that :func:`calibdash.evaluate` estimates on ``[1 - p, p]``, with
        its interval) for the whole data and each judged group: ``class``, ``group``,
        ``estimator`` (the one the risk selected), ``estimate``, ``ci_low``, ``ci_high``, ``n``. Empty when ``calibration_error=False``.
    classes : tuple of str
        The class blocks (the positive class for binary data).
    group_name : str or None
        The grouping column's name.
    settings : dict
        ``n_resamples``, ``random_state``, ``level`` and the thresholds used.
    notes : tuple of str
        How the input was read (e.g. rows without a group left out of the subgroups).
    """

    metrics: pd.DataFrame
    curve: pd.DataFrame
    distribution: pd.DataFrame
    decision_curve: pd.DataFrame
    sample_size: pd.DataFrame
    groups: pd.DataFrame
    heterogeneity: pd.DataFrame
    calibration_error: pd.DataFrame
    classes: tuple
    group_name: str | None
    n: int
    settings: dict = field(default_factory=dict)
    notes: tuple = ()
    source_name: str = "the input"

    def metric(self, name, *, group=None, cls=None):
        """The row of ``metrics`` for one metric (the whole data, the first class by default).

        Returns
        -------
        pandas.Series
        """
        m = self.metrics
        cls = self.classes[0] if cls is None else str(cls)
        rows = m[(m["metric"] == name) & (m["class"] == cls)
                 & (m["group"].isna() if group is None else (m["group"] == str(group)))]
        if rows.empty:
            raise KeyError(f"no metric {name!r} for class {cls!r} and group {group!r}")
        return rows.iloc[0]

    def confidence_interval(self, name, *, group=None, cls=None):
        """``(ci_low, ci_high)`` of one metric."""
        row = self.metric(name, group=group, cls=cls)
        return float(row["ci_low"]), float(row["ci_high"])

    def verdicts(self, *, cls=None, group=None):
        """One status and one plain sentence per level of the validation (whole data or one group).

        Returns
        -------
        list of dict
            In the order of :data:`calibdash.clinical.verdicts.LEVELS`, each with ``level``,
            ``verdict`` (a sentence), ``status`` (``"ok"``, ``"problem"`` or ``"uncertain"``)
            and ``metrics`` (the metric names it rests on). The rules are in docs/clinical.md.
        """
        from calibdash.clinical.verdicts import hierarchy_verdicts

        return hierarchy_verdicts(self, cls=cls, group=group)

    def __repr__(self):
        return (f"RiskValidation(n={self.n}, classes={list(self.classes)!r}, "
                f"groups={self.group_name!r}, n_resamples={self.settings.get('n_resamples')})")


# ---------------------------------------------------------------------------------------------
# Input


@dataclass(frozen=True)
class _Block:
    """One binary problem: the risk of one class against the rest."""

    name: str
    p: np.ndarray
    y: np.ndarray  # 0/1 float


def _binary_labels(y, positive):
    values = pd.unique(pd.Series(y).astype(object))
    if len(values) > 2:
        raise InputError(
            f"The labels have {len(values)} distinct values, but one column of risks describes a binary "
            "outcome. Give the probabilities of every class (an n x d array) to validate them one "
            "against the rest, or recode the labels to two values.")
    if positive is None:
        as_set = {str(v) for v in values}
        if as_set <= {"0", "1", "0.0", "1.0"} or as_set <= {"False", "True"}:
            return (np.asarray(pd.Series(y).astype(str).isin(["1", "1.0", "True"])).astype(float), "1")
        raise InputError(
            "Which label is the outcome the risks predict? Pass positive= one of "
            + ", ".join(repr(str(v)) for v in values) + ".", option="positive")
    if str(positive) not in {str(v) for v in values} and len(values) == 2:
        raise InputError(
            f"positive={str(positive)!r} is not one of the labels ("
            + ", ".join(repr(str(v)) for v in values) + ").", option="positive")
    return np.asarray(pd.Series(y).astype(str) == str(positive)).astype(float), str(positive)


def _check_risks(p):
    if not np.all(np.isfinite(p)):
        bad = int(np.flatnonzero(~np.isfinite(p))[0])
        raise InputError(f"Row {bad} has a predicted risk that is not a number ({p[bad]!r}).")
    if np.any((p < 0) | (p > 1)):
        bad = int(np.flatnonzero((p < 0) | (p > 1))[0])
        raise InputError(
            f"Row {bad} has a predicted risk of {p[bad]!r}, outside [0, 1]. Give probabilities of "
            "the positive class (load logits with calibdash.load_predictions first).")


def _blocks(p, y, positive):
    """Split the input into binary blocks; returns (blocks, class names, groups, source name)."""
    from calibdash.io.loading import Predictions

    if isinstance(p, Predictions):
        if y is not None:
            raise InputError("Give either a Predictions object or (p, y), not both.")
        P, labels, names = p.probs, p.labels, list(p.class_names)
        if P.shape[1] == 2:
            pos = 1 if positive is None else _class_index(names, positive)
            return [_Block(names[pos], P[:, pos], (labels == pos).astype(float))]
        idx = range(P.shape[1]) if positive is None else [_class_index(names, positive)]
        return [_Block(names[k], P[:, k], (labels == k).astype(float)) for k in idx]
    if y is None:
        raise InputError("Outcomes are needed: call validate_risk_model(p, y).")
    P = np.asarray(p, dtype=float)
    y = np.asarray(y)
    if y.ndim != 1:
        raise InputError(f"The outcomes must be one value per row; got an array of shape {y.shape}.")
    if P.ndim == 2 and P.shape[1] == 1:
        P = P[:, 0]
    if P.shape[0] != len(y):
        raise InputError(f"There are {P.shape[0]} predicted risks but {len(y)} outcomes; give one outcome per row.")
    if P.ndim == 1:
        _check_risks(P)
        y01, name = _binary_labels(y, positive)
        return [_Block(name, P, y01)]
    if P.ndim != 2:
        raise InputError(f"The risks must be a vector or an n x d array; got shape {P.shape}.")
    _check_risks(P.ravel())
    d = P.shape[1]
    names = [str(k) for k in range(d)]
    try:
        codes = y.astype(np.int64)
        ok = np.array_equal(codes, y) and codes.min() >= 0 and codes.max() < d
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"With an n x {d} array of probabilities, the outcomes must be class indices 0 to {d - 1}.")
    if d == 2:
        pos = 1 if positive is None else _class_index(names, positive)
        return [_Block(names[pos], P[:, pos], (codes == pos).astype(float))]
    idx = range(d) if positive is None else [_class_index(names, positive)]
    return [_Block(names[k], P[:, k], (codes == k).astype(float)) for k in idx]


def _class_index(names, positive):
    if str(positive) in names:
        return names.index(str(positive))
    raise InputError(f"positive={str(positive)!r} is not a class; the classes are "
                     + ", ".join(repr(n) for n in names) + ".", option="positive")


def _group_labels(groups, p, n):
    """The group of each row as str (None when missing) and the column's name."""
    from calibdash.io.loading import Predictions

    if groups is None:
        return None, None
    if isinstance(groups, str):
        if not isinstance(p, Predictions):
            raise InputError(f"groups={groups!r} names a column, but only a loaded table has columns; pass the group "
                             "labels themselves (one per row).", option="group_columns")
        if groups not in p.groups:
            have = ", ".join(repr(c) for c in p.groups) or "none"
            raise InputError(f"There is no grouping column {groups!r}; the grouping columns kept are: {have}. "
                             "Name it with group_columns= when loading.", option="group_columns")
        values, name = p.groups[groups], groups
    else:
        values, name = groups, getattr(groups, "name", None) or "group"
    s = pd.Series(np.asarray(values, dtype=object))
    if len(s) != n:
        raise InputError(f"There are {len(s)} group labels for {n} rows; give one per row.")
    missing = s.isna() | (s.astype(str).str.strip() == "")
    labels = [None if gone else str(v).strip() for v, gone in zip(s, missing)]
    distinct = sorted({g for g in labels if g is not None})
    if len(distinct) < 2:
        raise InputError(
            f"The grouping column {str(name)!r} has {len(distinct)} distinct value"
            f"{'' if len(distinct) == 1 else 's'}; subgroups need at least two.", option="group_columns")
    if len(distinct) > MAX_GROUPS:
        raise InputError(
            f"The grouping column {str(name)!r} has {len(distinct)} distinct values; at most {MAX_GROUPS} are "
            "allowed. A grouping variable is a category such as sex, age band or hospital: bin a "
            "continuous column into a few bands first.", option="group_columns")
    return np.asarray(labels, dtype=object), str(name)


# ---------------------------------------------------------------------------------------------
# Statistics of one block


def _point_statistics(p, y):
    """The bootstrapped statistics, in ``_BOOTSTRAPPED`` order."""
    curve = loess_fit(p, y)
    loess = measures.loess_summaries(p, y, curve=curve)
    return [measures.observed_expected(p, y), loess["ICI"], loess["E50"], loess["E90"], loess["Emax"],
            measures.brier(p, y), measures.scaled_brier(p, y)], curve


def _percentile_interval(draws, level, *, min_share=BAND_MIN_SHARE):
    """The percentile bootstrap interval of each column (NaN where fewer than ``min_share`` of
    the draws are finite, as at the ends of the curve's range)."""
    a = (1 - level) / 2
    ok = np.isfinite(draws)
    lo = np.full(draws.shape[1], np.nan)
    hi = np.full(draws.shape[1], np.nan)
    for j in np.flatnonzero(ok.mean(axis=0) >= min_share):
        lo[j], hi[j] = np.quantile(draws[ok[:, j], j], [a, 1 - a])
    return lo, hi


def _null_ici_chunk(p, seeds):
    """ICI of outcomes drawn from ``p`` itself, one per seed (the null of perfect calibration)."""
    out = np.full(len(seeds), np.nan)
    for i, s in enumerate(seeds):
        ys = (np.random.default_rng(s).random(len(p)) < p).astype(float)
        if 0 < ys.sum() < len(p):
            out[i] = float(np.mean(np.abs(loess_fit(p, ys).predict(p) - p)))
    return out


def _resample_indices(rng, n, y):
    # resample rows until the resample has both outcomes (needed by every statistic)
    for _ in range(100):
        idx = rng.integers(0, n, n)
        s = y[idx].sum()
        if 0 < s < n:
            return idx
    return idx


def _bootstrap_chunk(p, y, curve_grid, thresholds, seeds):
    """The bootstrapped statistics (and curve and net benefit) of one resample per seed."""
    n, m = len(y), len(seeds)
    draws = np.full((m, len(_BOOTSTRAPPED)), np.nan)
    curve = None if curve_grid is None else np.full((m, len(curve_grid)), np.nan)
    nb = None if thresholds is None else np.full((m, len(thresholds)), np.nan)
    treat_all = None if thresholds is None else np.full((m, len(thresholds)), np.nan)
    for b, s in enumerate(seeds):
        idx = _resample_indices(np.random.default_rng(s), n, y)
        pb, yb = p[idx], y[idx]
        draws[b], curve_b = _point_statistics(pb, yb)
        if curve is not None:
            curve[b] = curve_b.predict(curve_grid)
        if nb is not None:
            nb[b] = measures.net_benefit(pb, yb, thresholds)
            treat_all[b] = measures.net_benefit_treat_all(yb, thresholds)
    return draws, curve, nb, treat_all


def _n_chunks(n_resamples, n_jobs):
    # chunks of about CHUNK resamples (at least one per worker), so that progress moves
    return max(1, min(n_resamples, max(n_jobs, -(-n_resamples // CHUNK))))


def _in_chunks(fn, seeds, n_jobs, *args, on_chunk=None):
    """``fn(*args, seeds_chunk)`` over chunks of the seeds, in order, calling ``on_chunk()`` after
    each; the numbers do not depend on ``n_jobs`` (each resample has its own seed)."""
    if not len(seeds):
        return [fn(*args, seeds)]
    chunks = [[seeds[i] for i in c] for c in np.array_split(np.arange(len(seeds)), _n_chunks(len(seeds), n_jobs))]
    if n_jobs == 1:
        results = (fn(*args, c) for c in chunks)
    else:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=n_jobs, return_as="generator")(delayed(fn)(*args, c) for c in chunks)
    out = []
    for r in results:
        out.append(r)
        if on_chunk is not None:
            on_chunk()
    return out


def _stack(parts, k):
    arrays = [part[k] for part in parts]
    return None if arrays[0] is None else np.concatenate(arrays)


def _analyse(p, y, *, n_resamples, seed, level, curve_grid=None, thresholds=None, n_jobs=1, on_chunk=None):
    """Point estimates, intervals and (optionally) curve and decision-curve draws of one sample."""
    est, curve = _point_statistics(p, y)
    est = np.asarray(est)
    boot_seed, null_seed = seed.spawn(2)
    parts = _in_chunks(_bootstrap_chunk, boot_seed.spawn(n_resamples), n_jobs, p, y, curve_grid, thresholds,
                       on_chunk=on_chunk)
    draws, curve_draws, nb_draws, all_draws = (_stack(parts, k) for k in range(4))
    if n_resamples:
        lo, hi = _percentile_interval(draws, level)
        null = np.concatenate(_in_chunks(_null_ici_chunk, null_seed.spawn(n_resamples), n_jobs, p,
                                         on_chunk=on_chunk))
        null = null[np.isfinite(null)]
        consistency = (1 + np.sum(null >= est[_BOOTSTRAPPED.index("ICI")])) / (1 + len(null))
    else:
        lo = hi = np.full(len(est), np.nan)
        consistency = np.nan
    values = {name: (est[j], lo[j], hi[j]) for j, name in enumerate(_BOOTSTRAPPED)}
    for name in ("ICI", "E50", "E90"):
        e, q_lo, q_hi = values[name]
        # union with the basic interval (its lower end 2e - q_hi), which corrects the upward bias
        low = min(q_lo, max(0.0, 2 * e - q_hi))
        if consistency >= 1 - level:  # consistent with perfect calibration: 0 is a plausible value
            low = 0.0
        values[name] = (e, low, q_hi)
    values["Emax"] = (values["Emax"][0], np.nan, np.nan)
    cil = calibration_in_the_large(p, y, level=level)
    slope = calibration_slope(p, y, level=level)
    auc = measures.auroc(p, y, level=level)
    values["calibration-in-the-large"] = (cil.estimate, cil.ci_low, cil.ci_high)
    values["calibration slope"] = (slope.estimate, slope.ci_low, slope.ci_high)
    values["AUROC"] = (auc.estimate, auc.ci_low, auc.ci_high)
    sp = measures.spiegelhalter(p, y)
    values["Spiegelhalter z"] = (sp.statistic, np.nan, np.nan)
    pvalues = {"Spiegelhalter z": sp.pvalue, "ICI": consistency}
    return values, pvalues, curve, curve_draws, nb_draws, all_draws


def _metric_rows(cls, group, values, pvalues, n, events, note):
    rows = []
    for name in METRICS:
        e, lo, hi = values.get(name, (np.nan, np.nan, np.nan)) if values else (np.nan, np.nan, np.nan)
        rows.append({"class": cls, "group": group, "metric": name, "estimate": float(e), "ci_low": float(lo),
                     "ci_high": float(hi), "interval": INTERVAL_METHOD[name],
                     "p_value": float(pvalues.get(name, np.nan)) if values else np.nan,
                     "n": n, "events": events, "non_events": n - events, "note": note})
    return rows


def _group_status(events, non_events):
    fewest = min(events, non_events)
    if fewest < MIN_GROUP_EVENTS:
        which = "events" if events <= non_events else "non-events"
        return "too small", (f"not judged: {fewest} {which}, at least {MIN_GROUP_EVENTS} are needed to estimate "
                             "calibration at all")
    if fewest < MIN_EVENTS:
        which = "events" if events <= non_events else "non-events"
        return "imprecise", (f"imprecise: {fewest} {which}, fewer than the {MIN_EVENTS} recommended for "
                             "validation (Collins et al. 2016); read the intervals")
    return "judged", ""


def _risk_optimised(p, y, *, random_state, n_jobs, estimators):
    from calibdash.evaluation.pipeline import evaluate

    P2 = np.column_stack([1 - p, p])
    res = evaluate(P2, y.astype(np.int64), notion="canonical", estimators=estimators,
                   random_state=random_state, n_jobs=n_jobs, keep_models=False)
    lo, hi = res.confidence_interval()
    best = res.best
    return str(best["estimator"]), float(best["estimate"]), lo, hi


# ---------------------------------------------------------------------------------------------
# The task function


def validate_risk_model(p, y=None, groups=None, positive=None, n_resamples=1000, random_state=0, *,
                        level=0.95, calibration_error=True, estimators=None, n_jobs=1, progress=None):
    """Validate a risk model as Van Calster et al. (2019) and TRIPOD+AI describe.

    The calibration hierarchy (mean: O:E and calibration-in-the-large; weak: the calibration
    slope; moderate: the flexible calibration curve and its summaries ICI, E50, E90, Emax),
    overall accuracy (Brier, scaled Brier), discrimination (AUROC), Spiegelhalter's test and
    clinical usefulness (net benefit), each with a 95% interval; the sample size against
    Riley et al.'s (2021) precision targets; and all of it per subgroup, with
    likelihood-ratio tests of heterogeneity and the risk-optimised calibration error of
    Gruber & Bach per group.

    Parameters
    ----------
    p : array-like of shape (n,) or (n, d), or Predictions
        The predicted risk of the positive class; or the probabilities of every class (an
        ``n x 2`` array is binary, column 1 the positive class; wider arrays are validated one
        class against the rest, one block per class); or what
        :func:`calibdash.load_predictions` returned (then ``y`` must be None).
    y : array-like of shape (n,)
        The outcomes: two values (``positive`` says which is the event; 0/1 and False/True
        need not) with a vector of risks, class indices with an array.
    groups : array-like of shape (n,) or str, optional
        The subgroup of each row (missing or empty: left out of the subgroups), or the name
        of a grouping column of a loaded table. Between 2 and :data:`MAX_GROUPS` groups.
    positive : str, optional
        The event's label (vector input) or class name (array or Predictions input); for an
        array with more than two classes, validate only that class.
    n_resamples : int, default=1000
        Bootstrap resamples for the intervals of O:E, the loess summaries, Brier, the curve
        and the decision curve; 0 skips them (those intervals are NaN).
    random_state : int, default=0
        Seed of the bootstrap and of :func:`calibdash.evaluate`; equal seeds give equal numbers.
    level : float, default=0.95
        Confidence level of every interval.
    calibration_error : bool, default=True
        Also run :func:`calibdash.evaluate` (canonical notion) on the whole data and on each
        judged group.
    estimators : list of str, optional
        The estimators for that run (default: the canonical notion's).
    n_jobs : int, default=1
        Workers for the bootstrap and for :func:`calibdash.evaluate`; the numbers do not
        depend on it (every resample has its own seed).
    progress : callable, optional
        ``progress(done, total, message)`` after each step.

    Returns
    -------
    RiskValidation
    """
    if not isinstance(n_resamples, numbers.Integral) or isinstance(n_resamples, bool) or n_resamples < 0:
        raise ConfigError(f"n_resamples must be a whole number of at least 0; got {n_resamples!r}.")
    limits.RESAMPLES.check(n_resamples, "n_resamples")
    if not isinstance(random_state, numbers.Integral) or isinstance(random_state, bool):
        raise ConfigError(f"random_state must be a whole number; got {random_state!r}.")
    if not 0.5 <= level < 1:
        raise ConfigError(f"level must be between 0.5 and 1; got {level!r}.")
    blocks = _blocks(p, y, positive)
    n = len(blocks[0].y)
    group_of, group_name = _group_labels(groups, p, n)
    notes = []
    if group_of is not None:
        missing = int(sum(g is None for g in group_of))
        if missing:
            notes.append(f"{missing} row{'s' if missing != 1 else ''} without a value of {group_name!r} "
                         "are in the whole-data results but in no subgroup.")
        levels = sorted({g for g in group_of if g is not None})
    else:
        levels = []
    # progress: per analysis (the whole data and each group of each class) one step for the point
    # estimates, one per chunk of the bootstrap and of the consistency test, one for cd.evaluate
    per_analysis = 1 + (2 * _n_chunks(n_resamples, n_jobs) if n_resamples else 0) + bool(calibration_error)
    steps = len(blocks) * (1 + len(levels)) * per_analysis
    done = 0
    current = ""

    def tick(message=None, units=1):
        nonlocal done, current
        current = message or current
        done += units
        if progress is not None:
            progress(min(done, steps), steps, current)

    seed = np.random.SeedSequence(random_state)
    tables = {k: [] for k in ("metrics", "curve", "distribution", "decision", "sample", "groups", "het", "cal")}
    for block in blocks:
        p_k, y_k, cls = block.p, block.y, block.name
        events = int(y_k.sum())
        if events == 0 or events == n:
            raise InputError(
                f"Every row has the same outcome for class {cls!r} ({'all events' if events else 'no events'}); "
                "calibration and discrimination need both events and non-events.")
        block_seed, *group_seeds = seed.spawn(1 + len(levels))
        grid = np.linspace(p_k.min(), p_k.max(), CURVE_POINTS)
        values, pvalue, curve, curve_draws, nb_draws, all_draws = _analyse(
            p_k, y_k, n_resamples=n_resamples, seed=block_seed, level=level, curve_grid=grid, thresholds=THRESHOLDS,
            n_jobs=n_jobs, on_chunk=lambda cls=cls: tick(f"{cls}: bootstrap of the whole data"))
        tables["metrics"] += _metric_rows(cls, None, values, pvalue, n, events, "")
        tables["curve"].append(_curve_frame(cls, grid, curve.predict(grid), curve_draws, level))
        tables["distribution"].append(_distribution_frame(cls, p_k, y_k))
        tables["decision"].append(_decision_frame(cls, p_k, y_k, nb_draws, all_draws, level))
        widths = {m: values[m][2] - values[m][1] for m in ("O:E", "calibration slope", "AUROC")}
        ss = sample_size_table(p_k, y_k, widths, c_statistic=values["AUROC"][0])
        ss.insert(0, "class", cls)
        tables["sample"].append(ss)
        tick(f"{cls}: whole data")
        if calibration_error:
            tables["cal"].append(_cal_row(cls, None, p_k, y_k, random_state, n_jobs, estimators))
            tick(f"{cls}: calibration error")
        judged = []
        for g, group_seed in zip(levels, group_seeds):
            rows = np.asarray(group_of == g, dtype=bool)
            pg, yg = p_k[rows], y_k[rows]
            ng, eg = int(rows.sum()), int(yg.sum())
            status, note = _group_status(eg, ng - eg)
            tables["groups"].append({"class": cls, "group": g, "n": ng, "events": eg, "non_events": ng - eg,
                                     "status": status, "note": note})
            if status == "too small":
                tables["metrics"] += _metric_rows(cls, g, None, {}, ng, eg, note)
                tick(f"{cls}: group {g} (too small)", units=per_analysis)
                continue
            judged.append(rows)
            gv, gp, *_ = _analyse(pg, yg, n_resamples=n_resamples, seed=group_seed, level=level, n_jobs=n_jobs,
                                  on_chunk=lambda g=g, cls=cls: tick(f"{cls}: bootstrap of group {g}"))
            tables["metrics"] += _metric_rows(cls, g, gv, gp, ng, eg, note)
            tick(f"{cls}: group {g}")
            if calibration_error:
                tables["cal"].append(_cal_row(cls, g, pg, yg, random_state, n_jobs, estimators))
                tick(f"{cls}: calibration error in group {g}")
        if len(judged) >= 2:
            keep = np.any(judged, axis=0)
            labels = np.array([group_of[i] for i in np.flatnonzero(keep)], dtype=str)
            for metric, kind in (("calibration-in-the-large", "intercept"), ("calibration slope", "slope")):
                t = heterogeneity_test(p_k[keep], y_k[keep], labels, kind=kind)
                tables["het"].append({"class": cls, "metric": metric, "statistic": t.statistic, "df": t.df,
                                      "p_value": t.pvalue, "groups": len(judged)})
    return RiskValidation(
        metrics=_none_for_whole(pd.DataFrame(tables["metrics"])),
        curve=pd.concat(tables["curve"], ignore_index=True),
        distribution=pd.concat(tables["distribution"], ignore_index=True),
        decision_curve=pd.concat(tables["decision"], ignore_index=True),
        sample_size=pd.concat(tables["sample"], ignore_index=True),
        groups=pd.DataFrame(tables["groups"], columns=["class", "group", "n", "events", "non_events", "status", "note"]),
        heterogeneity=pd.DataFrame(tables["het"], columns=["class", "metric", "statistic", "df", "p_value", "groups"]),
        calibration_error=_none_for_whole(pd.DataFrame(
            tables["cal"], columns=["class", "group", "estimator", "estimate", "ci_low", "ci_high", "n"])),
        classes=tuple(b.name for b in blocks),
        group_name=group_name,
        n=n,
        settings={"n_resamples": int(n_resamples), "random_state": int(random_state), "level": float(level),
                  "calibration_error": bool(calibration_error),
                  "estimators": None if estimators is None else list(estimators)},
        notes=tuple(notes),
        source_name=str(getattr(p, "source_name", "the input")),
    )


def _none_for_whole(frame):
    # pandas stores a missing group as NaN; the documented value for the whole data is None
    frame["group"] = pd.Series([None if pd.isna(g) else g for g in frame["group"]], index=frame.index, dtype=object)
    return frame


def _cal_row(cls, group, p, y, random_state, n_jobs, estimators):
    best, est, lo, hi = _risk_optimised(p, y, random_state=random_state, n_jobs=n_jobs, estimators=estimators)
    return {"class": cls, "group": group, "estimator": best, "estimate": est, "ci_low": lo, "ci_high": hi,
            "n": len(y)}


def _curve_frame(cls, grid, fitted, draws, level):
    lo = hi = np.full(len(grid), np.nan)
    if draws is not None and len(draws):
        lo, hi = _percentile_interval(draws, level)
    return pd.DataFrame({"class": cls, "p": grid, "estimate": fitted, "ci_low": lo, "ci_high": hi})


def _distribution_frame(cls, p, y):
    edges = np.linspace(0, 1, HIST_BINS + 1)
    ev, _ = np.histogram(p[y == 1], bins=edges)
    ne, _ = np.histogram(p[y == 0], bins=edges)
    return pd.DataFrame({"class": cls, "bin_low": edges[:-1], "bin_high": edges[1:], "events": ev, "non_events": ne})


def _decision_frame(cls, p, y, nb_draws, all_draws, level):
    t = THRESHOLDS
    model = measures.net_benefit(p, y, t)
    treat_all = measures.net_benefit_treat_all(y, t)
    frames = []
    for strategy, est, draws in (("model", model, nb_draws), ("treat all", treat_all, all_draws)):
        lo = hi = np.full(len(t), np.nan)
        if draws is not None and len(draws):
            lo, hi = _percentile_interval(draws, level)
        frames.append(pd.DataFrame({"class": cls, "threshold": t, "strategy": strategy, "net_benefit": est,
                                    "ci_low": lo, "ci_high": hi}))
    frames.append(pd.DataFrame({"class": cls, "threshold": t, "strategy": "treat none", "net_benefit": 0.0,
                                "ci_low": 0.0, "ci_high": 0.0}))
    return pd.concat(frames, ignore_index=True)
