"""A recorded run recomputed: its calls checked, the input each needs, its data checked, its numbers compared.

A result file (``result.json``) records, per model and notion, the call that made it
(``config["call"]``), the fingerprint of the data (``config["data_sha256"]``) and how the
input was read (``config["input"]``). Rerunning it to the same numbers takes four steps,
each here, each returning data or raising, the command line's ``rerun`` printing the outcome:

1. :func:`recorded_configs`: every recorded call checked (names, values, limits) before any
   file is read;
2. :func:`recorded_jobs`: the input file, labels file and loading options of every
   (model, notion), as recorded or as replaced by the caller (the files are read by
   :mod:`calibdash.io.recorded`, above this layer);
3. :func:`check_input`: the data read are the data evaluated (the same sha256) and the
   recorded call can run on them;
4. :func:`rerun_model` recomputes a model's notions and :func:`compare_results` lists
   every number that differs.

Refusals are :class:`~calibdash.errors.ConfigError` (a recorded call or record that cannot
be used) and :class:`~calibdash.errors.InputError` (data that are not the evaluated data);
their messages name the command line's options that resolve them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from calibdash.errors import ConfigError, InputError
from calibdash.evaluation.config import EvaluationConfig
from calibdash.evaluation.pipeline import evaluate, evaluate_notions
from calibdash.predictions import LOAD_OPTIONS
from calibdash.text import user

__all__ = ["RerunJob", "recorded_configs", "recorded_jobs", "recorded_paths", "recorded_paths_message", "check_input",
           "rerun_model", "compare_results"]

# At most this many recorded paths are listed when rerun asks to confirm them.
_SHOWN_PATHS = 4


class RerunJob(NamedTuple):
    """One (model, notion) of a result file to recompute, and the input to read for it."""

    model: str
    notion: str
    #: the recorded :class:`~calibdash.evaluation.result.EvaluationResult`
    old: object
    path: object
    labels: object
    #: ``((option, value), ...)`` of :data:`calibdash.predictions.LOAD_OPTIONS`, hashable (lists as tuples)
    options: tuple

    @property
    def key(self):
        """The input read: jobs with the same key share one reading."""
        return (self.path, self.labels, self.options)

    def load_options(self):
        """The loader options as :func:`calibdash.load_predictions` takes them (``{option: value}``)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.options}


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


def recorded_configs(result, models):
    """Every recorded configuration checked (names, values, limits) before any file is read.

    Parameters
    ----------
    result : path-like
        The result file, as the messages name it.
    models : dict
        ``{model name: {notion: EvaluationResult}}`` (:func:`calibdash.reporting.outputs.load_run`).

    Returns
    -------
    dict
        ``{(model, notion): EvaluationConfig}``.
    """
    configs = {}
    for name, results in models.items():
        for notion, old in results.items():
            try:
                configs[name, notion] = EvaluationConfig.resolve(**old.config["call"])
            except ConfigError as e:
                raise ConfigError(f"{result}: the recorded configuration ({notion}) cannot be run: {e}") from None
    return configs


def recorded_jobs(result, models, *, predictions=None, labels=None, kind=None):
    """The input of every (model, notion) of ``models``: as recorded, or ``predictions`` (and
    ``labels``, and ``kind`` instead of the recorded kind) when given.

    A result written before a loading option existed records none: its default (None).

    Returns
    -------
    list of RerunJob
        In the order of the models and their notions.
    """
    jobs = []
    for i, (name, results) in enumerate(models.items()):
        for notion, old in results.items():
            recorded = old.config.get("input") or {}
            options = tuple((k, _hashable(recorded.get(k))) for k in LOAD_OPTIONS)
            if predictions:
                path, labels_path = predictions, labels
                if kind:
                    options = tuple((k, kind if k == "kind" else v) for k, v in options)
            else:
                path, labels_path = recorded.get("predictions"), recorded.get("labels")
                if not path:
                    raise ConfigError(f"{result} does not record its input file (model {i + 1}, {notion}); "
                                      "pass it with --predictions FILE (and --labels FILE if separate).")
            jobs.append(RerunJob(name, notion, old, path, labels_path, options))
    return jobs


def recorded_paths(jobs):
    """The files ``jobs`` read (predictions and labels), each once, in order."""
    return list(dict.fromkeys(p for job in jobs for p in (job.path, job.labels) if p))


def recorded_paths_message(result, paths):
    """Why the files a result file names are read only when confirmed, listing them."""
    # The paths come from a file that is not verified: shown as Python literals, so that no
    # control character reaches the terminal.
    shown = ", ".join(repr(p) for p in paths[:_SHOWN_PATHS])
    more = f" and {len(paths) - _SHOWN_PATHS} more" if len(paths) > _SHOWN_PATHS else ""
    return (f"{result} names the data to read: {shown}{more}. A result file can name any file, so rerun reads "
            "the files it names only when you confirm them: add --use-recorded-paths, or give the data with "
            "--predictions FILE (and --labels FILE).")


def check_input(pred, job, config, *, result):
    """Check that ``pred`` (read from ``job.path``) holds the data ``job.old`` was computed on,
    and that its recorded ``config`` can run on them.

    Raises
    ------
    InputError
        When the data's sha256 is not the recorded one.
    ConfigError
        When the recorded configuration cannot run on the data (too few rows).
    """
    want = job.old.config.get("data_sha256")
    if pred.sha256 != want:
        raise InputError(f"{user(job.path)} does not hold the evaluated data: its sha256 is {pred.sha256[:16]}..., the "
                         f"result's is {str(want)[:16]}...; the file has changed, or it is another file.")
    try:
        config.check_rows(pred.n)
    except ConfigError as e:
        raise ConfigError(f"{result}: the recorded configuration ({job.notion}) cannot be run: {e}") from None


def rerun_model(pred, configs, *, provenance=None, n_jobs=1, progress=None):
    """Every notion of one model recomputed from its recorded configurations: in one pool of
    workers when they share the split (as ``evaluate`` ran them), else one after the other.

    Parameters
    ----------
    pred : Predictions
    configs : list of EvaluationConfig
    provenance : dict, optional
        The input read, kept in the new results.
    n_jobs : int
    progress : callable, optional
        ``progress(notion)`` gives the progress callback of :func:`calibdash.evaluate` for one
        notion, or for all of them at once when ``notion`` is None.

    Returns
    -------
    dict
        ``{notion: EvaluationResult}``.
    """
    callback = progress or (lambda notion: None)
    if len({c.split for c in configs}) == 1:
        return evaluate_notions(pred, configs=configs, provenance=provenance, n_jobs=n_jobs, progress=callback(None))
    return {c.notion: evaluate(pred, config=c, provenance=provenance, n_jobs=n_jobs, progress=callback(c.notion))
            for c in configs}


def _same(a, b, rtol):
    if isinstance(a, float) and isinstance(b, float):
        if np.isnan(a) and np.isnan(b):
            return True
        return a == b or abs(a - b) <= rtol * max(abs(a), abs(b))
    return a == b


def compare_results(old, new, *, rtol=0.0):
    """Differences between two results of the same call, as readable lines ([] if identical).

    Every number is compared, exactly with ``rtol=0`` (the pipeline is deterministic for a
    given configuration and computer), else to ``rtol`` relative: another CPU's matrix
    kernels round differently (docs/cli.md, rerun). Run times are ignored.
    """
    diffs = []
    for key, index in (("summary", ["estimator"]), ("curves", ["estimator", "fixed", "value", "fold"]),
                       ("folds", ["estimator", "fold"]), ("others", ["estimator"])):
        a, b = getattr(old, key, None), getattr(new, key, None)
        if a is None and b is None:
            continue
        if a is None or b is None:
            diffs.append(f"{key}: present in only one of the results")
            continue
        cols = [c for c in a.columns if c != "seconds"]
        if list(a.columns) != list(b.columns) or len(a) != len(b):
            diffs.append(f"{key}: different shape ({len(a)} x {a.shape[1]} vs {len(b)} x {b.shape[1]})")
            continue
        for i in range(len(a)):
            for col in cols:
                va, vb = a[col].iloc[i], b[col].iloc[i]
                if not _same(va, vb, rtol):
                    where = ", ".join(f"{k}={a[k].iloc[i]}" for k in index if k in a.columns)
                    diffs.append(f"{key} [{where}] {col}: recorded {va!r}, now {vb!r}")
    if old.config.get("data_sha256") != new.config.get("data_sha256"):
        diffs.append("the data's sha256 differs")
    return diffs
