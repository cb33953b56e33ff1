"""A run's files: which files a run writes and where, each written whole, never outside its folder.

The command line's ``evaluate`` (and ``rerun --out``) writes, per model, ``summary.csv``,
``curves.csv``, ``others.csv``, ``result.json`` and ``report.html`` (:data:`OUTPUT_FILES`):
in the output folder for one model, in a folder per model plus a comparison in the output
folder for several. Every path is planned and checked before any work
(:func:`plan_outputs`: inside the folder once links are resolved, no folder where a file
goes, never an input file), and every file is written whole through
:func:`calibdash.io.export.write_file` at a path :func:`within` checked.

``result.json`` is the run file: :func:`run_to_json` writes it and :func:`load_run` reads it
back, in calibdash's one result format (:class:`~calibdash.evaluation.evaluations.Evaluations`).

This module sits in the reporting layer, not beside :mod:`calibdash.io.export` (whose
``csv_text`` and ``write_file`` it uses): a run's files include its HTML report
(:func:`calibdash.reporting.html.report`), and the input layer is below the reports.
Refusals are :class:`~calibdash.errors.ConfigError` (an output folder that cannot be used;
the messages name ``--out``, the command line's name of the folder) and
:class:`~calibdash.errors.InputError` (a result file that cannot be read).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from calibdash.errors import ConfigError, InputError
from calibdash.evaluation.evaluations import Evaluations
from calibdash.io.export import csv_text, write_file
from calibdash.io.formats import read_regular_file
from calibdash.limits import RESULT_BYTES
from calibdash.text import user

__all__ = ["OUTPUT_FILES", "safe_names", "data_stem", "model_names", "within", "plan_outputs", "write_model_outputs",
           "write_comparison_outputs", "run_to_json", "load_run"]

#: The files of a run's folder. A model's folder never takes one of these names.
OUTPUT_FILES = ("summary.csv", "curves.csv", "others.csv", "result.json", "report.html")
#: Suffixes left out of a model's name (the file it was read from).
_DATA_SUFFIXES = (".gz", ".bz2", ".zip", ".xz", ".npz", ".npy", ".csv", ".tsv", ".txt", ".parquet")
# Folder names stay well under the 255 bytes most file systems allow.
_MAX_NAME_BYTES = 100


# ----------------------------------------------------------------------------- names
def _sanitise(name):
    """A folder name from any text: letters, digits and ``-_.+``, no leading dot, short."""
    name = "".join(c if c.isalnum() or c in "-_.+" else "-" for c in str(name)).strip(".-")
    while len(name.encode("utf-8")) > _MAX_NAME_BYTES:
        name = name[:-1].rstrip(".-")
    return name or "model"


def safe_names(names):
    """Distinct folder names for models, in order: each sanitised, none of :data:`OUTPUT_FILES`.

    A name keeps its sanitised form where it is free; a repeated or reserved one gets the
    first free ``-2``, ``-3``, ... that is no other model's name (compared as a
    case-insensitive file system would).

    >>> safe_names(["x", "x", "x-2", "../up", "report.html"])
    ['x', 'x-3', 'x-2', 'up', 'report.html-2']
    """
    stems = [_sanitise(n) for n in names]
    reserved = {f.casefold() for f in OUTPUT_FILES}
    every = {s.casefold() for s in stems}
    out, used = [None] * len(stems), set()
    for i, stem in enumerate(stems):
        if stem.casefold() not in reserved | used:
            out[i] = stem
            used.add(stem.casefold())
    for i, stem in enumerate(stems):
        k = 2
        while out[i] is None:
            candidate = f"{stem}-{k}"
            if candidate.casefold() not in reserved | used | every:
                out[i] = candidate
                used.add(candidate.casefold())
            k += 1
    return out


def data_stem(name):
    """``name`` (a data file's name, or a label made from one) without its data suffixes: what
    names the data in an output's name (a model's folder, the app's download names).

    >>> data_stem("x.csv.gz"), data_stem("mortality_validation.csv"), data_stem(".csv"), data_stem("digits / rf")
    ('x', 'mortality_validation', '.csv', 'digits / rf')
    """
    stem = str(name)
    for suffix in _DATA_SUFFIXES:  # compressions first: x.csv.gz loses both
        if stem.endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
    return stem


def model_names(paths):
    """Model names from file names (without their data suffixes), as :func:`safe_names` makes them.

    >>> model_names(["data/cifar10_lenet5.npz", "b/x.csv.gz", "c/x.npy"])
    ['cifar10_lenet5', 'x', 'x-2']
    """
    return safe_names([data_stem(Path(p).name) for p in paths])


# ----------------------------------------------------------------------------- paths
def within(root, path):
    """``path`` (its folder resolved, links followed) if it lies in ``root``, else a ConfigError.

    The file itself is not resolved: a link at its place is replaced, never followed
    (:func:`calibdash.io.export.write_file`).
    """
    where = path.parent.resolve() / path.name
    if where.parent != root and root not in where.parents:
        raise ConfigError(f"{path} would be written outside --out {root} (a link leads out of it); "
                          "remove the link or choose another --out.")
    return where


def _prepare_out(path):
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a directory.")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the output directory {out}: {e.strerror or e}.") from None
    if not os.access(out, os.W_OK):
        raise ConfigError(f"cannot write to the output directory {out}.")
    return out


def plan_outputs(out, names, *, single, inputs, files=OUTPUT_FILES):
    """The folder of each model and every file a run writes, checked before any work.

    The output folder ``out`` is created. Every path lies inside it once resolved; no model
    folder is a file; no file written is one of ``inputs`` (the same file, under any name
    or through a hard link).

    Parameters
    ----------
    out : path-like
        The output folder (the command line's ``--out``).
    names : list of str
        The models' names; with ``single``, their files go in ``out`` itself, otherwise each
        in a folder of ``out`` named by :func:`safe_names`, with the comparison's files in ``out``.
    inputs : list of path-like
        The files the run reads: none may be written.
    files : tuple of str
        The files written in each folder (default :data:`OUTPUT_FILES`).

    Returns
    -------
    folders : dict
        ``{model name: folder}``.

    Raises
    ------
    ConfigError
        For an output folder that cannot be created or written, a path that leads out of it,
        a folder where a file goes, a file where a model's folder goes, or an input that
        would be replaced.
    """
    root = _prepare_out(out).resolve()
    folders = {name: root if single else root / folder for name, folder in zip(names, safe_names(names))}
    names_of_files = files
    files = [folder / f for folder in dict.fromkeys(folders.values()) for f in names_of_files]
    files += [] if single else [root / f for f in names_of_files]
    read = []
    for path in inputs:
        try:
            read.append((Path(path), os.stat(path)))
        except OSError:
            continue
    for folder in folders.values():
        if folder != root:
            within(root, folder)
            if folder.exists() and not folder.is_dir():
                raise ConfigError(f"{folder} exists and is not a directory; move it or choose another --out.")
    for path in files:
        where = within(root, path)
        try:
            st = os.lstat(where)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(f"{where} is a directory, where calibdash writes a file; move it or choose another --out.")
        for source, src in read:
            if (st.st_dev, st.st_ino) == (src.st_dev, src.st_ino):
                raise ConfigError(f"writing {where} would replace the input {source}; choose another --out.")
    return folders


# ----------------------------------------------------------------------------- writing
def _frame_with(results, key, extra):
    """The ``key`` table (summary, curves, others) of every notion in one frame, with a
    ``notion`` column and the columns of ``extra`` ({name: value}) in front."""
    import pandas as pd

    frames = []
    for notion, res in results.items():
        df = getattr(res, key).copy()
        if "params" in df.columns:  # dicts as JSON, so the CSV is machine-readable
            df["params"] = [json.dumps(p, sort_keys=True, default=str) for p in df["params"]]
        df.insert(0, "notion", notion)
        for i, (col, value) in enumerate(extra.items()):
            df.insert(i, col, value)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _write_all(out, texts):
    root = out.resolve()
    for f in OUTPUT_FILES:
        write_file(within(root, out / f), texts[f])
    return [out / f for f in OUTPUT_FILES]


def write_model_outputs(out, name, results, pred, command, title=None):
    """summary.csv, curves.csv, others.csv, result.json and report.html of one model in ``out``.

    Parameters
    ----------
    out : pathlib.Path
        The model's folder (created), as :func:`plan_outputs` planned it.
    name : str
        The model's name in result.json.
    results : dict
        ``{notion: EvaluationResult}``.
    pred : Predictions
        The data evaluated, for the report's figures.
    command : list of str
        The command line that made the run, recorded in result.json.
    title : str, optional
        The report's title.

    Returns
    -------
    list of pathlib.Path
        The files written, in the order of :data:`OUTPUT_FILES`.
    """
    from calibdash.reporting.html import report

    out.mkdir(parents=True, exist_ok=True)
    texts = {
        "summary.csv": csv_text(_frame_with(results, "summary", {})),
        "curves.csv": csv_text(_frame_with(results, "curves", {})),
        "others.csv": csv_text(_frame_with(results, "others", {})),
        "result.json": run_to_json({name: results}, command),
        "report.html": report(results, pred, title=title, results_file="result.json", made_by="cli"),
    }
    return _write_all(out, texts)


def write_comparison_outputs(out, models, preds, command, title=None):
    """The comparison of several models in ``out``: summary.csv, curves.csv and others.csv with a
    ``model`` column, result.json with every model and the comparison report.html.

    Parameters
    ----------
    out : pathlib.Path
        The output folder, as :func:`plan_outputs` planned it.
    models : dict
        ``{model name: {notion: EvaluationResult}}``.
    preds : dict
        ``{model name: Predictions}``.
    command : list of str
        The command line that made the run, recorded in result.json.
    title : str, optional
        The report's title.

    Returns
    -------
    list of pathlib.Path
        The files written, in the order of :data:`OUTPUT_FILES`.
    """
    import pandas as pd

    from calibdash.reporting.html import report

    tables = {key: pd.concat([_frame_with(models[n], key, {"model": n}) for n in models], ignore_index=True)
              for key in ("summary", "curves", "others")}
    texts = {"summary.csv": csv_text(tables["summary"]), "curves.csv": csv_text(tables["curves"]),
             "others.csv": csv_text(tables["others"]), "result.json": run_to_json(models, command),
             "report.html": report(models, preds, title=title, results_file="result.json", made_by="cli")}
    return _write_all(out, texts)


# ----------------------------------------------------------------------------- the run file
def run_to_json(models, command=None):
    """The ``result.json`` text of a run: ``{model name: {notion: EvaluationResult}}`` in
    calibdash's one result format (:class:`~calibdash.evaluation.evaluations.Evaluations`)."""
    return Evaluations(models, command=command).to_json(indent=1)


def load_run(path):
    """Read a ``result.json``: an :class:`~calibdash.evaluation.evaluations.Evaluations`,
    ``{model name: {notion: EvaluationResult}}``.

    A file with a single result (the app's "Full result (JSON)" download, or one written by
    an older calibdash) names its model after the file. Only a regular file is read, within
    :data:`calibdash.limits.RESULT_BYTES`; its fields are checked as
    :mod:`calibdash.evaluation.schema` says, and any problem is an
    :class:`~calibdash.errors.InputError`.
    """
    path = Path(path)
    text = read_regular_file(path, max_bytes=RESULT_BYTES.value, what="a result.json file",
                             too_big=lambda size, exact: InputError(RESULT_BYTES.message(size, str(path))))
    try:
        evaluations = Evaluations.from_json(text, name=path.stem)
    except InputError as e:
        raise InputError(f"{user(str(path))}: {e}") from None
    return evaluations
