"""Load a classifier's predictions and true labels from the formats users actually have.

:func:`load_predictions` is the single entry point. It accepts a path, bytes, a file-like
object (such as a Streamlit upload), a NumPy array or a pandas DataFrame, and returns an
immutable :class:`Predictions`. Anything it cannot use is refused with
:class:`~calibdash.errors.InputError`, whose message says what is wrong, where, and how to
fix it; no other exception escapes. File formats are read by :mod:`calibdash.io.formats`.

Messages mark the text they quote from the input (:func:`calibdash.display.text.user`), so that the
app can show it literally; :class:`Predictions` holds plain strings.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

from calibdash.core.simplex import ROW_SUM_TOLERANCE, softmax
from calibdash.display.text import quoted, user
from calibdash.errors import CalibdashError, InputError, LoadWarning
from calibdash.io import formats

__all__ = ["Predictions", "load_predictions", "MAX_FILE_BYTES", "MAX_MEMORY_BYTES"]

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

_KINDS = ("auto", "logits", "probabilities")
_HASH_TAG = b"calibdash.Predictions.v1\0"


def _freeze(a, dtype):
    a = np.array(a, dtype=dtype, order="C", copy=True)
    a.flags.writeable = False
    return a


def canonical_sha256(probs, labels):
    """SHA-256 of the canonical bytes of ``probs`` (float64) and ``labels`` (int64).

    Little-endian, C order, preceded by the shape, so equal numbers give equal hashes
    whatever file format or memory layout they came from.
    """
    probs = np.ascontiguousarray(probs, dtype="<f8")
    labels = np.ascontiguousarray(labels, dtype="<i8")
    h = hashlib.sha256(_HASH_TAG)
    h.update(np.array(probs.shape, dtype="<i8").tobytes())
    h.update(probs.tobytes())
    h.update(labels.tobytes())
    return h.hexdigest()


@dataclass(frozen=True, eq=False, repr=False)
class Predictions:
    """Predicted class probabilities and true labels, validated and read-only.

    Build it with :func:`load_predictions`; constructing it directly skips every check
    on the numbers.

    Attributes
    ----------
    probs : ndarray of shape (n, d), float64
        Predicted probabilities; every row is non-negative and sums to 1 to float64
        precision. Read-only.
    labels : ndarray of shape (n,), int64
        True class indices in ``[0, d)``. Read-only.
    class_names : tuple of str
        One name per column of ``probs`` (``"0"``, ``"1"``, ... when none were given).
    kind : {"logits", "probabilities"}
        What the input numbers were.
    kind_detected : bool
        True if ``kind`` was detected from the numbers, False if the caller said so.
    source_name : str
        The file (or argument) the predictions came from, for display (a plain ``str``;
        show it as user text).
    warnings : tuple of str
        Reservations about the data (:class:`~calibdash.errors.LoadWarning` strings,
        each with a ``code``).
    notes : tuple of str
        Neutral remarks on how the input was interpreted.
    sha256 : str
        Hex digest of the canonical bytes of ``probs``, ``labels`` and their shape; equal
        for equal numbers whatever the file format.
    """

    probs: np.ndarray
    labels: np.ndarray
    class_names: tuple
    kind: str
    kind_detected: bool = True
    source_name: str = "the input"
    warnings: tuple = ()
    notes: tuple = ()
    sha256: str = field(init=False)

    def __post_init__(self):
        probs = self.probs
        if not (isinstance(probs, np.ndarray) and probs.dtype == np.float64
                and probs.flags.c_contiguous and not probs.flags.writeable):
            probs = _freeze(probs, np.float64)
        labels = self.labels
        if not (isinstance(labels, np.ndarray) and labels.dtype == np.int64
                and labels.flags.c_contiguous and not labels.flags.writeable):
            labels = _freeze(labels, np.int64)
        object.__setattr__(self, "probs", probs)
        object.__setattr__(self, "labels", labels)
        # str() of a marked name (calibdash.display.text.UserText) is the plain string: the marks
        # belong to messages, not to the data.
        object.__setattr__(self, "class_names", tuple(str(c) for c in self.class_names))
        object.__setattr__(self, "source_name", str(self.source_name))
        object.__setattr__(self, "warnings", tuple(self.warnings))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "sha256", canonical_sha256(probs, labels))

    def __reduce__(self):
        # Unpickled arrays come back writeable (st.cache_data pickles return values), so
        # rebuild through the constructor, which freezes them and recomputes the hash.
        return (
            Predictions,
            (self.probs, self.labels, self.class_names, self.kind, self.kind_detected,
             self.source_name, self.warnings, self.notes),
        )

    @property
    def n(self):
        """Number of rows (samples)."""
        return int(self.probs.shape[0])

    @property
    def d(self):
        """Number of classes."""
        return int(self.probs.shape[1])

    @property
    def accuracy(self):
        """Fraction of rows whose most probable class is the true label."""
        return float(np.mean(np.argmax(self.probs, axis=1) == self.labels))

    @property
    def mean_confidence(self):
        """Mean of the largest probability of each row."""
        return float(np.mean(np.max(self.probs, axis=1)))

    def __repr__(self):
        return (
            f"Predictions(n={self.n}, d={self.d}, kind={self.kind!r}, "
            f"source_name={self.source_name!r}, sha256='{self.sha256[:12]}...')"
        )

    def summary(self):
        """A few human-readable lines describing what was loaded.

        Returns
        -------
        str
            Size, how the numbers were interpreted, accuracy and mean confidence, class
            balance, and any warnings.
        """
        how = "detected" if self.kind_detected else "as told"
        if self.kind == "probabilities":
            conv = "rows renormalised to sum to 1 at float64 precision"
        else:
            conv = "converted to probabilities with a float64 softmax"
        counts = np.bincount(self.labels, minlength=self.d)
        lo, hi = int(np.argmin(counts)), int(np.argmax(counts))
        present = int(np.count_nonzero(counts))
        default = self.class_names == tuple(str(k) for k in range(self.d))

        def cls(k):
            return f"class {k}" if default else f"class {k} ({self.class_names[k]!r})"

        if counts[lo] == counts[hi]:
            balance = f"classes: all {self.d} equally frequent in the labels ({counts[hi] / self.n:.1%} each)"
        else:
            balance = (
                f"classes: {present} of {self.d} occur in the labels; most frequent {cls(hi)} "
                f"{counts[hi] / self.n:.1%}, least frequent {cls(lo)} {counts[lo] / self.n:.1%}"
            )
        lines = [
            f"{self.source_name}: {self.n:,} rows x {self.d} classes",
            f"input: {self.kind} ({how}); {conv}",
            f"accuracy {self.accuracy:.2%}, mean confidence {self.mean_confidence:.2%}",
            balance,
        ]
        lines += [f"note: {s}" for s in self.notes]
        lines += [f"warning: {s}" for s in self.warnings] or ["warnings: none"]
        return "\n".join(lines)


# --------------------------------------------------------------------------- entry point


def load_predictions(
    source,
    labels=None,
    *,
    kind="auto",
    class_names=None,
    label_column=None,
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
        ``.txt``, ``.parquet``); bytes and file objects by their content (a file object's
        ``name``, e.g. a Streamlit upload's, is used for the suffix and in messages). A 2-D
        array is rows x classes; a 1-D array or single column is the probability (or
        logit) of the positive class of a binary problem. Tables (CSV/TSV/Parquet/
        DataFrame) hold one column per class and a label column.
    labels : str, path-like, bytes, file-like or array-like, optional
        True labels, when ``source`` does not hold them: integers in ``[0, d)`` or class
        names. A file may be ``.npy``, ``.npz``, a one-column text file or Parquet.
    kind : {"auto", "logits", "probabilities"}, default="auto"
        What the numbers are. ``"auto"`` detects probabilities (non-negative rows summing
        to 1 within ``calibdash.core.simplex.ROW_SUM_TOLERANCE``) and treats anything else
        as logits.
    class_names : sequence of str, optional
        One name per class, in column order. Must match a table's class-column names when
        the table has a header; needed to read labels given as names when the file does
        not name its classes.
    label_column : str or int, optional
        Column holding the labels in a table, by name or 0-based position. Default: the
        column named label, labels, y, target, targets, ground_truth, class or true_label;
        for a headerless file, the last column (unless ``labels`` is given).
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
        Refuse arrays that would need more memory than this as float64, judged from the
        file's declared shape before anything is allocated. Default:
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


def _check_options(kind, header, max_bytes, max_memory_bytes):
    if not isinstance(kind, str) or kind not in _KINDS:
        raise InputError(f"kind must be one of {', '.join(map(repr, _KINDS))}; got {kind!r}.")
    if header is not None and not isinstance(header, bool):
        raise InputError(f"header must be True, False or None (sniff); got {header!r}.")
    for opt, value in (("max_bytes", max_bytes), ("max_memory_bytes", max_memory_bytes)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
            raise InputError(f"{opt} must be a positive integer number of bytes; got {value!r}.")


def _load(source, labels, kind, class_names, *, label_column, header, npz_keys, name,
          max_bytes, max_memory_bytes):
    import pandas as pd

    _check_options(kind, header, max_bytes, max_memory_bytes)
    labels_given = labels is not None
    if isinstance(source, pd.DataFrame):
        shown = user(name) if name else "the DataFrame"
        parsed = formats.parse_dataframe(
            source, shown, label_column=label_column, labels_separate=labels_given
        )
    elif formats.is_file_source(source):
        blob = formats.read_blob(source, name=name, default_name="the predictions data",
                                 max_bytes=max_bytes)
        shown = blob.name
        parsed = formats.parse_predictions(
            blob, header=header, label_column=label_column, npz_keys=npz_keys,
            labels_separate=labels_given, max_memory_bytes=max_memory_bytes,
        )
    else:
        shown = user(name) if name else "the predictions array"
        if label_column is not None:
            raise InputError("label_column applies to tables (CSV/TSV/Parquet/DataFrame), not arrays.")
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
            "them in a 'label' column."
        )
    return _interpret(parsed, y, y_where, kind, class_names, shown)


def _as_array(obj, shown, max_memory_bytes):
    """An in-memory array-like as an ndarray, refusing what cannot be numbers or labels."""
    import pandas as pd

    if isinstance(obj, (pd.Series, pd.Index)):
        obj = formats.column_values(pd.Series(obj))
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
        return formats.parse_labels(blob, max_memory_bytes=max_memory_bytes)
    return _as_array(labels, "the labels array", max_memory_bytes), formats.Where("the labels array")


# --------------------------------------------------------------------------- interpretation


def _interpret(parsed, y, y_where, kind, class_names, shown):
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

    X = np.ascontiguousarray(X.reshape(n, -1), dtype=np.float64)
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = divmod(int(np.argmax(bad.ravel())), X.shape[1])
        raise InputError(
            f"{where.cell(i, j)} is {X[i, j]}: NaN and infinite values cannot be assessed. "
            "Fix or drop that row (and its label)."
        )

    warnings = list(parsed.warnings)
    # Sums of huge logits may overflow to inf; that only marks them as not probabilities.
    with np.errstate(over="ignore", invalid="ignore"):
        if binary:
            probs, kind_out = _binary(X[:, 0], kind, where, warnings)
        else:
            probs, kind_out = _multiclass(X, kind, where, warnings)
    d = probs.shape[1]

    names = _class_names(class_names, parsed, d, binary)
    explicit = class_names is not None or (parsed.class_names is not None and not binary)
    labels, by_name = _labels(y, y_where, names, d, explicit_names=explicit)
    notes = []
    if by_name:
        notes.append("integer labels were matched to the class names (the columns are named by number)")
    warnings += _warnings(probs, labels, names, explicit_names=explicit)
    probs.flags.writeable = False
    labels.flags.writeable = False
    return Predictions(
        probs=probs, labels=labels, class_names=names, kind=kind_out,
        kind_detected=kind == "auto", source_name=shown, warnings=warnings, notes=notes,
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


def _binary(z, kind, where, warnings):
    in01 = (z >= 0) & (z <= 1)
    if kind == "probabilities" and not in01.all():
        i = int(np.argmin(in01))
        raise InputError(
            f"{where.at(i)} is {z[i]:.6g}, outside [0, 1], so this single column cannot be "
            "the probability of the positive class (kind='probabilities' was given). If the "
            "values are logits, pass kind='logits' or kind='auto'."
        )
    if kind == "probabilities" or (kind == "auto" and in01.all()):
        return _normalise(np.column_stack([1.0 - z, z])), "probabilities"
    if kind == "logits" and in01.all():
        warnings.append(LoadWarning(
            "kind-override",
            f"{where.name}: every value lies in [0, 1] like a probability, but kind='logits' "
            "was given, so they were passed through a sigmoid; check this is intended.",
        ))
    return _softmax(np.column_stack([np.zeros_like(z), z])), "logits"


def _multiclass(X, kind, where, warnings):
    neg = X < 0
    row_neg = neg.any(axis=1)
    sums = X.sum(axis=1)
    off = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
    looks_prob = not row_neg.any() and not off.any()
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
                "or, if these numbers are logits, pass kind='logits'."
            )
        if off.any():
            i = int(np.argmax(off))
            raise InputError(
                f"{where.row(i)} sums to {sums[i]:.9g}, not 1 (tolerance {ROW_SUM_TOLERANCE:g}), "
                "so these rows are not probabilities (kind='probabilities' was given). If they "
                "are logits or scores, pass kind='logits' or kind='auto'."
            )
    if kind == "probabilities" or (kind == "auto" and looks_prob):
        return _normalise(X), "probabilities"
    if kind == "logits" and looks_prob:
        warnings.append(LoadWarning(
            "kind-override",
            f"{where.name}: every row is non-negative and sums to 1 like probabilities, but "
            "kind='logits' was given, so a softmax was applied on top; check this is intended.",
        ))
    elif kind == "auto" and not row_neg.any() and np.mean(off) < 0.01 and (X <= 1).all():
        i = int(np.argmax(off))
        more = int(off.sum()) - 1
        also = f" (and {more} more row{'s' if more > 1 else ''})" if more else ""
        warnings.append(LoadWarning(
            "kind-doubt",
            f"{where.name}: the numbers look like probabilities except that {where.row(i)}"
            f"{also} does not sum to 1 (sum {sums[i]:.9g}), so all rows were treated as "
            "logits. Pass kind='probabilities' to be told which rows are wrong.",
        ))
    return _softmax(X), "logits"


def _class_names(class_names, parsed, d, binary):
    from_file = parsed.class_names if not binary else None
    if class_names is not None:
        if isinstance(class_names, (str, bytes)):
            raise InputError(
                f"class_names must be a list of names, one per class, not the single string "
                f"{quoted(class_names)}."
            )
        try:
            given = tuple(str(c) for c in class_names)
        except TypeError:
            raise InputError("class_names must be a list of names, one per class.") from None
        if len(given) != d:
            extra = (" (a single probability column is the positive class of 2 classes)"
                     if binary else "")
            raise InputError(
                f"class_names has {len(given)} names but the predictions have {d} classes"
                f"{extra}; give exactly one name per class, in column order."
            )
        _no_duplicates(given, "class_names")
        if from_file is not None and given != from_file:
            k = next(k for k in range(d) if given[k] != from_file[k])
            raise InputError(
                f"class_names do not match {parsed.class_names_origin}: class {k} is "
                f"{user(given[k])!r} in class_names but {user(from_file[k])!r} in the file (file order: "
                f"{formats.preview(from_file)}). Drop class_names, or make them match the "
                "columns."
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
                    f"named by number: {formats.preview(names)}. Labels are matched to those "
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

    texts = []
    for i, v in enumerate(y.tolist()):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            raise InputError(f"{where.at(i)}: the label is missing; every row needs one.")
        if isinstance(v, bytes):
            v = formats.decode_text(v, where.at(i))
        elif isinstance(v, float) and v.is_integer():
            v = int(v)
        texts.append(str(v).strip())
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
            hint = f"the classes are {formats.preview(names)}; fix the label or the class names"
        else:
            hint = (
                "the file does not name its classes, so labels must be indices "
                f"0..{d - 1}; pass class_names=[...] in column order to use names"
            )
        raise InputError(f"{where.at(i)}: label {user(texts[i])!r} is not a known class: {hint}.")
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
