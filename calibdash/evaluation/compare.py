"""Compare the calibration of several models on the same labels, with a paired test.

Design (README, "Comparing models"):

* **One estimator for all models.** Estimators differ in their bias, so a difference
  between two models is only meaningful when both are measured by the same one. By
  default it is the estimator with the lowest validation risk summed over the models;
  ``estimator=`` fixes it.
* **Same split for all models.** Every model is evaluated by :func:`calibdash.evaluate`
  with the same seed, hence the same holdout rows and folds.
* **Differences of squared errors.** The statistic is
  ``D = SCE_a - SCE_b = mean_i (h_a(z_i, z_i) - h_b(z_i, z_i))`` over the holdout rows: a
  mean of per-row terms, paired row by row, and smooth when both errors are near 0 (a
  difference of square roots is not differentiable there).
* **Its variance has two parts** (:mod:`calibdash.core.uncertainty`, the same computation as
  every interval of an evaluation). The holdout part (which rows were held out) is the
  variance of the mean of the paired row differences, s^2 / n: what a paired bootstrap of
  the holdout rows estimates, computed exactly. The training part (which rows fitted the
  estimators) is of the same order; it is the delete-a-fold jackknife over the k fold
  models, ``(k - 1)^2 / k`` times the variance of the k fold models' holdout differences.
* **p-value and interval.** Two-sided test of "equal squared calibration errors" with the
  studentised statistic ``D / se`` against Student's t with Welch-Satterthwaite degrees of
  freedom (the jackknife part has only k - 1); the interval is ``D +- t_q se``. Level and
  power are checked by simulation in ``tests/test_compare.py``.
* **The difference of the errors themselves**, ``sqrt(SCE_a) - sqrt(SCE_b)``, is what a
  reader compares (the app shows errors, not squares). Its interval is the delta method's:
  the same two-part variance of the paired row values linearised at the two estimates,
  ``h_a / (2 sqrt(SCE_a)) - h_b / (2 sqrt(SCE_b))``. The square root is not smooth at 0, so
  when either squared estimate is within two standard errors of 0 the linearisation does
  not hold and no interval is given (NaN); the p-value needs none of this: equal squared
  errors are equal errors. :meth:`ComparisonResult.error_differences` computes it on demand
  (``pairs`` keeps the squared differences the test is about).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from calibdash.core.notions import check_notion, validate
from calibdash.core.tails import t_sf
from calibdash.core.uncertainty import check_level, holdout_error, t_quantile
from calibdash.errors import InputError
from calibdash.estimators.registry import DEFAULT_ESTIMATORS
from calibdash.evaluation.pipeline import evaluate
from calibdash.metrics.variational import row_losses
from calibdash.predictions import Predictions
from calibdash.text import quoted

# The comparison and the lab use only the risk-tuned estimators: the literature's (ECE,
# SKCE with its bootstrap test, variational), which the pipeline runs by default beside
# them, would multiply the cost of every evaluation and are not shown.
ONLY_TUNED = {"others": []}

# Bootstrap replicates per chunk, so memory stays bounded on large holdout sets.
_BOOT_ENTRIES = 4_000_000


@dataclass
class ComparisonResult:
    """What :func:`compare` found.

    Attributes
    ----------
    models : pandas.DataFrame
        One row per model: ``model``, ``n``, ``accuracy``, ``brier`` (mean squared
        distance of the probability vector to the one-hot label, summed over classes),
        ``estimator``, ``hyperparameters``, ``val_risk``, ``estimate`` (calibration error),
        ``ci_low``, ``ci_high`` (its interval), ``squared_estimate``, ``squared_se``.
    pairs : pandas.DataFrame
        One row per pair of models: ``model_a``, ``model_b``, ``difference`` (squared
        error of a minus that of b), ``se``, ``ci_low``, ``ci_high`` (its interval),
        ``p_value`` (of "equal calibration errors"), ``estimate_a``, ``estimate_b``
        (calibration errors), ``accuracy_difference``, ``brier_difference``. The
        difference of the errors themselves is :meth:`error_differences`.
    estimator : str
        The estimator used for every model.
    results : dict
        ``{model: EvaluationResult}`` of :func:`calibdash.evaluate`, same split and seed.
    holdout : ndarray
        Row indices of the holdout set shared by all models.
    diagonals : dict
        ``{model: h(z_i, z_i) on the holdout rows}`` of the chosen estimator.
    estimator_risks : pandas.DataFrame
        Validation risk of every estimator (rows) for every model (columns), with the
        column ``total`` used to choose.
    config : dict
        The call's settings.
    """

    models: pd.DataFrame
    pairs: pd.DataFrame
    estimator: str
    results: dict = field(repr=False)
    holdout: np.ndarray = field(repr=False)
    diagonals: dict = field(repr=False)
    estimator_risks: pd.DataFrame = field(repr=False)
    config: dict = field(default_factory=dict)
    probs: dict = field(default_factory=dict, repr=False)
    labels: np.ndarray | None = field(default=None, repr=False)

    def error_differences(self, *, level=None):
        """The difference of the calibration errors of every pair, ``estimate_a - estimate_b``,
        with its delta-method interval (:func:`error_difference_interval`).

        Parameters
        ----------
        level : float or None
            Coverage of the intervals; None is the comparison's (``config["level"]``).

        Returns
        -------
        pandas.DataFrame
            One row per pair, in the order of :attr:`pairs`: ``model_a``, ``model_b``,
            ``error_difference``, ``error_difference_low``, ``error_difference_high`` (NaN
            when either squared error is within two standard errors of 0), ``p_value`` (the
            paired test of :attr:`pairs`: equal squared errors are equal errors),
            ``estimate_a``, ``estimate_b``. Fractions, as every number of the API.
        """
        level = check_level(self.config.get("level", 0.95) if level is None else level)
        values = {name: r.diagonals[self.estimator] for name, r in self.results.items()}
        errs = {name: holdout_error(v) for name, v in values.items()}
        rows = []
        for r in self.pairs.itertuples():
            low, high = error_difference_interval(values[r.model_a], errs[r.model_a], values[r.model_b], errs[r.model_b],
                                                  level=level)
            rows.append({"model_a": r.model_a, "model_b": r.model_b, "error_difference": r.estimate_a - r.estimate_b,
                         "error_difference_low": low, "error_difference_high": high, "p_value": r.p_value,
                         "estimate_a": r.estimate_a, "estimate_b": r.estimate_b})
        return pd.DataFrame(rows, columns=["model_a", "model_b", "error_difference", "error_difference_low",
                                           "error_difference_high", "p_value", "estimate_a", "estimate_b"])


def _as_items(models):
    if isinstance(models, dict):
        items = list(models.items())
    else:
        try:
            items = [tuple(m) for m in models]
        except TypeError:
            raise InputError("models must be a dict {name: probabilities} or a list of (name, probabilities) pairs.") from None
        if any(len(m) != 2 for m in items):
            raise InputError("models must be a dict {name: probabilities} or a list of (name, probabilities) pairs.")
    if len(items) < 2:
        raise InputError(f"A comparison needs at least 2 models; got {len(items)}.")
    names = [name for name, _ in items]
    # Messages that quote a model's name (in the app, a file's name) mark it, so that the
    # app shows it literally: InputError, a ValueError, keeps the marks out of str(error).
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"Model names must be non-empty strings; got {quoted(name)}.")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"Duplicate model names: {', '.join(map(quoted, dup))}. Give every model its own name.")
    return items


def _inputs(models, y):
    """{name: P} and the shared labels, checked to describe the same rows."""
    items = _as_items(models)
    given = None if y is None else np.asarray(y)
    probs, labels_from = {}, {}
    for name, P in items:
        if isinstance(P, Predictions):
            labels_from[name] = P.labels
            P = P.probs
        probs[name] = P
    if given is None:
        if not labels_from:
            raise InputError("Labels are needed: call compare(models, y) or pass what load_predictions returned.")
        first = next(iter(labels_from))
        given = labels_from[first]
    for name, lab in labels_from.items():
        if len(lab) != len(given) or not np.array_equal(np.asarray(lab), given):
            raise InputError(
                f"The labels of {quoted(name)} differ from the others: a comparison needs every model's "
                "predictions for the same rows, in the same order, with the same labels."
            )
    out, d = {}, None
    for name, P in probs.items():
        P_arr = np.asarray(P)
        if P_arr.ndim != 2 or P_arr.shape[0] != len(given):
            rows = P_arr.shape[0] if P_arr.ndim >= 1 else 0
            raise InputError(
                f"{quoted(name)} has {rows} rows of predictions but there are {len(given)} labels: every "
                "model must predict the same rows, in the order of the labels."
            )
        try:
            P_ok, y_ok = validate(P_arr, given)
        except InputError as e:
            raise InputError(f"{quoted(name)}: {e}") from None
        if d is not None and P_ok.shape[1] != d:
            raise InputError(f"{quoted(name)} has {P_ok.shape[1]} classes but the first model has {d}: "
                             "all models must predict the same classes.")
        d = P_ok.shape[1]
        out[name] = P_ok
    return out, y_ok


def error_difference_interval(values_a, err_a, values_b, err_b, *, level=0.95):
    """Interval of ``sqrt(SCE_a) - sqrt(SCE_b)``, the difference of two calibration errors
    measured on the same holdout rows, by the delta method.

    The square root is smooth away from 0, so the difference is, to first order, the mean
    of the paired values ``h_a / (2 sqrt(SCE_a)) - h_b / (2 sqrt(SCE_b))``: its standard
    error and degrees of freedom are those of that mean (:func:`holdout_error`, the holdout
    rows and the fold fits), centred at the difference of the errors. Near 0 the square
    root's slope is unbounded and the first order says nothing, so the interval is given
    only when both squared estimates exceed two of their standard errors (the rule of
    :func:`calibdash.core.uncertainty.root_se`).

    Parameters
    ----------
    values_a, values_b : ndarray of shape (k, n)
        Each model's ``h(z_i, z_i)`` by fold model on the shared holdout rows.
    err_a, err_b : HoldoutError
        ``holdout_error`` of ``values_a`` and ``values_b``.
    level : float, default=0.95

    Returns
    -------
    tuple of float
        ``(low, high)``; ``(nan, nan)`` when either squared estimate is within two standard
        errors of 0.
    """
    if err_a.estimate <= 2 * err_a.se or err_b.estimate <= 2 * err_b.se:
        return float("nan"), float("nan")
    root_a, root_b = np.sqrt(err_a.estimate), np.sqrt(err_b.estimate)
    linear = holdout_error(np.asarray(values_a) / (2 * root_a) - np.asarray(values_b) / (2 * root_b))
    half = t_quantile(level, linear.df) * linear.se
    diff = float(root_a - root_b)
    return diff - half, diff + half


def compare(
    models,
    y=None,
    *,
    notion="canonical",
    estimator=None,
    estimators=None,
    grids=None,
    test_size=0.2,
    n_folds=5,
    random_state=0,
    n_jobs=1,
    level=0.95,
    progress=None,
):
    """Compare the calibration of several models on the same labels.

    Parameters
    ----------
    models : dict {name: array-like of shape (n, d) or Predictions}, or list of (name, P)
        Predicted probabilities of each model for the same rows. At least two.
    y : array-like of shape (n,), optional
        True labels; may be omitted when the models are Predictions with labels.
    notion : {"top-label", "canonical", "classwise"}, default="canonical"
    estimator : str or None
        The estimator used for every model. None: the one with the lowest validation
        risk summed over the models (from ``estimators``).
    estimators : list of str or None
        Estimators evaluated; None is ``calibdash.evaluation.config.DEFAULT_ESTIMATORS[notion]``.
    grids : dict or None
        Search-space overrides, as in :func:`calibdash.evaluate`.
    test_size, n_folds, random_state, n_jobs
        As in :func:`calibdash.evaluate`; the same split serves every model.
    level : float, default=0.95
        Coverage of the intervals.
    progress : callable or None
        ``progress(done, total, message)`` after each model's evaluation.

    Returns
    -------
    ComparisonResult

    Examples
    --------
    >>> import calibdash as cd
    >>> from calibdash.lab.demo import demo_arrays
    >>> P_a, y = demo_arrays("digits: logistic regression")
    >>> P_b, _ = demo_arrays("digits: naive Bayes")
    >>> cmp = cd.compare({"logistic": P_a, "naive Bayes": P_b}, y, notion="top-label")  # doctest: +SKIP
    >>> cmp.pairs[["model_a", "model_b", "difference", "p_value"]]  # doctest: +SKIP
    """
    check_level(level)
    check_notion(notion)
    probs, y = _inputs(models, y)
    names = list(probs)
    est_list = list(DEFAULT_ESTIMATORS.get(notion, ()) if estimators is None else estimators)
    if estimator is not None and estimator not in est_list:
        est_list = [estimator] if estimators is None else est_list + [estimator]

    results = {}
    for i, name in enumerate(names):
        results[name] = evaluate(
            probs[name], y, notion=notion, estimators=est_list, grids=grids, test_size=test_size,
            n_folds=n_folds, random_state=random_state, n_jobs=n_jobs, keep_models=True, **ONLY_TUNED,
        )
        if progress is not None:
            progress(i + 1, len(names), f"{name} evaluated")

    risks = pd.DataFrame({name: results[name].summary.set_index("estimator")["val_risk"] for name in names})
    risks["total"] = risks[names].sum(axis=1)
    chosen = estimator if estimator is not None else str(risks["total"].idxmin())

    test = results[names[0]].split["test"]
    # Each model's fold models on the shared holdout rows: (fold, row) arrays.
    fold_diags = {name: results[name].diagonals[chosen] for name in names}
    diag = {name: fold_diags[name].mean(axis=0) for name in names}
    acc = {name: float(np.mean(np.argmax(probs[name], axis=1) == y)) for name in names}
    brier = {name: float(np.mean(row_losses(probs[name], y, "brier"))) for name in names}

    model_rows, errs = [], {}
    for name in names:
        row = results[name].summary.set_index("estimator").loc[chosen]
        err = errs[name] = holdout_error(fold_diags[name])
        low, high = err.root_interval(level)
        model_rows.append(
            {
                "model": name,
                "n": int(len(y)),
                "accuracy": acc[name],
                "brier": brier[name],
                "estimator": chosen,
                "hyperparameters": row["hyperparameters"],
                "val_risk": float(row["val_risk"]),
                "estimate": float(np.sqrt(max(err.estimate, 0.0))),
                "ci_low": low,
                "ci_high": high,
                "squared_estimate": err.estimate,
                "squared_se": err.se,
            }
        )

    pair_rows = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            # Paired: the row differences of the two models on the same holdout rows, by
            # fold model, so that the rows' common difficulty cancels.
            err = holdout_error(fold_diags[names[a]] - fold_diags[names[b]])
            diff, se, df = err.estimate, err.se, err.df
            low, high = err.confidence_interval(level)
            p = float(2 * t_sf(abs(diff) / se, df)) if se > 0 else (1.0 if diff == 0 else 0.0)
            pair_rows.append(
                {
                    "model_a": names[a],
                    "model_b": names[b],
                    "difference": diff,
                    "se": se,
                    "ci_low": low,
                    "ci_high": high,
                    "p_value": p,
                    "estimate_a": model_rows[a]["estimate"],
                    "estimate_b": model_rows[b]["estimate"],
                    "accuracy_difference": acc[names[a]] - acc[names[b]],
                    "brier_difference": brier[names[a]] - brier[names[b]],
                }
            )

    config = {
        "notion": notion,
        "estimator": chosen,
        "estimator_chosen_by": "user" if estimator is not None else "lowest validation risk summed over models",
        "estimators": est_list,
        "test_size": test_size,
        "n_folds": n_folds,
        "random_state": random_state,
        "level": level,
        "n": int(len(y)),
        "n_test": int(len(test)),
    }
    return ComparisonResult(
        models=pd.DataFrame(model_rows),
        pairs=pd.DataFrame(pair_rows),
        estimator=chosen,
        results=results,
        holdout=test,
        diagonals=diag,
        estimator_risks=risks,
        config=config,
        probs=probs,
        labels=y,
    )


__all__ = ["compare", "ComparisonResult", "error_difference_interval"]
