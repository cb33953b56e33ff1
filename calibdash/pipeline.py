"""Algorithm 1 of Gruber & Bach: tune, select and report calibration estimators.

1. Shuffle with a seed; split into an optimisation set and a holdout test set.
2. k-fold cross-validation on the optimisation set: for every estimator and grid value,
   fit on the training folds and compute the risk (Eq. 20) on the validation fold.
3. Per estimator, pick the grid value with the lowest mean validation risk.
4. Ensemble the k fold models fitted with that value.
5. Report the ensemble's estimate on the holdout set, with standard errors over folds.
The holdout set is never used for selection.
"""

from __future__ import annotations

import platform
import time
from collections import defaultdict

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from .estimators import make_estimator
from .estimators.ensemble import FoldEnsemble
from .loading import Predictions, canonical_sha256
from .notions import validate
from .result import EvaluationResult
from .specs import SPECS, combinations, resolve, tuned_param

# Estimators fitted in one task per fold: the kernel ridge pair shares its eigenbasis,
# the kernel density estimator is the costliest alone, the rest are cheap together.
_GROUP_OF_FAMILY = {"ukkr": "kernel ridge", "kkkr": "kernel ridge", "kde": "kde"}
_GROUP_COST = {"kernel ridge": 2, "kde": 1, "fast": 0}


def make_split(n, test_size=0.2, n_folds=5, random_state=0):
    """Seeded holdout split and k folds of the optimisation set.

    Returns
    -------
    test : ndarray of row indices
    folds : list of (train, validation) index arrays
    """
    if not 0 < test_size < 1:
        raise ValueError(f"test_size must lie strictly between 0 and 1, got {test_size!r}.")
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) or n_folds < 2:
        raise ValueError(f"n_folds must be an integer of at least 2, got {n_folds!r}.")
    perm = np.random.default_rng(random_state).permutation(n)
    n_test = int(np.ceil(test_size * n))
    test, opt = perm[:n_test], perm[n_test:]
    if n_test < 2 or len(opt) < 2 * n_folds:
        raise ValueError(
            f"{n} rows are too few for a {test_size:.0%} holdout and {n_folds} folds: every "
            "validation fold and the holdout set need at least 2 rows. Use more data or fewer folds."
        )
    parts = np.array_split(opt, n_folds)
    folds = [(np.concatenate(parts[:k] + parts[k + 1 :]), parts[k]) for k in range(n_folds)]
    return test, folds


# Families whose fitted state is the training set itself: refitting costs nothing, so
# their models are not shipped between processes (at 50,000 x 1,000 one would be 256 MB).
_REFIT_FAMILIES = {"kde"}


def _fold_task(P, y, train, val, notion, items):
    """Fit and validate every grid value of the given estimators on one fold.

    Returns, per estimator, the risks of each combination of fixed parameters and the
    fitted models (None for families that are cheaper to refit than to ship).
    """
    P_tr, y_tr, P_val, y_val = P[train], y[train], P[val], y[val]
    cache = {}
    out = {}
    for name, grid in items:
        t0 = time.perf_counter()
        family, path_param = SPECS[name].family, tuned_param(name)
        values = grid[path_param]
        others = {k: v for k, v in grid.items() if k != path_param}
        runs = []
        for combo in combinations(others):
            path = make_estimator(family, notion=notion, **combo).fit_path(P_tr, y_tr, values, cache=cache)
            models = None if family in _REFIT_FAMILIES else path.estimators
            runs.append((combo, path.risks(P_val, y_val), models))
        out[name] = (runs, time.perf_counter() - t0)
    return out


def _holdout_task(P, y, train, test, notion, name, params, model):
    """The holdout diagonal h(z_i, z_i) of one fold model, refitting it if it was not kept
    (then the refitted model is not sent back: see :class:`RefitOnUse`)."""
    t0 = time.perf_counter()
    refit = model is None
    if refit:
        model = make_estimator(SPECS[name].family, notion=notion, **params).fit(P[train], y[train])
    diag = model.h_diag(P[test])
    return diag, None if refit else model, time.perf_counter() - t0


class RefitOnUse:
    """A fold model whose fitted state is its training rows (the kernel density estimator):
    it keeps references to the data and the fold's row indices, and is fitted on first use,
    so that a result does not hold k copies of the training set."""

    def __init__(self, family, notion, params, P, y, train):
        self.family, self.notion, self.params = family, notion, params
        self.n_classes_ = P.shape[1]
        self._data = (P, y, train)
        self._fitted = None

    def _model(self):
        if self._fitted is None:
            P, y, train = self._data
            self._fitted = make_estimator(self.family, notion=self.notion, **self.params).fit(P[train], y[train])
        return self._fitted

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._model(), name)


def _parallel(n_jobs):
    # Unordered results let the progress bar move as soon as any task finishes.
    return Parallel(n_jobs=n_jobs, return_as="generator_unordered")


def _at_edge(values, chosen):
    """"low"/"high" when ``chosen`` is the extreme of at least 3 numeric grid values."""
    nums = [v for v in values if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)]
    if len(set(nums)) < 3 or chosen not in nums:
        return None
    if chosen == min(nums):
        return "low"
    if chosen == max(nums):
        return "high"
    return None


def _format_params(params):
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def _versions():
    import scipy
    import sklearn

    from . import __version__

    return {
        "calibdash": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "pandas": pd.__version__,
    }


def evaluate(
    P,
    y=None,
    notion="canonical",
    estimators=None,
    grids=None,
    test_size=0.2,
    n_folds=5,
    random_state=0,
    n_jobs=1,
    progress=None,
    keep_models=True,
):
    """Tune, select and report calibration estimators (Algorithm 1).

    Parameters
    ----------
    P : array-like of shape (n, d), or Predictions
        Predicted probabilities, or what :func:`calibdash.load_predictions` returned
        (then ``y`` is taken from it and must be None).
    y : array-like of shape (n,)
        True labels.
    notion : {"top-label", "canonical", "classwise"}, default="canonical"
    estimators : list of str or None
        Names from ``calibdash.specs.SPECS``; None means the paper's set for the notion
        (top-label and classwise: 15-bins, bins, kde, kkkr, ukkr; canonical: kde, kkkr,
        ukkr) plus ``temperature``.
    grids : dict or None
        Partial overrides of the search spaces, e.g. ``{"bins": {"n_bins": [5, 10, 20]}}``.
        See :func:`calibdash.specs.resolve`.
    test_size : float, default=0.2
        Fraction of rows held out for the final estimate.
    n_folds : int, default=5
    random_state : int, default=0
        Seed of the split (and of the Nystroem centres).
    n_jobs : int, default=1
        Parallel tasks through joblib; -1 uses every core. Under
        ``joblib.parallel_config(backend="dask")`` the tasks go to the Dask cluster.
        Results are identical whatever the value.
    progress : callable or None
        Called as ``progress(done, total, message)`` as work completes.
    keep_models : bool, default=True
        Keep the fitted fold ensembles in ``result.models`` (for recalibration curves).
        The kernel density models hold their training rows; on very large sets pass False.

    Returns
    -------
    EvaluationResult
    """
    t_start = time.perf_counter()
    if isinstance(P, Predictions):
        if y is not None:
            raise ValueError("Give either a Predictions object or (P, y), not both.")
        P, y = P.probs, P.labels
    elif y is None:
        raise ValueError("Labels are needed: call evaluate(P, y) or pass what load_predictions returned.")
    P, y = validate(P, y)
    names, full_grids = resolve(notion, estimators, grids)
    test, folds = make_split(len(y), test_size, n_folds, random_state)

    groups = defaultdict(list)
    for name in names:
        groups[_GROUP_OF_FAMILY.get(SPECS[name].family, "fast")].append((name, full_grids[name]))
    # Longest groups first, so that no long task is left running alone at the end.
    order = sorted(groups, key=_GROUP_COST.__getitem__, reverse=True)
    tasks = [(k, groups[g]) for g in order for k in range(n_folds)]
    total = len(tasks) + len(names) * n_folds
    done = 0

    def report(message):
        if progress is not None:
            progress(done, total, message)

    report("starting")
    fold_out = [dict() for _ in range(n_folds)]
    seconds = defaultdict(float)
    jobs = (
        delayed(_run_task)(k, P, y, folds[k][0], folds[k][1], notion, items)
        for k, items in tasks
    )
    for k, out in _parallel(n_jobs)(jobs):
        for name, (runs, sec) in out.items():
            fold_out[k][name] = runs
            seconds[name] += sec
        done += 1
        report(f"fold {k + 1}/{n_folds}: {', '.join(out)} validated")

    # Selection by mean validation risk, then the holdout diagonals of the chosen models.
    # risks[name][fold, combination of fixed parameters, tuned value]
    risks, chosen_index = {}, {}
    for name in names:
        risks[name] = np.array([[r for _, r, _ in fold_out[k][name]] for k in range(n_folds)])
        c_best, v_best = np.unravel_index(int(np.argmin(risks[name].mean(axis=0))), risks[name].shape[1:])
        chosen_index[name] = (int(c_best), int(v_best))
    chosen_params = {}
    for name, (c_best, v_best) in chosen_index.items():
        combo = fold_out[0][name][c_best][0]
        chosen_params[name] = {**combo, tuned_param(name): full_grids[name][tuned_param(name)][v_best]}
    holdout_jobs, keys = [], []
    for name in names:
        c_best, v_best = chosen_index[name]
        params = chosen_params[name]
        for k in range(n_folds):
            models_k = fold_out[k][name][c_best][2]
            model = None if models_k is None else models_k[v_best]
            holdout_jobs.append(delayed(_run_holdout)(len(keys), P, y, folds[k][0], test, notion, name, params, model))
            keys.append((name, k))
    diags, members = {}, defaultdict(dict)
    for i, (diag, model, sec) in _parallel(n_jobs)(holdout_jobs):
        name, k = keys[i]
        diags[name, k] = diag
        if keep_models:
            if model is None:
                model = RefitOnUse(SPECS[name].family, notion, chosen_params[name], P, y, folds[k][0])
            members[name][k] = model
        seconds[name] += sec
        done += 1
        report(f"{name}: holdout estimate of fold {k + 1}/{n_folds}")

    summary_rows, curve_rows, fold_rows, warnings, models = [], [], [], [], {}
    for name in names:
        spec, path_param = SPECS[name], tuned_param(name)
        values = full_grids[name][path_param]
        combos = [combo for combo, _, _ in fold_out[0][name]]
        for k in range(n_folds):
            for c, combo in enumerate(combos):
                for v, value in enumerate(values):
                    curve_rows.append(
                        {
                            "estimator": name,
                            "family": spec.family,
                            "param": path_param,
                            "value": value,
                            "fixed": _format_params(combo),
                            "fold": k,
                            "val_risk": float(risks[name][k, c, v]),
                        }
                    )
        c_best, v_best = chosen_index[name]
        chosen = chosen_params[name]
        fold_risks = risks[name][:, c_best, v_best]
        fold_sq = np.array([float(np.mean(diags[name, k])) for k in range(n_folds)])
        if keep_models:
            models[name] = FoldEnsemble([members[name][k] for k in range(n_folds)])
        for k in range(n_folds):
            fold_rows.append({"estimator": name, "fold": k, "squared_estimate": float(fold_sq[k])})

        edges = {}
        grid = full_grids[name]
        for param, value in chosen.items():
            side = _at_edge(grid[param], value)
            if side:
                edges[param] = side
                warnings.append(
                    f"{name}: the selected {param} = {value:g} lies at the {side} edge of its grid "
                    f"({min(grid[param]):g} to {max(grid[param]):g}); the optimum may lie beyond it, so "
                    f"extend the grid (grids={{'{name}': {{'{param}': [...]}}}})."
                )
        squared = float(fold_sq.mean())
        root_k = np.sqrt(n_folds)
        summary_rows.append(
            {
                "estimator": name,
                "family": spec.family,
                "hyperparameters": _format_params(chosen),
                "params": chosen,
                "val_risk": float(fold_risks.mean()),
                "val_risk_se": float(fold_risks.std(ddof=1) / root_k),
                "sqrt_risk_x100": float(np.mean(np.sqrt(fold_risks)) * 100),
                "sqrt_risk_x100_se": float(np.std(np.sqrt(fold_risks), ddof=1) / root_k * 100),
                "estimate": float(np.sqrt(max(0.0, squared))),
                "estimate_se": float(np.std(np.sqrt(np.maximum(fold_sq, 0.0)), ddof=1) / root_k),
                "squared_estimate": squared,
                "squared_estimate_se": float(fold_sq.std(ddof=1) / root_k),
                "at_grid_edge": bool(edges),
                "seconds": float(seconds[name]),
            }
        )

    config = {
        "call": {
            "notion": notion,
            "estimators": names,
            "grids": full_grids,
            "test_size": test_size,
            "n_folds": n_folds,
            "random_state": random_state,
        },
        "n": int(len(y)),
        "n_classes": int(P.shape[1]),
        "n_optimisation": int(len(y) - len(test)),
        "n_test": int(len(test)),
        "fold_sizes": [int(len(v)) for _, v in folds],
        "data_sha256": canonical_sha256(P, y),
        "versions": _versions(),
        "seconds": float(time.perf_counter() - t_start),
    }
    report("done")
    return EvaluationResult(
        summary=pd.DataFrame(summary_rows),
        curves=pd.DataFrame(curve_rows),
        folds=pd.DataFrame(fold_rows),
        config=config,
        warnings=warnings,
        models=models if keep_models else None,
    )


def _run_holdout(i, *args):
    with threadpool_limits(limits=1):
        return i, _holdout_task(*args)


def _run_task(k, P, y, train, val, notion, items):
    # One BLAS thread in every task, whether it runs here, in a joblib worker or on a
    # Dask worker: the thread count changes the rounding of matrix products, and the
    # same seed must give the same numbers whatever n_jobs.
    with threadpool_limits(limits=1):
        return k, _fold_task(P, y, train, val, notion, items)
