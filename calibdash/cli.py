"""The command line: ``python -m calibdash evaluate ...``, ``rerun ...``, ``validate ...``, ``plan ...`` and ``app``.

``evaluate`` runs Algorithm 1 on one or more prediction files with the same settings and
seed and writes ``summary.csv``, ``curves.csv``, ``result.json`` and ``report.html``;
``rerun`` reloads the recorded input, checks its fingerprint and recomputes, and says
whether the numbers are identical; ``validate`` validates a clinical risk model
(:func:`calibdash.validate_risk_model`) overall and per group and writes ``metrics.csv`` and
``report.html``; ``plan`` gives the minimum size of an external validation study from
anticipated values (:func:`calibdash.plan_sample_size`, Riley et al. 2021); ``app`` serves
the dashboard on 127.0.0.1 (the installed :mod:`calibdash_app`).

Exit status:

0
    success.
1
    ``rerun``: the recomputed numbers differ from the recorded ones.
2
    bad input: a :class:`calibdash.CalibdashError` (an unusable file or array, an unknown
    name or a bad value of an option; :class:`CLIError` is a ``ConfigError``), or an
    ``OSError`` about the user's own paths (an input file, ``--out``, or a full or read-only
    disk). One line on stderr, starting "calibdash: error:", without a traceback.
3
    an internal error, i.e. a bug in calibdash: any other exception (and an ``InputError``
    with ``internal=True``, the loader's wrapping of an exception it did not anticipate).
    Its traceback is printed, then one line asking to report it to the calibdash
    maintainers with the command line and the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np

from calibdash import limits
from calibdash.clinical import MAX_GROUPS
from calibdash.core.notions import NOTIONS
from calibdash.errors import CalibdashError, ConfigError, InputError
from calibdash.estimators.registry import DEFAULT_ESTIMATORS, REGISTRY, available_estimators, parameter
from calibdash.evaluation.config import EvaluationConfig, resolve
from calibdash.evaluation.gridtext import parse_grid_text
from calibdash.evaluation.pipeline import evaluate_notions
from calibdash.evaluation.rerun import (
    check_input,
    compare_results,
    recorded_configs,
    recorded_jobs,
    recorded_paths,
    recorded_paths_message,
    rerun_model,
)
from calibdash.io.export import csv_text, write_file
from calibdash.io.loading import KINDS, LOAD_OPTIONS, load_predictions
from calibdash.io.recorded import load_input, load_recorded
from calibdash.limits import RESULT_BYTES
from calibdash.reporting.outputs import (
    load_run,
    model_names,
    plan_outputs,
    run_to_json,
    within,
    write_comparison_outputs,
    write_model_outputs,
)
from calibdash.serve import APP_PORT, app_command, find_app

__all__ = ["main", "build_parser", "parse_grid_option", "parse_notions", "parse_thresholds", "plan_settings", "plan_lines",
           "load_run", "run_to_json", "compare_results", "CLIError"]

DEFAULT_NOTIONS = ("top-label", "canonical")
# rerun's default tolerance: another CPU's matrix kernels move a number's last digits (a
# 1e-16 relative difference of the bins' risks, up to about 1e-6 where the kernel ridges
# amplify it: docs/cli.md); a changed computation moves it by far more.
RERUN_RTOL = 1e-9

EXAMPLE = """\
example (the reduced grid keeps it to a few seconds):
  python -m calibdash evaluate ../shared/data/cifar10_lenet5.npz --notion top-label \\
      --estimators 15-bins,bins,kde --grid bins.n_bins=5,10,20 --grid kde.bandwidth=0.01,0.1 \\
      --random-state 0 --jobs 2 --out out/lenet5
  python -m calibdash rerun out/lenet5/result.json --use-recorded-paths
"""

VALIDATE_EXAMPLE = """\
examples (a table with a risk column p_death, outcomes 'died'/'survived', columns 'sex' and 'hospital'):
  python -m calibdash validate risks.csv --groups hospital --positive died --out out/validation
  python -m calibdash validate risks.csv --groups sex --clusters hospital --thresholds 0.1 0.3 --out out/v2
"""

PLAN_EXAMPLE = """\
examples (Riley et al. 2021's heart-valve study: prevalence 1.8%, C statistic 0.8, threshold 8%):
  python -m calibdash plan --prevalence 0.018 --c-statistic 0.8 --threshold 0.08 --target-oe 1
  python -m calibdash plan --prevalence 0.1 --c-statistic 0.75 --oe 1.2 --slope 0.9 --out out/plan
"""

#: Exit statuses (see the module docstring and the --help epilog).
EXIT_OK, EXIT_DIFFERS, EXIT_BAD_INPUT, EXIT_BUG = 0, 1, 2, 3

EXIT_STATUSES = """\
exit status:
  0  success
  1  rerun: the recomputed numbers differ from the recorded ones
  2  bad input (a file, an option's value, an --out that cannot be written): one line
     starting "calibdash: error:"
  3  an internal error, a bug in calibdash: a traceback and a request to report it
"""

LIMITS_HELP = ("limits, checked before any work (raise one by setting its environment variable):\n"
               + limits.help_text() + "\n")

#: The command-line flag of each loader option (a refusal about an option names the flag).
LOAD_FLAGS = {"kind": "--kind", "label_column": "--label-column", "prob_columns": "--prob-columns",
              "positive": "--positive", "class_names": "--class-names", "groups": "--groups",
              "labels": "--labels"}

INTERNAL_ERROR = ("calibdash: internal error (a bug, not a problem with your input): please report it to the "
                  "calibdash maintainers with the command line you ran and the traceback above")


class CLIError(ConfigError):
    """Bad input found by the command line itself (reported as one line, exit status 2)."""


def _wrap(text):
    return textwrap.fill(text, 88)


class _RetiredFlag(argparse.Action):
    """A flag renamed to the scientific Python vocabulary (``--seed`` -> ``--random-state``):
    it still works for one release, hidden from --help, with a note on stderr that names
    the new flag (the numbers are the same)."""

    def __init__(self, option_strings, dest, *, new, **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"calibdash: note: {option_string} is deprecated and will be removed in the next release; "
              f"use {self.new}.", file=sys.stderr)
        setattr(namespace, self.dest, values)


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, like every other error of the command."""

    def error(self, message):
        self.exit(2, f"calibdash: error: {message} (see '{self.prog} --help')\n")


# ----------------------------------------------------------------------------- parsing
def parse_notions(values):
    """Notions from repeated and/or comma-separated ``--notion`` values, in order, once each.

    >>> parse_notions(["top-label,canonical", "classwise"])
    ['top-label', 'canonical', 'classwise']
    """
    out = []
    for value in values or []:
        for token in value.split(","):
            token = token.strip()
            if not token:
                continue
            if token not in NOTIONS:
                raise CLIError(f"unknown notion {token!r}; choose from {', '.join(NOTIONS)}.")
            if token not in out:
                out.append(token)
    return out or list(DEFAULT_NOTIONS)


def _split_list(text):
    return [t.strip() for t in text.replace(";", ",").split(",") if t.strip()]


def _shorten(text, longest=80):
    """``text`` as an error message quotes it: a grid of thousands of values is not repeated whole."""
    return text if len(text) <= longest else text[: longest - 3] + "..."


def _generic_value(token):
    try:
        number = float(token)
    except ValueError:
        return token
    return int(number) if number.is_integer() and "." not in token and "e" not in token.lower() else number


def parse_grid_option(texts):
    """``{estimator: {param: [values]}}`` from ``--grid NAME.PARAM=V1,V2,...`` options.

    NAME is an estimator name (``bins``, ``kde``, ``ukkr``, ``kkkr``, ``temperature``,
    ``bins-quantile``; for the tuned families it is the family's name). Values of
    numeric parameters are parsed as numbers (``n_bins`` as whole numbers); others, such
    as ``strategy``, are kept as words.

    >>> parse_grid_option(["kde.bandwidth=0.01,0.1", "bins.n_bins=5,10"])
    {'kde': {'bandwidth': [0.01, 0.1]}, 'bins': {'n_bins': [5, 10]}}
    """
    grids = {}
    for text in texts or []:
        head, sep, values = text.partition("=")
        shown = _shorten(text)
        name, dot, param = head.strip().rpartition(".")
        if not sep or not dot or not name or not param or not values.strip():
            raise CLIError(f"--grid {shown!r} is not of the form NAME.PARAM=V1,V2,... (e.g. kde.bandwidth=0.01,0.1).")
        if name not in REGISTRY:
            raise CLIError(f"--grid {shown!r}: unknown estimator {name!r}; choose from {', '.join(REGISTRY)}.")
        try:
            described = parameter(param)
            if described is not None and described.numeric:
                parsed = parse_grid_text(values, param)
            else:
                parsed = [_generic_value(v) for v in _split_list(values)]
        except ValueError as e:
            raise CLIError(f"--grid {shown!r}: {e}") from None
        grids.setdefault(name, {})[param] = parsed
    return grids


def _plan_others(notions, others_text):
    """Per notion: the literature's estimators to run (``--others``; default
    ``calibdash.metrics.literature.DEFAULT_OTHERS``; "none" for none)."""
    from calibdash.metrics.literature import DEFAULT_OTHERS, OTHER_ESTIMATORS, available_others

    if others_text is None:
        return {n: list(DEFAULT_OTHERS[n]) for n in notions}
    requested = _split_list(others_text)
    if requested == ["none"]:
        return {n: [] for n in notions}
    if not requested:
        raise CLIError("--others is empty; give comma-separated names, e.g. ece-15-bins,skce, or none.")
    unknown = [n for n in requested if n not in OTHER_ESTIMATORS]
    if unknown:
        raise CLIError(f"unknown estimator {unknown[0]!r} in --others; choose from {', '.join(OTHER_ESTIMATORS)}, or none.")
    plan = {n: [o for o in requested if o in available_others(n)] for n in notions}
    unused = [o for o in requested if not any(o in names for names in plan.values())]
    if unused:
        raise CLIError(f"{unused[0]!r} supports none of the notions run ({', '.join(notions)}); "
                       f"it supports {', '.join(OTHER_ESTIMATORS[unused[0]].notions)}.")
    return plan


def _plan(notions, estimators_text, grids):
    """Per notion: (estimator names, grids) after checking every name and value."""
    requested = None
    if estimators_text is not None:
        requested = _split_list(estimators_text)
        if not requested:
            raise CLIError("--estimators is empty; give comma-separated names, e.g. bins,kde.")
        unknown = [n for n in requested if n not in REGISTRY]
        if unknown:
            raise CLIError(f"unknown estimator {unknown[0]!r}; choose from {', '.join(REGISTRY)}.")
    plan, used = {}, set()
    for notion in notions:
        if requested is None:
            names = list(DEFAULT_ESTIMATORS[notion])
        else:
            valid = available_estimators(notion)
            names = [n for n in requested if n in valid]
            if not names:
                raise CLIError(f"none of the estimators {', '.join(requested)} supports the {notion!r} notion; "
                               f"choose from {', '.join(valid)}.")
        used.update(names)
        plan[notion] = (names, {k: v for k, v in grids.items() if k in names})
        resolve(notion, names, plan[notion][1] or None)  # checks every value with the library's messages
    if requested is not None:
        unused = [n for n in requested if n not in used]
        if unused:
            raise CLIError(f"{unused[0]!r} supports none of the notions run ({', '.join(notions)}); "
                           f"it supports {', '.join(n for n in NOTIONS if unused[0] in available_estimators(n))}.")
    orphans = [n for n in grids if n not in used]
    if orphans:
        raise CLIError(f"--grid was given for {orphans[0]!r}, which is not run; add it to --estimators.")
    return plan


# ----------------------------------------------------------------------------- progress
class Progress:
    """A plain-text progress bar on a stream (stderr).

    On a terminal it redraws one line with a carriage return; otherwise (a log file, a
    cluster job's output) it writes one line per step, so the log shows the history.
    """

    def __init__(self, stream=None, enabled=True, width=28):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = 0
        self._open = False

    def callback(self, label):
        """A ``progress(done, total, message)`` for :func:`calibdash.evaluate`."""

        def progress(done, total, message):
            if not self.enabled:
                return
            frac = done / total if total else 1.0
            if self.tty:
                filled = int(round(frac * self.width))
                line = f"{label} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} {message}"[:150]
                self.stream.write("\r" + line + " " * max(0, self._last - len(line)))
                self._last = len(line)
                self._open = True
                if done >= total and message == "done":
                    self.finish()
            else:
                self.stream.write(f"{label} {done}/{total} ({frac:.0%}) {message}\n")
            self.stream.flush()

        return progress

    def status(self, text):
        """One line saying what runs now, for a stage whose steps are not counted (writing the
        tables and the report takes about 20 s at 10,000,000 rows, when the bar is done)."""
        if not self.enabled:
            return
        self.finish()
        self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self):
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open, self._last = False, 0


# ----------------------------------------------------------------------------- dask
def _return_freed_memory():
    """Have glibc's allocator give freed memory back to the system from now on (and now).

    By default it raises its threshold for serving large buffers from the heap as they are
    freed, and a heap with one live block near its top keeps every free page below it: at
    10,000,000 rows the command's process under ``--dask-scheduler`` peaked about 250 MB
    higher (BENCHMARKS.md, "Ten million rows from a Parquet dataset"). Distributed sets the
    same trim threshold (``MALLOC_TRIM_THRESHOLD_``) for its own workers. Returns False
    where the C library is not glibc (nothing is changed).
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt, malloc_trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
    # Both fixed, so that neither moves with what is freed; the mmap threshold back at its
    # default (a block of 128 KiB or more is mapped on its own and unmapped when freed),
    # which it left when the loading freed its buffers.
    ok = bool(mallopt(M_TRIM_THRESHOLD, 65536)) and bool(mallopt(M_MMAP_THRESHOLD, 128 * 1024))
    malloc_trim(0)
    return ok


@contextlib.contextmanager
def _backend(address):
    """Send joblib's tasks to a Dask scheduler when an address is given."""
    if not address:
        yield
        return
    # The command's process only coordinates the cluster: its memory is the rows, the
    # tasks' results and the report, and should not grow by what the allocator keeps.
    _return_freed_memory()
    try:
        import distributed
    except ImportError:
        raise CLIError("--dask-scheduler needs the 'distributed' package (pip install distributed).") from None
    import joblib

    try:
        client = distributed.Client(address, timeout="20s")
    except (OSError, TimeoutError, ValueError) as e:
        raise CLIError(f"cannot reach the Dask scheduler at {address}: {e}") from None
    with client, joblib.parallel_config(backend="dask"):
        yield


def _n_jobs(args):
    if args.jobs == 0:
        raise CLIError("--jobs must not be 0; give a positive number, or -1 for every core.")
    # Every core by default: the numbers do not depend on it, and a one-dimensional run of
    # millions of rows takes 40% less time on two cores (BENCHMARKS.md, "Ten million rows").
    # One process keeps the least memory (--jobs 1).
    return -1 if args.jobs is None else args.jobs


# ----------------------------------------------------------------------------- commands
def _load_options(args):
    """The loader options given on the command line ({option: value}, None when not given)."""
    lists = {"prob_columns", "class_names", "groups"}
    options = {}
    for option in LOAD_OPTIONS:
        value = getattr(args, option, None)
        if value is not None and option in lists:
            value = _split_list(value)
            if not value:
                raise CLIError(f"{LOAD_FLAGS[option]} is empty; give comma-separated names.")
        options[option] = value
    return options


def _evaluate_model(label, pred, record, configs, n_jobs, progress):
    # All notions in one pool of workers (calibdash.evaluate_notions): the same numbers as
    # one evaluate per notion. The record of the input is kept so that rerun can read it again.
    # Nothing the command writes needs the fold models' holdout values row by row (every
    # number comes from their means), and at 10,000,000 rows they take 400 MB.
    results = evaluate_notions(pred, configs=configs, provenance=record, n_jobs=n_jobs, progress=progress.callback(label),
                               keep_diagonals=False)
    progress.finish()
    return results


def verdict_lines(res):
    """The verdict as the command line prints it: the headline, the estimators the risk
    cannot tell apart, and the comparison with h = 0 ("perfectly calibrated")."""
    from calibdash.display.verdict import verdict

    v = verdict(res)
    lines = [v.headline.replace("**", "")]
    tied = [t for t in v.tied if t != "h = 0"]
    lines.append(f"tied with the best ({v.estimator}), by paired fold risks: {', '.join(tied)}"
                 + (f"; estimates {v.range_pp[0]:.2f} to {v.range_pp[1]:.2f} points" if len(tied) > 1 else ""))
    ref = res.reference
    if ref is not None:
        lines.append("h = 0 (perfectly calibrated): "
                     + ("tied with the best: the data do not show miscalibration" if ref["tied"] else
                        f"risk {ref['risk_diff']:.3g} above the best (paired s.e. {ref['risk_diff_se']:.2g}): "
                        "the data show miscalibration"))
    return lines


def _say(args, text):
    if not args.quiet:
        print(text, flush=True)


def cmd_evaluate(args):
    notions = parse_notions(args.notion)
    plan = _plan(notions, args.estimators, parse_grid_option(args.grid))
    others = _plan_others(notions, args.others)
    if args.folds < 2:
        raise CLIError(f"--folds must be at least 2, got {args.folds}.")
    _n_jobs(args)  # checks --jobs before any file is read
    if not 0 < args.test_size < 1:
        raise CLIError(f"--test-size must lie strictly between 0 and 1, got {args.test_size}.")
    # One configuration per notion, on the one split of --test-size, --folds and --random-state.
    configs = EvaluationConfig.for_notions(
        notions, estimators={n: names for n, (names, _) in plan.items()},
        grids={n: grids or None for n, (_, grids) in plan.items()}, others=others, test_size=args.test_size,
        n_folds=args.folds, random_state=args.random_state,
    )
    paths = args.predictions
    labels = args.labels or []
    if len(labels) not in (0, 1, len(paths)):
        raise CLIError(f"{len(labels)} --labels files for {len(paths)} prediction files; give one for all, or one per file.")
    labels = labels * len(paths) if len(labels) == 1 else (labels or [None] * len(paths))
    names = model_names(paths)
    # Every file is read and checked, and every output path planned, before the first (long) evaluation starts.
    options = _load_options(args)
    loaded = [load_input(p, lab, options) for p, lab in zip(paths, labels)]
    for (pred, _), path in zip(loaded, paths):
        for config in configs:
            try:
                config.check_rows(pred.n)
            except ConfigError as e:
                raise CLIError(f"{path}: {e}") from None
    single = len(paths) == 1
    folders = plan_outputs(args.out, names, single=single, inputs=[*paths, *(lab for lab in labels if lab)])
    out = Path(args.out)
    n_jobs = _n_jobs(args)
    progress = Progress(enabled=not args.quiet)
    command = ["python", "-m", "calibdash", *args.argv]
    models = {}
    try:
        with _backend(args.dask_scheduler):
            for name, (pred, record) in zip(names, loaded):
                models[name] = _evaluate_model(name, pred, record, configs, n_jobs, progress)
    finally:
        progress.finish()
    for name, (pred, _) in zip(names, loaded):
        target = out if single else out / folders[name].name
        progress.status(f"{name}: writing the tables and the report")
        files = write_model_outputs(target, name, models[name], pred, command, title=args.title if single else None)
        _say(args, f"{name}:")
        for res in models[name].values():
            for line in verdict_lines(res):
                _say(args, f"  {line}")
        _say(args, "  wrote " + ", ".join(str(f) for f in files))
    if not single:
        progress.status("writing the comparison")
        files = write_comparison_outputs(out, models, {n: pred for n, (pred, _) in zip(names, loaded)}, command,
                                         title=args.title)
        _say(args, "comparison: wrote " + ", ".join(str(f) for f in files))
    return 0


# ----------------------------------------------------------------------------- validate
#: The tables ``validate`` writes beside report.html: file name -> RiskValidation attribute.
VALIDATE_TABLES = {"groups.csv": "groups", "decision_curve.csv": "decision_curve", "sample_size.csv": "sample_size",
                   "curve.csv": "curve", "heterogeneity.csv": "heterogeneity", "grouped.csv": "grouped",
                   "net_benefit.csv": "net_benefit", "recalibration.csv": "recalibration", "centres.csv": "centres",
                   "pooled.csv": "pooled"}
#: Every file ``validate`` writes, in the order it names them.
VALIDATE_FILES = ("metrics.csv", "report.html", *VALIDATE_TABLES)


def _column_flag(error, args):
    """The flag (``--groups COLUMN``, ``--clusters COLUMN`` or both) a refusal about a kept column concerns."""
    text = str(error).split("; its columns are")[0]  # the list of the file's columns names them all
    given = [(f"--{flag} {column}", column) for flag, column in (("groups", args.groups), ("clusters", args.clusters))
             if column is not None]
    named = [flag for flag, column in given if f"'{column}'" in text]
    return named[0] if len(named) == 1 else " / ".join(flag for flag, _ in given)


def _load_for_validation(args):
    """Load FILE keeping the --groups and --clusters columns. ``--positive`` is the loader's
    (the label one risk column is the probability of) unless the file has several class
    columns, where it names the class to validate against the rest; returns (pred, positive
    for validation)."""
    options = _load_options(args)
    kept = list(dict.fromkeys(c for c in (args.groups, args.clusters) if c is not None))
    options["groups"] = kept or None
    given = {k: v for k, v in options.items() if v is not None}
    try:
        return load_predictions(args.predictions, args.labels, **given), None
    except InputError as e:
        if getattr(e, "option", None) == "groups":
            raise CLIError(f"{_column_flag(e, args)}: {e}") from None
        if getattr(e, "option", None) != "positive" or args.positive is None:
            raise
    # several class columns: the loader takes no positive class; the validation does
    given.pop("positive")
    pred = load_predictions(args.predictions, args.labels, **given)
    if pred.d <= 2:
        raise CLIError(f"--positive {args.positive}: not usable with this file; see 'calibdash validate --help'.")
    return pred, args.positive


def parse_thresholds(values):
    """``--thresholds LOW HIGH`` as ``(low, high)``, risks with ``0 < LOW < HIGH < 1``; None when not given.

    >>> parse_thresholds([0.05, 0.5])
    (0.05, 0.5)
    """
    if values is None:
        return None
    low, high = (float(v) for v in values)
    if not all(np.isfinite(v) and 0 < v < 1 for v in (low, high)):
        raise CLIError(f"--thresholds {low:g} {high:g}: both thresholds are risks and must lie strictly between 0 "
                       "and 1 (e.g. --thresholds 0.05 0.5).")
    if low >= high:
        raise CLIError(f"--thresholds {low:g} {high:g}: LOW must be below HIGH; give the range from low to high "
                       f"(e.g. --thresholds {min(low, high):g} {max(low, high):g}).")
    return low, high


def _validation_options(args):
    """The validation's keyword arguments from the flags, each checked before any file is read."""
    if args.n_resamples < 0:
        raise CLIError(f"--n-resamples must be 0 or more, got {args.n_resamples}.")
    limits.RESAMPLES.check(args.n_resamples, "--n-resamples")
    if args.jobs == 0:
        raise CLIError("--jobs must not be 0; give a positive number, or -1 for every core.")
    options = dict(groups=args.groups, n_resamples=args.n_resamples, random_state=args.random_state,
                   calibration_error=args.calibration_error, n_jobs=args.jobs)
    # given only when set, so that the library's defaults (and their documentation) hold otherwise
    if args.clusters is not None:
        options["clusters"] = args.clusters
    thresholds = parse_thresholds(args.thresholds)
    if thresholds is not None:
        options["thresholds"] = thresholds
    return options


def cmd_validate(args):
    from calibdash.clinical.validation import validate_risk_model
    from calibdash.clinical.verdicts import STATUS_WORDS
    from calibdash.display.clinical import hierarchy_verdicts
    from calibdash.reporting.validation import metrics_csv, validation_report

    options = _validation_options(args)
    pred, positive = _load_for_validation(args)
    # every output path checked (inside --out, not a directory, not the input) before the run
    plan_outputs(args.out, ["validation"], single=True, inputs=[p for p in (args.predictions, args.labels) if p],
                  files=VALIDATE_FILES)
    out = Path(args.out)
    root = out.resolve()
    progress = Progress(enabled=not args.quiet)
    try:
        v = validate_risk_model(pred, positive=positive, progress=progress.callback("validate"), **options)
    except InputError as e:
        if getattr(e, "option", None) == "groups":  # named --groups (--clusters) here, not --group-columns
            raise CLIError(f"{_column_flag(e, args)}: {e}") from None
        raise
    finally:
        progress.finish()
    texts = {"metrics.csv": metrics_csv(v),
             "report.html": validation_report(v, title=args.title, made_by="cli", results_file="metrics.csv",
                                              predictions=pred),
             **{name: csv_text(getattr(v, attribute)) for name, attribute in VALIDATE_TABLES.items()}}
    files = [out / name for name in VALIDATE_FILES]
    for name in VALIDATE_FILES:
        write_file(within(root, out / name), texts[name])
    for cls in v.classes:
        _say(args, f"{cls}:" if len(v.classes) == 1 else f"{cls} (against the rest):")
        for item in hierarchy_verdicts(v, cls=cls):
            _say(args, f"  {item['level']} [{STATUS_WORDS[item['status']]}]: {item['verdict']}")
    _say(args, "wrote " + ", ".join(str(f) for f in files))
    return 0


# ----------------------------------------------------------------------------- plan
#: The file ``plan --out DIR`` writes.
PLAN_FILES = ("plan.csv",)
#: Short names of the criteria in the printed table.
PLAN_LABELS = {"O:E": "O:E", "calibration slope": "calibration slope", "AUROC": "C statistic",
               "net benefit": "standardised net benefit"}


def _fraction(flag, value, *, closed=False):
    if value is None:
        return None
    inside = (0 <= value <= 1) if closed else (0 < value < 1)
    if not (np.isfinite(value) and inside):
        raise CLIError(f"{flag} must lie {'between 0 and 1' if closed else 'strictly between 0 and 1'}, got {value:g}.")
    return value


def _positive(flag, value):
    if value is not None and not (np.isfinite(value) and value > 0):
        raise CLIError(f"{flag} must be a positive number, got {value:g}.")
    return value


def plan_settings(args):
    """The keyword arguments of :func:`calibdash.plan_sample_size` from ``plan``'s flags, each
    checked with the flag's name in the message."""
    _fraction("--prevalence", args.prevalence)
    _fraction("--c-statistic", args.c_statistic)
    if args.c_statistic <= 0.5:
        raise CLIError(f"--c-statistic must exceed 0.5 (a model that separates events from non-events), got "
                       f"{args.c_statistic:g}.")
    for flag, value in (("--oe", args.oe), ("--slope", args.slope), ("--lp-sd", args.lp_sd)):
        _positive(flag, value)
    if args.lp_mean is not None and not np.isfinite(args.lp_mean):
        raise CLIError(f"--lp-mean must be a finite number, got {args.lp_mean:g}.")
    if (args.lp_mean is None) != (args.lp_sd is None):
        raise CLIError("give --lp-mean and --lp-sd together (a normal linear predictor), or neither.")
    _fraction("--threshold", args.threshold)
    _fraction("--sensitivity", args.sensitivity, closed=True)
    _fraction("--specificity", args.specificity, closed=True)
    if (args.sensitivity is None) != (args.specificity is None):
        raise CLIError("give --sensitivity and --specificity together, or neither (then they come from the linear "
                       "predictor at --threshold).")
    if args.sensitivity is not None and args.threshold is None:
        raise CLIError("--sensitivity and --specificity are those at a risk threshold: give --threshold too.")
    _fraction("--level", args.level)
    targets = {}
    for flag, metric, value in (("--target-oe", "O:E", args.target_oe), ("--target-slope", "calibration slope", args.target_slope),
                                ("--target-c", "AUROC", args.target_c), ("--target-nb", "net benefit", args.target_nb)):
        if value is not None:
            targets[metric] = _positive(flag, value)
    if args.target_nb is not None and args.threshold is None:
        raise CLIError("--target-nb is the width for the net benefit at a risk threshold: give --threshold too.")
    return dict(prevalence=args.prevalence, c_statistic=args.c_statistic, oe=args.oe, slope=args.slope,
                threshold=args.threshold, targets=targets or None, lp_mean=args.lp_mean, lp_sd=args.lp_sd,
                sensitivity=args.sensitivity, specificity=args.specificity, level=args.level)


def plan_lines(table, settings):
    """The printed summary of a :func:`calibdash.plan_sample_size` table."""
    level = f"{100 * settings['level']:g}%"
    given = [f"prevalence {100 * settings['prevalence']:g}%", f"C statistic {settings['c_statistic']:g}",
             f"O:E {settings['oe']:g}", f"calibration slope {settings['slope']:g}"]
    if settings["threshold"] is not None:
        given.append(f"threshold {100 * settings['threshold']:g}%")
    body, minimum = table.iloc[:-1], table.iloc[-1]
    lines = ["Minimum size of an external validation study (Riley et al. 2021)",
             "anticipated: " + ", ".join(given), "",
             f"  {'criterion':<34} {'target width':>12} {'rows':>9} {'events':>8}"]
    for i, row in enumerate(body.itertuples(), start=1):
        lines.append(f"  {f'{i}. {PLAN_LABELS[row.metric]}':<34} {row.target:>12g} {row.rows_needed:>9,.0f} "
                     f"{row.events_needed:>8,.0f}")
    lines += ["", f"minimum: {minimum['rows_needed']:,.0f} rows with {minimum['events_needed']:,.0f} events, "
                  f"{minimum['note']}.",
              f"target widths are those of {level} intervals; how each criterion was computed:"]
    lines += [textwrap.fill(f"{i}. {row.note}", 100, initial_indent="  ", subsequent_indent="     ")
              for i, row in enumerate(body.itertuples(), start=1)]
    return lines


def cmd_plan(args):
    from calibdash.clinical.sample_size import plan_sample_size

    settings = plan_settings(args)
    table = plan_sample_size(**settings)  # instant: a refused setting leaves no --out behind
    if args.out is not None:
        plan_outputs(args.out, ["plan"], single=True, inputs=[], files=PLAN_FILES)
    for line in plan_lines(table, settings):
        print(line)
    if args.out is not None:
        out = Path(args.out)
        write_file(within(out.resolve(), out / "plan.csv"), csv_text(table))
        print(f"wrote {out / 'plan.csv'}")
    return 0


def _rerun_model(name, configs, pred, record, args, progress):
    """Every notion of one model from its recorded configurations (:func:`rerun_model`), with
    one progress bar (per notion when they do not share the split). ``record`` is the input
    read, kept in the new results."""
    try:
        return rerun_model(pred, configs, provenance=record, n_jobs=_n_jobs(args),
                           progress=lambda notion: progress.callback(name if notion is None else f"{name} {notion}"))
    finally:
        progress.finish()


def cmd_rerun(args):
    _n_jobs(args)  # checks --jobs before any file is read
    if not (np.isfinite(args.rtol) and 0 <= args.rtol < 1):
        raise CLIError(f"--rtol must be at least 0 and below 1 (0 compares every number exactly), got {args.rtol:g}.")
    if args.labels and not args.predictions:
        raise CLIError("--labels is used with --predictions (the recorded labels file is used otherwise).")
    if args.predictions and args.use_recorded_paths:
        raise CLIError("--use-recorded-paths reads the files the result names; --predictions replaces them: give one of the two.")
    models = load_run(args.result)
    if args.predictions and len(models) > 1:
        raise CLIError(f"{args.result} holds {len(models)} models; --predictions can only replace the input of one.")
    configs = recorded_configs(args.result, models)
    jobs = recorded_jobs(args.result, models, predictions=args.predictions, labels=args.labels, kind=args.kind)
    if not args.predictions and not args.use_recorded_paths:
        raise CLIError(recorded_paths_message(args.result, recorded_paths(jobs)))
    loaded = {}
    for job in jobs:
        if job.key not in loaded:
            load = load_input if args.predictions else load_recorded
            loaded[job.key] = load(job.path, job.labels, job.load_options())
        check_input(loaded[job.key][0], job, configs[job.model, job.notion], result=args.result)
    folders = {}
    if args.out:
        folders = plan_outputs(args.out, list(models), single=len(models) == 1, inputs=[args.result, *recorded_paths(jobs)])
    progress = Progress(enabled=not args.quiet)
    new_models, preds, all_diffs = {}, {}, []
    try:
        with _backend(args.dask_scheduler):
            reruns = {}
            for job in jobs:
                pred, record = loaded[job.key]
                if job.model not in reruns:
                    reruns[job.model] = _rerun_model(job.model, [configs[job.model, j.notion] for j in jobs if j.model == job.model],
                                                     pred, record, args, progress)
                new = reruns[job.model][job.notion]
                new_models.setdefault(job.model, {})[job.notion] = new
                preds[job.model] = pred
                diffs = compare_results(job.old, new, rtol=args.rtol)
                rounded = 0 if diffs else len(compare_results(job.old, new))  # within --rtol, not identical
                all_diffs += diffs
                if diffs:
                    _say(args, f"{job.model} {job.notion}: {len(diffs)} difference(s):")
                    for line in diffs[:20]:
                        _say(args, f"  {line}")
                    if len(diffs) > 20:
                        _say(args, f"  ... and {len(diffs) - 20} more")
                elif rounded:
                    _say(args, f"{job.model} {job.notion}: the same to rounding ({len(new.summary)} estimators, "
                               f"{len(new.curves)} validation risks; {rounded} number(s) differ in their last digits, "
                               f"within --rtol {args.rtol:g})")
                else:
                    _say(args, f"{job.model} {job.notion}: identical ({len(new.summary)} estimators, {len(new.curves)} "
                               "validation risks, every number equal)")
    finally:
        progress.finish()
    if args.out:
        out = Path(args.out)
        command = ["python", "-m", "calibdash", *args.argv]
        for name, results in new_models.items():
            target = out if len(new_models) == 1 else out / folders[name].name
            progress.status(f"{name}: writing the tables and the report")
            write_model_outputs(target, name, results, preds[name], command)
        _say(args, f"wrote the rerun's files to {out}")
    if all_diffs:
        print(f"calibdash: the rerun differs from {args.result} in {len(all_diffs)} value(s).", file=sys.stderr)
        return 1
    return 0


# ----------------------------------------------------------------------------- app
STREAMLIT_MISSING = "the app needs streamlit; install the app extra: pip install 'calibdash[app]'"


def cmd_app(args):
    """``calibdash app``: streamlit replaces this process (on POSIX); returns only on an error."""
    import importlib.util

    try:
        missing = importlib.util.find_spec("streamlit") is None
    except (ImportError, ValueError):
        missing = True
    if missing:
        print(f"calibdash: error: {STREAMLIT_MISSING}", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(f"calibdash: error: --port {args.port} is not a port number (1 to 65535).", file=sys.stderr)
        return 2
    app = find_app()
    if app is None:
        print("calibdash: error: the app's files (calibdash_app/main.py, calibdash_app/app_pages/) are not installed; "
              "reinstall calibdash: pip install 'calibdash[app]'", file=sys.stderr)
        return 2
    command = app_command(app, args.port)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(command[0], command)  # streamlit takes this process over: signals reach it directly
    import subprocess

    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 130


# ----------------------------------------------------------------------------- parser
def build_parser():
    """The argparse parser of ``python -m calibdash``."""
    parser = _Parser(
        prog="calibdash",
        description=_wrap("Estimate how miscalibrated a classifier is, with honest error bars (Gruber & Bach, TMLR "
                          "2025). Exit status: 0 success, 1 a rerun gave different numbers, 2 bad input, 3 an "
                          "internal error (a bug)."),
        epilog=EXAMPLE + "\n" + EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser, required=True)

    ev = sub.add_parser(
        "evaluate", help="evaluate one or more prediction files and write the results and an HTML report",
        description=_wrap("Run the evaluation pipeline (seeded holdout split, k-fold tuning of every estimator by the risk, "
                    "holdout estimate with standard errors) on each PREDICTIONS file with the same settings and seed. "
                    "One file: DIR/summary.csv, curves.csv, result.json, report.html. Several files: the same in "
                    "DIR/<model>/ per file (model = file name without suffix), plus DIR/summary.csv and curves.csv "
                    "with a 'model' column, DIR/result.json with every model and a comparison report DIR/report.html."),
        epilog=EXAMPLE + "\n" + EXIT_STATUSES + "\n" + LIMITS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ev.add_argument("predictions", nargs="+", metavar="PREDICTIONS",
                    help="predicted probabilities or logits: .npy, .npz, .csv, .tsv, .txt or .parquet, or a folder of "
                         "Parquet files with the same columns (a dataset, read in sorted file order), with the labels "
                         "in the same file (a 'label' column or a labels array) unless --labels is given")
    ev.add_argument("--labels", action="append", metavar="FILE",
                    help="true labels in a separate file (.npy, .npz, one-column text or Parquet); give it once for "
                         "all PREDICTIONS (models scored on the same test set) or once per file, in the same order")
    ev.add_argument("--kind", choices=KINDS, default="auto",
                    help="what the numbers are; auto (default) reads non-negative rows summing to 1 as probabilities, "
                         "rows summing to 100 as percentages and numbers with negative values as logits, and asks for "
                         "the kind when in doubt")
    ev.add_argument("--label-column", metavar="NAME",
                    help="the labels' column in a table (default: a column named label, y, target, class, outcome, "
                         "diagnosis, ..., else the only column of text)")
    ev.add_argument("--prob-columns", metavar="LIST",
                    help="comma-separated columns of probabilities (or percentages, logits), one per class in class "
                         "order; one column is the positive class of a binary problem (default: the columns named "
                         "like p_CLASS, prob_CLASS, CLASS_prob, P(CLASS) if any, else all but the label column)")
    ev.add_argument("--positive", metavar="CLASS",
                    help="with one probability column and labels given as names: the label it is the probability of "
                         "(default: the class the column is named after, e.g. p_malignant -> malignant)")
    ev.add_argument("--class-names", metavar="LIST",
                    help="comma-separated class names in column order (one probability column: negative, positive); "
                         "labels given as names are matched to them")
    ev.add_argument("--groups", metavar="LIST",
                    help="comma-separated columns of a table kept as grouping variables (e.g. a site); they do not "
                         "change the numbers")
    ev.add_argument("--group-columns", dest="groups", action=_RetiredFlag, new="--groups", help=argparse.SUPPRESS)
    ev.add_argument("--notion", action="append", metavar="NOTION",
                    help="notion of calibration: top-label, canonical or classwise; repeat the option or separate "
                         "with commas (--notion top-label,canonical); default: top-label and canonical, as in the app")
    ev.add_argument("--estimators", metavar="LIST",
                    help=f"comma-separated estimators ({', '.join(REGISTRY)}); each notion runs those that support it "
                         "(bins and 15-bins do not support canonical); default: the paper's set per notion plus "
                         "temperature")
    ev.add_argument("--others", metavar="LIST",
                    help="comma-separated estimators from the literature, reported beside the ranked ones on the same "
                         "holdout rows (ece-15-bins, ece-kde, skce, variational-brier-temperature, ...: see "
                         "calibdash.metrics.literature.OTHER_ESTIMATORS), or none; each notion runs those that support it; "
                         "default: the 15-bin ECE, plus the variational estimate and, for canonical, SKCE with its test")
    ev.add_argument("--grid", action="append", metavar="NAME.PARAM=V1,V2,...",
                    help="replace one hyperparameter grid, e.g. --grid kde.bandwidth=0.01,0.1 or --grid bins.n_bins=5,10,20 "
                         "or --grid ukkr.lam=1e-4,1e-3; repeatable; NAME is the estimator (the family for the tuned ones); "
                         "the other parameters keep their defaults (calibdash.estimators.registry.default_grid)")
    ev.add_argument("--test-size", type=float, default=0.2, metavar="F",
                    help="fraction of rows held out for the final estimate, never used for choosing (default 0.2)")
    ev.add_argument("--folds", type=int, default=5, metavar="K", help="cross-validation folds on the other rows (default 5, at least 2)")
    ev.add_argument("--random-state", type=int, default=0, metavar="S",
                    help="seed of the split; the same seed gives the same numbers (default 0)")
    ev.add_argument("--seed", type=int, dest="random_state", action=_RetiredFlag, new="--random-state",
                    help=argparse.SUPPRESS)
    ev.add_argument("--jobs", type=int, default=None, metavar="N",
                    help="parallel tasks (default -1: every core; 1 runs in this process alone, with the least "
                         "memory); the numbers do not depend on it")
    ev.add_argument("--dask-scheduler", metavar="ADDRESS",
                    help="run the tasks on a Dask cluster, e.g. tcp://scheduler:8786 (needs the 'distributed' package); "
                         "the numbers are the same as without it")
    ev.add_argument("--out", required=True, metavar="DIR",
                    help="output directory (created; the files calibdash writes in it are replaced, an input file never: "
                         "it is refused; nothing is written outside it)")
    ev.add_argument("--title", help="title of the HTML report")
    ev.add_argument("--quiet", action="store_true", help="no progress bar and no summary; errors are still printed")
    ev.set_defaults(func=cmd_evaluate)

    rr = sub.add_parser(
        "rerun", help="recompute a result.json from its recorded input and configuration and compare the numbers",
        description=_wrap("Reload the data of RESULT (a result.json written by 'evaluate', or a result downloaded "
                    "from the app), check that its sha256 is the one recorded, rerun the same configuration and seed, "
                    "and print whether every number is identical. A result file can name any file, so the data are "
                    "read from the paths it records only with --use-recorded-paths; otherwise give them with "
                    "--predictions FILE. RESULT is checked field by field before anything is read (at most "
                    f"{RESULT_BYTES.default // 10**6} MB: {RESULT_BYTES.variable}). Exit status 0 when identical (to "
                    "--rtol), 1 when any number differs, 2 for bad input (a damaged or edited RESULT included), 3 for an internal "
                    "error (a bug)."),
        epilog=EXIT_STATUSES + "\n" + LIMITS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rr.add_argument("result", metavar="RESULT", help="result.json of an earlier run")
    rr.add_argument("--use-recorded-paths", action="store_true",
                    help="read the predictions (and labels) files at the paths RESULT records; without it, rerun lists "
                         "them and stops, since a result file can name any file")
    rr.add_argument("--predictions", metavar="FILE", help="the predictions file, instead of the path RESULT records")
    rr.add_argument("--labels", metavar="FILE", help="its labels file, with --predictions, when separate")
    rr.add_argument("--kind", choices=KINDS, default=None,
                    help="with --predictions: what the numbers are (default: as recorded, else auto)")
    rr.add_argument("--out", metavar="DIR", help="also write the rerun's summary.csv, curves.csv, result.json and report.html here")
    rr.add_argument("--rtol", type=float, default=RERUN_RTOL, metavar="R",
                    help=f"largest relative difference counted as rounding (default {RERUN_RTOL:g}, as another CPU's "
                         "matrix kernels round; 0: every number exactly)")
    rr.add_argument("--jobs", type=int, default=None, metavar="N",
                    help="parallel tasks (default -1: every core; 1 runs in this process alone)")
    rr.add_argument("--dask-scheduler", metavar="ADDRESS", help="run the tasks on a Dask cluster (as for evaluate)")
    rr.add_argument("--quiet", action="store_true", help="no progress bar and no per-notion lines")
    rr.set_defaults(func=cmd_rerun)

    va = sub.add_parser(
        "validate", help="validate a clinical risk model (calibration hierarchy, AUROC, net benefit, subgroups)",
        description=_wrap("Validate the risks in FILE against the outcomes as Van Calster et al. (2019) and TRIPOD+AI "
                          "describe: O:E, calibration-in-the-large, the calibration slope, the flexible calibration "
                          "curve (ICI, E50, E90, Emax), Brier, AUROC, Spiegelhalter's test and net benefit, each with "
                          "a 95% interval, overall and in every group of --groups, with tests of heterogeneity. "
                          "Writes DIR/metrics.csv, report.html, groups.csv, decision_curve.csv, sample_size.csv, "
                          "curve.csv and heterogeneity.csv, and prints a verdict per level. With --clusters, the "
                          "centres are meta-analysed. Several class columns are validated one class against the "
                          "rest (or only --positive)."),
        epilog=VALIDATE_EXAMPLE + "\n" + EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    va.add_argument("predictions", metavar="FILE",
                    help="a table (.csv, .tsv, .parquet) with the predicted risk (or the class probabilities), the "
                         "outcome and the grouping column; or an array file with --labels")
    va.add_argument("--labels", metavar="FILE", help="the outcomes in a separate file")
    va.add_argument("--groups", metavar="COLUMN",
                    help=f"the column of subgroups (sex, age band, hospital): 2 to {MAX_GROUPS} distinct values "
                         "(default: no subgroups)")
    va.add_argument("--positive", metavar="NAME",
                    help="the outcome's label when the file has one risk column (default: the class the column is "
                         "named after, e.g. p_malignant -> malignant); with several class columns, validate only "
                         "this class against the rest")
    va.add_argument("--kind", choices=KINDS, default="auto", help="what the numbers are (as for evaluate)")
    va.add_argument("--label-column", metavar="NAME", help="the outcome's column (as for evaluate)")
    va.add_argument("--prob-columns", metavar="LIST", help="the risk column, or the class columns (as for evaluate)")
    va.add_argument("--class-names", metavar="LIST", help="class names in column order (as for evaluate)")
    va.add_argument("--n-resamples", type=int, default=1000, metavar="N",
                    help="bootstrap resamples for the intervals of O:E, ICI, Brier, the curve and net benefit "
                         "(default 1000; 0 skips them)")
    va.add_argument("--random-state", type=int, default=0, metavar="S",
                    help="seed of the bootstrap; the same seed gives the same numbers (default 0)")
    va.add_argument("--seed", type=int, dest="random_state", action=_RetiredFlag, new="--random-state",
                    help=argparse.SUPPRESS)
    va.add_argument("--clusters", metavar="COLUMN",
                    help="the column of centres (hospitals, sites) the rows come from: whole-data intervals from a "
                         "cluster bootstrap (resampling centres) and a random-effects meta-analysis of O:E, "
                         "calibration-in-the-large, the slope and AUROC across centres, with a prediction interval for "
                         "a new centre (default: none); use --groups for subgroups of patients, --clusters for centres")
    va.add_argument("--thresholds", nargs=2, type=float, metavar=("LOW", "HIGH"),
                    help="the range of risk thresholds over which clinical usefulness (net benefit against treating "
                         "all or none) is judged, 0 < LOW < HIGH < 1 (default: calibdash.validate_risk_model's, "
                         "0.05 0.5)")
    va.add_argument("--calibration-error", action=argparse.BooleanOptionalAction, default=False,
                    help="also estimate the risk-optimised calibration error per group (calibdash.evaluate), the "
                         "slowest part; off by default: its selected estimator changes between groups, so their "
                         "numbers are not comparable")
    va.add_argument("--jobs", type=int, default=1, metavar="N", help="parallel tasks for that part (-1: every core)")
    va.add_argument("--out", required=True, metavar="DIR", help="output directory (created; files in it are replaced)")
    va.add_argument("--title", help="title of the HTML report")
    va.add_argument("--quiet", action="store_true", help="no progress and no verdicts; errors are still printed")
    va.set_defaults(func=cmd_validate)

    pl = sub.add_parser(
        "plan", help="the minimum size of an external validation study, from anticipated values (no data)",
        description=_wrap("Riley et al.'s (2021) sample size for the external validation of a risk model with a binary "
                          "outcome: the rows (and events) for a 95% interval of O:E, the calibration slope and the C "
                          "statistic, and with --threshold of the standardised net benefit, no wider than the target "
                          "widths; the minimum is the largest. The linear predictor is taken normal within events and "
                          "within non-events with a common variance, which gives the anticipated prevalence and C "
                          "statistic exactly (the paper's section 4.6.3), or normal with --lp-mean and --lp-sd. "
                          "Prints the table and how each number was computed; --out DIR also writes DIR/plan.csv."),
        epilog=PLAN_EXAMPLE + "\n" + EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pl.add_argument("--prevalence", type=float, required=True, metavar="P",
                    help="anticipated outcome proportion in the validation population, e.g. 0.018")
    pl.add_argument("--c-statistic", type=float, required=True, metavar="C",
                    help="anticipated C statistic (AUROC), above 0.5, e.g. an optimism-adjusted one from development")
    pl.add_argument("--oe", type=float, default=1.0, metavar="R",
                    help="anticipated observed / expected events (default 1: calibrated in the large)")
    pl.add_argument("--slope", type=float, default=1.0, metavar="B", help="anticipated calibration slope (default 1)")
    pl.add_argument("--threshold", type=float, metavar="T",
                    help="risk threshold for the net-benefit criterion (default: none, criteria 1-3 only)")
    pl.add_argument("--target-oe", type=float, metavar="W", help="target width of the O:E interval (default 0.2)")
    pl.add_argument("--target-slope", type=float, metavar="W",
                    help="target width of the calibration slope's interval (default 0.2)")
    pl.add_argument("--target-c", type=float, metavar="W", help="target width of the C statistic's interval (default 0.1)")
    pl.add_argument("--target-nb", type=float, metavar="W",
                    help="target width of the standardised net benefit's interval (net benefit / prevalence; default "
                         "0.2, as pmvalsampsize)")
    pl.add_argument("--lp-mean", type=float, metavar="M",
                    help="with --lp-sd: a normal linear predictor (the model's logit risks, e.g. as published)")
    pl.add_argument("--lp-sd", type=float, metavar="S", help="with --lp-mean: the SD of the normal linear predictor")
    pl.add_argument("--sensitivity", type=float, metavar="S",
                    help="with --specificity and --threshold: anticipated sensitivity at the threshold (default: from "
                         "the linear predictor)")
    pl.add_argument("--specificity", type=float, metavar="S", help="with --sensitivity: anticipated specificity")
    pl.add_argument("--level", type=float, default=0.95, metavar="L", help="level of the intervals (default 0.95)")
    pl.add_argument("--out", metavar="DIR", help="also write DIR/plan.csv (the table with its notes)")
    pl.set_defaults(func=cmd_plan)

    ap = sub.add_parser(
        "app", help="start the dashboard (needs the app extra: pip install 'calibdash[app]')",
        description=_wrap("Serve the Streamlit dashboard at http://127.0.0.1:PORT until Ctrl+C (the same command as "
                          "'make run'). It needs streamlit: pip install 'calibdash[app]'."),
    )
    ap.add_argument("--port", type=int, default=APP_PORT, metavar="PORT", help=f"port to serve on (default {APP_PORT})")
    ap.set_defaults(func=cmd_app)
    return parser


def main(argv=None):
    """Run the command line; returns the exit status."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv  # recorded in result.json
    try:
        return args.func(args)
    except CalibdashError as e:  # CLIError included: bad data or a bad setting
        if getattr(e, "internal", False):  # the loader wrapped an exception it did not anticipate
            return _internal_error()
        flag = LOAD_FLAGS.get(getattr(e, "option", None))
        return _bad_input(str(e) + (f" (on the command line: {flag})" if flag else ""))
    except OSError as e:
        if _about_user_paths(e, args):
            where = e.filename2 if e.filename2 is not None else e.filename
            return _bad_input(f"{os.fsdecode(where)}: {e.strerror}." if where is not None and e.strerror else str(e))
        return _internal_error()
    except KeyboardInterrupt:
        print("calibdash: interrupted", file=sys.stderr)
        return 130
    except Exception:  # anything else is a bug in calibdash, whatever its class (ValueError included)
        return _internal_error()


def _bad_input(message):
    # One readable line: the library's messages say what is wrong and how to fix it.
    print(f"calibdash: error: {' '.join(message.split()) or 'bad input'}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _internal_error():
    traceback.print_exc()
    print(INTERNAL_ERROR + ".", file=sys.stderr)
    return EXIT_BUG


#: OSErrors of the machine rather than of calibdash: reported as bad input wherever they occur.
_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EROFS, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _about_user_paths(error, args):
    """Whether an OSError concerns a path the user gave (an input file, RESULT, or a file
    in --out) or a full or read-only disk: bad input, not a bug."""
    if error.errno in _ENVIRONMENT_ERRNOS:
        return True
    given = []
    for name in ("predictions", "labels", "result", "out"):
        value = getattr(args, name, None)
        given += [] if value is None else [value] if isinstance(value, (str, os.PathLike)) else list(value)
    given = [Path(p).resolve() for p in given]
    for where in (error.filename, error.filename2):
        if isinstance(where, (str, bytes, os.PathLike)):
            path = Path(os.fsdecode(where)).resolve()
            if any(path == p or p in path.parents for p in given):
                return True
    return False
