"""File formats accepted by :func:`calibdash.load_predictions`.

This module turns a *source* (path, bytes, file-like object, array or DataFrame) into
raw numbers plus enough bookkeeping to name a line, row or column in an error message.
It never decides what the numbers mean (logits or probabilities, valid labels or not);
:mod:`calibdash.io.loading` does that.

Safety rules kept here:

* pickles are never loaded (``allow_pickle`` is never set): a pickle can run arbitrary
  code when loaded;
* ``.npy`` headers (also inside ``.npz`` archives) are parsed and checked against the
  memory budget *before* any array is allocated, so a 100-byte file that declares a
  terabyte array is refused rather than attempted;
* text from the source (its name, column names, array keys, cell values) is marked with
  :func:`calibdash.text.user` where it enters a message, so that the app shows it
  literally: a source's display name and its column names are marked when they are read,
  and every f-string that quotes them carries the mark.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from calibdash.errors import InputError, LoadNote, LoadWarning
from calibdash.limits import TABLE_COLUMNS
from calibdash.text import quoted, user

__all__ = [
    "LABEL_COLUMN_NAMES",
    "PREDICTION_KEYS",
    "LABEL_KEYS",
    "CLASS_NAME_KEYS",
    "PICKLE_REASON",
    "Where",
    "Parsed",
    "class_name_of_column",
    "class_names_of_columns",
    "is_text_column",
    "inspect_table",
    "read_table",
    "is_table",
    "read_blob",
    "read_regular_file",
    "parse_predictions",
    "parse_labels",
]

# Column names (case-insensitive) taken to hold the true labels of a table.
LABEL_COLUMN_NAMES = (
    "label", "labels", "y", "target", "targets", "ground_truth", "class", "true_label",
    "y_true", "true_class", "outcome", "diagnosis", "truth", "gt",
)
# A probability (or logit) column named after its class: p_cat, prob-cat, proba_cat,
# probability cat, cat_prob, cat_proba, P(cat), p(cat), logit_cat, cat_logit.
_PROB_WORDS = r"(?:p|prob|proba|probability|pred_proba|logit|logits|score)"
_PROB_NAME = re.compile(
    rf"{_PROB_WORDS}[ _.:-]+(.+)|(.+?)[ _.:-]+{_PROB_WORDS}|[pP]\((.+)\)", re.IGNORECASE
)
# .npz key names (case-insensitive) by role; netcal uses predictions + ground_truth.
PREDICTION_KEYS = (
    "predictions", "prediction", "probs", "probas", "proba", "probabilities", "logits",
    "scores", "y_prob", "y_proba", "y_score", "outputs",
)
LABEL_KEYS = (
    "labels", "label", "ground_truth", "gt", "y", "y_true", "targets", "target",
    "true_labels", "true_label",
)
CLASS_NAME_KEYS = ("class_names", "classes", "label_names")

PICKLE_REASON = "loading a pickle can run arbitrary code"

_PICKLE_SUFFIXES = {".pkl", ".pickle", ".joblib", ".pt", ".pth", ".ckpt", ".sav"}
_TEXT_SUFFIXES = {".csv", ".tsv", ".txt", ".dat", ".tab", ""}
_UNSUPPORTED = {
    ".xlsx": "an Excel workbook", ".xls": "an Excel workbook", ".json": "JSON",
    ".h5": "HDF5", ".hdf5": "HDF5", ".feather": "Feather", ".arrow": "Arrow IPC",
    ".mat": "a MATLAB file",
}
_FORMATS_HELP = ".npy (+ labels), .npz, .csv, .tsv or .parquet"
# Headers larger than this are refused by numpy as well; reading a bit more than the
# limit is enough to parse any header numpy itself would accept.
_NPY_HEADER_READ = 16 + 10_000 + 64


# --------------------------------------------------------------------------- locations


class Where:
    """Names rows and columns of one array in the terms the user knows.

    Parameters
    ----------
    name : str
        The file (or argument) the array came from, e.g. ``"preds.csv"``.
    lines : callable or None
        Maps a 0-based data row to its 1-based line in a text file; None for binary
        formats and arrays, whose rows are reported 0-based.
    columns : sequence of str or None
        Column names as in the file's header; None when there is no header.
    positions : sequence of int or None
        For each column of the array, its 0-based position in the file.
    """

    def __init__(self, name, *, lines=None, columns=None, positions=None):
        self.name = name
        self._lines = lines
        self._columns = columns
        self._positions = positions

    def row(self, i):
        if self._lines is not None:
            return f"line {self._lines(i)} of {self.name}"
        return f"row {i} (0-based) of {self.name}"

    def col(self, j):
        if self._columns is not None:
            return f"column '{user(self._columns[j])}'"
        pos = self._positions[j] if self._positions is not None else j
        return f"column {pos} (0-based)"

    def cell(self, i, j):
        return f"{self.row(i)}, {self.col(j)}"

    def at(self, i):
        """Row ``i`` of a one-column array: with its column only if the file names one."""
        if self._columns is None and self._positions is None:
            return self.row(i)
        return self.cell(i, 0)


@dataclass
class Parsed:
    """Raw content of a predictions source, before any interpretation."""

    scores: np.ndarray
    where: Where
    labels: np.ndarray | None = None
    labels_where: Where | None = None
    class_names: tuple[str, ...] | None = None
    class_names_origin: str = ""
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    score_names: tuple[str, ...] | None = None  # the header names of the class columns
    groups: dict = field(default_factory=dict)  # grouping column -> read-only str array


@dataclass
class Blob:
    data: bytes
    name: str
    suffix: str


# --------------------------------------------------------------------------- sources


def _fmt_bytes(n):
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def _too_big(name, size, max_bytes, exact=True):
    what = f"is {_fmt_bytes(size)}" if exact else "is larger than"
    over = ", over the" if exact else " the"
    return InputError(
        f"{name} {what}{over} {_fmt_bytes(max_bytes)} file-size limit. "
        "Load a subset of the rows, or raise the limit with max_bytes=... if the machine "
        "has the memory for it."
    )


def describe(obj, name=None, default="the input"):
    """Best-effort display name of a source, marked as user text (``default`` is not); never raises."""
    try:
        if name:
            return user(name)
        if isinstance(obj, (str, os.PathLike)):
            return user(Path(os.fsdecode(obj)).name or str(obj))
        fname = getattr(obj, "name", None)
        if isinstance(fname, str) and fname:
            return user(Path(fname).name)
    except Exception:  # a display name must never be the reason a load fails
        pass
    return default


def is_file_source(obj):
    return isinstance(obj, (str, os.PathLike, bytes, bytearray, memoryview)) or (
        hasattr(obj, "read") and callable(obj.read)
    )


#: What a path that is not a regular file is, as the loader's refusal says it.
_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode):
    return next((what for test, what in _FILE_TYPES if test(mode)), "not a regular file")


def read_regular_file(path, *, max_bytes, too_big, what="a predictions file"):
    """The bytes of the regular file at ``path``, refused before reading if larger than ``max_bytes``.

    Only regular files are read: a named pipe would block for ever, a device such as
    ``/dev/zero`` never ends, a directory is not data. The type is checked on the path
    before it is opened, and again on the open descriptor (opened without blocking), so
    that a path swapped in between cannot slip through.

    Parameters
    ----------
    path : path-like
    max_bytes : int
    too_big : callable
        ``too_big(size, exact)`` returns the exception for a file over ``max_bytes``
        (``exact`` is False when the size is known only to exceed the limit).
    what : str
        What the caller expects at ``path``, for the refusal of anything else.

    Raises
    ------
    InputError
        For a missing path, one that is not a regular file, or one that cannot be read.
    """
    path = Path(os.fsdecode(path))
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputError(
            f"{user(path)}: no such file. Check the path (relative paths start from {user(Path.cwd())})."
        ) from None
    except OSError as e:
        raise InputError(f"cannot open {user(path)}: {e.strerror or e}. Check the path.") from None
    if not stat.S_ISREG(st.st_mode):
        hint = f"; give the path of {what} in it" if stat.S_ISDIR(st.st_mode) else f"; give the path of {what}"
        raise InputError(f"{user(path)} is {_not_regular(st.st_mode)}, not a regular file{hint}.")
    if st.st_size > max_bytes:
        raise too_big(st.st_size, True)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise InputError(f"cannot read {user(path)}: {e.strerror or e}.") from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced since the check above
            raise InputError(f"{user(path)} is {_not_regular(mode)}, not a regular file; give the path of {what}.")
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise InputError(f"cannot read {user(path)}: {e.strerror or e}.") from None
    if len(data) > max_bytes:  # it grew since the check above
        raise too_big(len(data), False)
    return data


def read_blob(obj, *, name, default_name, max_bytes):
    """Read a path, bytes or file-like object into memory, enforcing ``max_bytes``.

    A path must name a regular file (:func:`read_regular_file`).
    """
    if isinstance(obj, (str, os.PathLike)):
        if isinstance(obj, str) and ("\n" in obj or len(obj) > 4096):
            raise InputError(
                f"{default_name} is a long string with line breaks, not a file path. To pass "
                "the content of a file, give bytes (text.encode()) or a file object."
            )
        path = Path(os.fsdecode(obj))
        shown = user(name or path.name or str(path))
        data = read_regular_file(path, max_bytes=max_bytes,
                                 too_big=lambda size, exact: _too_big(shown, size, max_bytes, exact=exact),
                                 what="a labels file" if default_name == "the labels data" else "a predictions file")
        suffix_from = path.name
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        shown = user(name) if name else default_name
        suffix_from = name or ""
    else:
        shown = describe(obj, name, default_name)
        try:
            if getattr(obj, "seekable", None) and obj.seekable():
                # Streamlit hands the same UploadedFile to every rerun, positioned
                # wherever the previous read left it.
                obj.seek(0)
            data = obj.read(max_bytes + 1)
        except Exception as e:  # any file-like can fail in its own way
            raise InputError(f"cannot read {shown}: {type(e).__name__}: {e}.") from None
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not isinstance(data, (bytes, bytearray)):
            raise InputError(
                f"reading {shown} returned {type(data).__name__}, not bytes; open the file "
                "in binary mode ('rb')."
            )
        data = bytes(data)
        fname = getattr(obj, "name", None)
        suffix_from = name or (fname if isinstance(fname, str) else "")
    if len(data) > max_bytes:
        # A stream is read only up to the limit, so its full size is unknown.
        raise _too_big(shown, len(data), max_bytes, exact=isinstance(obj, (bytes, bytearray, memoryview)))
    suffix = Path(suffix_from).suffix.lower() if suffix_from else ""
    return Blob(data, shown, suffix)


def sniff(data):
    """Guess the format of ``data`` from its first bytes."""
    if not data or data.isspace():  # isspace stops at the first visible byte; strip would copy
        return "empty"
    if data.startswith(b"\x93NUMPY"):
        return "npy"
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if data.startswith(b"PAR1"):
        return "parquet"
    if len(data) >= 2 and data[0] == 0x80 and 2 <= data[1] <= 5:
        return "pickle"
    if data.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")):
        return "compressed"
    if data.startswith(b"\x89HDF\r\n\x1a\n"):
        return "hdf5"
    if b"\x00" in data[:65536]:
        return "binary"
    return "text"


_LOOKS_LIKE = {
    "npy": "a NumPy .npy file", "zip": "a zip archive (.npz)", "parquet": "a Parquet file",
    "text": "text (CSV/TSV)", "binary": "an unrecognised binary format",
    "compressed": "a compressed file", "hdf5": "an HDF5 file", "empty": "empty",
}


def _refuse_pickle(name):
    return InputError(
        f"{name} is a Python pickle; calibdash refuses to load pickles because {PICKLE_REASON}. "
        "Save the predictions with numpy.save / numpy.savez (numeric arrays) or as CSV/Parquet."
    )


def _format_of(blob, what="predictions"):
    """Decide how to read ``blob``: suffix first (when it names a format), else content."""
    found = sniff(blob.data)
    if blob.suffix in _PICKLE_SUFFIXES or found == "pickle":
        raise _refuse_pickle(blob.name)
    if found == "empty":
        raise InputError(f"{blob.name} is empty; it holds no {what}. Check the export step.")
    if found == "compressed":
        raise InputError(
            f"{blob.name} is compressed (gzip/bz2/xz/zstd); decompress it first and load the "
            f"{_FORMATS_HELP} file inside."
        )
    if found == "hdf5":
        raise InputError(f"{blob.name} is an HDF5 file, which is not supported; save {_FORMATS_HELP}.")
    expected = {".npy": "npy", ".npz": "zip", ".zip": "zip", ".parquet": "parquet", ".pq": "parquet"}
    if blob.suffix in expected:
        want = expected[blob.suffix]
        if found != want:
            raise InputError(
                f"{blob.name} is named {user(blob.suffix)} but its content looks like "
                f"{_LOOKS_LIKE.get(found, found)}. Rename it to match its content, or export it "
                "again."
            )
        return want
    if blob.suffix in _UNSUPPORTED and found in ("zip", "binary", "text"):
        raise InputError(
            f"{blob.name} looks like {_UNSUPPORTED[blob.suffix]}, which is not supported; "
            f"save the predictions as {_FORMATS_HELP}."
        )
    if found == "binary":
        raise InputError(
            f"{blob.name} is not in a recognised format (binary content that is not .npy, .npz "
            f"or Parquet); save the predictions as {_FORMATS_HELP}."
        )
    return found


# --------------------------------------------------------------------------- .npy / .npz


@dataclass
class _NpyHeader:
    shape: tuple
    fortran: bool
    dtype: np.dtype
    offset: int


def _check_dtype(dtype, where):
    if dtype.hasobject:
        raise InputError(
            f"{where} holds Python objects (dtype {dtype}), which numpy stores as a pickle; "
            f"calibdash refuses to load it because {PICKLE_REASON}. Save a plain numeric array "
            "(e.g. np.save(path, np.asarray(P, dtype=np.float64)))."
        )
    if dtype.kind not in "biufUS" or dtype.itemsize == 0:
        raise InputError(
            f"{where} holds values of dtype {dtype}; save plain numbers (float or int) or, for "
            "labels, strings."
        )


def _parse_npy_header(head, where, max_memory_bytes, available):
    """Validate an .npy header read from ``head``.

    ``available`` is the size of the whole file (or zip member), to detect truncation
    before reading; the declared array size is checked against ``max_memory_bytes``.
    """
    f = io.BytesIO(head)
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise InputError(
                f"{where} uses .npy format version {version[0]}.{version[1]}, which calibdash "
                "does not read (numpy only writes it for structured arrays); save a plain "
                "numeric array with np.save."
            )
    except InputError:
        raise
    except Exception as e:  # numpy reports a bad header with several exception types
        raise InputError(
            f"{where} has a malformed .npy header ({type(e).__name__}: {e}); the file is "
            "truncated or corrupted. Save it again with np.save."
        ) from None
    offset = f.tell()
    if any(s < 0 for s in shape):
        raise InputError(f"{where} declares a negative dimension {shape}; the file is corrupted.")
    _check_dtype(dtype, where)
    if len(shape) > 2:
        raise InputError(
            f"{where} has {len(shape)} dimensions (shape {shape}); predictions must be a 2-D "
            "array (rows x classes) and labels a 1-D array. Reshape or select the right slice "
            "before saving."
        )
    size = math.prod(shape)
    declared = size * dtype.itemsize
    needed = size * max(dtype.itemsize, 8)
    if needed > max_memory_bytes:
        raise InputError(
            f"{where} declares shape {shape} of {dtype} ({_fmt_bytes(declared)}), which would "
            f"need about {_fmt_bytes(needed)} in float64, over the memory budget of "
            f"{_fmt_bytes(max_memory_bytes)}. Load fewer rows, or raise max_memory_bytes=... "
            "if the machine has the memory."
        )
    if available is not None and offset + declared > available:
        raise InputError(
            f"{where} is truncated: its header declares shape {shape} of {dtype} "
            f"({declared} bytes of data) but only {max(available - offset, 0)} bytes follow. "
            "Copy or export the file again."
        )
    return _NpyHeader(tuple(int(s) for s in shape), bool(fortran), dtype, offset)


def _npy_array(buf, header):
    if math.prod(header.shape) == 0:
        return np.empty(header.shape, dtype=header.dtype)
    arr = np.frombuffer(buf, dtype=header.dtype, count=math.prod(header.shape), offset=header.offset)
    return arr.reshape(header.shape, order="F" if header.fortran else "C")


def _read_npy(blob, max_memory_bytes):
    header = _parse_npy_header(blob.data[:_NPY_HEADER_READ], blob.name, max_memory_bytes, len(blob.data))
    return _npy_array(blob.data, header)


class _Npz:
    """Lazy view of a .npz archive: member headers are checked before data is read."""

    def __init__(self, blob, max_memory_bytes):
        self.name = blob.name
        self.budget = max_memory_bytes
        try:
            self.zf = zipfile.ZipFile(io.BytesIO(blob.data))
            infos = self.zf.infolist()
        except Exception as e:  # zipfile signals a corrupt archive with many exception types
            raise InputError(
                f"{blob.name} is not a readable .npz/zip archive ({type(e).__name__}: {e}); it "
                "is truncated or corrupted. Save it again with numpy.savez."
            ) from None
        for info in infos:
            if info.filename.lower().endswith((".pkl", ".pickle")):
                raise InputError(
                    f"{blob.name} contains a pickle ('{user(info.filename)}'; PyTorch checkpoints look "
                    f"like this); calibdash refuses to load it because {PICKLE_REASON}. Save "
                    "the predictions with numpy.savez instead."
                )
        # The keys are the archive's own names: marked for the messages that quote them.
        self.infos = {
            user(i.filename[:-4]): i for i in infos if i.filename.endswith(".npy") and not i.is_dir()
        }
        if not self.infos:
            members = ", ".join(repr(user(i.filename)) for i in infos[:8]) or "nothing"
            raise InputError(
                f"{blob.name} is a zip archive without any .npy arrays (it holds {members}); "
                f"save the predictions with numpy.savez, or as {_FORMATS_HELP}."
            )
        self._headers = {}

    def where(self, key):
        return f"{self.name}['{key}']"

    def header(self, key):
        if key not in self._headers:
            info = self.infos[key]
            try:
                with self.zf.open(info) as f:
                    head = f.read(min(info.file_size, _NPY_HEADER_READ))
            except Exception as e:
                raise self._corrupt(key, e) from None
            self._headers[key] = _parse_npy_header(
                head, self.where(key), self.budget, info.file_size
            )
        return self._headers[key]

    def _corrupt(self, key, e):
        return InputError(
            f"{self.where(key)} cannot be read ({type(e).__name__}: {e}); the archive is "
            "corrupted or uses an unsupported compression. Save it again with numpy.savez."
        )

    def array(self, key):
        h = self.header(key)
        size = h.offset + math.prod(h.shape) * h.dtype.itemsize
        try:
            with self.zf.open(self.infos[key]) as f:
                buf = f.read(size)
        except Exception as e:
            raise self._corrupt(key, e) from None
        if len(buf) < size:
            raise InputError(f"{self.where(key)} is truncated; save the archive again.")
        return _npy_array(buf, h)

    def describe(self, keys):
        parts = []
        for k in keys:
            h = self.header(k)
            parts.append(f"'{k}' ({'x'.join(map(str, h.shape)) or 'scalar'} {h.dtype})")
        return ", ".join(parts)


def _role_keys(keys, names):
    return [k for k in keys if k.rsplit("/", 1)[-1].lower() in names]


def _npz_choice(npz_keys):
    """Normalise ``npz_keys`` to (predictions key, labels key).

    ``...`` (Ellipsis) marks a role the caller left to detection; None means "none".
    """
    if npz_keys is None:
        return ..., ...
    if isinstance(npz_keys, dict):
        unknown = set(npz_keys) - {"predictions", "labels"}
        if unknown:
            raise InputError(
                f"npz_keys has unknown entries {sorted(unknown)}; use "
                "{'predictions': key, 'labels': key}."
            )
        return npz_keys.get("predictions", ...), npz_keys.get("labels", ...)
    if isinstance(npz_keys, (tuple, list)) and len(npz_keys) == 2:
        return npz_keys[0], npz_keys[1]
    raise InputError(
        "npz_keys must be a dict {'predictions': key, 'labels': key} or a pair "
        "(predictions key, labels key)."
    )


def _parse_npz(blob, *, npz_keys, labels_separate, max_memory_bytes):
    npz = _Npz(blob, max_memory_bytes)
    keys = sorted(npz.infos)
    want_pred, want_lab = _npz_choice(npz_keys)
    for role, k in (("predictions", want_pred), ("labels", want_lab)):
        if k is not ... and k is not None and k not in npz.infos:
            raise InputError(
                f"npz_keys asks for {role} key '{user(k)}', which {blob.name} does not hold; it holds "
                f"{npz.describe(keys)}."
            )

    if want_pred is ... or want_pred is None:
        cands = _role_keys(keys, PREDICTION_KEYS)
        if len(cands) > 1:
            raise InputError(
                f"{blob.name} holds several arrays that could be the predictions: "
                f"{npz.describe(cands)}. Which one should be used? Pass "
                f"npz_keys={{'predictions': '{cands[0]}'}} (or another of them)."
            )
        if not cands:
            # np.savez(f, P, labels=y) names the unnamed array 'arr_0': one array without a
            # role name next to the labels is unambiguous.
            others = [k for k in keys if k not in _role_keys(keys, LABEL_KEYS + CLASS_NAME_KEYS)]
            if len(others) == 1:
                cands = others
            elif not others:
                raise InputError(
                    f"{blob.name} holds no predictions, only {npz.describe(keys)}. Add the "
                    "predictions array (e.g. np.savez(path, probs=P, labels=y)) or pass it "
                    "separately."
                )
            else:
                raise InputError(
                    f"{blob.name} has several arrays and none with a predictions name "
                    f"({', '.join(PREDICTION_KEYS[:5])}, ...); it holds {npz.describe(keys)}. "
                    "Which one holds the predictions? Pass npz_keys={'predictions': "
                    f"'{(others or keys)[0]}', 'labels': ...}}."
                )
        pred_key = cands[0]
    else:
        pred_key = user(want_pred)

    if want_lab is ...:
        lab_cands = [k for k in _role_keys(keys, LABEL_KEYS) if k != pred_key]
        if labels_separate:
            if lab_cands:
                raise InputError(
                    f"labels were given twice: {blob.name} holds '{lab_cands[0]}' and the labels "
                    "argument was also passed. Drop the labels argument, or pass "
                    f"npz_keys={{'predictions': '{pred_key}', 'labels': None}} to ignore the "
                    "file's labels."
                )
            lab_key = None
        elif len(lab_cands) > 1:
            raise InputError(
                f"{blob.name} holds several arrays that could be the labels: "
                f"{npz.describe(lab_cands)}. Which one should be used? Pass "
                f"npz_keys={{'labels': '{lab_cands[0]}'}} (or another of them)."
            )
        elif not lab_cands:
            raise InputError(
                f"{blob.name} has no labels: none of its arrays is named "
                f"{', '.join(LABEL_KEYS[:6])}, ... (it holds {npz.describe(keys)}). Pass the "
                "labels separately (labels=...) or name the array with npz_keys={'labels': ...}.",
                option="labels",
            )
        else:
            lab_key = lab_cands[0]
    else:
        lab_key = None if want_lab is None else user(want_lab)
        if lab_key is not None and labels_separate:
            raise InputError(
                f"labels were given twice: npz_keys names '{lab_key}' in {blob.name} and the "
                "labels argument was also passed; drop one of them."
            )
    if lab_key is not None and lab_key == pred_key:
        raise InputError(f"npz_keys uses '{pred_key}' of {blob.name} for both predictions and labels.")

    parsed = Parsed(scores=npz.array(pred_key), where=Where(npz.where(pred_key)))
    if lab_key is not None:
        parsed.labels = npz.array(lab_key)
        parsed.labels_where = Where(npz.where(lab_key))
    name_keys = [k for k in _role_keys(keys, CLASS_NAME_KEYS) if k not in (pred_key, lab_key)]
    if name_keys:
        names = npz.array(name_keys[0])
        if names.ndim != 1 or names.dtype.kind not in "US":
            raise InputError(
                f"{npz.where(name_keys[0])} should be a 1-D array of class names (strings); it "
                f"has shape {names.shape} and dtype {names.dtype}."
            )
        parsed.class_names = tuple(user(decode_text(v, npz.where(name_keys[0]))) for v in names.tolist())
        parsed.class_names_origin = npz.where(name_keys[0])
    return parsed


def decode_text(v, where):
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{where} holds a name that is not UTF-8 text: {user(repr(v))}.") from None
    return str(v)


# --------------------------------------------------------------------------- text tables


# Found in the raw bytes with start and end positions, never by splitting: a file may be a
# single line of hundreds of megabytes, and one Python string per field of it would take gigabytes.
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")  # bytes.splitlines' line breaks
_VISIBLE = re.compile(rb"[^ \t\n\r\x0b\x0c]")  # what bytes.strip() keeps
_FIELD = re.compile(rb"[^ \t\n\r\x0b\x0c]+")
_TWO_FIELDS = re.compile(rb"[^ \t\n\r\x0b\x0c][ \t\x0b\x0c]+[^ \t\n\r\x0b\x0c]")


def _first_nonblank_line(data):
    """(0-based physical line index, start, end) of the first non-blank line of ``data``."""
    idx, pos = 0, 0
    while pos <= len(data):
        brk = _LINE_BREAK.search(data, pos)
        end = brk.start() if brk else len(data)
        if _VISIBLE.search(data, pos, end):
            return idx, pos, end
        if brk is None:
            break
        idx, pos = idx + 1, brk.end()
    return None, None, None


def _count_lines(data):
    """Lines of ``data``: its line breaks, plus a last line without one."""
    breaks = data.count(b"\n") or data.count(b"\r")
    return breaks + (not data.endswith((b"\n", b"\r")))


def _count_fields(data, start, end, delim, limit):
    """Fields of the line ``data[start:end]`` counted on the raw bytes, up to ``limit + 1``
    (a delimiter inside quotes counts too: an upper bound)."""
    if delim != "whitespace":
        return data.count(delim.encode(), start, end) + 1
    count = 0
    for _ in _FIELD.finditer(data, start, end):
        count += 1
        if count > limit:
            break
    return count


def _check_utf8(data, name):
    """Raise unless ``data`` is UTF-8, decoding it in pieces (the whole text at once would
    double the memory of a large file)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    view, step = memoryview(data), 2**24
    try:
        for i in range(0, len(data), step):
            decoder.decode(view[i : i + step], final=i + step >= len(data))
    except UnicodeDecodeError:
        try:
            data.decode("utf-8")  # for the position of the first bad byte
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise InputError(
                f"{name} is not UTF-8 text (undecodable byte at line {line}); save it as "
                f"UTF-8 CSV, or use {_FORMATS_HELP}."
            ) from None


def _is_number(s):
    try:
        float(s)
    except ValueError:
        return False
    return "_" not in s  # Python accepts 1_000; pandas does not


def _sniff_delimiter(data, start, end, suffix):
    """The delimiter of the line ``data[start:end]``, from its raw bytes."""
    if suffix == ".tsv" or suffix == ".tab":
        return "\t"
    counts = {d: data.count(d.encode(), start, end) for d in (",", "\t", ";")}
    if suffix == ".csv" and counts[","]:
        return ","
    best = max(counts, key=counts.get)
    if counts[best]:
        return best
    if _TWO_FIELDS.search(data, start, end):
        return "whitespace"  # np.savetxt's default
    return ","


def _split_fields(line, delim):
    if delim == "whitespace":
        return line.split()
    return next(csv.reader([line], delimiter=delim))


class _LineMap:
    """Maps 0-based data rows to 1-based file lines; built only when a message needs it."""

    def __init__(self, data, header_idx):
        self._data = data
        self._header_idx = header_idx
        self._lines = None

    def _build(self):
        if self._lines is None:
            raw = self._data.splitlines()
            self._raw = raw
            self._lines = [
                k + 1
                for k, line in enumerate(raw)
                if line.strip() and (self._header_idx is None or k > self._header_idx)
            ]
        return self._lines

    def __call__(self, i):
        lines = self._build()
        return lines[i] if i < len(lines) else f"{i} (data row, 0-based)"

    def text(self, i):
        lines = self._build()
        if i >= len(lines):
            return ""
        return self._raw[lines[i] - 1].decode("utf-8", "replace")


_TOKENIZE = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")


def _read_text(blob, *, header, label_column, labels_separate, max_memory_bytes, role, **columns):
    import pandas as pd

    data = blob.data
    _check_utf8(data, blob.name)
    hdr_idx, start, end = _first_nonblank_line(data)
    if start is None:
        raise InputError(f"{blob.name} is empty; it holds no predictions.")
    delim = _sniff_delimiter(data, start, end, blob.suffix)
    # Counted before the line is split: parsing a line of millions of fields takes gigabytes.
    limit = TABLE_COLUMNS.value
    count = _count_fields(data, start, end, delim, limit)
    if count > limit:
        n_lines = _count_lines(data)
        raise InputError(TABLE_COLUMNS.message(
            count, f"{blob.name} ({n_lines:,} line{'s' if n_lines != 1 else ''}): its line {hdr_idx + 1}", limit))
    first = data[start:end].decode("utf-8").lstrip("\ufeff")
    try:
        fields = [f.strip() for f in _split_fields(first, delim)]
    except csv.Error as e:
        raise InputError(
            f"{blob.name} is malformed: line {hdr_idx + 1} cannot be split into fields ({e})."
        ) from None
    m = len(fields)

    lowered = [f.lower() for f in fields]
    if role == "labels":
        has_header = bool(header) if header is not None else any(f in LABEL_COLUMN_NAMES for f in lowered)
        if header is None and not has_header and m > 1:
            has_header = any(f and not _is_number(f) for f in fields)
    elif header is not None:
        has_header = bool(header)
    elif (isinstance(label_column, str) or any(f in LABEL_COLUMN_NAMES for f in lowered)
          or any(isinstance(c, str) for c in (columns.get("prob_columns") or ()))
          or any(isinstance(c, str) for c in (columns.get("groups") or ()))):
        has_header = True
    else:
        if isinstance(label_column, int) and -m <= label_column < m:
            li = label_column % m
        else:
            li = None if labels_separate else m - 1
        has_header = any(f and not _is_number(f) for j, f in enumerate(fields) if j != li)

    # Extrapolate the line count from the first MiB: counting every line break of a
    # large file costs as much as a tenth of the parse, for a coarse guard. The lines are
    # counted exactly when the guess is over the budget, before refusing.
    sample = data[: 2**20]
    per_byte = (sample.count(b"\n") or sample.count(b"\r") or 1) / len(sample)
    rows = _count_lines(data) if len(sample) == len(data) else int(per_byte * len(data)) + 1
    if rows * max(m, 1) * 8 > max_memory_bytes:
        rows = _count_lines(data)
        if rows * max(m, 1) * 8 > max_memory_bytes:
            raise InputError(
                f"{blob.name} has {rows:,} line{'s' if rows != 1 else ''} of {_fields(m)}, which would need about "
                f"{_fmt_bytes(rows * m * 8)} as float64, over the memory budget of "
                f"{_fmt_bytes(max_memory_bytes)}. Load fewer rows or raise max_memory_bytes=..."
            )

    lines = _LineMap(data, hdr_idx if has_header else None)
    kwargs = dict(
        header=None,
        engine="c",
        skiprows=hdr_idx + 1 if has_header else None,
        skip_blank_lines=True,
        encoding="utf-8",
        # One pass over the whole file: no chunk-wise type guesses (and no DtypeWarning).
        low_memory=False,
    )
    # No skipinitialspace: it halves the parser's speed, and the C parser already reads
    # " 0.5" as a number; header names and string labels are stripped afterwards.
    kwargs["sep"] = r"\s+" if delim == "whitespace" else delim
    try:
        frame = pd.read_csv(io.BytesIO(data), **kwargs)
    except pd.errors.EmptyDataError:
        raise InputError(
            f"{blob.name} has a header line but no data rows; it holds no predictions."
            if has_header
            else f"{blob.name} holds no data rows."
        ) from None
    except pd.errors.ParserError as e:
        match = _TOKENIZE.search(str(e))
        if match:
            want, line, saw = match.groups()
            raise InputError(
                f"{blob.name} is malformed: line {line} has {_fields(int(saw))} but the lines "
                f"before it have {want}. Every line needs the same number of '{_show_delim(delim)}'-"
                "separated fields; fix or remove that line."
            ) from None
        raise InputError(
            f"{blob.name} is malformed: {str(e).replace('Error tokenizing data. C error: ', '')}. "
            "Check quoting and line structure, or export the file again."
        ) from None
    except Exception as e:  # the C parser reports other damage with assorted exceptions
        raise InputError(
            f"{blob.name} is malformed: {type(e).__name__}: {e}. Export the file again as UTF-8 "
            "CSV with one row per sample."
        ) from None

    if frame.shape[1] != m:
        line = lines(0)
        raise InputError(
            f"{blob.name} is malformed: line {line} has {_fields(frame.shape[1])} but "
            f"{'the header' if has_header else f'line {hdr_idx + 1}'} has {m}. Every line "
            "needs the same number of fields."
        )
    names = None
    if has_header:
        names = fields
    where_kwargs = dict(lines=lines)
    _check_missing_cells(frame, names, lines, blob.name, delim, m)
    return _split_table(
        frame, names, blob.name, where_kwargs,
        label_column=label_column, labels_separate=labels_separate, role=role, **columns,
    )


def _fields(k):
    return f"{k} field{'s' if k != 1 else ''}"


def _show_delim(delim):
    return {"\t": "\\t", "whitespace": " "}.get(delim, delim)


def _check_missing_cells(frame, names, lines, name, delim, m):
    """Explain NaN cells in a parsed text table: short lines, empty cells or 'nan' text."""
    na = frame.isna().to_numpy()
    if not na.any():
        return
    flat = int(np.argmax(na.ravel()))
    i, j = divmod(flat, na.shape[1])
    text = lines.text(i)
    try:
        raw = [f.strip() for f in _split_fields(text, delim)] if text else None
    except Exception:  # csv can reject the line itself; then just report the position
        raw = None
    col = f"column '{user(names[j])}'" if names else f"column {j} (0-based)"
    if raw is not None and len(raw) < m:
        raise InputError(
            f"{name} is malformed: line {lines(i)} has {_fields(len(raw))} but the others have {m}. "
            "Every line needs the same number of fields; fix or remove that line."
        )
    if raw is not None and j < len(raw) and raw[j] == "":
        raise InputError(f"line {lines(i)} of {name}, {col} is empty; fill it in or remove the line.")
    shown = user(raw[j]) if raw is not None and j < len(raw) else "NaN"
    raise InputError(
        f"line {lines(i)} of {name}, {col} is {shown!r} (not a number); NaN values cannot be "
        "assessed. Fix or remove that line."
    )


# --------------------------------------------------------------------------- tables


def _split_table(frame, names, name, where_kwargs, *, label_column, labels_separate, role,
                 prob_columns=None, groups=None):
    """Split a table into class columns, the label column and grouping columns."""
    import pandas as pd

    n, m = frame.shape
    if names is not None:
        # Marked once here: every message that quotes a column or class name carries the mark.
        names = [user(str(c).strip()) for c in names]
    if role == "labels":
        return _labels_from_table(frame, names, name, where_kwargs)
    if role == "table":
        return frame, names

    groups = _column_list(groups, "groups", names, m, name)
    probs = _column_list(prob_columns, "prob_columns", names, m, name)
    for j in set(groups) & set(probs or ()):
        raise InputError(
            f"{name}: column {_col_name(names, j)} is both a probability column and a grouping column; "
            "choose one role for it.", option="groups",
        )
    notes = []
    li = _label_index(names, m, name, label_column=label_column, labels_separate=labels_separate,
                      taken=set(groups) | set(probs or ()), frame=frame, notes=notes)
    for option, chosen in (("prob_columns", probs or ()), ("groups", groups)):
        if li is not None and li in chosen:
            raise InputError(
                f"{name}: column {_col_name(names, li)} is the label column, so it cannot also be one of "
                f"{option}; choose other columns, or another label column.", option=option,
            )
    warnings = []
    drop = set()
    if names is not None:
        for j, nm in enumerate(names):
            if j == li or nm or j in groups:
                continue
            col = frame.iloc[:, j]
            if j == 0 and pd.api.types.is_integer_dtype(col) and np.array_equal(
                col.to_numpy(), np.arange(n)
            ):
                drop.add(0)
                warnings.append(LoadWarning(
                    "index-column",
                    f"{name}: dropped the unnamed first column (0, 1, 2, ...), a row index as "
                    "written by DataFrame.to_csv; pass index=False when saving to avoid it.",
                ))
            elif probs is None or j in probs:
                raise InputError(
                    f"{name}: column {j} (0-based) has no name in the header; name it after its "
                    "class, or remove it."
                )
        seen = {}
        for j, nm in enumerate(names):
            if j in drop or not nm:
                continue
            if nm in seen:
                raise InputError(
                    f"{name}: the column name '{nm}' appears twice (columns {seen[nm]} and {j}, "
                    "0-based); class columns need distinct names."
                )
            seen[nm] = j
    if probs is not None:
        class_idx = list(probs)
    else:
        class_idx = _guess_prob_columns(frame, names, name, li, set(groups) | drop, notes)
    if not class_idx:
        what = f"besides the label column {_col_name(names, li)}" if li is not None else ""
        raise InputError(
            f"{name} has no class columns {what}; fewer than two classes cannot be assessed. "
            "Give one column per class (or one column with the positive-class probability for "
            "a binary problem)."
        )
    where = Where(
        name,
        columns=[names[j] for j in class_idx] if names is not None else None,
        positions=class_idx,
        **where_kwargs,
    )
    block = frame.iloc[:, class_idx]
    for k, dtype in enumerate(block.dtypes):
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
            _refuse_non_numeric(block.iloc[:, k], where, k)
    try:
        scores = block.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as e:
        raise InputError(f"{name}: the class columns cannot be read as numbers ({e}).") from None
    parsed = Parsed(scores=np.ascontiguousarray(scores), where=where, warnings=warnings, notes=notes)
    if names is not None:
        parsed.score_names = tuple(names[j] for j in class_idx)
    if names is not None and len(class_idx) > 1:
        parsed.class_names = class_names_of_columns(parsed.score_names, notes)
        parsed.class_names_origin = f"the header of {name}"
    if li is not None:
        parsed.labels = column_values(frame.iloc[:, li])
        parsed.labels_where = Where(
            name, columns=[names[li]] if names is not None else None, positions=[li], **where_kwargs
        )
    parsed.groups = {(names[j] if names is not None else str(j)): group_values(frame.iloc[:, j]) for j in groups}
    return parsed


def class_name_of_column(column):
    """The class a probability column is named after (``p_malignant``, ``prob_malignant``,
    ``malignant_prob``, ``P(malignant)`` -> ``malignant``), or None."""
    match = _PROB_NAME.fullmatch(str(column).strip())
    if match is None:
        return None
    return next(g for g in match.groups() if g is not None).strip() or None


def class_names_of_columns(columns, notes):
    """Class names of several probability columns: their names, or the classes they are
    all named after when every one follows a pattern such as ``p_cat``."""
    stripped = [class_name_of_column(c) for c in columns]
    if all(stripped) and len(set(stripped)) == len(stripped):
        pairs = ", ".join(f"{c!r} -> {user(s)!r}" for c, s in zip(columns[:4], stripped))
        notes.append(LoadNote(
            "class-names", f"class names taken from the column names: {pairs}{', ...' if len(columns) > 4 else ''}"
        ))
        return tuple(user(s) for s in stripped)
    return tuple(columns)


def is_text_column(col):
    """True for a column of words (a label or grouping column), not of numbers with a typo:
    non-numeric, and fewer than half of its values read as numbers."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        return False
    values = col.dropna()
    if values.empty:
        return False
    numeric = pd.to_numeric(values.astype(str).str.strip(), errors="coerce").notna()
    return bool(numeric.mean() < 0.5)


def _column_index(value, option, names, m, name):
    if isinstance(value, str):
        if names is None:
            raise InputError(
                f"{option} names column '{user(value)}', but {name} has no header row; give the column's "
                "0-based position instead.", option=option,
            )
        if value in names:
            return names.index(value)
        low = [nm.lower() for nm in names]
        if value.strip().lower() in low:
            return low.index(value.strip().lower())
        raise InputError(
            f"{name} has no column named '{user(value)}'; its columns are {preview(names)}. "
            f"Pass one of these in {option}.", option=option,
        )
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if not -m <= value < m:
            raise InputError(
                f"{option}={value} is out of range: {name} has {m} columns "
                f"(positions 0..{m - 1}).", option=option,
            )
        return int(value) % m
    raise InputError(
        f"{option} must hold column names (str) or 0-based positions (int), got "
        f"{type(value).__name__}.", option=option,
    )


def _column_list(values, option, names, m, name):
    """0-based positions of the columns named in an option (None: not given)."""
    if values is None:
        return None if option == "prob_columns" else []
    if isinstance(values, (str, int, np.integer)):
        values = [values]
    try:
        values = list(values)
    except TypeError:
        raise InputError(f"{option} must be a list of column names or positions.", option=option) from None
    if option == "prob_columns" and not values:
        raise InputError("prob_columns is empty; give at least one column of probabilities or logits.",
                         option=option)
    out = []
    for v in values:
        j = _column_index(v, option, names, m, name)
        if j in out:
            raise InputError(f"{option} names column {_col_name(names, j)} twice.", option=option)
        out.append(j)
    return out


def _guess_prob_columns(frame, names, name, li, excluded, notes):
    """The class columns when prob_columns is not given: the columns named like probability
    columns (``p_cat``), if some are, else every column but the label and grouping columns."""
    rest = [j for j in range(frame.shape[1]) if j != li and j not in excluded]
    if names is None:
        return rest
    named = [j for j in rest if class_name_of_column(names[j])]
    if named and len(named) < len(rest):
        unused = [j for j in rest if j not in named]
        notes.append(LoadNote(
            "prob-columns",
            f"probability columns taken from their names: {preview([names[j] for j in named])}; not used: "
            f"{preview([names[j] for j in unused])} (keep them as grouping columns with groups=[...])",
        ))
        return named
    text = [j for j in rest if is_text_column(frame.iloc[:, j])]
    if text and len(text) < len(rest):
        raise InputError(
            f"{name}: column {_col_name(names, text[0])} holds text ({preview(frame.iloc[:, text[0]].dropna().unique(), 3)}), "
            f"not probabilities. Choose the probability columns with prob_columns=[...] (of {preview([names[j] for j in rest])}); "
            "to keep a text column for subgroups, pass it in groups.", option="prob_columns",
        )
    return rest


def inspect_table(frame, names, name, *, label_column=None, prob_columns=None, labels_separate=False):
    """What the loader finds in a table and would guess, without refusing anything.

    Returns a dict: ``columns``, ``numeric`` (columns of numbers), ``label_candidates``,
    ``label_column`` (the guess, or None when none or several fit), ``prob_columns`` (the
    guess), ``notes`` (the guesses made) and ``problem`` (the message a load with these
    choices would refuse with, or None).
    """
    m = frame.shape[1]
    if names is not None:
        names = [user(str(c).strip()) for c in names]
    shown = names if names is not None else [str(j) for j in range(m)]
    numeric = [j for j in range(m) if not is_text_column(frame.iloc[:, j]) and (
        _is_numeric(frame.iloc[:, j]))]
    if names is not None:
        candidates = [j for j, nm in enumerate(names) if nm.lower() in LABEL_COLUMN_NAMES]
        candidates = candidates or [j for j in range(m) if is_text_column(frame.iloc[:, j])]
    else:
        candidates = [m - 1]
    notes, problem = [], None
    try:
        probs = _column_list(prob_columns, "prob_columns", names, m, name)
        li = _label_index(names, m, name, label_column=label_column, labels_separate=labels_separate,
                          taken=set(probs or ()), frame=frame, notes=notes)
        if probs is None:
            probs = _guess_prob_columns(frame, names, name, li, set(), notes)
    except InputError as e:
        problem = e
        li = None if label_column is None or labels_separate else _try(lambda: _column_index(
            label_column, "label_column", names, m, name))
        probs = [j for j in numeric if j != li]
    return {
        "columns": tuple(shown), "numeric": tuple(shown[j] for j in numeric),
        "label_candidates": tuple(shown[j] for j in candidates),
        "label_column": None if li is None else shown[li],
        "prob_columns": tuple(shown[j] for j in probs), "notes": tuple(notes), "problem": problem,
    }


def _is_numeric(col):
    import pandas as pd

    return pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)


def _try(f):
    try:
        return f()
    except InputError:
        return None


def group_values(col):
    """A grouping column as read-only strings (missing values as '')."""
    values = column_values(col)
    if values.dtype.kind == "f":
        texts = ["" if np.isnan(v) else (str(int(v)) if v.is_integer() else repr(v)) for v in values.tolist()]
    else:
        texts = ["" if v is None else str(v).strip() for v in values.tolist()]
    out = np.array(texts, dtype=str)
    out.flags.writeable = False
    return out


def _col_name(names, j):
    return f"'{names[j]}'" if names is not None else f"{j} (0-based)"


def _label_index(names, m, name, *, label_column, labels_separate, taken=frozenset(), frame=None, notes=None):
    if label_column is not None:
        if labels_separate:
            raise InputError(
                f"labels were given twice: label_column={quoted(label_column)} in {name} and the labels "
                "argument; drop one of them.", option="label_column",
            )
        if isinstance(label_column, (str, int, np.integer)) and not isinstance(label_column, bool):
            return _column_index(label_column, "label_column", names, m, name)
        raise InputError(
            f"label_column must be a column name (str) or a 0-based position (int), got "
            f"{type(label_column).__name__}.", option="label_column",
        )
    if names is not None:
        hits = [j for j, nm in enumerate(names) if nm.lower() in LABEL_COLUMN_NAMES and j not in taken]
        if len(hits) > 1:
            raise InputError(
                f"{name} has several columns that could hold the labels: "
                f"{', '.join(repr(names[j]) for j in hits)}. Which one? Pass label_column=...",
                option="label_column",
            )
        if hits:
            if labels_separate:
                raise InputError(
                    f"labels were given twice: {name} has a label column '{names[hits[0]]}' and "
                    "the labels argument was also passed. Drop the labels argument, or remove "
                    "that column.", option="label_column",
                )
            return hits[0]
        if labels_separate:
            return None
        text = [] if frame is None else [j for j in range(m) if j not in taken and is_text_column(frame.iloc[:, j])]
        if len(text) == 1:
            notes.append(LoadNote("label-column",
                                  f"the labels were taken from column '{names[text[0]]}', the only column of text"))
            return text[0]
        if len(text) > 1:
            raise InputError(
                f"{name} has several text columns that could hold the labels: "
                f"{', '.join(repr(names[j]) for j in text)}. Which one? Pass label_column=...",
                option="label_column",
            )
        raise InputError(
            f"{name} has a header but no label column (none of its columns is named "
            f"{', '.join(LABEL_COLUMN_NAMES[:6])}, ...; columns: {preview(names)}). Pass "
            "label_column='...' (or a 0-based position), or give the labels separately.",
            option="label_column",
        )
    if labels_separate:
        return None
    if m < 2:
        raise InputError(
            f"{name} has a single column and no labels: put the labels in the last column, or "
            "pass them separately (labels=...).", option="labels",
        )
    return m - 1


def _labels_from_table(frame, names, name, where_kwargs):
    m = frame.shape[1]
    if m == 1:
        j = 0
    else:
        hits = [j for j, nm in enumerate(names or []) if nm.lower() in LABEL_COLUMN_NAMES]
        if len(hits) != 1:
            raise InputError(
                f"{name} has {m} columns, but a labels file needs a single column of labels (or "
                "exactly one column named 'label')."
            )
        j = hits[0]
    where = Where(name, columns=[names[j]] if names is not None else None, positions=[j], **where_kwargs)
    return Parsed(scores=np.empty((0, 0)), where=where, labels=column_values(frame.iloc[:, j]),
                  labels_where=where)


def column_values(col):
    """Label column as an int/float/bool ndarray, or an object array of strings/None."""
    import pandas as pd

    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "biuf":
        return col.to_numpy()
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(dtype=np.float64, na_value=np.nan)
    return col.to_numpy(dtype=object, na_value=None)


def _refuse_non_numeric(col, where, k):
    values = col.to_numpy(dtype=object, na_value=None)
    for i, v in enumerate(values):
        if v is None:
            continue
        if isinstance(v, (list, tuple, np.ndarray, dict)):
            raise InputError(
                f"{where.cell(i, k)} holds a list of values, not a number; store one column "
                "per class (e.g. pd.DataFrame(np.stack(df[col]))) before saving."
            )
        if isinstance(v, (bool, int, float, np.number)):
            continue
        try:
            float(str(v))
        except ValueError:
            hint = " (or, if this line is a header, pass header=True)" if i == 0 else ""
            if re.fullmatch(r"[+-]?\d+,\d+", str(v).strip()):
                hint = "; decimal commas are not supported: export with '.' as the decimal point"
            raise InputError(
                f"{where.cell(i, k)} is {user(v)!r}, not a number; class columns must hold "
                f"numbers only. Fix or remove that row{hint}."
            ) from None
    # Numbers stored as strings (e.g. an all-text Parquet column) are a format choice,
    # not damage, but converting silently would hide precision loss; ask for numbers.
    raise InputError(
        f"{where.col(k)} of {where.name} holds numbers stored as text ({col.dtype}); store it as a "
        "numeric column."
    )


def preview(items, k=8):
    """The first ``k`` names (a user's), quoted and marked."""
    items = list(items)
    shown = ", ".join(repr(user(x)) for x in items[:k])
    return f"[{shown}{', ...' if len(items) > k else ''}]"


# --------------------------------------------------------------------------- parquet


def _read_parquet(blob, *, label_column, labels_separate, max_memory_bytes, role, **columns):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            f"reading {blob.name} needs pyarrow (pip install pyarrow), or save it as CSV."
        ) from None
    try:
        pf = pq.ParquetFile(io.BytesIO(blob.data))
        n, m = pf.metadata.num_rows, pf.metadata.num_columns
    except Exception as e:  # pyarrow reports damage with several exception types
        raise InputError(
            f"{blob.name} is not a readable Parquet file ({type(e).__name__}: {e}); it is "
            "truncated or corrupted. Export it again."
        ) from None
    if n * max(m, 1) * 8 > max_memory_bytes:
        raise InputError(
            f"{blob.name} declares {n:,} rows x {m} columns, about {_fmt_bytes(n * m * 8)} as "
            f"float64, over the memory budget of {_fmt_bytes(max_memory_bytes)}. Load fewer rows "
            "or raise max_memory_bytes=..."
        )
    try:
        frame = pf.read().to_pandas()
    except Exception as e:
        raise InputError(
            f"{blob.name} cannot be read ({type(e).__name__}: {e}); the file is corrupted or "
            "uses an unsupported encoding. Export it again."
        ) from None
    if frame.shape[0] == 0:
        raise InputError(f"{blob.name} has no rows; it holds no predictions.")
    return _split_table(
        frame, [str(c) for c in frame.columns], blob.name, {},
        label_column=label_column, labels_separate=labels_separate, role=role, **columns,
    )


# --------------------------------------------------------------------------- entry points


def parse_dataframe(frame, name, *, label_column, labels_separate, role="predictions", **columns):
    """Split an in-memory DataFrame exactly like a Parquet file with the same columns."""
    import pandas as pd

    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise InputError(f"{name} is an empty DataFrame (shape {frame.shape}); it holds no predictions.")
    if isinstance(frame.columns, pd.RangeIndex):
        names = None  # default integer columns carry no names
    else:
        names = [str(c) for c in frame.columns]
    return _split_table(
        frame.reset_index(drop=True), names, name, {},
        label_column=label_column, labels_separate=labels_separate, role=role, **columns,
    )


def is_table(blob):
    """Whether ``blob`` is read as a table (CSV/TSV/text or Parquet)."""
    return _format_of(blob) in ("parquet", "text")


def read_table(blob, *, header, max_memory_bytes):
    """A table file as (DataFrame, column names or None), for inspecting its columns."""
    if _format_of(blob) == "parquet":
        return _read_parquet(blob, label_column=None, labels_separate=True, max_memory_bytes=max_memory_bytes,
                             role="table")
    return _read_text(blob, header=header, label_column=None, labels_separate=True,
                      max_memory_bytes=max_memory_bytes, role="table")


def parse_predictions(blob, *, header, label_column, npz_keys, labels_separate, max_memory_bytes, **columns):
    """Read the predictions (and possibly labels and class names) out of ``blob``.

    ``columns`` are the table options ``prob_columns`` and ``groups``.
    """
    fmt = _format_of(blob)
    for option, value in (("label_column", label_column), *columns.items()):
        if fmt in ("npy", "zip") and value is not None:
            raise InputError(
                f"{option} applies to CSV/TSV/Parquet tables; {blob.name} is a NumPy file "
                "(use npz_keys=... to pick arrays in a .npz).", option=option,
            )
    if fmt == "npy":
        return Parsed(scores=_read_npy(blob, max_memory_bytes), where=Where(blob.name))
    if fmt == "zip":
        return _parse_npz(blob, npz_keys=npz_keys, labels_separate=labels_separate,
                          max_memory_bytes=max_memory_bytes)
    if fmt == "parquet":
        return _read_parquet(blob, label_column=label_column, labels_separate=labels_separate,
                             max_memory_bytes=max_memory_bytes, role="predictions", **columns)
    return _read_text(blob, header=header, label_column=label_column,
                      labels_separate=labels_separate, max_memory_bytes=max_memory_bytes,
                      role="predictions", **columns)


def parse_labels(blob, *, max_memory_bytes):
    """Read a separate labels file: (values, Where)."""
    fmt = _format_of(blob, "labels")
    if fmt == "npy":
        return _read_npy(blob, max_memory_bytes), Where(blob.name)
    if fmt == "zip":
        npz = _Npz(blob, max_memory_bytes)
        keys = sorted(npz.infos)
        cands = _role_keys(keys, LABEL_KEYS) or (keys if len(keys) == 1 else [])
        if len(cands) != 1:
            raise InputError(
                f"{blob.name} holds {npz.describe(keys)}; which one is the labels? Keep a single "
                "array in the labels file, or name it 'labels'."
            )
        return npz.array(cands[0]), Where(npz.where(cands[0]))
    if fmt == "parquet":
        p = _read_parquet(blob, label_column=None, labels_separate=False,
                          max_memory_bytes=max_memory_bytes, role="labels")
    else:
        p = _read_text(blob, header=None, label_column=None, labels_separate=False,
                       max_memory_bytes=max_memory_bytes, role="labels")
    return p.labels, p.labels_where
