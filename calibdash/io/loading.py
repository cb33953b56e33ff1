"""Load a classifier's predictions and true labels from the formats users actually have.

:func:`load_predictions` is the single entry point. It accepts a path, bytes, a file-like
object (such as a Streamlit upload), a NumPy array or a pandas DataFrame, and returns an
immutable :class:`~calibdash.predictions.Predictions` (defined in :mod:`calibdash.predictions`
with :data:`KINDS`, :data:`LOAD_OPTIONS` and ``canonical_sha256``, and re-exported here, where
callers have always found them). Anything it cannot use is refused with
:class:`~calibdash.errors.InputError`, whose message says what is wrong, where, and how to
fix it; no other exception escapes. File formats are read by :mod:`calibdash.io.formats`, and
the meaning of a table's columns is decided by :mod:`calibdash.io.columns`.

Messages mark the text they quote from the input (:func:`calibdash.text.user`), so that the
app can show it literally; :class:`Predictions` holds plain strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from calibdash.core.simplex import ROW_SUM_TOLERANCE, softmax
from calibdash.deprecation import renamed_parameters
from calibdash.errors import CalibdashError, InputError, LoadNote, LoadWarning, detached
from calibdash.io import columns, formats
from calibdash.predictions import KINDS, LOAD_OPTIONS, Predictions, canonical_sha256  # noqa: F401  (re-exported)
from calibdash.text import quoted, user

__all__ = ["Predictions", "load_predictions", "inspect_predictions", "Inspection", "KINDS", "LOAD_OPTIONS",
           "MAX_FILE_BYTES", "MAX_MEMORY_BYTES"]

#: Default limit on the size of a file (or bytes / upload) given to the loader.
MAX_FILE_BYTES = 500 * 10**6
#: Default limit on the memory an array declared by a file may need (as float64).
MAX_MEMORY_BYTES = 2 * 2**30

# The pipeline's defaults (80/20 calibration/test split, 5-fold cross-fitting) start to
# give stable estimates around this many rows.
SMALL_N = 1000
_TEST_FRACTION = 0.2
_FOLDS = 5
# Above this fraction of exact 0/1 probabilities the predictions are probably rounded or
# hard labels, and most calibration estimators have little to work with.
SATURATED_FRACTION = 0.10

# Rows of low-precision probabilities (float16, or rounded before saving) sum to 1 within
# this; they are renormalised, with a note, rather than read as logits.
LOW_PRECISION_TOLERANCE = 1e-3
# The deviation from 1 (or 100) up to which a row is accepted: the tolerance plus a slack, so
# that rows rounded to 3 decimals that sum to 0.999 in exact arithmetic (1 - 0.999 is
# 0.0010000000000000009 in floating point) are accepted.
ACCEPTED_ROW_SUM_DEVIATION = LOW_PRECISION_TOLERANCE + 1e-12
# A binary auto-logits reading is doubted when its accuracy is below 50% and this far
# below its mean confidence: confidently wrong more often than right.
DOUBT_GAP = 0.4
# At most this many distinct label values are listed by inspect_predictions.
MAX_LABEL_VALUES = 50
# --------------------------------------------------------------------------- entry point


@renamed_parameters(group_columns="groups")
def load_predictions(
    source,
    labels=None,
    *,
    kind="auto",
    class_names=None,
    label_column=None,
    prob_columns=None,
    positive=None,
    groups=None,
    header=None,
    npz_keys=None,
    name=None,
    max_bytes=None,
    max_memory_bytes=None,
):
    """Load predictions and true labels into a validated :class:`Predictions`.

    Parameters
    ----------
    source : str, path-like, bytes, file-like, array-like or pandas.DataFrame
        The predictions. Paths are read by suffix (``.npy``, ``.npz``, ``.csv``, ``.tsv``,
        ``.txt``, ``.parquet``); the path of a folder is read as a Parquet dataset: every
        ``*.parquet`` file in it (and its subfolders), with the same columns, in sorted order;
        bytes and file objects by their content (a file object's
        ``name``, e.g. a Streamlit upload's, is used for the suffix and in messages). A 2-D
        array is rows x classes; a 1-D array or single column is the probability (or
        logit) of the positive class of a binary problem. Tables (CSV/TSV/Parquet/
        DataFrame) hold one column per class and a label column.
    labels : str, path-like, bytes, file-like or array-like, optional
        True labels, when ``source`` does not hold them: integers in ``[0, d)`` or class
        names. A file may be ``.npy``, ``.npz``, a one-column text file or Parquet.
    kind : {"auto", "probabilities", "percent", "logits"}, default="auto"
        What the numbers are. ``"auto"`` reads non-negative rows summing to 1 (within
        ``calibdash.core.simplex.ROW_SUM_TOLERANCE``, or within ``LOW_PRECISION_TOLERANCE``
        with a note) as probabilities, rows summing to 100 (or one column in [0, 100] with
        values above 1) as percentages, and numbers with negative values as logits. It
        refuses, asking for the kind, what it cannot read with confidence: non-negative
        numbers that are neither (logits are rarely all non-negative), and one column of
        logits that would be confidently wrong more often than right.
    class_names : sequence of str, optional
        One name per class, in column order (for one probability column: the negative
        class, then the positive one). Must match a table's class-column names when the
        table has a header; labels given as names are matched to them.
    label_column : str or int, optional
        Column holding the labels in a table, by name or 0-based position. Default: the
        column named label, labels, y, target, class, outcome, diagnosis, truth, ... (see
        ``calibdash.io.columns.LABEL_COLUMN_NAMES``), else the only column of text (with a
        note); for a headerless file, the last column (unless ``labels`` is given).
    prob_columns : sequence of str or int, optional
        The table's columns of probabilities, percentages or logits, one per class in
        class order (one column: the positive class of a binary problem). Default: the
        columns named after a class (``p_cat``, ``prob_cat``, ``cat_prob``, ``P(cat)``) when
        some are, with a note, else every column but the label and grouping columns.
    positive : str or int, optional
        For one probability column with labels given as names: the label value the column
        is the probability of. Default: the class the column is named after (``p_malignant``
        -> ``"malignant"``), with a note; the other label value is the negative class.
    groups : sequence of str or int, optional
        Columns of a table kept as grouping variables (``Predictions.groups``), e.g. a
        hospital site; they are not part of the predictions or their hash. (The retired
        name ``group_columns`` is accepted for one release, with a :class:`DeprecationWarning`.)
    header : bool, optional
        Whether a text file's first line is a header. Default: sniffed (a first line with
        non-numeric class fields is a header).
    npz_keys : dict or (str, str), optional
        Which arrays of a ``.npz`` to use, e.g. ``{"predictions": "probs", "labels": "y"}``;
        a labels key of None ignores labels in the file. Default: recognised names.
    name : str, optional
        Display name (and suffix) for bytes or a file object.
    max_bytes : int, optional
        Refuse files larger than this. Default: ``MAX_FILE_BYTES`` (500 MB).
    max_memory_bytes : int, optional
        Refuse inputs that would need more memory than this to load, judged from what the
        file declares before anything large is allocated: every array a file holds, together,
        as :data:`calibdash.io.formats.WORKING_COPIES` float64 copies (the loader's working
        copies), and a Parquet file's text by its expanded size. Default:
        ``MAX_MEMORY_BYTES`` (2 GiB).

    Returns
    -------
    Predictions
        Read-only probabilities (float64, rows summing to 1), int64 labels, class names,
        the detected or given kind, a content hash and any warnings.

    Raises
    ------
    InputError
        For anything that cannot be used as predictions (pickles, NaN or infinite values,
        malformed files, mismatched lengths, bad labels, ...). It is a ``ValueError`` and
        the only exception this function raises.

    Examples
    --------
    >>> import calibdash as cd
    >>> P = cd.load_predictions("preds.npz")                      # doctest: +SKIP
    >>> P = cd.load_predictions("logits.npy", "labels.npy")       # doctest: +SKIP
    >>> print(P.summary())                                        # doctest: +SKIP
    """
    shown = formats.describe(
        source, name, "the predictions data" if formats.is_file_source(source) else "the predictions array"
    )
    try:
        return _load(
            source, labels, kind, class_names,
            label_column=label_column, header=header, npz_keys=npz_keys, name=name,
            prob_columns=prob_columns, positive=positive, groups=groups,
            max_bytes=MAX_FILE_BYTES if max_bytes is None else max_bytes,
            max_memory_bytes=MAX_MEMORY_BYTES if max_memory_bytes is None else max_memory_bytes,
        )
    except CalibdashError:  # a deliberate refusal (bad data or a bad setting), with its message
        raise
    except MemoryError:
        raise InputError(
            f"ran out of memory while loading {shown}; load fewer rows, or lower "
            "max_memory_bytes so that oversized files are refused up front."
        ) from None
    except Exception as e:
        # Every anticipated failure is turned into a specific InputError where it happens;
        # reaching this point means a check is missing. Keep the cause chained.
        raise InputError(
            f"could not load {shown}: unexpected {type(e).__name__}: {e}. The file may be "
            "corrupted or laid out in an unexpected way; check that it opens with numpy or "
            "pandas, and please report this message to the calibdash maintainers.",
            internal=True,
        ) from e


@dataclass(frozen=True)
class Inspection:
    """What :func:`inspect_predictions` found in a source and what the loader would guess.

    Attributes
    ----------
    table : bool
        Whether the source is a table (CSV/TSV/Parquet/DataFrame), whose columns can be mapped.
    columns, numeric : tuple of str
        The table's columns (positions as text for a file without header), and those of numbers.
    label_candidates : tuple of str
        Columns that could hold the labels (named like labels, else the columns of text).
    label_column : str or None
        The guessed label column (None: none or several fit, or the labels are separate).
    prob_columns : tuple of str
        The guessed probability (or logit) columns.
    n_scores : int or None
        Number of probability columns (1: one column for the positive class of a binary
        problem); None when unknown.
    label_values : tuple of str
        Distinct label values, sorted, at most ``MAX_LABEL_VALUES``.
    label_values_complete : bool
        False when there are more distinct labels than listed.
    class_names : tuple of str or None
        The guessed class names, in column order (one column: negative, then positive class).
    positive : str or None
        The guessed positive class of one probability column with labels given as names.
    notes : tuple of str
        The guesses made, as :attr:`Predictions.notes` would say them.
    problem : InputError or None
        Why a load with the guesses would be refused, when it would (e.g. an ambiguous label column).
    """

    table: bool
    columns: tuple = ()
    numeric: tuple = ()
    label_candidates: tuple = ()
    label_column: str | None = None
    prob_columns: tuple = ()
    n_scores: int | None = None
    label_values: tuple = ()
    label_values_complete: bool = True
    class_names: tuple | None = None
    positive: str | None = None
    notes: tuple = ()
    problem: InputError | None = None

    def __post_init__(self):
        if self.problem is not None:  # kept for hours in the app: not the frames (and data) it was raised in
            detached(self.problem)


def inspect_predictions(source, labels=None, *, label_column=None, prob_columns=None, header=None, name=None,
                        max_bytes=None, max_memory_bytes=None):
    """Look at a source before loading it: its columns and what :func:`load_predictions` would guess.

    The app prefills its column controls from this. Arguments as for :func:`load_predictions`;
    ``label_column`` and ``prob_columns``, when given, are taken as chosen and the rest is
    guessed around them.

    Returns
    -------
    Inspection

    Raises
    ------
    InputError
        When the source cannot be read at all (the guesses themselves never raise; see
        ``Inspection.problem``).
    """
    import pandas as pd

    max_bytes = MAX_FILE_BYTES if max_bytes is None else max_bytes
    max_memory_bytes = MAX_MEMORY_BYTES if max_memory_bytes is None else max_memory_bytes
    labels_given = labels is not None
    table = None
    if isinstance(source, pd.DataFrame):
        shown = user(name) if name else "the DataFrame"
        table = formats.parse_dataframe(source, shown)
    elif formats.is_dataset_path(source):
        table = formats.read_parquet_dataset(source, max_bytes=max_bytes, max_memory_bytes=max_memory_bytes)
        shown = table.name
    elif formats.is_file_source(source):
        blob = formats.read_blob(source, name=name, default_name="the predictions data", max_bytes=max_bytes)
        shown = blob.name
        if formats.is_table(blob):
            table = formats.read_table(blob, is_header=columns.header_rule(header, labels_separate=True),
                                       max_memory_bytes=max_memory_bytes)
    if table is None:
        return _inspect_arrays(source, labels, name, header, max_bytes, max_memory_bytes)
    frame, names = table.frame, table.names
    found = columns.inspect_table(table, label_column=label_column, prob_columns=prob_columns,
                                  labels_separate=labels_given)
    notes = list(found.pop("notes"))
    if labels_given:
        y, y_where = _read_labels(labels, max_bytes, max_memory_bytes)
    elif found["label_column"] is not None:
        j = found["columns"].index(found["label_column"])
        y = columns.column_values(frame.iloc[:, j])
        y_where = formats.Where(shown, columns=[found["label_column"]], positions=[j])
    else:
        y = y_where = None
    probs = found["prob_columns"]
    class_names = positive = None
    if len(probs) > 1 and names is not None:
        class_names = columns.class_names_of_columns(probs, notes)
    elif len(probs) == 1 and y is not None:
        parsed = formats.Parsed(scores=np.empty((0, 1)), where=formats.Where(shown),
                                score_names=probs if names is not None else None)
        try:
            names2, explicit = _binary_names(np.asarray(y), y_where, None, parsed, notes)
        except InputError as e:
            found["problem"] = found["problem"] or e
        else:
            class_names, positive = names2, (names2[1] if explicit else None)
    values, complete = _distinct_labels(y)
    return Inspection(table=True, n_scores=len(probs), label_values=values, label_values_complete=complete,
                      class_names=class_names, positive=positive, notes=tuple(notes), **found)


def _distinct_labels(y):
    if y is None:
        return (), True
    y = np.asarray(y)
    if y.ndim != 1:
        return (), False
    texts = {("" if v is None else str(v.decode("utf-8", "replace") if isinstance(v, bytes) else
              (int(v) if isinstance(v, float) and v.is_integer() else v)).strip()) for v in y.tolist()}
    ordered = sorted(texts, key=lambda t: (not _INT_NAME.fullmatch(t), int(t) if _INT_NAME.fullmatch(t) else 0, t))
    return tuple(ordered[:MAX_LABEL_VALUES]), len(ordered) <= MAX_LABEL_VALUES


def _inspect_arrays(source, labels, name, header, max_bytes, max_memory_bytes):
    """Inspection of a source that is not a table: how many score columns, which labels."""
    try:
        parsed = _load_parsed(source, labels, name=name, header=header, max_bytes=max_bytes,
                              max_memory_bytes=max_memory_bytes)
    except InputError as e:
        return Inspection(table=False, problem=e)
    scores = np.asarray(parsed.scores)
    n_scores = 1 if scores.ndim == 1 else (scores.shape[1] if scores.ndim == 2 else None)
    y = _read_labels(labels, max_bytes, max_memory_bytes)[0] if labels is not None else parsed.labels
    values, complete = _distinct_labels(y)
    return Inspection(table=False, n_scores=n_scores, label_values=values, label_values_complete=complete,
                      class_names=parsed.class_names)


def _load_parsed(source, labels, *, name, header, max_bytes, max_memory_bytes):
    if formats.is_file_source(source):
        blob = formats.read_blob(source, name=name, default_name="the predictions data", max_bytes=max_bytes)
        got = formats.parse_predictions(blob, is_header=columns.header_rule(header, labels_separate=labels is not None),
                                        npz_keys=None, labels_separate=labels is not None,
                                        max_memory_bytes=max_memory_bytes)
        return columns.split_table(got, labels_separate=labels is not None) if isinstance(got, formats.Table) else got
    shown = user(name) if name else "the predictions array"
    return formats.Parsed(scores=_as_array(source, shown, max_memory_bytes), where=formats.Where(shown))


def _check_options(kind, header, max_bytes, max_memory_bytes):
    if not isinstance(kind, str) or kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(map(repr, KINDS))}; got {kind!r}.")
    if header is not None and not isinstance(header, bool):
        raise InputError(f"header must be True, False or None (sniff); got {header!r}.")
    for opt, value in (("max_bytes", max_bytes), ("max_memory_bytes", max_memory_bytes)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
            raise InputError(f"{opt} must be a positive integer number of bytes; got {value!r}.")


def _load(source, labels, kind, class_names, *, label_column, header, npz_keys, name,
          max_bytes, max_memory_bytes, prob_columns, positive, groups):
    import pandas as pd

    _check_options(kind, header, max_bytes, max_memory_bytes)
    labels_given = labels is not None
    options = {"prob_columns": prob_columns, "groups": groups}
    if isinstance(source, pd.DataFrame):
        shown = user(name) if name else "the DataFrame"
        parsed = columns.split_table(
            formats.parse_dataframe(source, shown), label_column=label_column, labels_separate=labels_given, **options
        )
    elif formats.is_dataset_path(source):
        table = formats.read_parquet_dataset(source, max_bytes=max_bytes, max_memory_bytes=max_memory_bytes)
        shown = table.name
        parsed = columns.split_table(table, label_column=label_column, labels_separate=labels_given, **options)
    elif formats.is_file_source(source):
        blob = formats.read_blob(source, name=name, default_name="the predictions data",
                                 max_bytes=max_bytes)
        shown = blob.name
        parsed = formats.parse_predictions(
            blob, npz_keys=npz_keys, labels_separate=labels_given, max_memory_bytes=max_memory_bytes,
            is_header=columns.header_rule(header, label_column=label_column, labels_separate=labels_given, **options),
            table_options={"label_column": label_column, **options},
        )
        if isinstance(parsed, formats.Table):
            parsed = columns.split_table(parsed, label_column=label_column, labels_separate=labels_given, **options)
    else:
        shown = user(name) if name else "the predictions array"
        for option, value in (("label_column", label_column), *options.items()):
            if value is not None:
                raise InputError(f"{option} applies to tables (CSV/TSV/Parquet/DataFrame), not arrays.",
                                 option=option)
        parsed = formats.Parsed(
            scores=_as_array(source, shown, max_memory_bytes), where=formats.Where(shown)
        )

    if labels_given:
        y, y_where = _read_labels(labels, max_bytes, max_memory_bytes)
    elif parsed.labels is not None:
        y, y_where = parsed.labels, parsed.labels_where
    else:
        raise InputError(
            f"{shown} holds no labels; pass them with labels=... (a file or an array), or put "
            "them in a 'label' column.", option="labels",
        )
    return _interpret(parsed, y, y_where, kind, class_names, positive, shown)


def _as_array(obj, shown, max_memory_bytes):
    """An in-memory array-like as an ndarray, refusing what cannot be numbers or labels."""
    import pandas as pd

    if isinstance(obj, (pd.Series, pd.Index)):
        obj = columns.column_values(pd.Series(obj))
    if obj is None:
        raise InputError(f"{shown} is None; give an array, a file path or bytes.")
    try:
        arr = np.asarray(obj)
    except (ValueError, TypeError) as e:
        raise InputError(
            f"{shown} is not a rectangular array ({e}); every row needs the same number of "
            "values."
        ) from None
    if arr.ndim > 2:
        raise InputError(
            f"{shown} has {arr.ndim} dimensions (shape {arr.shape}); predictions must be 2-D "
            "(rows x classes) and labels 1-D."
        )
    if arr.size * max(arr.dtype.itemsize, 8) > max_memory_bytes and arr.dtype.kind != "O":
        raise InputError(
            f"{shown} has shape {arr.shape}, over the memory budget of "
            f"{max_memory_bytes} bytes as float64; raise max_memory_bytes=... or pass fewer rows."
        )
    if arr.dtype.kind == "O":
        if arr.ndim == 1 and all(isinstance(v, (str, bytes)) or v is None for v in arr.tolist()):
            return arr  # labels given as names
        try:
            arr = arr.astype(np.float64)
        except (ValueError, TypeError):
            raise InputError(
                f"{shown} holds values that are not numbers (dtype object); give a numeric "
                "array."
            ) from None
    if arr.dtype.kind not in "biufUS":
        raise InputError(f"{shown} has dtype {arr.dtype}; give real numbers (float or int).")
    return arr


def _read_labels(labels, max_bytes, max_memory_bytes):
    import pandas as pd

    if isinstance(labels, pd.DataFrame):
        if labels.shape[1] != 1:
            raise InputError(
                f"the labels DataFrame has {labels.shape[1]} columns; give one column (or a Series)."
            )
        labels = labels.iloc[:, 0]
    if formats.is_file_source(labels):
        blob = formats.read_blob(labels, name=None, default_name="the labels data", max_bytes=max_bytes)
        got = formats.parse_labels(blob, is_header=columns.header_rule(role="labels"), max_memory_bytes=max_memory_bytes)
        if isinstance(got, formats.Table):
            parsed = columns.labels_from_table(got)
            return parsed.labels, parsed.labels_where
        return got
    return _as_array(labels, "the labels array", max_memory_bytes), formats.Where("the labels array")


# --------------------------------------------------------------------------- interpretation


def _interpret(parsed, y, y_where, kind, class_names, positive, shown):
    X, where = parsed.scores, parsed.where
    if X.dtype.kind not in "biuf":
        raise InputError(
            f"{where.name} holds {X.dtype} values, not numbers; predictions must be numeric "
            "(probabilities or logits)."
        )
    if X.ndim == 0:
        raise InputError(f"{where.name} is a single number; give one row of predictions per sample.")
    if X.ndim > 2:
        raise InputError(
            f"{where.name} has {X.ndim} dimensions (shape {X.shape}); predictions must be 2-D "
            "(rows x classes)."
        )
    binary = X.ndim == 1 or X.shape[1] == 1
    n = X.shape[0]
    if n == 0:
        raise InputError(f"{where.name} has no rows (shape {X.shape}); it holds no predictions.")
    if X.ndim == 2 and X.shape[1] == 0:
        raise InputError(
            f"{where.name} has no class columns (shape {X.shape}); fewer than two classes "
            "cannot be assessed."
        )

    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise InputError(
            f"{y_where.name} has shape {y.shape}; labels must be a 1-D array with one class "
            "per row."
        )
    if y.shape[0] != n:
        raise InputError(
            f"length mismatch: {where.name} has {n:,} rows of predictions but {y_where.name} has "
            f"{y.shape[0]:,} labels; both must describe the same samples in the same order."
        )

    float16 = X.dtype == np.float16
    X = np.ascontiguousarray(X.reshape(n, -1), dtype=np.float64)
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = divmod(int(np.argmax(bad.ravel())), X.shape[1])
        raise InputError(
            f"{where.cell(i, j)} is {X[i, j]}: NaN and infinite values cannot be assessed. "
            "Fix or drop that row (and its label)."
        )
    d = 2 if binary else X.shape[1]

    notes = list(parsed.notes)
    if positive is not None and not binary:
        raise InputError(
            f"positive applies to a single probability column (a binary problem); {where.name} has {d} "
            "class columns, named by class_names or the header.", option="positive",
        )
    if binary and class_names is None:
        names, explicit = _binary_names(y, y_where, positive, parsed, notes)
    else:
        names = _class_names(class_names, parsed, d, binary)
        explicit = class_names is not None or (parsed.class_names is not None and not binary)
        if binary and positive is not None and str(positive).strip() != names[1]:
            raise InputError(
                f"positive={quoted(positive)} is not the second of class_names {columns.preview(names)} "
                "(for one probability column: the negative class, then the positive one).", option="positive",
            )
    labels, by_name = _labels(y, y_where, names, d, explicit_names=explicit)
    if by_name:
        notes.append(LoadNote("by-name", "integer labels were matched to the class names (the columns are named by number)"))

    warnings = list(parsed.warnings)
    # Sums of huge logits may overflow to inf; that only marks them as not probabilities.
    with np.errstate(over="ignore", invalid="ignore"):
        if binary:
            probs, kind_out = _binary(X[:, 0], kind, where, labels, warnings, notes, float16)
        else:
            probs, kind_out = _multiclass(X, kind, where, labels, warnings, notes, float16)

    warnings += _warnings(probs, labels, names, explicit_names=explicit)
    probs.flags.writeable = False
    labels.flags.writeable = False
    return Predictions(
        probs=probs, labels=labels, class_names=names, kind=kind_out,
        kind_detected=kind == "auto", source_name=shown, warnings=warnings, notes=notes,
        groups=parsed.groups,
    )


def _normalise(P):
    """Divide rows by their sums; the same final step for every input, so identical
    float64 probabilities give identical bits however they were supplied."""
    P = P / P.sum(axis=1, keepdims=True)
    P += 0.0  # -0.0 -> +0.0, so the hash does not depend on the sign of zero
    return P


def _softmax(Z):
    with np.errstate(over="ignore", under="ignore"):
        return _normalise(softmax(Z, axis=1))


def _reading(X, kind):
    """Probabilities from ``X`` (n x 1 for the positive class of a binary problem, else
    n x d) read as ``kind``, without any check."""
    if X.shape[1] == 1:
        z = X[:, 0]
        if kind == "logits":
            return _softmax(np.column_stack([np.zeros_like(z), z]))
        z = z / 100 if kind == "percent" else z
        return _normalise(np.column_stack([1.0 - z, z]))
    if kind == "logits":
        return _softmax(X)
    return _normalise(X / 100 if kind == "percent" else X)


def _accuracy(P, labels):
    return float(np.mean(np.argmax(P, axis=1) == labels))


def _readings_text(X, labels, kinds):
    """What each reading would give, for a message asking the caller to choose."""
    parts = []
    for k in kinds:
        P = _reading(X, k)
        parts.append(f"as {k}, accuracy {_accuracy(P, labels):.1%} and mean confidence "
                     f"{float(np.mean(P.max(axis=1))):.1%}")
    return "; ".join(parts)


def _renormalised_note(where, dev, float16, unit="1"):
    origin = "float16 values" if float16 else "rounded values"
    return LoadNote("renormalised", f"{where.name}: the rows sum to {unit} only within {dev:.2g} ({origin}); they "
                    f"were renormalised to sum to {unit} exactly (largest change of a row sum: {dev:.2g})")


def _binary(z, kind, where, labels, warnings, notes, float16):
    in01 = (z >= 0) & (z <= 1)
    in100 = (z >= 0) & (z <= 100)
    X = z[:, None]
    if kind == "probabilities" and not in01.all():
        i = int(np.argmin(in01))
        pct = (" The values lie in [0, 100]: if they are percentages, choose kind='percent'."
               if in100.all() else "")
        raise InputError(
            f"{where.at(i)} is {z[i]:.6g}, outside [0, 1], so this single column cannot be "
            f"the probability of the positive class (kind='probabilities' was given).{pct} If the "
            "values are logits, pass kind='logits' or kind='auto'.", option="kind",
        )
    if kind == "percent" and not in100.all():
        i = int(np.argmin(in100))
        raise InputError(
            f"{where.at(i)} is {z[i]:.6g}, outside [0, 100], so this single column cannot be the "
            "percentage of the positive class (kind='percent' was given). If the values are "
            "logits, pass kind='logits'.", option="kind",
        )
    if kind == "auto":
        if in01.all():
            kind = "probabilities"
        elif in100.all():
            notes.append(LoadNote("percent", f"{where.name}: every value lies in [0, 100], some above 1, so they were "
                                  "read as percentages of the positive class and divided by 100"))
            kind = "percent"
        elif (z >= 0).all():
            raise InputError(
                f"{where.name}: every value is non-negative, but some exceed 100 (up to {z.max():.6g}), so "
                "they are neither probabilities nor percentages, and as logits every row would predict the "
                f"positive class ({_readings_text(X, labels, ['logits'])}). calibdash does not guess: "
                "choose the kind explicitly (kind='logits' if they are logits).", option="kind",
            )
        else:
            P = _reading(X, "logits")
            acc, conf = _accuracy(P, labels), float(np.mean(P.max(axis=1)))
            if acc < 0.5 and conf - acc > DOUBT_GAP:
                raise InputError(
                    f"{where.name} read as logits gives accuracy {acc:.1%} with mean confidence {conf:.1%}: "
                    "confidently wrong more often than right, which suggests a misreading (a swapped "
                    "positive class, or labels in another order). Check which class the column is the "
                    "probability of (positive=...); if the reading is right, choose kind='logits' "
                    "explicitly.", option="kind",
                )
            kind = "logits"
            return P, kind
    elif kind == "logits" and (in01.all() or in100.all()):
        what = "a probability" if in01.all() else "a percentage"
        warnings.append(LoadWarning(
            "kind-override",
            f"{where.name}: every value lies in [{'0, 1' if in01.all() else '0, 100'}] like {what}, but "
            "kind='logits' was given, so they were passed through a sigmoid; check this is intended.",
        ))
    if float16 and kind != "logits":
        notes.append(LoadNote("float16", f"{where.name}: float16 values (about 3 significant digits)"))
    return _reading(X, kind), kind


def _multiclass(X, kind, where, labels, warnings, notes, float16):
    neg = X < 0
    row_neg = neg.any(axis=1)
    sums = X.sum(axis=1)
    dev1 = np.abs(sums - 1.0)
    dev100 = np.abs(sums - 100.0) / 100
    off = dev1 > ROW_SUM_TOLERANCE
    # rows of (possibly low-precision) probabilities or percentages
    tol = ACCEPTED_ROW_SUM_DEVIATION
    close = dev1 <= tol
    percent_rows = (dev100 <= tol) & (X <= 100).all(axis=1)
    nonneg = not row_neg.any()
    if kind == "probabilities" or (kind == "auto" and not off.any() and row_neg.any()):
        if row_neg.any():
            i, j = divmod(int(np.argmax(neg.ravel())), X.shape[1])
            why = (
                "kind='probabilities' was given" if kind == "probabilities"
                else "every row sums to 1 like probabilities"
            )
            raise InputError(
                f"{where.cell(i, j)} is {X[i, j]:.6g}: negative probabilities are impossible "
                f"({why}). Clip tiny negative values at 0 (np.clip(P, 0, None)) before saving, "
                "or, if these numbers are logits, pass kind='logits'.", option="kind",
            )
        if not close.all():
            i = int(np.argmin(close))
            pct = (" Every row sums to 100: if these are percentages, choose kind='percent'."
                   if percent_rows.all() else "")
            raise InputError(
                f"{where.row(i)} sums to {sums[i]:.9g}, not 1 (tolerance {ROW_SUM_TOLERANCE:g}), "
                f"so these rows are not probabilities (kind='probabilities' was given).{pct} If they "
                "are logits or scores, pass kind='logits' or kind='auto'.", option="kind",
            )
    if kind == "percent":
        bad = neg | (X > 100)
        if bad.any():
            i, j = divmod(int(np.argmax(bad.ravel())), X.shape[1])
            raise InputError(
                f"{where.cell(i, j)} is {X[i, j]:.6g}, outside [0, 100], so these are not percentages "
                "(kind='percent' was given). If they are logits, pass kind='logits'.", option="kind",
            )
        if not percent_rows.all():
            i = int(np.argmin(percent_rows))
            prob = (" Every row sums to 1: if these are probabilities, choose kind='probabilities'."
                    if close.all() else "")
            raise InputError(
                f"{where.row(i)} sums to {sums[i]:.9g}, not 100, so these rows are not percentages "
                f"(kind='percent' was given).{prob}", option="kind",
            )
    if kind == "auto" and nonneg:
        if close.all():
            kind = "probabilities"
        elif percent_rows.all():
            notes.append(LoadNote("percent", f"{where.name}: every row sums to 100, so the values were read as "
                                  "percentages and divided by 100"))
            kind = "percent"
        else:
            i = int(np.argmax(~close))
            raise InputError(
                f"{where.name}: every value is non-negative, but {where.row(i)} sums to {sums[i]:.9g}, "
                "neither 1 (probabilities) nor 100 (percentages); logits are rarely all non-negative, so "
                f"calibdash does not guess. Read {_readings_text(X, labels, ['logits', 'probabilities'])} "
                "(rows divided by their sums). Choose the kind explicitly: kind='logits', or fix the rows "
                "and choose kind='probabilities' or kind='percent'.", option="kind",
            )
    elif kind == "auto":
        kind = "logits"
    if kind == "logits":
        if nonneg and (close.all() or percent_rows.all()):
            what = "probabilities" if close.all() else "percentages"
            warnings.append(LoadWarning(
                "kind-override",
                f"{where.name}: every row is non-negative and sums to {'1' if close.all() else '100'} like "
                f"{what}, but kind='logits' was given, so a softmax was applied on top; check this is intended.",
            ))
        return _softmax(X), kind
    dev = (dev1 if kind == "probabilities" else dev100).max()
    if dev > ROW_SUM_TOLERANCE:
        notes.append(_renormalised_note(where, float(dev if kind == "probabilities" else 100 * dev),
                                        float16, "1" if kind == "probabilities" else "100"))
    return _reading(X, kind), kind


def _label_texts(y, where):
    """The labels as stripped strings (None for a numeric array)."""
    if not (y.dtype.kind == "O" or y.dtype.kind in "US"):
        return None
    texts = []
    for i, v in enumerate(y.tolist()):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            raise InputError(f"{where.at(i)}: the label is missing; every row needs one.")
        if isinstance(v, bytes):
            v = formats.decode_text(v, where.at(i))
        elif isinstance(v, float) and v.is_integer():
            v = int(v)
        texts.append(str(v).strip())
    return texts


def _binary_names(y, y_where, positive, parsed, notes):
    """(class names, explicit) of one probability column: (negative, positive)."""
    column = parsed.score_names[0] if parsed.score_names else None
    texts = _label_texts(y, y_where)
    if texts is None:  # numeric labels: 1 is the positive class unless told otherwise
        if positive is None or str(positive).strip() == "1":
            return ("0", "1"), False
        if str(positive).strip() == "0":
            return ("1", "0"), True
        raise InputError(
            f"positive={quoted(positive)} is not a label value: the labels are numbers, so the positive "
            "class is 0 or 1.", option="positive",
        )
    values = list(dict.fromkeys(texts))
    if all(_INT_NAME.fullmatch(v) for v in values) and positive is None:
        return ("0", "1"), False  # indices written as text: matched as indices
    if len(values) > 2:
        raise InputError(
            f"one probability column describes two classes, but {y_where.name} holds {len(values)} different "
            f"labels ({columns.preview(sorted(values))}). Give one probability column per class "
            "(prob_columns=[...]), or check the label column.", option="prob_columns",
        )
    if positive is not None:
        pos = str(positive).strip()
        if pos not in values:
            low = {v.lower(): v for v in values}
            if pos.lower() not in low:
                raise InputError(
                    f"positive={quoted(positive)} is not one of the labels {columns.preview(sorted(values))}; "
                    "choose one of them.", option="positive",
                )
            pos = low[pos.lower()]
        guessed = False
    else:
        named = columns.class_name_of_column(column) if column else None
        match = [v for v in values if named is not None and v.lower() == named.lower()]
        if not match:
            about = f"column '{column}'" if column else f"{parsed.where.name}"
            raise InputError(
                f"the labels in {y_where.name} are {columns.preview(sorted(values))}, and {about} does not say "
                "which of them it is the probability of. Which class is positive?",
                option="positive", fix="Pass positive=... (one of the labels).",
            )
        pos, guessed = match[0], True
    others = [v for v in values if v != pos]
    if not others:
        raise InputError(
            f"every label is {user(pos)!r}, so the other class has no name; pass class_names=[negative, "
            f"{quoted(pos)}].", option="class_names",
        )
    if guessed:
        notes.append(LoadNote("positive", f"column '{column}' was read as the probability of {user(pos)!r} (from its "
                              f"name); {user(others[0])!r} is the other class"))
    return (user(others[0]), user(pos)), True


def _class_names(class_names, parsed, d, binary):
    from_file = parsed.class_names if not binary else None
    if class_names is not None:
        if isinstance(class_names, (str, bytes)):
            raise InputError(
                f"class_names must be a list of names, one per class, not the single string "
                f"{quoted(class_names)}.", option="class_names",
            )
        try:
            given = tuple(str(c) for c in class_names)
        except TypeError:
            raise InputError("class_names must be a list of names, one per class.", option="class_names") from None
        if len(given) != d:
            extra = (" (a single probability column is the positive class of 2 classes)"
                     if binary else "")
            raise InputError(
                f"class_names has {len(given)} names but the predictions have {d} classes"
                f"{extra}; give exactly one name per class, in column order.", option="class_names",
            )
        _no_duplicates(given, "class_names")
        if from_file is not None and given not in (from_file, parsed.score_names):
            k = next(k for k in range(d) if given[k] != from_file[k])
            raise InputError(
                f"class_names do not match {parsed.class_names_origin}: class {k} is "
                f"{user(given[k])!r} in class_names but {user(from_file[k])!r} in the file (file order: "
                f"{columns.preview(from_file)}). Drop class_names, or make them match the "
                "columns.", option="class_names",
            )
        return given
    if from_file is not None:
        if len(from_file) != d:
            raise InputError(
                f"{parsed.class_names_origin} has {len(from_file)} names but the predictions "
                f"have {d} classes."
            )
        _no_duplicates(from_file, parsed.class_names_origin)
        return tuple(from_file)
    return tuple(str(k) for k in range(d))


def _no_duplicates(names, what):
    seen = {}
    for k, nm in enumerate(names):
        if nm in seen:
            raise InputError(
                f"{what} names class {user(nm)!r} twice (positions {seen[nm]} and {k}); class names "
                "must be distinct."
            )
        seen[nm] = k


_INT_NAME = re.compile(r"[+-]?\d+")


def _labels(y, where, names, d, *, explicit_names):
    """True labels as fresh int64 indices in [0, d); second value: matched by name."""
    kind = y.dtype.kind
    if kind == "O" or kind in "US":
        return _labels_from_strings(y, where, names, d, explicit_names), False
    if kind == "b":
        y = y.astype(np.int64)
        kind = "i"
    if kind not in "iuf":
        raise InputError(
            f"the labels ({where.name}) have dtype {y.dtype}; give integer class indices or "
            "class names."
        )
    if kind == "f":
        missing = np.isnan(y)
        if missing.any():
            i = int(np.argmax(missing))
            raise InputError(f"{where.at(i)}: the label is missing; every row needs one.")
        frac = ~np.isfinite(y) | (y != np.round(y))
        if frac.any():
            i = int(np.argmax(frac))
            raise InputError(
                f"{where.at(i)}: the label {float(y[i])!r} is not an integer; labels must be class "
                f"indices 0..{d - 1} or class names."
            )
    by_name = (
        explicit_names
        and all(_INT_NAME.fullmatch(nm) for nm in names)
        and names != tuple(str(k) for k in range(d))
    )
    if by_name:
        lookup = {int(nm): k for k, nm in enumerate(names)}
        flat = y.astype(np.float64) if kind == "f" else y
        out = np.empty(y.shape[0], dtype=np.int64)
        for i, v in enumerate(flat.tolist()):
            k = lookup.get(int(v))
            if k is None:
                raise InputError(
                    f"{where.at(i)}: label {int(v)} is not one of the classes, which are "
                    f"named by number: {columns.preview(names)}. Labels are matched to those "
                    "names; fix the label or the column names."
                )
            out[i] = k
        return out, True
    outside = (y < 0) | (y >= d)
    if outside.any():
        i = int(np.argmax(outside))
        v = int(y[i]) if kind != "f" or abs(y[i]) < 2**63 else y[i]
        raise InputError(
            f"{where.at(i)}: label {v} is outside the classes 0..{d - 1} (there are {d} "
            "classes); labels must be 0-based class indices."
        )
    return y.astype(np.int64), False


def _labels_from_strings(y, where, names, d, explicit_names):
    import pandas as pd

    texts = _label_texts(y, where)
    idx = pd.Index(names).get_indexer(texts)
    unknown = idx < 0
    for i in np.flatnonzero(unknown):
        # A column of indices with one typo is read as text by pandas; indices that are
        # not also class names keep meaning indices, so the typo is what gets reported.
        if not _INT_NAME.fullmatch(texts[i]):
            break
        k = int(texts[i])
        if not 0 <= k < d:
            raise InputError(
                f"{where.at(i)}: label {k} is outside the classes 0..{d - 1} (there are {d} "
                "classes); labels must be 0-based class indices or class names."
            )
        idx[i] = k
        unknown[i] = False
    if unknown.any():
        i = int(np.argmax(unknown))
        if explicit_names:
            hint = f"the classes are {columns.preview(names)}; fix the label or the class names"
        else:
            hint = (
                "the file does not name its classes, so labels must be indices "
                f"0..{d - 1}; pass class_names=[...] in column order to use names"
            )
        raise InputError(f"{where.at(i)}: label {user(texts[i])!r} is not a known class: {hint}.",
                         option="class_names")
    return idx.astype(np.int64)


def _warnings(probs, labels, names, *, explicit_names):
    out = []
    n, d = probs.shape
    counts = np.bincount(labels, minlength=d)
    absent = np.flatnonzero(counts == 0)

    def label(k):
        return f"{k} ('{user(names[k])}')" if explicit_names else f"{k}"

    if len(absent) == 1:
        k = int(absent[0])
        out.append(LoadWarning(
            "absent-class",
            f"class {label(k)} never occurs in the labels: its calibration cannot be assessed",
        ))
    elif len(absent) > 1:
        shown = ", ".join(label(int(k)) for k in absent[:8]) + (", ..." if len(absent) > 8 else "")
        out.append(LoadWarning(
            "absent-class",
            f"{len(absent)} classes never occur in the labels ({shown}): their calibration "
            "cannot be assessed",
        ))
    if n < SMALL_N:
        per_fold = round(n * (1 - _TEST_FRACTION) / _FOLDS)
        out.append(LoadWarning(
            "small-n",
            f"with n = {n} rows the 80/20 split and {_FOLDS} folds leave about {per_fold} rows "
            "per fold; estimates will be noisy",
        ))
    saturated = float(np.mean((probs == 0.0) | (probs == 1.0)))
    if saturated > SATURATED_FRACTION:
        out.append(LoadWarning(
            "saturated",
            f"{saturated:.0%} of the probabilities are exactly 0 or 1 (rounded or hard "
            "predictions?); one confident mistake dominates log-based scores, and binned "
            "estimates have little to work with",
        ))
    return out
