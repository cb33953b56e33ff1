"""Estimators from the literature that the risk cannot rank, on the pipeline's split.

The calibration estimation functions of :mod:`calibdash.estimators` are tuned and ranked by
the risk (Eq. 20). The estimators here are not of that form, so the pipeline reports them
beside the ranked ones, computed on the same holdout set, and groups every estimate by the
quantity it estimates so that nobody compares numbers on different scales:

* "calibration error (L2)": the square root of a squared error (top-label TCE_2 or
  canonical CCE_2), the scale of the ranked estimators; the variational estimators with
  the Brier score or the squared top-label gap (Berta et al.).
* "L1 calibration error": the ECE estimators of Posocco & Bonnefoy (2021), the familiar
  15-bin ECE among them, and the variational top-label L1 error.
* "squared kernel calibration error": SKCE (Widmann, Lindsten & Zachariah 2019), with the
  p-value of its calibration test of "the model is calibrated".
* "KL calibration error (nats)": the variational estimator with the log loss.

Estimators that fit a map (the variational ones) fit it on each fold's training rows, as
the ranked estimators do, and are evaluated on the holdout set; the estimate is the mean
over the fold maps and its standard error includes both the holdout rows and the fitting of
the maps (:mod:`calibdash.core.uncertainty`). The others need no fitting and are computed on the
holdout set, with a bootstrap (ECE) or U-statistic (SKCE) standard error. Every row has a
95% interval (``ci_low``, ``ci_high``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from calibdash.core.notions import NOTIONS, check_notion
from calibdash.core.rows import SortedParts, take_rows
from calibdash.core.uncertainty import holdout_error, normal_interval, root_interval, root_se
from calibdash.errors import ConfigError

QUANTITIES = (
    "calibration error (L2)",
    "L1 calibration error",
    "squared kernel calibration error",
    "KL calibration error (nats)",
)

# The quadratic SKCE and its bootstrap cost O(n^2 d) and hold an n x n matrix: beyond this
# work (2,000 x 100 needs 4e8, 10,000 x 10 1e9) the pipeline's default "skce" uses the block
# estimator and its asymptotic test, O(n^1.5 d), instead, and says so in the details.
_SKCE_QUADRATIC_MAX_WORK = 2e9


@dataclass(frozen=True)
class OtherEstimator:
    """One estimator from the literature as the pipeline runs it.

    ``compute(P, y, test, folds, notion, random_state)`` returns a dict with ``estimate``,
    ``estimate_se``, ``details`` and optionally ``p_value``, ``squared_estimate`` and
    ``squared_estimate_se``.
    """

    name: str
    label: str
    quantity: str
    notions: tuple
    compute: object = field(repr=False)
    reference: str = ""
    cost: float = 0.05  # rough seconds on a 2,000-row holdout, to schedule long tasks first
    # Rough seconds per million rows of the file for a one-dimensional notion, measured at
    # 10,000,000 rows; the larger of the two orders the tasks (pipeline.task_cost). 0: not measured.
    cost_per_million_rows: float = 0.0


# -- ECE estimators (Posocco & Bonnefoy) -------------------------------------------------
def _ece_notion(notion):
    # The canonical notion has no L1 ECE of its own: show the familiar top-label one.
    return "top-label" if notion == "canonical" else notion


def _ece(name):
    def compute(P, y, test, folds, notion, random_state):
        from calibdash.metrics.ece import ece_bootstrap

        used = _ece_notion(notion)
        value, se = ece_bootstrap(name, take_rows(P, test), take_rows(y, test), notion=used, n_resamples=200, random_state=random_state)
        return {"estimate": value, "estimate_se": se, "details": f"{used}, holdout set, 200 bootstrap resamples"}

    return compute


# -- SKCE and its calibration test (Widmann et al.) --------------------------------------
def _skce(estimator):
    def compute(P, y, test, folds, notion, random_state):
        from calibdash.metrics.skce import calibration_test

        used = estimator
        if used == "unbiased" and len(test) ** 2 * P.shape[1] > _SKCE_QUADRATIC_MAX_WORK:
            used = "block"
        # The test computes the estimate on its way (from the kernel matrix it builds anyway).
        test_ = calibration_test(take_rows(P, test), take_rows(y, test), estimator=used, random_state=random_state)
        est = test_.estimate
        note = "" if used == estimator else (f" (the block estimator: the quadratic one would cost n^2 d = "
                                              f"{len(test) ** 2 * P.shape[1]:.1e} operations)")
        return {
            "estimate": est.estimate,
            "estimate_se": est.se,
            "p_value": test_.p_value,
            "details": f"{used}, Laplacian kernel, bandwidth {est.bandwidth:.3g} (median heuristic); "
                       f"test: {test_.method}{note}",
        }

    return compute


# -- variational estimators (Berta et al.) -----------------------------------------------
def _holdout_rows(gaps, squared):
    """Estimate, standard error and 95% interval from per-row gaps of each fold map, shape
    (k, n_test): the holdout sampling of the rows and the fitting of the fold maps
    (delete-a-fold jackknife), as for the ranked estimators (:mod:`calibdash.core.uncertainty`).
    The spread over the maps alone would miss that the holdout set is a sample (with
    monotone maps that agree on the sign of every gap, the L1 gaps of all folds coincide).
    ``squared``: the gaps are squared errors, reported on the error's scale."""
    err = holdout_error(gaps)
    low, high = err.confidence_interval(0.95)
    if not squared:
        return {"estimate": err.estimate, "estimate_se": err.se, "ci_low": low, "ci_high": high}
    root, root_err = root_se(err.estimate, err.se)
    low, high = root_interval(low, high)
    return {"estimate": root, "estimate_se": root_err, "ci_low": low, "ci_high": high,
            "squared_estimate": err.estimate, "squared_estimate_se": err.se}


def _variational(loss, recalibrator):
    def compute(P, y, test, folds, notion, random_state):
        from calibdash.metrics.recalibrators import as_recalibrator
        from calibdash.metrics.variational import holdout_loss_gap

        gaps = [holdout_loss_gap(as_recalibrator(recalibrator).fit(take_rows(P, train), take_rows(y, train)),
                                 take_rows(P, test), take_rows(y, test), loss=loss)
                for train, _ in folds]
        out = _holdout_rows(gaps, squared=loss == "brier")
        out["details"] = f"canonical, {recalibrator} map fitted on each fold's training rows, holdout set"
        return out

    return compute


def _complements(folds):
    """Whether each fold's training rows are the other folds' validation rows, in order (as
    :func:`calibdash.evaluation.config.fold_train_rows` forms them)."""
    return all(np.array_equal(train, np.concatenate([val for j, (_, val) in enumerate(folds) if j != k]))
               for k, (train, _) in enumerate(folds))


def _variational_top_label(p, recalibrator="isotonic"):
    def compute(P, y, test, folds, notion, random_state):
        from calibdash.metrics.recalibrators import OneDimensionalRecalibrator, as_recalibrator
        from calibdash.metrics.variational import top_label_gaps, top_label_inputs

        c, S, t = top_label_inputs(P, y)
        # An isotonic map sorts its training confidences: the folds' training rows are the
        # other folds' validation parts, so each part is sorted once and merged per fold.
        sorted_parts = SortedParts(c, [val for _, val in folds]) if recalibrator == "isotonic" and _complements(folds) else None
        parts = []
        for k, (train, _) in enumerate(folds):
            order = None if sorted_parts is None else sorted_parts.order_of(j for j in range(len(folds)) if j != k)
            g = (OneDimensionalRecalibrator(as_recalibrator(recalibrator))
                 .fit(take_rows(S, train), take_rows(t, train), order=order).predict(take_rows(S, test)))
            parts.append(top_label_gaps(c[test], t[test], g, p))
        out = _holdout_rows([q[0] for q in parts], squared=p == 2)
        over = float(np.mean([q[1] for q in parts]))
        under = float(np.mean([q[2] for q in parts]))
        if p == 2:
            over, under = math.sqrt(max(0.0, over)), math.sqrt(max(0.0, under))
        out["details"] = (f"top-label, {recalibrator} map of the confidence fitted on each fold's training rows; "
                          f"over-confidence {over:.4f}, under-confidence {under:.4f}")
        return out

    return compute


def _registry():
    from calibdash.metrics.ece import ECE_ESTIMATORS

    pb = "Posocco & Bonnefoy (2021)"
    out = {}
    for name, spec in ECE_ESTIMATORS.items():
        label = spec["label"]
        out[name] = OtherEstimator(name, label, "L1 calibration error", NOTIONS, _ece(name),
                                   "Guo et al. (2017)" if name == "ece-15-bins" else pb,
                                   cost=0.8 if spec["kind"] == "kde" else 0.2,
                                   cost_per_million_rows=1.5 if name == "ece-15-bins" else 0.0)
    w = "Widmann, Lindsten & Zachariah (2019)"
    out["skce"] = OtherEstimator("skce", "SKCE, unbiased, with bootstrap calibration test", "squared kernel calibration error",
                                 NOTIONS, _skce("unbiased"), w, cost=2.0)
    out["skce-linear"] = OtherEstimator("skce-linear", "SKCE, linear, with asymptotic calibration test",
                                        "squared kernel calibration error", NOTIONS, _skce("linear"), w)
    out["skce-block"] = OtherEstimator("skce-block", "SKCE, block, with asymptotic calibration test",
                                       "squared kernel calibration error", NOTIONS, _skce("block"), w, cost=0.3)
    b = "Berta et al. (2025)"
    for rec in ("temperature", "isotonic", "logistic"):
        out[f"variational-brier-{rec}"] = OtherEstimator(
            f"variational-brier-{rec}", f"variational, Brier score, {rec} map", "calibration error (L2)",
            ("canonical",), _variational("brier", rec), b, cost=0.3 if rec != "logistic" else 3.0)
    out["variational-log-temperature"] = OtherEstimator(
        "variational-log-temperature", "variational, log loss, temperature map", "KL calibration error (nats)",
        ("canonical",), _variational("log", "temperature"), b, cost=0.3)
    out["variational-top-l2"] = OtherEstimator(
        "variational-top-l2", "variational, top-label L2, isotonic map", "calibration error (L2)",
        ("top-label",), _variational_top_label(2), b, cost_per_million_rows=1.8)
    out["variational-top-l1"] = OtherEstimator(
        "variational-top-l1", "variational, top-label L1, isotonic map", "L1 calibration error",
        ("top-label",), _variational_top_label(1), b, cost_per_million_rows=1.8)
    return out


OTHER_ESTIMATORS = _registry()

# Shown by default: the familiar 15-bin ECE always (labelled as such), the variational
# estimate on the ranked estimators' scale, and for canonical calibration the SKCE test.
DEFAULT_OTHERS = {
    "top-label": ("ece-15-bins", "variational-top-l2"),
    "canonical": ("ece-15-bins", "variational-brier-temperature", "skce"),
    "classwise": ("ece-15-bins",),
}


def available_others(notion):
    """Names of the literature estimators offered for ``notion``."""
    check_notion(notion)
    return [name for name, o in OTHER_ESTIMATORS.items() if notion in o.notions]


def resolve_others(notion, others=None):
    """The literature estimators to run: None means ``DEFAULT_OTHERS[notion]``; [] none."""
    check_notion(notion)
    names = list(DEFAULT_OTHERS[notion] if others is None else others)
    valid = available_others(notion)
    for name in names:
        if name not in OTHER_ESTIMATORS:
            raise ConfigError(f"Unknown estimator {name!r}; the estimators from the literature are "
                             f"{', '.join(map(repr, OTHER_ESTIMATORS))}.")
        if name not in valid:
            raise ConfigError(f"{name!r} does not support the {notion!r} notion; choose from {', '.join(map(repr, valid))}.")
    if len(set(names)) != len(names):
        raise ConfigError(f"Estimators are listed twice: {names}.")
    return names


def run_other(name, P, y, test, folds, notion, random_state):
    """One row of the result's ``others`` table."""
    spec = OTHER_ESTIMATORS[name]
    t0 = time.perf_counter()
    out = spec.compute(P, y, test, folds, notion, random_state)
    nan = float("nan")
    if "ci_low" not in out:
        # Nothing fitted (ECE, SKCE): the holdout rows are the only source of randomness,
        # and the estimator's own standard error (bootstrap, U-statistic) measures it.
        out["ci_low"], out["ci_high"] = normal_interval(float(out["estimate"]), float(out["estimate_se"]), 0.95)
    return {
        "estimator": name,
        "label": spec.label,
        "quantity": spec.quantity,
        "estimate": float(out["estimate"]),
        "estimate_se": float(out["estimate_se"]),
        "ci_low": float(out["ci_low"]),
        "ci_high": float(out["ci_high"]),
        "squared_estimate": float(out.get("squared_estimate", nan)),
        "squared_estimate_se": float(out.get("squared_estimate_se", nan)),
        "p_value": float(out.get("p_value", nan)),
        "details": out["details"],
        "reference": spec.reference,
        "seconds": time.perf_counter() - t0,
    }


__all__ = ["QUANTITIES", "OTHER_ESTIMATORS", "DEFAULT_OTHERS", "OtherEstimator", "available_others", "resolve_others", "run_other"]
