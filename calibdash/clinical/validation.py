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
- the net benefit's difference from the better default and net interventions avoided: the BCa
  bootstrap interval joined with Wilson's interval of the event rate where the strategies
  differ (:func:`bca_interval`, :func:`count_side_interval`); grouped points: Clopper-Pearson;
  the recalibration's intercept and slope: profile likelihood;
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

At registry size (more than :data:`BINNED_LOESS_ROWS` rows in the sample analysed) the loess
fits of the bootstrap and of the consistency test are made on binned rows: the rows sorted by
risk are cut into about :data:`LOESS_BINS` runs of equal counts (runs of 1, 2, 4, ... rows
towards both ends, so that the curve reaches every resample's extreme risks), and loess is
fitted to each run's mean risk and event rate, weighted by how many times the resample drew
its rows; a resample's ICI, E50, E90 and Emax take each row's error as its run's
``|curve(mean risk) - mean risk|`` (the band: the curve linear between the runs' mean risks).
The resamples and simulated outcomes are the same as the exact method's for the same seed, and
everything else (O:E, Brier, net benefit, the treat-all curve, the whole data's own curve and
summaries) is computed exactly as below that size. tests/clinical/test_binned.py checks the
bound against loess on the resampled rows at 7,000 and (slow) 100,000 rows: the interval ends
of ICI, E50 and E90 within 0.001 (measured: at most 0.0005) and each resample's curve on the
band's grid within 0.005 (measured: at most 0.0024 at 7,000 rows, 0.0003 at 100,000), the
ICI's p-value within two simulations' worth. At
that size the consistency test is also sequential: its simulations stop, after each 100 per
worker, once the Clopper-Pearson interval (99.9%) of the exceedance probability excludes
``1 - level`` (100 simulations for a clearly calibrated model, 200 for a clearly miscalibrated
one, instead of ``n_resamples``); the p-value is then ``(1 + k) / (1 + m)`` of the ``m``
simulations run, and the ICI row's note gives ``m`` and the Monte Carlo standard error and says
that it stopped early. Below that size every number is the exact method's, as before.

With centres (``clusters=``) the patients of one centre are not independent: the whole data's
intervals of every metric (calibration-in-the-large, slope and AUROC included) come from a
cluster bootstrap that resamples whole centres (O:E, Brier, calibration-in-the-large, slope and
AUROC as ``estimate +- t(k-1) sd sqrt(k/(k-1))`` on the log scale for O:E and the logit for
AUROC: with 12 centres the percentile interval covered the slope in only 90% of draws), and
the centres' own estimates are pooled by a
random-effects meta-analysis (:mod:`calibdash.clinical.meta`: REML, Hartung-Knapp interval, 95%
prediction interval for a new centre), which the verdicts then use.

What clinical data bring, and what is done with it:

- coarse scores (fewer than :data:`LOESS_MIN_LEVELS` distinct risks) or a singular loess fit:
  the observed event rate per risk level is the calibration curve, and ICI, E50, E90, Emax are
  computed from it (a note says so); a bootstrap resample on which a statistic cannot be
  computed is left out of that statistic's interval and counted (the ``resamples`` column);
- risks of exactly 0 or 1 are left out of the logistic fits, as ``rms::val.prob`` does, with a
  note counting them and those contradicted by their outcome; every other statistic uses all rows;
- fewer than :data:`MIN_GROUP_EVENTS` events or non-events: point estimates only, no interval
  and no verdict, for the whole data as for a group;
- a missing outcome is refused, naming the rows.

tests/clinical/test_coverage.py checks the coverage of every interval against simulations
with known truth, including calibrated and non-logistic miscalibration;
tests/clinical/test_robust.py the inputs above; tests/clinical/test_verdict_level.py the level
and power of the verdicts.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from calibdash import limits
from calibdash.clinical import MAX_GROUPS, measures
from calibdash.clinical.loess import loess_fit
from calibdash.clinical.logistic import (
    calibration_in_the_large,
    calibration_slope,
    fit_logistic,
    heterogeneity_test,
    logistic_recalibration,
    logit,
)
from calibdash.clinical.sample_size import MIN_EVENTS, MIN_GROUP_EVENTS, sample_size_table
from calibdash.deprecation import renamed_attribute, renamed_parameters
from calibdash.errors import ConfigError, InputError
from calibdash.intervals import stored_interval
from calibdash.predictions import Predictions

__all__ = [
    "DEFAULT_THRESHOLDS",
    "ZERO_FLOOR_METRICS",
    "LevelsCurve",
    "SampleAnalysis",
    "analyse_sample",
    "bca_interval",
    "count_side_interval",
    "mean_acceleration",
    "threshold_counts",
    "wilson_interval",
    "cluster_rows",
    "clopper_pearson",
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
CLUSTER_BOOTSTRAP = "cluster bootstrap"  # its t interval, see _cluster_t_interval
NO_INTERVAL_FEW_EVENTS = "none (too few events)"
_BOOTSTRAPPED = ("O:E", "ICI", "E50", "E90", "Emax", "Brier", "scaled Brier")

# Resamples per unit of work (and of progress) of the bootstrap.
CHUNK = 100
# Thresholds of the decision curve (Vickers & Elkin 2006), 0.01 to 0.99.
THRESHOLDS = np.round(np.arange(1, 100) / 100, 2)
# The range of thresholds over which clinical usefulness is judged by default. A risk model
# informs decisions whose threshold lies where treating is neither almost free (below 5%,
# treat-all is hard to beat and the curve is flat) nor reserved for near-certain cases (above
# 50% clinicians rarely wait for more certainty than a coin flip before acting); Vickers, van
# Calster & Steyerberg (2019) ask that the range be chosen before looking at the curve. Users
# set their own with ``thresholds=``.
DEFAULT_THRESHOLDS = (0.05, 0.5)
# The metrics whose interval's lower end is set to 0, by rule, whenever the data are consistent
# with perfect calibration (see the module's docstring): an end at 0 is that rule, not a measured bound.
ZERO_FLOOR_METRICS = ("ICI", "E50", "E90")
# Below this many distinct risks the observed event rate per risk level replaces the loess
# curve: a point score (CHA2DS2-VASc, risk bands) has nothing between its levels for loess to
# smooth, and netlib loess is singular on 3-5 support points.
LOESS_MIN_LEVELS = 10
# Grouped points: one per distinct risk up to this many levels, else tenths of risk.
GROUPED_MAX_LEVELS = 20
# Points of the flexible curve's grid, and the share of resamples that must reach a grid point
# (lie inside the resample's range of p) for the band to be drawn there.
CURVE_POINTS = 100
BAND_MIN_SHARE = 0.9
# Bins of the distribution of predicted risk by outcome (the histograms under the curve).
HIST_BINS = 50
# Above this many rows the loess fits of the bootstrap and of the consistency test are made on
# binned rows (:func:`_row_bins`), about LOESS_BINS bins of equal counts: one netlib fit on
# 100,000 rows takes 70 ms and 2,000 of them made the validation take 200 s. The whole data's
# own curve and its summaries are always fitted on the rows. tests/clinical/test_binned.py
# checks the bound stated in the module docstring.
BINNED_LOESS_ROWS = 5_000
LOESS_BINS = 2_000
# At that size the ICI's consistency test also stops simulating once its p-value is clearly on
# one side of 1 - level: when the Clopper-Pearson interval of the exceedance probability, at
# this confidence, excludes 1 - level (checked after every CHUNK simulations per worker). The
# decision needs that, not 1,000 loess fits; the p-value shown is the Monte Carlo one of the
# simulations run, with its standard error in the row's note.
CONSISTENCY_CONFIDENCE = 0.999


@dataclass
class RiskValidation:
    """The result of :func:`validate_risk_model`.

    Attributes
    ----------
    metrics : DataFrame
        One row per class block, group and metric. Columns: ``class``, ``group`` (None for
        the whole data), ``metric`` (the names in :data:`METRICS`), ``estimate``, ``ci_low``,
        ``ci_high``, ``interval`` (how the interval was obtained), ``p_value`` (Spiegelhalter's
        test; the ICI's test of perfect calibration; the likelihood-ratio tests of
        calibration-in-the-large 0 and slope 1, without centres), ``n``, ``events``,
        ``non_events``, ``note`` (why a group is not judged or is imprecise; on the ICI row above
        :data:`BINNED_LOESS_ROWS` rows, how many simulations its p-value rests on, their Monte
        Carlo standard error and whether the sequential test stopped early; empty otherwise)
        and ``resamples`` (how many bootstrap resamples the interval rests on).
    curve : DataFrame
        The flexible calibration curve (loess of the outcome on the predicted risk) with its
        bootstrap band, for the whole data of each class block: ``class``, ``p``,
        ``estimate``, ``ci_low``, ``ci_high``. The band is NaN where fewer than 90% of the
        resamples reach the point (at the very ends of the range).
    distribution : DataFrame
        The distribution of predicted risk by outcome: ``class``, ``bin_low``, ``bin_high``,
        ``events``, ``non_events``; 50 bins from 0 to the largest risk rounded up to 0.05.
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
        its interval; an error on the probability scale, not a squared one) for the whole data
        and each judged group: ``class``, ``group``, ``estimator`` (the one the risk selected),
        ``estimate``, ``ci_low``, ``ci_high``, ``n``. Empty when ``calibration_error=False``.
    classes : tuple of str
        The class blocks (the positive class for binary data).
    group_name : str or None
        The grouping column's name.
    n : int
        Rows.
    config : dict
        The settings of the validation: ``n_resamples``, ``random_state``, ``level``,
        ``thresholds`` (the range over which usefulness is judged), ``clusters``,
        ``calibration_error`` and ``estimators``. Named as the evaluation results name theirs
        (``EvaluationResult.config``); ``settings``, its old name, still reads it, with a
        ``DeprecationWarning``, for one release.
    notes : tuple of str
        How the input was read and what could not be estimated (risks of exactly 0 or 1 left
        out of the logistic fits, the curve's fallback, failed resamples).
    grouped : DataFrame
        Observed event rate per group of rows with exact (Clopper-Pearson) intervals, for the
        whole data and each judged group: ``class``, ``group``, ``p_low``, ``p_high``,
        ``mean_risk``, ``n``, ``events``, ``observed``, ``ci_low``, ``ci_high``, ``kind``
        (``"levels"``: one row per distinct risk, for coarse scores; ``"tenths"``: ten groups
        of equal size by predicted risk).
    curve_method : dict
        Class -> ``"loess"`` (the flexible curve), ``"levels"`` (the observed event rate per
        distinct risk replaces it, for coarse scores or when loess is singular) or ``"none"``.
    net_benefit : DataFrame
        ``class``, ``group``, ``threshold``, ``model``, ``treat_all``, ``difference`` (the
        model's net benefit minus the better of treating everyone and no one), its interval
        ``difference_low``/``difference_high``, ``avoided_per_100`` (net interventions avoided
        per 100 patients against treating everyone) with ``avoided_low``/``avoided_high``, and
        ``in_range`` (the threshold lies in ``config["thresholds"]``).
    clusters : str or None
        The centre column's name (``clusters=``).
    centres : DataFrame
        Per-centre estimates, the inputs of the meta-analysis (see
        :func:`calibdash.clinical.meta.centre_estimates`); empty without clusters.
    pooled : DataFrame
        The random-effects meta-analysis of the centres (REML, Hartung-Knapp interval, 95%
        prediction interval): ``class``, ``metric``, ``estimate``, ``ci_low``, ``ci_high``,
        ``pi_low``, ``pi_high``, ``tau2``, ``n_clusters``, ``method``; empty without clusters.
    recalibration : DataFrame
        The updates that would recalibrate the risks, fitted on the rows with risks strictly
        inside (0, 1): ``class``, ``model`` (``"intercept update"``: logit p' = a + logit p;
        ``"logistic recalibration"``: logit p' = a + b logit p), ``parameter``, ``estimate``,
        ``ci_low``, ``ci_high`` (profile likelihood). :meth:`recalibrate` applies them.
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
    config: dict = field(default_factory=dict)
    notes: tuple = ()
    source_name: str = "the input"
    grouped: pd.DataFrame = field(default_factory=pd.DataFrame)
    curve_method: dict = field(default_factory=dict)
    net_benefit: pd.DataFrame = field(default_factory=pd.DataFrame)
    clusters: str | None = None
    centres: pd.DataFrame = field(default_factory=pd.DataFrame)
    pooled: pd.DataFrame = field(default_factory=pd.DataFrame)
    recalibration: pd.DataFrame = field(default_factory=pd.DataFrame)

    # The name it had before every result called its settings ``config`` (one release).
    settings = renamed_attribute("config", "settings")

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

    def confidence_interval(self, name, *, group=None, cls=None, level=None):
        """``(ci_low, ci_high)`` of one metric, a :class:`~calibdash.intervals.ConfidenceInterval`;
        ``level`` may only be None or the validation's level (``config["level"]``)."""
        row = self.metric(name, group=group, cls=cls)
        return stored_interval(row["ci_low"], row["ci_high"], self.config.get("level"), level)

    def recalibrate(self, p, *, cls=None, model="logistic recalibration"):
        """Risks updated by the fitted recalibration: ``expit(a + logit p)`` for
        ``model="intercept update"``, ``expit(a + b logit p)`` for ``"logistic recalibration"``.

        Risks of exactly 0 or 1 stay 0 or 1 (no logistic update can move them).

        Returns
        -------
        ndarray
        """
        from scipy.special import expit

        from calibdash.clinical.logistic import logit

        cls = self.classes[0] if cls is None else str(cls)
        r = self.recalibration
        rows = r[(r["class"] == cls) & (r["model"] == model)]
        if rows.empty:
            raise ConfigError(f"No recalibration model {model!r} for class {cls!r}; the models are "
                              "'intercept update' and 'logistic recalibration'.")
        coef = dict(zip(rows["parameter"], rows["estimate"]))
        p = np.asarray(p, dtype=float)
        _check_risks(p.ravel())
        out = expit(coef["a"] + coef.get("b", 1.0) * logit(p))
        return np.where((p == 0) | (p == 1), p, out)

    def group_findings(self, *, cls=None):
        """One plain sentence per subgroup or centre whose calibration is off (its test of mean
        calibration or slope survives Holm's adjustment over the groups), naming it and the
        numbers; empty when none is (:func:`calibdash.clinical.verdicts.group_findings`)."""
        from calibdash.clinical.verdicts import group_findings

        return group_findings(self, cls=cls)

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
                f"groups={self.group_name!r}, n_resamples={self.config.get('n_resamples')})")


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
            "Which label is the outcome the risks predict?", option="positive",
            fix="Pass positive= one of " + ", ".join(repr(str(v)) for v in values) + ".")
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


def _check_outcomes(y):
    """A missing outcome (NaN, None or an empty text) is refused with the rows that have one."""
    s = pd.Series(y, dtype=object)
    missing = s.isna().to_numpy() | (s.astype(str).str.strip() == "").to_numpy()
    if missing.any():
        rows = np.flatnonzero(missing)
        first = ", ".join(str(int(r)) for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
        raise InputError(
            f"{len(rows)} outcome{'s are' if len(rows) != 1 else ' is'} missing (row{'s' if len(rows) != 1 else ''} "
            f"{first}, counting from 0). A validation needs the observed outcome of every patient: drop those rows "
            "or fill in their outcomes.")


def _blocks(p, y, positive):
    """Split the input into binary blocks; returns (blocks, class names, groups, source name)."""
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
    _check_outcomes(y)
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
    if groups is None:
        return None, None
    if isinstance(groups, str):
        if not isinstance(p, Predictions):
            raise InputError(f"groups={groups!r} names a column, but only a loaded table has columns; pass the group "
                             "labels themselves (one per row).", option="groups")
        if groups not in p.groups:
            have = ", ".join(repr(c) for c in p.groups) or "none"
            raise InputError(f"There is no grouping column {groups!r}; the grouping columns kept are: {have}. "
                             "Name it with groups= when loading.", option="groups")
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
            f"{'' if len(distinct) == 1 else 's'}; subgroups need at least two.", option="groups")
    if len(distinct) > MAX_GROUPS:
        raise InputError(
            f"The grouping column {str(name)!r} has {len(distinct)} distinct values; at most {MAX_GROUPS} are "
            "allowed. A grouping variable is a category such as sex, age band or hospital: bin a "
            "continuous column into a few bands first.", option="groups")
    return np.asarray(labels, dtype=object), str(name)


# ---------------------------------------------------------------------------------------------
# Statistics of one block


class LevelsCurve:
    """The observed event rate at each distinct predicted risk: the calibration curve of a
    coarse score, where loess has nothing to smooth between the levels.

    ``predict`` gives the rate at a risk that is one of the levels, NaN elsewhere (like loess
    outside its range).
    """

    def __init__(self, p, y):
        self.levels, inverse = np.unique(np.asarray(p, dtype=float), return_inverse=True)
        self.counts = np.bincount(inverse)
        self.rates = np.bincount(inverse, weights=np.asarray(y, dtype=float)) / self.counts

    def predict(self, x_new):
        x = np.asarray(x_new, dtype=float).ravel()
        idx = np.clip(np.searchsorted(self.levels, x), 0, len(self.levels) - 1)
        return np.where(self.levels[idx] == x, self.rates[idx], np.nan)


# netlib loess signals a singular local fit with ValueError ("There are other near
# singularities"); a failed fit is any of these, or a curve that is not finite at the data.
_LOESS_FAILURES = (ValueError, ArithmeticError, np.linalg.LinAlgError, RuntimeError)


def _fit_curve(p, y, method):
    """The calibration curve by ``method`` ("loess" or "levels"); None when it cannot be fitted."""
    if method == "levels":
        return LevelsCurve(p, y)
    if method != "loess":
        return None
    try:
        curve = loess_fit(p, y)
        if not np.all(np.isfinite(curve.predict(p))):
            return None
    except _LOESS_FAILURES:
        return None
    return curve


def _choose_curve(p, y):
    """(method, fitted curve on the whole sample, note): loess when it can be estimated, else the
    observed rate per risk level, else nothing."""
    levels = len(np.unique(p))
    if levels < LOESS_MIN_LEVELS:
        return "levels", LevelsCurve(p, y), (
            f"The risks take {levels} distinct value{'s' if levels != 1 else ''}: the flexible curve is the observed "
            "event rate at each risk level (loess needs more support points), and ICI, E50, E90 and Emax are "
            "computed from it.")
    curve = _fit_curve(p, y, "loess")
    if curve is not None:
        return "loess", curve, ""
    if levels <= GROUPED_MAX_LEVELS:
        return "levels", LevelsCurve(p, y), (
            f"The loess fit is singular on these risks ({levels} distinct values): the flexible curve is the observed "
            "event rate at each risk level, and ICI, E50, E90 and Emax are computed from it.")
    return "none", None, ("The loess fit is singular on these risks, and they take too many distinct values to "
                          "replace it by the rate per level: ICI, E50, E90 and Emax are not estimated.")


def _group_curve(p, y, method):
    """(method, fitted curve) of a group: the whole data's method, falling back as
    :func:`_choose_curve` does when loess is singular on the group."""
    if method != "loess":
        return method, _fit_curve(p, y, method)
    curve = _fit_curve(p, y, "loess")
    if curve is not None:
        return "loess", curve
    if len(np.unique(p)) <= GROUPED_MAX_LEVELS:
        return "levels", LevelsCurve(p, y)
    return "none", None


def _logistic_rows(p):
    """Rows used by the logistic recalibration fits: risks strictly inside (0, 1), as
    ``rms::val.prob`` does (a risk of 0 or 1 has no finite logit)."""
    return (p > 0) & (p < 1)


def _point_statistics(p, y, method, curve=None):
    """The bootstrapped statistics, in ``_BOOTSTRAPPED`` order, and the fitted curve (or None);
    ``curve``: the curve already fitted on ``(p, y)`` by ``method`` (not fitted again)."""
    if curve is None:
        curve = _fit_curve(p, y, method)
    if curve is None:
        loess = dict.fromkeys(measures.LOESS_SUMMARIES, np.nan)
    else:
        loess = measures.loess_summaries(p, y, curve=curve)
    return [measures.observed_expected(p, y), loess["ICI"], loess["E50"], loess["E90"], loess["Emax"],
            measures.brier(p, y), measures.scaled_brier(p, y)], curve


# The statistics a cluster bootstrap also resamples (their row-level intervals assume
# independent patients).
_CLUSTERED = ("calibration-in-the-large", "calibration slope", "AUROC")


# The scale on which each cluster-bootstrap interval is symmetric (log for a ratio, logit for a
# probability), and the transformation back.
_CLUSTER_T_SCALES = {
    "O:E": (np.log, np.exp), "Brier": None, "scaled Brier": None, "calibration-in-the-large": None,
    "calibration slope": None, "AUROC": (lambda c: np.log(c / (1 - c)), lambda t: 1 / (1 + np.exp(-t))),
}


def _cluster_t_interval(estimate, draws, k, level, scale):
    """``estimate +- t(k - 1) sd * sqrt(k / (k - 1))`` on ``scale``: the cluster bootstrap's
    standard error with the small-sample corrections of cluster-robust inference (the bootstrap
    variance of a mean over k centres is (k - 1)/k of the unbiased one; t with k - 1 degrees of
    freedom). With 12 centres the percentile interval covered the slope in 90% of simulated
    draws at nominal 95% (tests/clinical/test_clusters.py)."""
    forward, back = scale if scale else ((lambda x: x), (lambda x: x))
    with np.errstate(divide="ignore", invalid="ignore"):
        d = forward(np.asarray(draws, dtype=float))
        e = forward(float(estimate))
    d = d[np.isfinite(d)]
    if k < 2 or len(d) < 2 or not np.isfinite(e):
        return estimate, np.nan, np.nan
    half = stats.t.ppf(0.5 + level / 2, k - 1) * np.std(d, ddof=1) * np.sqrt(k / (k - 1))
    return estimate, float(back(e - half)), float(back(e + half))


def _clustered_statistics(p, y):
    """Point estimates of calibration-in-the-large, slope and AUROC (no intervals)."""
    inside = _logistic_rows(p)
    pi, yi = p[inside], y[inside]
    a = b = np.nan
    if 0 < yi.sum() < len(yi):
        lp = logit(pi)
        fit = fit_logistic(np.ones((len(yi), 1)), yi, offset=lp)
        a = float(fit.coef[0]) if fit.converged else np.nan
        if np.ptp(lp) > 0:
            fit = fit_logistic(np.column_stack([np.ones(len(yi)), lp]), yi)
            b = float(fit.coef[1]) if fit.converged else np.nan
    return [a, b, measures.auroc(p, y).estimate]


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


@dataclass(frozen=True)
class _RowBins:
    """Consecutive runs of the rows sorted by risk, the units of the binned loess fits."""

    order: np.ndarray  # rows by increasing risk
    starts: np.ndarray  # first sorted position of each bin
    p_sorted: np.ndarray
    y_sorted: np.ndarray
    thresholds_at: np.ndarray | None  # first sorted position with p >= each threshold
    size: np.ndarray  # rows per bin
    mean_risk: np.ndarray  # each bin's mean risk


def _row_bins(p, y, thresholds, bins=LOESS_BINS):
    """Bins of equal counts (``len(p) // bins`` rows), halving towards both ends (1, 2, 4, ...
    rows), so that the binned curve reaches the extreme risks of every resample, where a
    wide bin's mean would leave the curve short of them."""
    n = len(p)
    order = np.argsort(p, kind="stable")
    size = max(1, n // bins)
    edge = 2 ** np.arange(int(np.ceil(np.log2(size))))  # 1, 2, 4, ... rows, below size
    reach = np.cumsum(edge)
    if len(reach) and 2 * reach[-1] >= n:
        edge, reach = edge[:0], reach[:0]
    h = int(reach[-1]) if len(reach) else 0
    starts = np.unique(np.concatenate([reach - edge, np.arange(h, n - h, size), n - reach])).astype(np.int64)
    ps = p[order]
    at = None if thresholds is None else np.searchsorted(ps, np.asarray(thresholds, dtype=float), side="left")
    size = np.diff(np.append(starts, n)).astype(float)
    return _RowBins(order, starts, ps, y[order], at, size, np.add.reduceat(ps, starts) / size)


def _weighted_quantile(values, weights, q):
    """R's type-7 quantile (numpy's default) of the sample in which ``values[i]`` occurs
    ``weights[i]`` times (whole numbers)."""
    order = np.argsort(values, kind="stable")
    v = values[order]
    seen = np.cumsum(weights[order])
    h = (seen[-1] - 1) * np.asarray(q, dtype=float)
    low = np.floor(h)
    # the k-th value (from 0) of the expanded sample is the first whose running count exceeds k
    at = np.searchsorted(seen, low, side="right")
    above = np.searchsorted(seen, np.minimum(low + 1, seen[-1] - 1), side="right")
    return v[at] + (h - low) * (v[above] - v[at])


def _binned_curve(bins, w, x, events):
    """The loess curve of binned rows: ``w`` rows in each bin (a resample's counts), their mean
    risk ``x`` and ``events``. Returns (w, x, the curve at x) of the bins with rows, or None when
    the fit fails."""
    keep = w > 0
    w, x, rate = w[keep], x[keep], events[keep] / w[keep]
    if len(w) < LOESS_MIN_LEVELS:
        return None
    try:
        fitted = loess_fit(x, rate, weights=w).predict(x)
    except _LOESS_FAILURES:
        return None
    if not np.all(np.isfinite(fitted)):
        return None
    return w, x, fitted


def _binned_summaries(w, x, fitted):
    """ICI, E50, E90 and Emax over the rows of binned data, each row's error taken as its bin's
    ``|curve(mean risk) - mean risk|`` (measured: as close to the rows' own as evaluating the
    binned curve at each row; tests/clinical/test_binned.py)."""
    d = np.abs(fitted - x)
    e50, e90 = _weighted_quantile(d, w, [0.5, 0.9])
    return [float(np.sum(w * d) / np.sum(w)), float(e50), float(e90), float(np.max(d))]


def _null_ici_chunk(p, method, seeds, bins=None):
    """ICI of outcomes drawn from ``p`` itself, one per seed (the null of perfect calibration);
    with ``bins`` (:func:`_row_bins`), from the binned loess fit."""
    out = np.full(len(seeds), np.nan)
    for i, s in enumerate(seeds):
        ys = (np.random.default_rng(s).random(len(p)) < p).astype(float)
        if 0 < ys.sum() < len(p):
            if bins is not None:
                fit = _binned_curve(bins, bins.size, bins.mean_risk, np.add.reduceat(ys[bins.order], bins.starts))
                if fit is not None:
                    out[i] = _binned_summaries(*fit)[0]
                continue
            curve = _fit_curve(p, ys, method)
            if curve is not None:
                out[i] = float(np.mean(np.abs(curve.predict(p) - p)))
    return out


def _sequential_null(p, method, seeds, bins, observed, alpha, n_jobs, on_chunk):
    """The consistency test's null ICIs, simulated until the decision ``p < alpha`` is settled
    (:data:`CONSISTENCY_CONFIDENCE`) or the seeds run out; the first simulations are the same as
    the full test's. The decision is checked after every CHUNK simulations in seed order,
    whatever ``n_jobs`` (the workers simulate ``n_jobs`` such blocks at a time), so the numbers
    do not depend on it. Returns the null ICIs and whether it stopped early."""
    blocks = np.array_split(np.arange(len(seeds)), _n_chunks(len(seeds), 1))
    ticks, total = 0, _n_chunks(len(seeds), n_jobs)

    def tick():
        # exactly ``total`` ticks, as the progress counts them, however the blocks were split
        nonlocal ticks
        ticks += 1
        if on_chunk is not None and ticks <= total:
            on_chunk()

    done = []
    step = max(1, n_jobs)
    for start in range(0, len(blocks), step):
        group = blocks[start:start + step]
        done.append(np.concatenate(_in_chunks(_null_ici_chunk, [seeds[i] for b in group for i in b], n_jobs, p, method,
                                              on_chunk=tick, bins=bins)))
        null = np.concatenate(done)
        checked = sum(len(b) for b in blocks[:start])
        for b in group:
            checked += len(b)
            if checked == len(seeds):
                break
            head = null[:checked]
            head = head[np.isfinite(head)]
            if not len(head):
                continue
            low, high = clopper_pearson(np.sum(head >= observed), len(head), CONSISTENCY_CONFIDENCE)
            if high < alpha or low > alpha:
                while ticks < total:  # the progress of the simulations not needed
                    tick()
                return null[:checked], True
    while ticks < total:
        tick()
    return np.concatenate(done), False


def _resample_indices(rng, n, y, clusters):
    """Rows of one bootstrap resample: rows with replacement, or (with ``clusters``, a list of
    row-index arrays) whole centres with replacement. Redrawn until both outcomes occur."""
    for _ in range(100):
        if clusters is None:
            idx = rng.integers(0, n, n)
        else:
            idx = np.concatenate([clusters[c] for c in rng.integers(0, len(clusters), len(clusters))])
        s = y[idx].sum()
        if 0 < s < len(idx):
            return idx
    return idx


def _binned_resample(p, y, idx, bins, curve_grid, thresholds):
    """The bootstrapped statistics, curve and net benefit of resample ``idx`` from its counts
    per row: the loess summaries from the binned curve (linear between the bins' mean risks),
    the rest exactly as from the resampled rows."""
    pb, yb = p[idx], y[idx]
    counts = np.bincount(idx, minlength=len(p)).astype(float)[bins.order]
    w = np.add.reduceat(counts, bins.starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.add.reduceat(counts * bins.p_sorted, bins.starts) / w
    fit = _binned_curve(bins, w, x, np.add.reduceat(counts * bins.y_sorted, bins.starts))
    curve = None
    if fit is None:
        loess = [np.nan] * 4
    else:
        loess = _binned_summaries(*fit)
        if curve_grid is not None:
            # NaN outside the resample's range, as the loess of its rows gives
            curve = np.where((curve_grid >= pb.min()) & (curve_grid <= pb.max()),
                             np.interp(curve_grid, fit[1], fit[2]), np.nan)
    point = [measures.observed_expected(pb, yb), *loess, measures.brier(pb, yb), measures.scaled_brier(pb, yb)]
    nb = None
    if thresholds is not None:
        # events and rows at or above each threshold, from the counts (the same whole numbers as
        # measures.net_benefit's sort of the resample, so the same net benefit)
        above = np.concatenate([np.cumsum((counts * bins.y_sorted)[::-1])[::-1], [0.0]])[bins.thresholds_at]
        treated = np.concatenate([np.cumsum(counts[::-1])[::-1], [0.0]])[bins.thresholds_at]
        t = np.asarray(thresholds, dtype=float)
        n = len(idx)
        nb = above / n - (treated - above) / n * t / (1 - t)
    return point, curve, nb


def _bootstrap_chunk(p, y, method, clusters, curve_grid, thresholds, seeds, bins=None):
    """The bootstrapped statistics (and curve and net benefit) of one resample per seed; with
    ``bins`` (:func:`_row_bins`), the loess summaries and curve from the binned fit."""
    n, m = len(y), len(seeds)
    width = len(_BOOTSTRAPPED) + (len(_CLUSTERED) if clusters is not None else 0)
    draws = np.full((m, width), np.nan)
    curve = None if curve_grid is None else np.full((m, len(curve_grid)), np.nan)
    nb = None if thresholds is None else np.full((m, len(thresholds)), np.nan)
    treat_all = None if thresholds is None else np.full((m, len(thresholds)), np.nan)
    for b, s in enumerate(seeds):
        idx = _resample_indices(np.random.default_rng(s), n, y, clusters)
        pb, yb = p[idx], y[idx]
        if not 0 < yb.sum() < len(yb):
            continue  # a failed resample: counted by the NaN it leaves
        if bins is not None:
            point, curve_row, nb_row = _binned_resample(p, y, idx, bins, curve_grid, thresholds)
            draws[b, :len(_BOOTSTRAPPED)] = point
            if clusters is not None:
                draws[b, len(_BOOTSTRAPPED):] = _clustered_statistics(pb, yb)
            if curve is not None and curve_row is not None:
                curve[b] = curve_row
            if nb is not None:
                nb[b] = nb_row
                treat_all[b] = measures.net_benefit_treat_all(yb, thresholds)
            continue
        point, curve_b = _point_statistics(pb, yb, method)
        draws[b, :len(_BOOTSTRAPPED)] = point
        if clusters is not None:
            draws[b, len(_BOOTSTRAPPED):] = _clustered_statistics(pb, yb)
        if curve is not None and curve_b is not None:
            curve[b] = curve_b.predict(curve_grid)
        if nb is not None:
            nb[b] = measures.net_benefit(pb, yb, thresholds)
            treat_all[b] = measures.net_benefit_treat_all(yb, thresholds)
    return draws, curve, nb, treat_all


def _n_chunks(n_resamples, n_jobs):
    # chunks of about CHUNK resamples (at least one per worker), so that progress moves
    return max(1, min(n_resamples, max(n_jobs, -(-n_resamples // CHUNK))))


def _in_chunks(fn, seeds, n_jobs, *args, on_chunk=None, **kwargs):
    """``fn(*args, seeds_chunk, **kwargs)`` over chunks of the seeds, in order, calling
    ``on_chunk()`` after each; the numbers do not depend on ``n_jobs`` (each resample has its
    own seed)."""
    if not len(seeds):
        return [fn(*args, seeds, **kwargs)]
    chunks = [[seeds[i] for i in c] for c in np.array_split(np.arange(len(seeds)), _n_chunks(len(seeds), n_jobs))]
    if n_jobs == 1:
        results = (fn(*args, c, **kwargs) for c in chunks)
    else:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=n_jobs, return_as="generator")(delayed(fn)(*args, c, **kwargs) for c in chunks)
    out = []
    for r in results:
        out.append(r)
        if on_chunk is not None:
            on_chunk()
    return out


def _stack(parts, k):
    arrays = [part[k] for part in parts]
    return None if arrays[0] is None else np.concatenate(arrays)


@dataclass
class SampleAnalysis:
    """What :func:`_analyse` returns for one sample (the whole data or one group)."""

    values: dict  # metric -> (estimate, ci_low, ci_high)
    pvalues: dict
    resamples: dict  # metric -> resamples its interval rests on
    methods: dict  # metric -> how its interval was obtained, where it differs from INTERVAL_METHOD
    curve: object  # the fitted curve (or None)
    curve_draws: np.ndarray | None
    nb_draws: np.ndarray | None
    all_draws: np.ndarray | None
    failed: int  # resamples on which a statistic could not be computed
    notes: list
    # the row-level profile-likelihood fits of calibration-in-the-large and the slope (also
    # with centres, where ``values`` holds the cluster bootstrap's intervals), for the
    # recalibration table, which would otherwise search the same profiles again
    fits: dict = field(default_factory=dict)
    # metric -> what the table's note says about its row (the consistency test's simulations)
    row_notes: dict = field(default_factory=dict)


@renamed_parameters(seed="random_state")
def analyse_sample(p, y, *, n_resamples, random_state, level, method="loess", curve=None, clusters=None, curve_grid=None,
                   thresholds=None, n_jobs=1, on_chunk=None):
    """Point estimates, intervals and (optionally) curve and decision-curve draws of one sample:
    the part of :func:`validate_risk_model` that analyses the whole data or one group.

    Parameters
    ----------
    p, y : ndarray of shape (n,)
        Risks and 0/1 outcomes.
    n_resamples : int
    random_state : int or numpy.random.SeedSequence
        Seed of the bootstrap (a SeedSequence to spawn from, e.g. one per group).
    level : float
    method : {"loess", "levels", "none"}
        The calibration curve (see :func:`validate_risk_model`).
    curve : LoessCurve or LevelsCurve, optional
        That curve, already fitted on ``(p, y)`` (it is not fitted again).
    clusters : list of ndarray, optional
        The rows of each centre (:func:`cluster_rows`): the bootstrap then resamples centres,
        and calibration-in-the-large, slope and AUROC get cluster-bootstrap intervals too.

    With fewer than :data:`MIN_GROUP_EVENTS` events or non-events only point estimates are
    given: no interval the data cannot support (DeLong's and the bootstrap's need events to
    resample; the profile intervals of a handful of events are unbounded).
    """
    seed = random_state if isinstance(random_state, np.random.SeedSequence) else np.random.SeedSequence(random_state)
    notes = []
    est, curve = _point_statistics(p, y, method, curve)
    est = np.asarray(est, dtype=float)
    events = int(y.sum())
    few = min(events, len(y) - events) < MIN_GROUP_EVENTS
    inside = _logistic_rows(p)
    cil = calibration_in_the_large(p[inside], y[inside], level=level)
    slope = calibration_slope(p[inside], y[inside], level=level)
    auc = measures.auroc(p, y, level=level)
    sp = measures.spiegelhalter(p, y)
    values = {name: (est[j], np.nan, np.nan) for j, name in enumerate(_BOOTSTRAPPED)}
    values["calibration-in-the-large"] = (cil.estimate, cil.ci_low, cil.ci_high)
    values["calibration slope"] = (slope.estimate, slope.ci_low, slope.ci_high)
    values["AUROC"] = (auc.estimate, auc.ci_low, auc.ci_high)
    values["Spiegelhalter z"] = (sp.statistic, np.nan, np.nan)
    # the likelihood-ratio tests of calibration-in-the-large 0 and slope 1 (what the profile
    # intervals invert), for naming groups that are off (verdicts.group_findings); with centres
    # the patients are not independent, so the whole data gets none
    lr = clusters is None
    pvalues = {"Spiegelhalter z": sp.pvalue, "ICI": np.nan,
               "calibration-in-the-large": cil.pvalue if lr else np.nan,
               "calibration slope": slope.pvalue if lr else np.nan}
    resamples, methods = {}, {}
    fits = {"calibration-in-the-large": cil, "calibration slope": slope}
    empty = SampleAnalysis(values, pvalues, resamples, methods, curve, None, None, None, 0, notes, fits)
    if few:
        pvalues["calibration-in-the-large"] = pvalues["calibration slope"] = np.nan
        for name in METRICS:
            e = values[name][0]
            values[name] = (e, np.nan, np.nan)
            if name != "Spiegelhalter z" and name != "Emax":
                methods[name] = NO_INTERVAL_FEW_EVENTS
        return empty
    if not n_resamples:
        return empty
    row_notes = {}
    boot_seed, null_seed = seed.spawn(2)
    bins = _row_bins(p, y, thresholds) if method == "loess" and len(p) > BINNED_LOESS_ROWS else None
    parts = _in_chunks(_bootstrap_chunk, boot_seed.spawn(n_resamples), n_jobs, p, y, method, clusters, curve_grid,
                       thresholds, on_chunk=on_chunk, bins=bins)
    draws, curve_draws, nb_draws, all_draws = (_stack(parts, k) for k in range(4))
    finite = np.isfinite(draws)
    failed = int(np.sum(~finite[:, :len(_BOOTSTRAPPED)].all(axis=1) & np.isfinite(est[:len(_BOOTSTRAPPED)]).all()))
    lo, hi = _percentile_interval(draws, level, min_share=0.5)
    for j, name in enumerate(_BOOTSTRAPPED):
        values[name] = (est[j], lo[j], hi[j])
        resamples[name] = int(finite[:, j].sum())
    # the consistency test of perfect calibration by the ICI (its null drawn from the model's risks)
    consistency = np.nan
    if curve is not None:
        observed = est[_BOOTSTRAPPED.index("ICI")]
        if bins is None:
            null = np.concatenate(_in_chunks(_null_ici_chunk, null_seed.spawn(n_resamples), n_jobs, p, method,
                                             on_chunk=on_chunk))
        else:
            null, early = _sequential_null(p, method, null_seed.spawn(n_resamples), bins, observed, 1 - level, n_jobs,
                                           on_chunk)
        null = null[np.isfinite(null)]
        if len(null):
            consistency = (1 + np.sum(null >= observed)) / (1 + len(null))
            if bins is not None:
                se = np.sqrt(consistency * (1 - consistency) / len(null))
                row_notes["ICI"] = (
                    f"p-value from {len(null):,} simulations (Monte Carlo standard error {se:.1g})"
                    + (f", stopped once clearly {'below' if consistency < 1 - level else 'above'} {1 - level:g}"
                       " (sequential Monte Carlo)" if early else ""))
    pvalues["ICI"] = consistency
    for name in ZERO_FLOOR_METRICS:
        e, q_lo, q_hi = values[name]
        # union with the basic interval (its lower end 2e - q_hi), which corrects the upward bias
        low = min(q_lo, max(0.0, 2 * e - q_hi))
        if consistency >= 1 - level:  # consistent with perfect calibration: 0 is a plausible value
            low = 0.0
        values[name] = (e, low, q_hi)
    values["Emax"] = (values["Emax"][0], np.nan, np.nan)
    resamples["Emax"] = 0  # no interval, so it rests on no resample
    if clusters is not None:
        for j, name in enumerate(_CLUSTERED, start=len(_BOOTSTRAPPED)):
            resamples[name] = int(finite[:, j].sum())
        columns = {name: j for j, name in enumerate(_BOOTSTRAPPED + _CLUSTERED)}
        for name in _CLUSTER_T_SCALES:
            values[name] = _cluster_t_interval(values[name][0], draws[:, columns[name]], len(clusters), level,
                                               _CLUSTER_T_SCALES[name])
            methods[name] = CLUSTER_BOOTSTRAP
        for name in ("ICI", "E50", "E90"):
            methods[name] = CLUSTER_BOOTSTRAP + " (percentile)"
    if failed:
        notes.append(f"{failed} of {n_resamples:,} bootstrap resamples could not be analysed (e.g. a resample that "
                     "lost a risk level made the curve singular); the intervals rest on the others (the "
                     "'resamples' column counts them).")
    return SampleAnalysis(values, pvalues, resamples, methods, curve, curve_draws, nb_draws, all_draws, failed, notes,
                          fits, row_notes)


def cluster_rows(labels):
    """The rows of each centre, in sorted order of the labels (None: in no centre)."""
    labels = np.asarray(labels, dtype=object)
    names = sorted({g for g in labels if g is not None})
    return [np.flatnonzero(labels == g) for g in names]


def _metric_rows(cls, group, analysis, n, events, note):
    rows = []
    for name in METRICS:
        if analysis is None:
            e = lo = hi = p = np.nan
            interval, resamples = INTERVAL_METHOD[name], 0
        else:
            e, lo, hi = analysis.values.get(name, (np.nan, np.nan, np.nan))
            p = analysis.pvalues.get(name, np.nan)
            interval = analysis.methods.get(name, INTERVAL_METHOD[name])
            resamples = analysis.resamples.get(name, 0)
        extra = "" if analysis is None else analysis.row_notes.get(name, "")
        rows.append({"class": cls, "group": group, "metric": name, "estimate": float(e), "ci_low": float(lo),
                     "ci_high": float(hi), "interval": interval, "p_value": float(p),
                     "n": n, "events": events, "non_events": n - events,
                     "note": "; ".join(t for t in (note, extra) if t), "resamples": int(resamples)})
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


def _extreme_risks_note(p, y, cls):
    """The note on risks of exactly 0 or 1, left out of the logistic fits (or "")."""
    zero, one = p == 0, p == 1
    if not (zero.any() or one.any()):
        return ""
    parts = []
    for mask, risk, contradicted in ((zero, "0", y == 1), (one, "1", y == 0)):
        k = int(mask.sum())
        if k:
            bad = int((mask & contradicted).sum())
            event = "had the event" if risk == "0" else "did not have the event"
            parts.append(f"{k} patient{'s' if k != 1 else ''} given risk {risk}"
                         + (f" ({bad} of whom {event})" if bad else ""))
    return (f"Class {cls!r}: " + " and ".join(parts) + " are left out of the logistic fits (calibration-in-the-large, "
            "the slope and the recalibration), which need a finite logit, as rms::val.prob does; every other statistic "
            "uses all rows.")


# ---------------------------------------------------------------------------------------------
# The task function


def validate_risk_model(p, y=None, groups=None, positive=None, n_resamples=1000, random_state=0, *,
                        level=0.95, calibration_error=True, estimators=None, n_jobs=1, progress=None,
                        clusters=None, thresholds=DEFAULT_THRESHOLDS):
    """Validate a risk model as Van Calster et al. (2019) and TRIPOD+AI describe.

    The calibration hierarchy (mean: O:E and calibration-in-the-large; weak: the calibration
    slope; moderate: the flexible calibration curve and its summaries ICI, E50, E90, Emax),
    overall accuracy (Brier, scaled Brier), discrimination (AUROC), Spiegelhalter's test and
    clinical usefulness (net benefit), each with an interval; the sample size against
    Riley et al.'s (2021) precision targets; all of it per subgroup, with likelihood-ratio
    tests of heterogeneity; with centres (``clusters``), a cluster bootstrap and a
    random-effects meta-analysis (Debray et al. 2017); and the recalibration that would fix
    the risks.

    Parameters
    ----------
    p : array-like of shape (n,) or (n, d), or Predictions
        The predicted risk of the positive class; or the probabilities of every class (an
        ``n x 2`` array is binary, column 1 the positive class; wider arrays are validated one
        class against the rest, one block per class); or what
        :func:`calibdash.load_predictions` returned (then ``y`` must be None).
    y : array-like of shape (n,)
        The outcomes: two values (``positive`` says which is the event; 0/1 and False/True
        need not) with a vector of risks, class indices with an array. No missing values.
    groups : array-like of shape (n,) or str, optional
        Subgroups of patients (sex, age band): the subgroup of each row (missing or empty:
        left out of the subgroups), or the name of a grouping column of a loaded table.
        Between 2 and :data:`MAX_GROUPS` groups.
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
    clusters : array-like of shape (n,) or str, optional
        Centres (hospitals, sites): one label per row, or the name of a grouping column of a
        loaded table. Patients of one centre are not independent, so the whole data's
        intervals come from a cluster bootstrap (whole centres resampled), and the centres'
        estimates are pooled by a random-effects meta-analysis (``pooled``) whose prediction
        interval gives the range of a new centre's value. Every centre is also analysed as a
        group (as with ``groups``, which cannot be given as well).
    thresholds : (float, float), default=(0.05, 0.5)
        The range of risk thresholds at which clinicians would act; clinical usefulness is
        judged over it (:data:`DEFAULT_THRESHOLDS` says why this default).

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
    thresholds = _check_thresholds(thresholds)
    if groups is not None and clusters is not None:
        raise ConfigError("Give either groups= (subgroups of patients) or clusters= (centres), not both: centres are "
                          "analysed one by one as groups too.")
    blocks = _blocks(p, y, positive)
    n = len(blocks[0].y)
    group_of, group_name = _group_labels(clusters if clusters is not None else groups, p, n)
    cluster_name = group_name if clusters is not None else None
    notes = []
    if group_of is not None:
        missing = int(sum(g is None for g in group_of))
        if missing:
            what = "centre" if clusters is not None else "subgroup"
            notes.append(f"{missing} row{'s' if missing != 1 else ''} without a value of {group_name!r} "
                         f"are in the whole-data results but in no {what}.")
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
    keys = ("metrics", "curve", "distribution", "decision", "sample", "groups", "het", "cal", "grouped", "nb",
            "centres", "pooled", "recal")
    tables = {k: [] for k in keys}
    curve_method = {}
    for block in blocks:
        p_k, y_k, cls = block.p, block.y, block.name
        events = int(y_k.sum())
        if events == 0 or events == n:
            raise InputError(
                f"Every row has the same outcome for class {cls!r} ({'all events' if events else 'no events'}); "
                "calibration and discrimination need both events and non-events.")
        extreme = _extreme_risks_note(p_k, y_k, cls)
        if extreme:
            notes.append(extreme)
        method, curve, curve_note = _choose_curve(p_k, y_k)
        curve_method[cls] = method
        if curve_note:
            notes.append(f"Class {cls!r}: {curve_note}")
        fewest = min(events, n - events)
        if fewest < MIN_GROUP_EVENTS:
            which = ("event" if events <= n - events else "non-event") + ("s" if fewest != 1 else "")
            notes.append(f"Class {cls!r}: {fewest} {which}; with fewer than "
                         f"{MIN_GROUP_EVENTS} the numbers are given without intervals and nothing is judged.")
        centre_rows = None
        if cluster_name is not None:
            centre_rows = cluster_rows(group_of)
            if len(levels) < MIN_CLUSTERS_BOOTSTRAP:
                notes.append(f"Only {len(levels)} centres: the cluster bootstrap resamples so few centres that its "
                             "intervals are crude; read the meta-analysis (its Hartung-Knapp interval and prediction "
                             "interval allow for the few centres).")
        block_seed, *group_seeds = seed.spawn(1 + len(levels))
        grid = np.linspace(p_k.min(), p_k.max(), CURVE_POINTS)
        whole = analyse_sample(
            p_k, y_k, n_resamples=n_resamples, random_state=block_seed, level=level, method=method, curve=curve, clusters=centre_rows,
            curve_grid=grid if method == "loess" else None, thresholds=THRESHOLDS, n_jobs=n_jobs,
            on_chunk=lambda cls=cls: tick(f"{cls}: bootstrap of the whole data"))
        notes += [f"Class {cls!r}, whole data: {note}" for note in whole.notes]
        tables["metrics"] += _metric_rows(cls, None, whole, n, events, "")
        if method == "loess":
            tables["curve"].append(_curve_frame(cls, grid, whole.curve.predict(grid), whole.curve_draws, level))
        tables["distribution"].append(_distribution_frame(cls, p_k, y_k))
        tables["decision"].append(_decision_frame(cls, None, p_k, y_k, whole.nb_draws, whole.all_draws, level))
        tables["nb"].append(_net_benefit_frame(cls, None, p_k, y_k, whole.nb_draws, whole.all_draws, level,
                                               thresholds))
        tables["grouped"].append(_grouped_frame(cls, None, p_k, y_k, level, method))
        tables["recal"] += _recalibration_rows(cls, p_k, y_k, level, whole.fits)
        v = whole.values
        widths = {m: v[m][2] - v[m][1] for m in ("O:E", "calibration slope", "AUROC")}
        tables["sample"].append(_sample_size_frame(cls, p_k, y_k, widths, v))
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
                tables["metrics"] += _metric_rows(cls, g, None, ng, eg, note)
                tick(f"{cls}: group {g} (too small)", units=per_analysis)
                continue
            judged.append(rows)
            g_method, g_curve = _group_curve(pg, yg, method)
            ga = analyse_sample(pg, yg, n_resamples=n_resamples, random_state=group_seed, level=level, method=g_method,
                                curve=g_curve,
                          thresholds=THRESHOLDS, n_jobs=n_jobs,
                          on_chunk=lambda g=g, cls=cls: tick(f"{cls}: bootstrap of group {g}"))
            notes += [f"Class {cls!r}, group {g!r}: {note}" for note in ga.notes]
            tables["metrics"] += _metric_rows(cls, g, ga, ng, eg, note)
            tables["decision"].append(_decision_frame(cls, g, pg, yg, ga.nb_draws, ga.all_draws, level))
            tables["nb"].append(_net_benefit_frame(cls, g, pg, yg, ga.nb_draws, ga.all_draws, level, thresholds))
            tables["grouped"].append(_grouped_frame(cls, g, pg, yg, level, g_method))
            tick(f"{cls}: group {g}")
            if calibration_error:
                tables["cal"].append(_cal_row(cls, g, pg, yg, random_state, n_jobs, estimators))
                tick(f"{cls}: calibration error in group {g}")
        if len(judged) >= 2:
            keep = np.any(judged, axis=0) & _logistic_rows(p_k)
            labels = np.array([group_of[i] for i in np.flatnonzero(keep)], dtype=str)
            for metric, kind in (("calibration-in-the-large", "intercept"), ("calibration slope", "slope")):
                t = heterogeneity_test(p_k[keep], y_k[keep], labels, kind=kind)
                tables["het"].append({"class": cls, "metric": metric, "statistic": t.statistic, "df": t.df,
                                      "p_value": t.pvalue, "groups": len(judged)})
        if cluster_name is not None:
            centres, pooled = _meta_analysis(cls, p_k, y_k, group_of, level)
            tables["centres"].append(centres)
            tables["pooled"].append(pooled)
    return RiskValidation(
        metrics=_none_for_whole(pd.DataFrame(tables["metrics"])),
        curve=(pd.concat(tables["curve"], ignore_index=True) if tables["curve"]
               else pd.DataFrame(columns=["class", "p", "estimate", "ci_low", "ci_high"])),
        distribution=pd.concat(tables["distribution"], ignore_index=True),
        decision_curve=_none_for_whole(pd.concat(tables["decision"], ignore_index=True)),
        sample_size=pd.concat(tables["sample"], ignore_index=True),
        groups=pd.DataFrame(tables["groups"], columns=["class", "group", "n", "events", "non_events", "status", "note"]),
        heterogeneity=pd.DataFrame(tables["het"], columns=["class", "metric", "statistic", "df", "p_value", "groups"]),
        calibration_error=_none_for_whole(pd.DataFrame(
            tables["cal"], columns=["class", "group", "estimator", "estimate", "ci_low", "ci_high", "n"])),
        classes=tuple(b.name for b in blocks),
        group_name=group_name,
        n=n,
        config={"n_resamples": int(n_resamples), "random_state": int(random_state), "level": float(level),
                  "calibration_error": bool(calibration_error), "thresholds": thresholds,
                  "clusters": cluster_name,
                  "estimators": None if estimators is None else list(estimators)},
        notes=tuple(notes),
        source_name=str(getattr(p, "source_name", "the input")),
        grouped=_none_for_whole(pd.concat(tables["grouped"], ignore_index=True)),
        curve_method=curve_method,
        net_benefit=_none_for_whole(pd.concat(tables["nb"], ignore_index=True)),
        clusters=cluster_name,
        centres=(pd.concat(tables["centres"], ignore_index=True) if tables["centres"] else pd.DataFrame(
            columns=["class", "cluster", "metric", "estimate", "ci_low", "ci_high", "yi", "vi", "n", "events", "note"])),
        pooled=(pd.concat(tables["pooled"], ignore_index=True) if tables["pooled"] else pd.DataFrame(
            columns=["class", "metric", "estimate", "ci_low", "ci_high", "pi_low", "pi_high", "tau2", "n_clusters",
                     "method"])),
        recalibration=pd.DataFrame(tables["recal"],
                                   columns=["class", "model", "parameter", "estimate", "ci_low", "ci_high"]),
    )


# With fewer centres than this the cluster bootstrap has too few distinct resamples to be read alone.
MIN_CLUSTERS_BOOTSTRAP = 10


def _check_thresholds(thresholds):
    try:
        low, high = (float(t) for t in thresholds)
    except (TypeError, ValueError):
        raise ConfigError(f"thresholds must be two numbers (low, high); got {thresholds!r}.") from None
    if not (0 < low < high < 1):
        raise ConfigError(f"thresholds must satisfy 0 < low < high < 1; got ({low:g}, {high:g}).")
    return (low, high)


def _none_for_whole(frame):
    # pandas stores a missing group as NaN; the documented value for the whole data is None
    frame["group"] = pd.Series([None if pd.isna(g) else g for g in frame["group"]], index=frame.index, dtype=object)
    return frame


def _cal_row(cls, group, p, y, random_state, n_jobs, estimators):
    best, est, lo, hi = _risk_optimised(p, y, random_state=random_state, n_jobs=n_jobs, estimators=estimators)
    return {"class": cls, "group": group, "estimator": best, "estimate": est, "ci_low": lo, "ci_high": hi,
            "n": len(y)}


def _sample_size_frame(cls, p, y, widths, values):
    """Riley's targets against the achieved widths, the rows needed computed at the observed O:E
    and slope (a model off by O:E 1.5 needs more rows than a calibrated one for the same width)."""
    oe, slope = values["O:E"][0], values["calibration slope"][0]
    ss = sample_size_table(p, y, widths, c_statistic=values["AUROC"][0],
                           oe=oe if np.isfinite(oe) and oe > 0 else None,
                           slope=slope if np.isfinite(slope) and slope > 0 else None)
    ss.insert(0, "class", cls)
    return ss


def _recalibration_rows(cls, p, y, level, fits):
    """The recalibration table; ``fits``: :attr:`SampleAnalysis.fits` of the same rows (the
    intercept update is calibration-in-the-large, and b is the calibration slope)."""
    inside = _logistic_rows(p)
    pi, yi = p[inside], y[inside]
    cil = fits["calibration-in-the-large"]
    a, b = logistic_recalibration(pi, yi, level=level, slope=fits["calibration slope"])
    rows = [("intercept update", "a", cil), ("logistic recalibration", "a", a), ("logistic recalibration", "b", b)]
    return [{"class": cls, "model": model, "parameter": name, "estimate": par.estimate, "ci_low": par.ci_low,
             "ci_high": par.ci_high} for model, name, par in rows]


def _meta_analysis(cls, p, y, group_of, level):
    from calibdash.clinical.meta import centre_estimates, pooled_table

    rows = np.array([g is not None for g in group_of])
    centres = centre_estimates(p[rows], y[rows], np.asarray(group_of[rows], dtype=str), level=level)
    pooled = pooled_table(centres, level=level)
    centres.insert(0, "class", cls)
    pooled.insert(0, "class", cls)
    return centres, pooled


def _curve_frame(cls, grid, fitted, draws, level):
    lo = hi = np.full(len(grid), np.nan)
    if draws is not None and len(draws):
        lo, hi = _percentile_interval(draws, level)
    return pd.DataFrame({"class": cls, "p": grid, "estimate": fitted, "ci_low": lo, "ci_high": hi})


def _distribution_frame(cls, p, y):
    # bins over [0, the largest risk rounded up to 5 points], so that a zoomed plot of a rare
    # outcome's risks still has HIST_BINS bars
    upper = min(1.0, np.ceil(float(np.max(p)) * 20 + 1e-9) / 20) if np.max(p) > 0 else 1.0
    edges = np.linspace(0, upper, HIST_BINS + 1)
    ev, _ = np.histogram(p[y == 1], bins=edges)
    ne, _ = np.histogram(p[y == 0], bins=edges)
    return pd.DataFrame({"class": cls, "bin_low": edges[:-1], "bin_high": edges[1:], "events": ev, "non_events": ne})


def clopper_pearson(events, n, level=0.95):
    """The exact binomial interval of ``events / n`` (Clopper & Pearson 1934), as R's
    ``binom.test`` gives it; arrays allowed."""
    events = np.asarray(events, dtype=float)
    n = np.asarray(n, dtype=float)
    a = (1 - level) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(events > 0, stats.beta.ppf(a, events, n - events + 1), 0.0)
        high = np.where(events < n, stats.beta.ppf(1 - a, events + 1, n - events), 1.0)
    return low, high


def _grouped_frame(cls, group, p, y, level, method):
    """Observed event rate per risk level (coarse scores) or per tenth of risk, with exact intervals."""
    levels = np.unique(p)
    if method == "levels" or len(levels) <= GROUPED_MAX_LEVELS and len(levels) < LOESS_MIN_LEVELS:
        kind = "levels"
        inverse = np.searchsorted(levels, p)
    else:
        kind = "tenths"
        order = np.argsort(p, kind="stable")
        inverse = np.empty(len(p), dtype=np.int64)
        for k, part in enumerate(np.array_split(order, min(10, len(p)))):
            inverse[part] = k
    count = np.bincount(inverse)
    keep = count > 0
    events = np.bincount(inverse, weights=y)[keep]
    count = count[keep]
    idx = np.flatnonzero(keep)
    mean_risk = np.bincount(inverse, weights=p)[keep] / count
    low = np.array([p[inverse == i].min() for i in idx])
    high = np.array([p[inverse == i].max() for i in idx])
    ci_low, ci_high = clopper_pearson(events, count, level)
    return pd.DataFrame({"class": cls, "group": group, "p_low": low, "p_high": high, "mean_risk": mean_risk,
                         "n": count.astype(int), "events": events.astype(int), "observed": events / count,
                         "ci_low": ci_low, "ci_high": ci_high, "kind": kind})


def _decision_frame(cls, group, p, y, nb_draws, all_draws, level):
    t = THRESHOLDS
    model = measures.net_benefit(p, y, t)
    treat_all = measures.net_benefit_treat_all(y, t)
    frames = []
    for strategy, est, draws in (("model", model, nb_draws), ("treat all", treat_all, all_draws)):
        lo = hi = np.full(len(t), np.nan)
        if draws is not None and len(draws):
            lo, hi = _percentile_interval(draws, level)
        frames.append(pd.DataFrame({"class": cls, "group": group, "threshold": t, "strategy": strategy,
                                    "net_benefit": est, "ci_low": lo, "ci_high": hi}))
    frames.append(pd.DataFrame({"class": cls, "group": group, "threshold": t, "strategy": "treat none",
                                "net_benefit": 0.0, "ci_low": 0.0, "ci_high": 0.0}))
    return pd.concat(frames, ignore_index=True)


def wilson_interval(events, n, level=0.95):
    """Wilson's (1927) score interval of a proportion ``events / n`` (arrays allowed)."""
    events = np.asarray(events, dtype=float)
    n = np.asarray(n, dtype=float)
    z = stats.norm.ppf(0.5 + level / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = events / n
        centre = (r + z**2 / (2 * n)) / (1 + z**2 / n)
        half = z * np.sqrt(r * (1 - r) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return np.where(n > 0, centre - half, np.nan), np.where(n > 0, centre + half, np.nan)


def threshold_counts(p, y, thresholds):
    """Events and non-events at or above each threshold (treated) and below it, from one sort:
    ``(events_above, non_events_above, events_below, non_events_below)``, arrays of the thresholds'
    length. Everything the net benefit's intervals need per threshold, in O((n + m) log n) and no
    n x m array (100,000 rows at 99 thresholds would be 79 MB a matrix)."""
    p = np.asarray(p, dtype=float)
    y = np.asarray(y, dtype=float)
    order = np.argsort(p, kind="stable")
    start = np.searchsorted(p[order], np.asarray(thresholds, dtype=float), side="left")
    events_before = np.concatenate([[0.0], np.cumsum(y[order])])[start]  # events below each threshold
    below = start.astype(float)
    events = float(y.sum())
    return events - events_before, (len(p) - below) - (events - events_before), events_before, below - events_before


def count_side_interval(p, y, thresholds, against_all, level):
    """An interval of the model's net benefit minus a default's, from the event rate on the side
    where the two differ.

    Against treating everyone (``against_all``), they differ on the rows below the threshold,
    which the model leaves untreated: the difference is ``m/n (w - (1 + w) r)`` with ``m`` those
    rows, ``r`` their event rate and ``w = t/(1 - t)``; against treating no one, on the rows at
    or above it: ``m/n ((1 + w) r - w)``. Wilson's interval of ``r`` (given ``m``) is mapped
    through it. At low thresholds ``r`` rests on a handful of events, where the bootstrap's
    percentile interval covered the difference in only 88-90% of draws at nominal 95%.
    """
    t = np.asarray(thresholds, dtype=float)
    w = t / (1 - t)
    ea, na, eb, nb = threshold_counts(p, y, t)
    against_all = np.asarray(against_all, dtype=bool)
    m = np.where(against_all, eb + nb, ea + na)
    k = np.where(against_all, eb, ea)
    r_lo, r_hi = wilson_interval(k, m, level)
    share = m / len(p)
    a = np.where(against_all, share * (w - (1 + w) * r_hi), share * ((1 + w) * r_lo - w))
    b = np.where(against_all, share * (w - (1 + w) * r_lo), share * ((1 + w) * r_hi - w))
    return np.where(m > 0, a, 0.0), np.where(m > 0, b, 0.0)


def mean_acceleration(values, counts):
    """The BCa acceleration of a mean of per-row terms, ``sum u^3 / (6 (sum u^2)^1.5)`` with ``u``
    the centred terms (the jackknife's, exactly), from the distinct values the terms take and
    how many rows take each: arrays of shape (k, m), one column per statistic."""
    values = np.asarray(values, dtype=float)
    counts = np.asarray(counts, dtype=float)
    mean = np.sum(counts * values, axis=0) / np.sum(counts, axis=0)
    u = values - mean
    ss = np.sum(counts * u**2, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ss > 0, np.sum(counts * u**3, axis=0) / (6 * ss**1.5), 0.0)


def bca_interval(draws, estimate, acceleration, level):
    """Efron's (1987) bias-corrected and accelerated bootstrap interval, one column per statistic.

    The net benefit's difference from treating everyone rests, at low thresholds, on the few
    untreated rows: a skewed count, where the percentile interval covered the truth in only
    88-90% of simulated draws at nominal 95% (tests/clinical/test_coverage.py). For a mean of
    per-row terms the acceleration is exact (:func:`mean_acceleration`), so no jackknife is run.

    Parameters
    ----------
    draws : ndarray of shape (B, m)
    estimate : ndarray of shape (m,)
    acceleration : ndarray of shape (m,)
    level : float

    Returns
    -------
    (ndarray, ndarray)
    """
    draws = np.asarray(draws, dtype=float)
    low = np.full(draws.shape[1], np.nan)
    high = np.full(draws.shape[1], np.nan)
    if not len(draws):
        return low, high
    b = len(draws)
    share = (np.sum(draws < estimate[None, :], axis=0) + 0.5 * np.sum(draws == estimate[None, :], axis=0)) / b
    z0 = stats.norm.ppf(np.clip(share, 1 / (2 * b), 1 - 1 / (2 * b)))
    for j in range(draws.shape[1]):
        ends = []
        for q in ((1 - level) / 2, (1 + level) / 2):
            zq = stats.norm.ppf(q)
            ends.append(stats.norm.cdf(z0[j] + (z0[j] + zq) / (1 - acceleration[j] * (z0[j] + zq))))
        low[j], high[j] = np.quantile(draws[:, j], ends)
    return low, high


def _net_benefit_frame(cls, group, p, y, nb_draws, all_draws, level, thresholds):
    """The model's net benefit against the better default, and net interventions avoided."""
    t = THRESHOLDS
    odds = t / (1 - t)
    model = measures.net_benefit(p, y, t)
    treat_all = measures.net_benefit_treat_all(y, t)
    difference = model - np.maximum(treat_all, 0.0)
    avoided = 100 * (model - treat_all) / odds
    d_lo = d_hi = a_lo = a_hi = np.full(len(t), np.nan)
    if nb_draws is not None and len(nb_draws):
        ok = np.isfinite(nb_draws).all(axis=1)
        nb, al = nb_draws[ok], all_draws[ok]
        if len(nb):
            # the per-row terms whose means the two statistics are take a few values at each
            # threshold: against treat-all, 0 for the treated, -1 for an untreated event and w
            # for an untreated non-event; against treat-none, 1 and -w for the treated, 0 below
            ea, na, eb, nb_ = threshold_counts(p, y, t)
            zero = np.zeros(len(t))
            against_all = treat_all > 0
            d_values = np.where(against_all, [zero, zero, -np.ones(len(t)), odds], [np.ones(len(t)), -odds, zero, zero])
            d_accel = mean_acceleration(d_values, [ea, na, eb, nb_])
            a_accel = mean_acceleration([zero, zero, -100 / odds, np.full(len(t), 100.0)], [ea, na, eb, nb_])
            d_lo, d_hi = bca_interval(nb - np.maximum(al, 0.0), difference, d_accel, level)
            a_lo, a_hi = bca_interval(100 * (nb - al) / odds, avoided, a_accel, level)
            # union with the interval from the event rate on the side where the two strategies
            # differ (a few untreated rows at low thresholds: a small count, whose bootstrap is
            # too narrow; see count_side_interval)
            c_lo, c_hi = count_side_interval(p, y, t, treat_all > 0, level)
            d_lo, d_hi = np.fmin(d_lo, c_lo), np.fmax(d_hi, c_hi)
            v_lo, v_hi = count_side_interval(p, y, t, np.ones(len(t), dtype=bool), level)
            a_lo, a_hi = np.fmin(a_lo, 100 * v_lo / odds), np.fmax(a_hi, 100 * v_hi / odds)
    in_range = (t >= thresholds[0] - 1e-12) & (t <= thresholds[1] + 1e-12)
    return pd.DataFrame({"class": cls, "group": group, "threshold": t, "model": model, "treat_all": treat_all,
                         "difference": difference, "difference_low": d_lo, "difference_high": d_hi,
                         "avoided_per_100": avoided, "avoided_low": a_lo, "avoided_high": a_hi, "in_range": in_range})
