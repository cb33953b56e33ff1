"""Algorithm 1 of Gruber & Bach: tune, select and report calibration estimators.

1. Shuffle with a seed; split into an optimisation set and a holdout test set.
2. k-fold cross-validation on the optimisation set: for every estimator and grid value,
   fit on the training folds and compute the risk (Eq. 20) on the validation fold.
3. Per estimator, pick the grid value with the lowest mean validation risk.
4. Ensemble the k fold models fitted with that value.
5. Report the ensemble's estimate on the holdout set, with a standard error that includes
   both the sampling of the holdout rows and the fitting of the fold models
   (:mod:`calibdash.core.uncertainty`), and compare every estimator's fold risks, paired, with
   the best one's and with the trivial estimator h = 0.

The holdout set is never used for selection.
"""

from __future__ import annotations

import importlib
import platform
import time
from collections import defaultdict

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from calibdash.core.notions import validate, validated_inputs
from calibdash.core.risk import zero_risk
from calibdash.core.rows import take_rows
from calibdash.core.threads import one_blas_thread
from calibdash.core.uncertainty import REFERENCE, HoldoutMeans, paired_risks, root_se
from calibdash.errors import ConfigError, InputError
from calibdash.estimators import make_estimator
from calibdash.estimators.ensemble import FoldEnsemble
from calibdash.estimators.kde import NORMALISERS_KEY, log_beta_table
from calibdash.estimators.registry import FAMILIES, REGISTRY, tuned_param
from calibdash.evaluation.advice import GridEdge
from calibdash.evaluation.config import EvaluationConfig, combinations, fold_train_rows, shared_split, split_parts
from calibdash.evaluation.schema import INPUT_KEYS
from calibdash.metrics.literature import OTHER_ESTIMATORS, run_other
from calibdash.predictions import Predictions, canonical_sha256

# Estimators of one registry task group are fitted in one task per fold (the kernel ridge
# pair shares its eigenbasis, the kernel density estimator is costly alone, the
# scikit-learn multiclass maps are slow with many classes, the rest are cheap together);
# the registry's rough costs only decide which tasks start first.
# Rows x centres x dimension per task of the work shared across folds (the kernel density
# estimator's normalisers): a few seconds each, so that two workers finish together.
_SHARED_WORK_PER_TASK = 2.5e9
# The same for the kernel density's holdout kernel products, which are the last phase's only tasks
# when its fold tasks waited for the normalisers: at 10,000 x 100 (1.6e9) one task of 0.13 s
# left the other worker idle; two of 0.07 s do not. Not a number of the workers': the chunks
# fix the diagonals' last digits, which must not depend on them.
_HOLDOUT_WORK_PER_TASK = 8e8
# Validation rows x training rows x classes of one kernel density fold task above which it is
# too long for the literature's estimators and the validated holdout tasks to fill its phase
# beside it: at 50,000 x 1,000 (2.6e11, about 26 s a task) five such tasks on two workers left
# one idle for 9 s, so there every fold task waits for the normalisers and fills that phase
# (128 -> 123 s, BENCHMARKS.md); at 10,000 x 100 (1e9, 0.4 s a task) the phases stay as they are, which
# were 0.15 s faster there (medians of five runs each, alternated).
_LONG_WAITING_TASK = 3e10
#: ``keep_models`` value that keeps only the fold ensemble whose recalibration map the reliability
#: views show: the first of the result's ``recalibration_candidates``.
KEEP_RECALIBRATION = "recalibration"


def task_cost(static, per_million_rows, n_rows, problems=1):
    """Rough seconds of a task of a one-dimensional notion, only to start the longest first:
    the larger of the ``static`` cost (measured at 10,000 rows: the registry's per fold on
    CIFAR-100 times the task's one-dimensional problems, or a literature estimator's on a
    2,000-row holdout as measured) and the linear regime's ``per_million_rows`` * ``n_rows`` /
    10^6 for each of ``problems`` one-dimensional problems (the classes of classwise).

    At 10,000 rows the kernel density's exact route makes its fold tasks the longest, and
    the literature's estimators are short; at 10,000,000 rows every task is linear in the
    rows and the variational estimator's five isotonic fits are the longest (17.6 s against
    the kernel density's 4 s a fold): ordered by the static costs alone, it started after the
    kernel ridges' tasks, and one worker waited 4.8 s for it (BENCHMARKS.md).
    """
    return max(static, per_million_rows * problems * n_rows / 1e6)


def _fold_task(P, y, train, val, notion, items, shared=None):
    """Fit and validate every grid value of the given estimators on one fold.

    ``shared`` seeds the fit_path cache with work done once for all folds.
    Returns, per estimator, the risks of each combination of fixed parameters and the
    fitted models (None for families that are cheaper to refit than to ship).
    """
    P_tr, y_tr, P_val, y_val = (take_rows(a, rows) for a, rows in ((P, train), (y, train), (P, val), (y, val)))
    # Read-only, so that every estimator of this task shares one top-label problem of them
    # (calibdash.core.notions.validated_inputs) and none can change what the next one sees.
    for a in (P_tr, y_tr, P_val, y_val):
        a.flags.writeable = False
    cache = dict(shared or {})
    out = {}
    for name, grid in items:
        t0 = time.perf_counter()
        entry = REGISTRY[name]
        family, path_param = entry.family, entry.tuned
        values = grid[path_param]
        others = {k: v for k, v in grid.items() if k != path_param}
        runs = []
        for combo in combinations(others):
            path = make_estimator(family, notion=notion, **combo).fit_path(P_tr, y_tr, values, cache=cache)
            # A model whose fitted state is its training set is refitted where it is used,
            # not shipped between processes (at 50,000 x 1,000 one would be 256 MB).
            models = None if entry.refit_on_use else path.estimators
            runs.append((combo, path.risks(P_val, y_val), models))
        out[name] = (runs, time.perf_counter() - t0)
    return out


def _holdout_task(P, y, k, test, notion, name, params, model, *parts):
    """The holdout diagonal h(z_i, z_i) of fold model ``k``, refitting it on every part but
    the k-th if it was not kept (then the refitted model is not sent back: see
    :class:`RefitOnUse`)."""
    t0 = time.perf_counter()
    refit = model is None
    if refit:
        train = fold_train_rows(parts, k)
        model = make_estimator(REGISTRY[name].family, notion=notion, **params).fit(take_rows(P, train), take_rows(y, train))
    diag = model.h_diag(take_rows(P, test))
    return diag, None if refit else model, time.perf_counter() - t0


def _n_chunks(work, workers=1, per_task=None):
    """Tasks for ``work`` of the shared kind: ``per_task`` each (None: _SHARED_WORK_PER_TASK), at
    most 8, and a multiple of the ``workers`` when it is split at all, so that they end together
    (7 normaliser tasks of 1.8 s at 50,000 x 1,000 left one of two workers idle for the last)."""
    n = int(min(8, max(1, work // (_SHARED_WORK_PER_TASK if per_task is None else per_task))))
    return n if n == 1 else -(-n // workers) * workers


class RefitOnUse:
    """A fold model whose fitted state is its training rows (the kernel density estimator):
    it keeps references to the data and to the validation parts of the split (which the
    result keeps anyway), and is fitted on first use on the rows of every part but its own,
    so that a result holds neither k copies of the training set nor the k training row
    lists (256 MB at 10,000,000 rows)."""

    def __init__(self, family, notion, params, P, y, parts, k):
        self.family, self.notion, self.params = family, notion, params
        self.n_classes_ = P.shape[1]
        self._data = (P, y, parts, k)
        self._fitted = None

    def _model(self):
        if self._fitted is None:
            P, y, parts, k = self._data
            train = fold_train_rows(parts, k)
            self._fitted = make_estimator(self.family, notion=self.notion, **self.params).fit(take_rows(P, train),
                                                                                             take_rows(y, train))
        return self._fitted

    def compact(self):
        """Nothing to drop before it is fitted (its state is references to the data); after,
        its fitted model's :meth:`~calibdash.estimators.base.CalibrationEstimator.compact`."""
        if self._fitted is not None:
            self._fitted.compact()
        return self

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._model(), name)


def _parallel(n_jobs):
    # Unordered results let the progress bar move as soon as any task finishes. Threads by
    # default (joblib.parallel_config may choose another backend: the command line's Dask, the
    # app's warm loky processes): the tasks' time is in NumPy and BLAS, which release the GIL,
    # and a thread needs no new interpreter, imports or copy of the data (worker processes cost
    # 0.5 s of a 5.9 s evaluation of CIFAR-100 on two cores; docs/methods.md). The numbers are
    # the same under every backend.
    return Parallel(n_jobs=n_jobs, return_as="generator_unordered", prefer="threads")


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


def import_result_module():
    """Import :mod:`calibdash.evaluation.result` (and so pandas): the last step of a run needs it."""
    importlib.import_module("calibdash.evaluation.result")


def _versions():
    from importlib.metadata import version

    import pandas as pd
    import scipy

    from calibdash import __version__

    return {
        "calibdash": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        # from the installed distribution's metadata: importing scikit-learn for its version
        # string took a second at the end of every run
        "scikit-learn": version("scikit-learn"),
        "pandas": pd.__version__,
    }


class _NotionRun:
    """The state of Algorithm 1 for one notion, so that the tasks of several notions can
    share one pool of workers."""

    def __init__(self, P, y, config, test, parts, keep_models, keep_diagonals):
        self.P, self.y, self.config, self.notion = P, y, config, config.notion
        self.names, self.full_grids, self.others = list(config.estimators), config.full_grids, list(config.others)
        self.other_rows = {}
        # Only the validation parts are kept: fold k trains on the others, and its row list
        # is formed where it is used (the five lists took 256 MB at 10,000,000 rows).
        self.test, self.parts, self.keep_models, self.keep_diagonals = test, list(parts), keep_models, keep_diagonals
        n_folds = len(self.parts)
        groups = defaultdict(list)
        for name in self.names:
            groups[REGISTRY[name].task_group].append((name, self.full_grids[name]))
        self.fold_tasks = [(max(self.cost(name) for name, _ in items), k, items)
                           for items in groups.values() for k in range(n_folds)]
        self.fold_out = [dict() for _ in range(n_folds)]
        # Filled by select: risks[name][fold, combination of fixed parameters, tuned value],
        # and the chosen combination's and value's indices and parameters.
        self.risks, self.chosen_index, self.chosen_params = {}, {}, {}
        self.seconds = defaultdict(float)
        # Each estimator's holdout diagonals as the two means its error needs, taken as the
        # tasks return; with keep_diagonals also the (k, n_test) table, filled in place: fold
        # k's values in row k (at 10,000,000 rows 80 MB an estimator).
        self.means = {name: HoldoutMeans(n_folds, len(test)) for name in self.names}
        self.diagonals, self.members = {}, defaultdict(dict)
        # The canonical kernel density estimator's normalisers log B depend on a training
        # row alone, and every row trains k - 1 of the k fold models: they are computed
        # once for the optimisation set (at 50,000 x 1,000, 15 s per fold otherwise).
        self.kde_names = [name for name in self.names if REGISTRY[name].family == "kde"]
        self.normaliser_bandwidths = (
            sorted({float(b) for name in self.kde_names for b in self.full_grids[name]["bandwidth"]})
            if self.notion == "canonical" and self.kde_names else [])
        self.normalisers = None
        self.chunks_done = defaultdict(int)
        # The fold risks of h = 0, the reference that says "perfectly calibrated".
        self.reference_risks = np.full(n_folds, np.nan)

    def cost(self, name):
        """Rough seconds per fold of estimator ``name`` (the registry's), to start long tasks first."""
        entry = REGISTRY[name]
        if self.notion == "canonical":
            return entry.cost[1]
        n_rows, problems = self._problems()
        return task_cost(entry.cost[0] * problems, entry.cost_per_million_rows, n_rows, problems)

    def other_cost(self, name):
        """Rough seconds of the literature's estimator ``name``, to start long tasks first."""
        other = OTHER_ESTIMATORS[name]
        if self.notion == "canonical":
            return other.cost
        # The literature's static costs are not scaled by the problems, as before this ordering.
        return task_cost(other.cost, other.cost_per_million_rows, *self._problems())

    def _problems(self):
        """(rows, one-dimensional problems per row) of a one-dimensional notion."""
        return self.P.shape[0], 1 if self.notion == "top-label" else self.P.shape[1]

    def opt_rows(self):
        return np.sort(np.concatenate(self.parts))

    def normaliser_jobs(self, workers=1):
        """(rows, bandwidths) of the tasks that compute the shared normalisers, on ``workers``."""
        if not self.normaliser_bandwidths:
            return []
        opt = self.opt_rows()
        work = len(opt) * self.P.shape[1] * len(self.normaliser_bandwidths) * 20  # lgamma ~ 20 products
        return [(rows, self.normaliser_bandwidths) for rows in np.array_split(opt, _n_chunks(work, workers))]

    def absorb_normalisers(self, rows, values, sec):
        if self.normalisers is None:
            self.normalisers = np.full((len(self.normaliser_bandwidths), len(self.y)), np.nan)
        self.normalisers[:, rows] = values
        for name in self.kde_names:
            self.seconds[name] += sec / len(self.kde_names)

    def kde_fold_size(self):
        """Validation rows x training rows x classes of one kernel density fold task."""
        n_opt = sum(len(part) for part in self.parts)
        n_val = n_opt / len(self.parts)
        return n_val * (n_opt - n_val) * self.P.shape[1]

    def needs_normalisers(self, items):
        """True when a fold task of these (name, grid) items starts from the shared normalisers."""
        return bool(self.normaliser_bandwidths) and any(REGISTRY[name].family == "kde" for name, _ in items)

    def fold_normalisers(self, k, items):
        """The shared normalisers a fold task's fit_path cache starts with, as (bandwidths,
        table of the fold's training rows), or () when its estimators need none."""
        if self.normalisers is None or not self.needs_normalisers(items):
            return ()
        return self.normaliser_bandwidths, self.normalisers[:, fold_train_rows(self.parts, k)]

    def absorb_fold(self, k, out):
        for name, (runs, sec) in out.items():
            self.fold_out[k][name] = runs
            self.seconds[name] += sec

    def select(self, names):
        """Per estimator of ``names`` (all of its folds validated) the grid value of lowest mean
        validation risk; returns the holdout tasks of the chosen fold models as (name, fold,
        params, model or None)."""
        n_folds = len(self.parts)
        for name in names:
            self.risks[name] = np.array([[r for _, r, _ in self.fold_out[k][name]] for k in range(n_folds)])
            c_best, v_best = np.unravel_index(int(np.argmin(self.risks[name].mean(axis=0))), self.risks[name].shape[1:])
            self.chosen_index[name] = (int(c_best), int(v_best))
            combo = self.fold_out[0][name][int(c_best)][0]
            self.chosen_params[name] = {**combo, tuned_param(name): self.full_grids[name][tuned_param(name)][int(v_best)]}
        tasks = []
        for name in names:
            c_best, v_best = self.chosen_index[name]
            for k in range(n_folds):
                models_k = self.fold_out[k][name][c_best][2]
                tasks.append((name, k, self.chosen_params[name], None if models_k is None else models_k[v_best]))
        return tasks

    def holdout_jobs(self, names):
        """The holdout tasks of the chosen models of estimators ``names``, as (cost, key,
        function, arguments).

        Families with ``fold_diagonals`` (the kernel density estimator) compute the k fold
        models' diagonals at once, in chunks of holdout rows, sharing their kernel products;
        the others run one task per fold model. Costs sort the chunks first (the longest
        tasks), then the others by the cost of their family's fold task."""
        jobs = []
        parts = self.parts
        for name, k, params, model in self.select(names):
            family = REGISTRY[name].family
            if hasattr(FAMILIES[family], "fold_diagonals"):
                if k == 0:
                    dim = 1 if self.notion == "top-label" else self.P.shape[1]
                    work = len(self.test) * sum(map(len, parts)) * dim
                    bandwidth = float(params["bandwidth"])
                    log_beta = None
                    if self.normalisers is not None:
                        log_beta = self.normalisers[self.normaliser_bandwidths.index(bandwidth)]
                    # The chunks fix which rows are regressed together, and so the last digits
                    # of the diagonals (see fold_diagonals' blocks): they depend on the data's
                    # size alone. Each chunk is a task of its own, unless the regressions are
                    # linear in the rows: then fitting the parts costs more than the queries,
                    # and one task fits them once for all chunks (8 fits of 8,000,000 rows took
                    # 7 s of the two workers' time at 10,000,000 rows).
                    chunks = np.array_split(self.test, _n_chunks(work, per_task=_HOLDOUT_WORK_PER_TASK))
                    linear = FAMILIES[family].fold_diagonals_linear(len(chunks[-1]), [len(p) for p in parts],
                                                                    self.notion)
                    tasks = [chunks] if linear else [[rows] for rows in chunks]
                    start = 0
                    for task in tasks:
                        rows = np.concatenate(task)
                        jobs.append(((1, work / len(tasks)), ("diagonals", name, start, len(tasks)),
                                     _fold_diagonals_task,
                                     (self.P, self.y, rows, [len(c) for c in task], self.notion, family, params,
                                      log_beta, *parts)))
                        start += len(rows)
                continue
            jobs.append(((0, self.cost(name)), ("holdout", name, k), _holdout_task,
                         (self.P, self.y, k, self.test, self.notion, name, params, model, *parts)))
        return jobs

    def absorb_holdout_job(self, key, out):
        """Take a holdout task's output; returns the fold models it completed."""
        if key[0] == "holdout":
            _, name, k = key
            diag, model, sec = out
            self.means[name].add(k, diag)
            if self.keep_diagonals:
                self.diagonal_table(name)[k] = diag
            self.absorb_holdout(name, k, model, sec)
            return [(name, k)]
        _, name, start, n_chunks = key
        diags, sec = out
        # The chunks' table stays whole until the last chunk: a fold's mean is np.mean of its
        # whole row (summing chunk means would round differently).
        self.diagonal_table(name)[:, start : start + diags.shape[1]] = diags
        self.seconds[name] += sec
        self.chunks_done[name] += 1
        if self.chunks_done[name] < n_chunks:
            return []
        for k in range(len(self.parts)):
            self.means[name].add(k, self.diagonals[name][k])
            self.absorb_holdout(name, k, None, 0.0)
        if not self.keep_diagonals:
            del self.diagonals[name]
        return [(name, k) for k in range(len(self.parts))]

    def diagonal_table(self, name):
        """The (k, n_test) table of ``name``'s holdout diagonals, created on first use."""
        if name not in self.diagonals:
            self.diagonals[name] = np.full((len(self.parts), len(self.test)), np.nan)
        return self.diagonals[name]

    def absorb_holdout(self, name, k, model, sec):
        if self.keep_models:
            if model is None:
                model = RefitOnUse(REGISTRY[name].family, self.notion, self.chosen_params[name], self.P, self.y,
                                   self.parts, k)
            self.members[name][k] = model
        self.seconds[name] += sec

    def flat_at_edge(self, name, value):
        """Whether the risk is flat at the chosen edge value of the tuned parameter: its
        paired fold-by-fold difference to the next grid value is within one standard error."""
        values = self.full_grids[name][tuned_param(name)]
        order = sorted(range(len(values)), key=lambda v: values[v])
        chosen = values.index(value)
        pos = order.index(chosen)
        neighbour = order[pos + 1] if pos == 0 else order[pos - 1]
        c_best = self.chosen_index[name][0]
        diff = self.risks[name][:, c_best, neighbour] - self.risks[name][:, c_best, chosen]
        return abs(diff.mean()) <= diff.std(ddof=1) / np.sqrt(len(diff))

    def result(self, seconds, data_sha256, provenance=None):
        # pandas (and the result module, which needs it) is imported here, not with this
        # module: the worker processes (loky, Dask) that import this module to run its tasks
        # never need it (0.3 s each). evaluate_notions has imported it while its workers ran.
        import pandas as pd

        from calibdash.evaluation.result import OTHER_COLUMNS, EvaluationResult, recalibration_candidates

        n_folds = len(self.parts)
        diagonals = {name: self.diagonals[name] for name in self.names} if self.keep_diagonals else None
        summary_rows, curve_rows, fold_rows, grid_edges, models = [], [], [], [], {}
        for name in self.names:
            spec, path_param = REGISTRY[name], tuned_param(name)
            values = self.full_grids[name][path_param]
            combos = [combo for combo, _, _ in self.fold_out[0][name]]
            risks = self.risks[name]
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
                                "val_risk": float(risks[k, c, v]),
                            }
                        )
            c_best, v_best = self.chosen_index[name]
            chosen = self.chosen_params[name]
            fold_risks = risks[:, c_best, v_best]
            fold_sq = self.means[name].fold_means
            if self.keep_models:
                models[name] = FoldEnsemble([self.members[name][k] for k in range(n_folds)])
            for k in range(n_folds):
                fold_rows.append({"estimator": name, "fold": k, "squared_estimate": float(fold_sq[k]),
                                  "val_risk": float(fold_risks[k])})

            edges = {}
            grid = self.full_grids[name]
            for param, value in chosen.items():
                side = _at_edge(grid[param], value)
                if side:
                    edges[param] = side
                    nums = tuple(v for v in grid[param] if not isinstance(v, (str, bool)))
                    flat = bool(param == path_param and self.flat_at_edge(name, value))
                    grid_edges.append(GridEdge(name, param, value, side, nums, flat))
            err = self.means[name].error()
            low, high = err.root_interval(0.95)
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
                    "estimate": float(np.sqrt(max(0.0, err.estimate))),
                    "estimate_se": root_se(err.estimate, err.se)[1],
                    "ci_low": low,
                    "ci_high": high,
                    "squared_estimate": err.estimate,
                    "squared_estimate_se": err.se,
                    "squared_se_holdout": float(np.sqrt(err.var_rows)),
                    "squared_se_fit": float(np.sqrt(err.var_fit)),
                    "se_df": err.df,
                    "at_grid_edge": bool(edges),
                    "seconds": float(self.seconds[name]),
                }
            )
        for k in range(n_folds):
            fold_rows.append({"estimator": REFERENCE, "fold": k, "squared_estimate": 0.0,
                              "val_risk": float(self.reference_risks[k])})
        summary = pd.DataFrame(summary_rows)
        fold_frame = pd.DataFrame(fold_rows)
        _add_paired_risks(summary, fold_frame)
        if self.keep_models == KEEP_RECALIBRATION:
            models = {name: models[name] for name in recalibration_candidates(summary)[:1]}
        for ensemble in models.values():
            ensemble.compact()  # what the kept models' maps and estimates need, no more
        n = len(self.y)
        config = {
            "call": self.config.to_dict(),
            "n": int(n),
            "n_classes": int(self.P.shape[1]),
            "n_optimisation": int(n - len(self.test)),
            "n_test": int(len(self.test)),
            "fold_sizes": [int(len(v)) for v in self.parts],
            "data_sha256": data_sha256,
            "versions": _versions(),
            "seconds": float(seconds),
        }
        if provenance is not None:
            config["input"] = dict(provenance)  # a copy per notion: a result's config is its own
        return EvaluationResult(
            summary=summary,
            curves=pd.DataFrame(curve_rows),
            folds=fold_frame,
            config=config,
            split={"test": self.test, "folds": self.parts},
            diagonals=diagonals,
            warnings=[edge.text("python") for edge in grid_edges],
            grid_edges=grid_edges,
            models=models if self.keep_models else None,
            others=pd.DataFrame([self.other_rows[name] for name in self.others], columns=OTHER_COLUMNS),
        )


def _add_paired_risks(summary, folds):
    """The paired comparison of each estimator's fold risks with the best one's (and the
    reference h = 0's): the columns ``risk_diff``, ``risk_diff_se`` and ``tied``."""
    fold_risks = {name: part.sort_values("fold")["val_risk"].to_numpy() for name, part in folds.groupby("estimator", sort=False)}
    best = str(summary.loc[summary["val_risk"].idxmin(), "estimator"])
    paired = paired_risks(fold_risks, best)
    at = summary.columns.get_loc("val_risk_se") + 1
    for j, col in enumerate(("risk_diff", "risk_diff_se", "tied")):
        summary.insert(at + j, col, [paired[name][j] for name in summary["estimator"]])


def _provenance(provenance, sha):
    """The record of the input a result keeps (``config["input"]``), its sha256 the data's."""
    if provenance is None:
        return None
    if not isinstance(provenance, dict):
        raise ConfigError(f"provenance must be a dict such as {{'predictions': 'model.csv'}}, got "
                          f"{type(provenance).__name__}.")
    unknown = [k for k in provenance if k not in INPUT_KEYS]
    if unknown:
        raise ConfigError(f"provenance has the unknown key {unknown[0]!r}; the keys are {', '.join(INPUT_KEYS)}.")
    if provenance.get("sha256") not in (None, sha):
        raise ConfigError("provenance names other data: its sha256 is not the fingerprint of the data evaluated.")
    return dict(provenance, sha256=sha)


#: The settings that ``configs=`` replaces, with their defaults (a None in the signature
#: means "not given", so that giving both is refused rather than one silently winning).
_SETTINGS_DEFAULTS = {"notions": ("top-label", "canonical"), "estimators": None, "grids": None, "others": None,
                      "test_size": 0.2, "n_folds": 5, "random_state": 0}


def evaluate_notions(
    P,
    y=None,
    *,
    notions=None,
    estimators=None,
    grids=None,
    others=None,
    test_size=None,
    n_folds=None,
    random_state=None,
    configs=None,
    provenance=None,
    n_jobs=1,
    progress=None,
    keep_models=True,
    keep_diagonals=True,
):
    """Algorithm 1 for several notions at once, on one split and one pool of workers.

    The same as calling :func:`evaluate` once per notion (the numbers are identical), but
    the tasks of all notions are scheduled together, longest first, so that two cores stay
    busy: the one-dimensional top-label work alone cannot use a second core well.

    The settings are given either as keywords (``notions``, ``estimators``, ``grids``,
    ``others``, ``test_size``, ``n_folds``, ``random_state``) or, built beforehand, as
    ``configs``; not both.

    Parameters
    ----------
    notions : sequence of str or None
        Distinct notions; None means ``("top-label", "canonical")``.
    estimators, grids, others
        As in :func:`evaluate`, or a dict keyed by notion giving one each (e.g.
        ``estimators={"top-label": ["bins"], "canonical": ["kde"]}``).
    test_size, n_folds, random_state : float, int, int or None
        The split, as in :func:`evaluate`; None means its default (0.2, 5, 0).
    configs : sequence of EvaluationConfig or None
        One per notion, sharing one split, e.g. from
        :meth:`calibdash.evaluation.config.EvaluationConfig.for_notions`: the same as the
        keywords it was built from.
    provenance : dict or None
        What the data are, kept in each result's ``config["input"]``: the record of the
        input (keys ``predictions`` and ``labels``, the files' paths; the loader options of
        :data:`calibdash.predictions.LOAD_OPTIONS`, as the data were read), so that
        ``calibdash rerun`` can read them again. Its ``sha256`` is set to the data's
        fingerprint. It does not change the settings' fingerprint
        (:meth:`~calibdash.evaluation.config.EvaluationConfig.key`).
    P, y, n_jobs, progress, keep_models, keep_diagonals
        As in :func:`evaluate`.

    Returns
    -------
    dict
        ``{notion: EvaluationResult}`` in the order given. Each result's
        ``config["seconds"]`` is the wall time of the joint run.

    Raises
    ------
    ConfigError
        For a setting that cannot be used, ``configs`` given with any of the keywords it
        replaces, or ``configs`` whose splits differ.
    """
    t_start = time.perf_counter()
    if not (isinstance(keep_models, (bool, np.bool_)) or keep_models == KEEP_RECALIBRATION):
        raise ConfigError(f"keep_models must be True, False or {KEEP_RECALIBRATION!r}, not {keep_models!r}.")
    sha = None
    if isinstance(P, Predictions):
        if y is not None:
            raise InputError("Give either a Predictions object or (P, y), not both.")
        # hashed when it was loaded (the same canonical_sha256); at 50,000 x 1,000 that is 400 MB
        P, y, sha = P.probs, P.labels, P.sha256
    elif y is None:
        raise InputError("Labels are needed: call evaluate(P, y) or pass what load_predictions returned.")
    given = dict(notions=notions, estimators=estimators, grids=grids, others=others, test_size=test_size,
                 n_folds=n_folds, random_state=random_state)
    # Every setting is resolved and checked once, before any work; the data once after.
    if configs is None:
        configs = EvaluationConfig.for_notions(**{k: _SETTINGS_DEFAULTS[k] if v is None else v for k, v in given.items()})
    else:
        mixed = [k for k, v in given.items() if v is not None]
        if mixed:
            raise ConfigError(f"Give the settings either as configs or as keywords, not both: configs were given "
                              f"with {', '.join(mixed)}.")
        if isinstance(configs, EvaluationConfig):
            configs = [configs]
    configs = list(configs)
    test_size, n_folds, random_state = shared_split(configs)
    P, y = validate(P, y)
    for config in configs:
        config.check_rows(len(y))
    sha = sha or canonical_sha256(P, y)
    record = _provenance(provenance, sha)
    test, parts = split_parts(len(y), test_size, n_folds, random_state)
    runs = [_NotionRun(P, y, config, test, parts, keep_models, keep_diagonals) for config in configs]
    many = len(runs) > 1

    # Longest tasks first, so that no long task is left running alone at the end.
    # The literature's estimators need no selection: they run beside the fold tasks.
    tasks = [(cost, i, ("fold", k, items)) for i, run in enumerate(runs) for cost, k, items in run.fold_tasks]
    others = [(run.other_cost(name), i, ("other", name)) for i, run in enumerate(runs) for name in run.others]
    references = [(0.0, i, ("reference", k)) for i in range(len(runs)) for k in range(n_folds)]
    total = len(tasks) + len(others) + len(references) + sum(len(run.names) for run in runs) * n_folds
    done = 0

    def report(message):
        if progress is not None:
            progress(done, total, message)

    def prefix(run):
        return f"{run.notion}, " if many else ""

    # Every array a task needs is one of its own arguments, never inside a list or a dict:
    # joblib's Dask backend scatters such arguments to the workers once per call, whereas a
    # container goes into every task's graph through the scheduler (at 10,000,000 rows the
    # folds' row numbers made a 305 MiB graph per task). A task that trains on a fold forms
    # its training rows from the parts itself.

    def job(i, task):
        kind = task[0]
        if kind == "normalisers":
            return delayed(_run_normalisers)((i, kind, task[1]), P, task[2], task[3])
        if kind == "fold":
            _, k, items = task
            bandwidths, normalisers = runs[i].fold_normalisers(k, items) or (None, None)
            return delayed(_run_task)((i, kind, k), P, y, runs[i].notion, items, k, bandwidths, normalisers, *parts)
        if kind == "reference":
            val = parts[task[1]]
            return delayed(_run_reference)((i, kind, task[1]), take_rows(P, val), take_rows(y, val), runs[i].notion)
        if kind == "holdout":
            _, key, fn, args = task
            return delayed(_run_holdout)((i, kind, key), fn, *args)
        return delayed(_run_other)((i, kind, task[1]), task[1], P, y, test, runs[i].notion, random_state, *parts)

    def absorb(i, kind, key, out):
        """File a task's output; returns a progress message per step it completed."""
        run = runs[i]
        if kind == "normalisers":
            rows = shared_rows[i, key]
            run.absorb_normalisers(rows, *out)
            return [f"{prefix(run)}kde: kernel normalisers of {len(rows):,} rows computed"]
        if kind == "reference":
            run.reference_risks[key] = out
            return [f"{prefix(run)}{REFERENCE}: risk of fold {key + 1}/{n_folds}"]
        if kind == "other":
            run.other_rows[key] = out
            return [f"{prefix(run)}{key}: estimated on the holdout set"]
        if kind == "fold":
            run.absorb_fold(key, out)
            return [f"{prefix(run)}fold {key + 1}/{n_folds}: {', '.join(out)} validated"]
        return [f"{prefix(run)}{name}: holdout estimate of fold {k + 1}/{n_folds}"
                for name, k in run.absorb_holdout_job(key, out)]

    def holdout_tasks(selection):
        """The holdout tasks of these (run, estimator names) pairs (their folds all validated:
        selection comes first), longest first."""
        jobs = sorted(((cost, i, key, fn, args) for i, names in selection
                       for cost, key, fn, args in runs[i].holdout_jobs(names)),
                      key=lambda t: t[0], reverse=True)
        return [(cost, i, ("holdout", key, fn, args)) for cost, i, key, fn, args in jobs]

    # Work shared by the folds (the canonical kernel density's normalisers) goes first, with
    # every fold task that does not need it, so that all workers start at once (a fresh worker
    # process, under loky or Dask, spends about a second importing before its first task; threads
    # start at once); the tasks that need it follow
    # in a second phase, with the literature's estimators and the holdout tasks of every
    # estimator already validated (those of the other notions, and the first phase's estimators
    # of this one), so that the workers finish that phase together (five equal kernel density
    # tasks alone would leave one worker idle for the last: 18 s at 50,000 x 1,000); then the
    # holdout tasks of the kernel density estimators. When those waiting tasks are long
    # (_LONG_WAITING_TASK), every fold task waits with them, so that the phase can be
    # balanced, and every holdout task comes last.
    workers = effective_n_jobs(n_jobs)
    shared = [(0.0, i, ("normalisers", j, rows, bandwidths))
              for i, run in enumerate(runs) for j, (rows, bandwidths) in enumerate(run.normaliser_jobs(workers))]
    shared_rows = {(i, task[1]): task[2] for _, i, task in shared}
    waits = [runs[i].needs_normalisers(task[2]) for _, i, task in tasks]
    late = defaultdict(set)  # per run, the estimators validated in the second phase
    for (_, i, task), w in zip(tasks, waits):
        if w:
            late[i].update(name for name, _ in task[2])
    total += len(shared)

    def longest_first(batch):
        return sorted(batch, key=lambda t: -t[0])

    def every_holdout():
        return holdout_tasks([(i, run.names) for i, run in enumerate(runs)])

    # Each phase is built when the one before it has ended (selection needs every fold).
    if late and max(runs[i].kde_fold_size() for i in late) > _LONG_WAITING_TASK:
        phases = [lambda: shared + longest_first(references), lambda: longest_first(tasks + others), every_holdout]
    elif late:
        phases = [lambda: shared + longest_first([t for t, w in zip(tasks, waits) if not w] + references),
                  lambda: longest_first([t for t, w in zip(tasks, waits) if w] + others)
                  + holdout_tasks([(i, [n for n in run.names if n not in late.get(i, ())]) for i, run in enumerate(runs)]),
                  lambda: holdout_tasks([(i, [n for n in runs[i].names if n in late[i]]) for i in sorted(late)])]
    else:
        phases = [lambda: longest_first(tasks + others + references), every_holdout]
    report("starting")
    # One pool for every phase: each call of a new Parallel writes the data for its workers
    # again (0.2-0.3 s per call for the 400 MB of a 50,000 x 1,000 file).
    # One BLAS thread around the pool as well as in each task: the BLAS thread count is the
    # process's, so a task ending in a thread would otherwise restore it while another runs.
    with one_blas_thread(), _parallel(n_jobs) as parallel:
        for number, phase in enumerate(phases):
            batch = phase()
            if not batch:
                continue
            outputs = parallel(job(i, task) for _, i, task in batch)  # its first tasks dispatched
            if number == 0:
                # The main thread waits for the workers' results: meanwhile it imports what
                # assembling the result needs (pandas, 0.2 s in a fresh process), where that
                # import would otherwise hold up the end of the run.
                import_result_module()
            for (i, kind, key), out in outputs:
                for message in absorb(i, kind, key, out):
                    done += 1
                    report(message)

    seconds = time.perf_counter() - t_start
    results = {run.notion: run.result(seconds, sha, record) for run in runs}
    report("done")
    return results


def evaluate(
    P,
    y=None,
    *,
    notion=None,
    estimators=None,
    grids=None,
    others=None,
    test_size=None,
    n_folds=None,
    random_state=None,
    config=None,
    provenance=None,
    n_jobs=1,
    progress=None,
    keep_models=True,
    keep_diagonals=True,
):
    """Tune, select and report calibration estimators (Algorithm 1).

    Parameters
    ----------
    P : array-like of shape (n, d), or Predictions
        Predicted probabilities, or what :func:`calibdash.load_predictions` returned
        (then ``y`` is taken from it and must be None).
    y : array-like of shape (n,)
        True labels.
    notion : {"top-label", "canonical", "classwise"} or None
        None means ``"canonical"``.
    estimators : list of str or None
        Names from ``calibdash.estimators.registry.REGISTRY``; None means the paper's set for the notion
        (top-label and classwise: 15-bins, bins, kde, kkkr, ukkr; canonical: kde, kkkr,
        ukkr) plus ``temperature`` for canonical and classwise
        (``calibdash.evaluation.config.DEFAULT_ESTIMATORS``).
    grids : dict or None
        Partial overrides of the search spaces, e.g. ``{"bins": {"n_bins": [5, 10, 20]}}``.
        See :func:`calibdash.evaluation.config.resolve`.
    others : list of str or None
        Estimators from the literature that the risk cannot rank, reported in
        ``result.others`` on the same split (names in
        ``calibdash.metrics.literature.OTHER_ESTIMATORS``: the ECE estimators, SKCE with its
        calibration test, the variational estimators). None means
        ``calibdash.metrics.literature.DEFAULT_OTHERS[notion]`` (the familiar 15-bin ECE always);
        ``[]`` none.
    test_size : float or None
        Fraction of rows held out for the final estimate; None means 0.2.
    n_folds : int or None
        Cross-validation folds of the optimisation set; None means 5.
    random_state : int or None
        Seed of the split (and of the Nystroem centres); None means 0.
    config : EvaluationConfig or None
        The settings above, built beforehand
        (:meth:`calibdash.evaluation.config.EvaluationConfig.resolve`); then none of them
        may be given.
    provenance : dict or None
        What the data are, kept in ``result.config["input"]``: see
        :func:`evaluate_notions`.
    n_jobs : int, default=1
        Parallel tasks through joblib; -1 uses every core. Under
        ``joblib.parallel_config(backend="dask")`` the tasks go to the Dask cluster.
        Results are identical whatever the value.
    progress : callable or None
        Called as ``progress(done, total, message)`` as work completes.
    keep_models : bool or "recalibration", default=True
        Keep the fitted fold ensembles in ``result.models`` (for recalibration curves).
        The kernel density models hold their training rows; on very large sets pass False.
        ``"recalibration"`` keeps only the ensemble whose recalibration map the reliability
        views show (the first of ``result.recalibration_candidates``), all they need: the app
        keeps its results so. On CIFAR-100, where the two-step kernel ridge is selected, a result
        is 5.9 MB instead of 51 MB (the Kronecker ridge's fold models, 17 MB, and the data the
        kernel density's refit from, 8 MB, are left out). Either way the kept models are
        compacted (:meth:`~calibdash.estimators.base.CalibrationEstimator.compact`): they hold
        what their maps and estimates need, not what ranking their grid needed (the two-step
        ridge's five fold models 4.9 MB each before, 1 MB now), and give the same numbers to
        rounding.
    keep_diagonals : bool, default=True
        Keep each fold model's h(z_i, z_i) on the holdout rows in ``result.diagonals``
        (which :func:`calibdash.compare` needs). Every number of the result is the same
        without them; at 10,000,000 rows they take 80 MB per estimator.

    Returns
    -------
    EvaluationResult

    See Also
    --------
    evaluate_notions : several notions on one split, sharing the workers.
    """
    if config is not None:
        if notion is not None:
            raise ConfigError("Give the settings either as config or as keywords, not both: config was given with "
                              "notion.")
        if not isinstance(config, EvaluationConfig):
            raise ConfigError(f"config must be an EvaluationConfig (EvaluationConfig.resolve), got "
                              f"{type(config).__name__}; for several notions use calibdash.evaluate_notions.")
        settings = dict(configs=[config])
        notion = config.notion
    else:
        notion = "canonical" if notion is None else notion
        if not isinstance(notion, str):
            raise ConfigError(f"notion must be one string such as 'canonical', got {notion!r}; "
                             "for several notions use calibdash.evaluate_notions.")
        settings = dict(notions=[notion])
    return evaluate_notions(P, y, **settings, estimators=estimators, grids=grids, others=others, test_size=test_size,
                            n_folds=n_folds, random_state=random_state, provenance=provenance, n_jobs=n_jobs,
                            progress=progress, keep_models=keep_models, keep_diagonals=keep_diagonals)[notion]


def _run_holdout(i, fn, *args):
    with one_blas_thread(), validated_inputs():
        return i, fn(*args)


def _run_reference(key, P_val, y_val, notion):
    with one_blas_thread(), validated_inputs():
        return key, zero_risk(P_val, y_val, notion)


def _run_normalisers(key, P, rows, bandwidths):
    t0 = time.perf_counter()
    values = log_beta_table(take_rows(P, rows), bandwidths)
    return key, (values, time.perf_counter() - t0)


def _fold_diagonals_task(P, y, rows, blocks, notion, family, params, log_beta, *parts):
    """The holdout diagonals of all k fold models on ``rows``, regressed in consecutive blocks
    of the sizes ``blocks`` (the chunks; see ``fold_diagonals``); the folds' validation parts
    come last, each an argument of its own (see evaluate_notions)."""
    t0 = time.perf_counter()
    diags = FAMILIES[family].fold_diagonals(take_rows(P, rows), P, y, list(parts), notion, log_beta=log_beta,
                                            blocks=blocks, **params)
    return diags, time.perf_counter() - t0


def _run_other(key, name, P, y, test, notion, random_state, *parts):
    # the folds' validation parts come last, each an argument of its own (see evaluate_notions)
    folds = [(fold_train_rows(parts, k), parts[k]) for k in range(len(parts))]
    with one_blas_thread(), validated_inputs():
        return key, run_other(name, P, y, test, folds, notion, random_state)


def _run_task(key, P, y, notion, items, k, normaliser_bandwidths, normalisers, *parts):
    """Fold ``k``'s task (:func:`_fold_task`): it trains on every validation part but the
    k-th; ``normalisers`` (or None) is the shared normalisers' table of those rows."""
    # One BLAS thread in every task, whether it runs here, in a joblib worker or on a
    # Dask worker: the thread count changes the rounding of matrix products, and the
    # same seed must give the same numbers whatever n_jobs.
    shared = None if normalisers is None else {NORMALISERS_KEY: (normaliser_bandwidths, normalisers)}
    with one_blas_thread(), validated_inputs():
        return key, _fold_task(P, y, fold_train_rows(parts, k), parts[k], notion, items, shared)
