"""File formats accepted by :func:`calibdash.load_predictions`.

This module only reads: it turns a *source* (path, bytes, file-like object or DataFrame)
into raw content plus enough bookkeeping to name a line, row or column in an error
message. A CSV/TSV/text file, a Parquet file or a DataFrame comes back as a raw
:class:`Table` (its cells and the header's column names); which of its columns hold the
labels, the probabilities or groups, and which class names they give, is decided by
:mod:`calibdash.io.columns`, which also says whether a text file's first line is a header
(the reader asks it, :func:`read_table`'s ``is_header``). A ``.npy`` or ``.npz`` file comes
back as :class:`Parsed` arrays: the container's layout says which array is which (an
``.npz`` member by its key, :data:`PREDICTION_KEYS`, :data:`LABEL_KEYS`,
:data:`CLASS_NAME_KEYS`). It never decides what the numbers mean (logits or probabilities,
valid labels or not); :mod:`calibdash.io.loading` does that.

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

from calibdash.errors import InputError
from calibdash.limits import TABLE_COLUMNS, TEXT_CHARACTERS
from calibdash.text import user

__all__ = [
    "PREDICTION_KEYS",
    "LABEL_KEYS",
    "CLASS_NAME_KEYS",
    "PICKLE_REASON",
    "Where",
    "Parsed",
    "Table",
    "read_table",
    "is_table",
    "read_blob",
    "read_regular_file",
    "parse_predictions",
    "parse_labels",
]

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
class Table:
    """A table as read, before any column is given a meaning (:mod:`calibdash.io.columns` does that).

    Attributes
    ----------
    frame : pandas.DataFrame
        The cells, one column per column of the file, rows numbered from 0.
    names : list of str or None
        The header's column names, stripped and marked as user text; None without header.
    name : str
        The display name of the source.
    where_kwargs : dict
        What :class:`Where` needs besides the name to name the table's lines (a text file's
        line map as ``lines``); empty for Parquet files and DataFrames.
    """

    frame: object
    names: list | None
    name: str
    where_kwargs: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.names is not None:
            # Marked once here: every message that quotes a column or class name carries the mark.
            self.names = [user(str(c).strip()) for c in self.names]


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


# The loader holds an array as read, its probabilities and temporaries of the same size at
# once: loading a 96 MB .npz array (1,000,000 x 12) took 3.5 times that at its peak. Every
# memory check therefore counts this many float64 copies of the numbers a file declares.
WORKING_COPIES = 4


def float64_need(cells, itemsize=8):
    """Bytes the loader needs for ``cells`` numbers: :data:`WORKING_COPIES` copies of at least float64."""
    return int(cells) * max(int(itemsize), 8) * WORKING_COPIES


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
    needed = float64_need(size, dtype.itemsize)
    if needed > max_memory_bytes:
        raise InputError(
            f"{where} declares shape {shape} of {dtype} ({_fmt_bytes(declared)}), which would "
            f"need about {_fmt_bytes(needed)} to load (in float64, with the loader's working copies), over the memory budget of "
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

    def check_together(self, keys):
        """Refuse when the arrays ``keys``, each within the budget, are over it together (before any is read)."""
        need = sum(float64_need(math.prod(h.shape), h.dtype.itemsize) for h in map(self.header, keys))
        if need > self.budget:
            raise InputError(
                f"{self.name} declares {self.describe(keys)}, which together would need about {_fmt_bytes(need)} to "
                f"load (in float64, with the loader's working copies), over the memory budget of "
                f"{_fmt_bytes(self.budget)}. Load fewer rows, or raise max_memory_bytes=... if the machine has the memory."
            )

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

    name_keys = [k for k in _role_keys(keys, CLASS_NAME_KEYS) if k not in (pred_key, lab_key)]
    npz.check_together([pred_key, *([lab_key] if lab_key is not None else []), *name_keys[:1]])
    parsed = Parsed(scores=npz.array(pred_key), where=Where(npz.where(pred_key)))
    if lab_key is not None:
        parsed.labels = npz.array(lab_key)
        parsed.labels_where = Where(npz.where(lab_key))
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


def _read_text(blob, *, is_header, max_memory_bytes):
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
    has_header = bool(is_header(fields))

    # Extrapolate the line count from the first MiB: counting every line break of a
    # large file costs as much as a tenth of the parse, for a coarse guard. The lines are
    # counted exactly when the guess is over the budget, before refusing.
    sample = data[: 2**20]
    per_byte = (sample.count(b"\n") or sample.count(b"\r") or 1) / len(sample)
    rows = _count_lines(data) if len(sample) == len(data) else int(per_byte * len(data)) + 1
    if float64_need(rows * max(m, 1)) > max_memory_bytes:
        rows = _count_lines(data)
        if float64_need(rows * max(m, 1)) > max_memory_bytes:
            raise InputError(
                f"{blob.name} has {rows:,} line{'s' if rows != 1 else ''} of {_fields(m)}, which would need about "
                f"{_fmt_bytes(float64_need(rows * m))} to load (in float64, with the loader's working copies), "
                "over the memory budget of "
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
    _check_missing_cells(frame, names, lines, blob.name, delim, m)
    return Table(frame, names, blob.name, dict(lines=lines))


def _fields(k):
    return f"{k} field{'s' if k != 1 else ''}"


def _show_delim(delim):
    return {"\t": "\\t", "whitespace": " "}.get(delim, delim)


# Above this many columns a table's missing cells are looked for in one array (see below).
WIDE_COLUMNS = 1000


def _check_missing_cells(frame, names, lines, name, delim, m):
    """Explain NaN cells in a parsed text table: short lines, empty cells or 'nan' text."""
    import pandas as pd

    # A wide table comes from the parser as one block per column, which DataFrame.isna visits
    # one by one (2.4 s for 10 x 100,000); its cells as one array are checked at once. A tall
    # table is not made one array: its text cells would each become an object.
    na = pd.isna(frame.to_numpy()) if frame.shape[1] > WIDE_COLUMNS else frame.isna().to_numpy()
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



# --------------------------------------------------------------------------- parquet


def _read_parquet(blob, *, max_memory_bytes):
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
    if float64_need(n * max(m, 1)) > max_memory_bytes:
        raise InputError(
            f"{blob.name} declares {n:,} rows x {m} columns, about {_fmt_bytes(float64_need(n * m))} to load (in "
            f"float64, with the loader's working copies), over the memory budget of {_fmt_bytes(max_memory_bytes)}. "
            "Load fewer rows "
            "or raise max_memory_bytes=..."
        )
    frame, _ = _parquet_frame(blob.data, pf, blob.name, max_memory_bytes)
    _release_arrow_memory()
    if frame.shape[0] == 0:
        raise InputError(f"{blob.name} has no rows; it holds no predictions.")
    return Table(frame, [str(c) for c in frame.columns], blob.name)


# Memory a text cell takes beyond its characters once read: Arrow's offset, pandas' copy of
# its object (a Python str has about 50 bytes of header), a pointer.
TEXT_CELL_BYTES = 64


def _is_text(arrow_type):
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return any(check(arrow_type) for check in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
                                               pa.types.is_large_binary, pa.types.is_string_view,
                                               pa.types.is_binary_view))


def _parquet_frame(data, pf, where, max_memory_bytes, used=0):
    """``(frame, used + what it needs)``: the rows of the Parquet file ``data`` (bytes; ``pf`` its
    ParquetFile) as a DataFrame, refused before they are expanded when
    they would need more than ``max_memory_bytes`` (``used`` of it already taken).

    A Parquet file stores text compressed and dictionary-encoded: 200 copies of one 5 MB label
    are a 2 KB file, which pyarrow and pandas expand to gigabytes. So, in this order: the
    pages' decompressed size (from the metadata) must fit; the text columns are read still
    dictionary-encoded, and their expanded size (the dictionary's lengths summed over the
    rows) must fit twice (Arrow's copy and pandas'), with the 8 bytes of every other cell;
    only then are they expanded, into the DataFrame ``pf.read().to_pandas()`` gives. No text
    cell may be longer than :data:`~calibdash.limits.TEXT_CHARACTERS` (from the dictionary).
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    md = pf.metadata
    try:
        schema = pf.schema_arrow
        text = [f.name for f in schema if _is_text(f.type)]
        stored = sum(md.row_group(g).total_byte_size for g in range(md.num_row_groups))  # decompressed
        # The text columns' leaf positions: their field positions when every field is one leaf
        # (the usual flat table; looking at each of 100,000 leaves took a second), else searched.
        flat = md.num_columns == len(schema)
        leaves = {j: name for j, name in ((schema.get_field_index(n) if flat else -1, n) for n in text)
                  if j >= 0 and md.schema.column(j).path == name}
        if len(leaves) < len(text):
            leaves = {j: md.schema.column(j).path for j in range(md.num_columns) if md.schema.column(j).path in text}
        # Before anything is read: a text column whose decompressed pages average more than 4
        # bytes per allowed character a cell has a cell over the limit (a UTF-8 character takes
        # at most 4 bytes; the pages' headers and length prefixes are allowed for).
        for j, name in leaves.items():
            chunks = [md.row_group(g).column(j) for g in range(md.num_row_groups)]
            size, count = sum(c.total_uncompressed_size for c in chunks), sum(c.num_values for c in chunks)
            average = (size - 4096) / max(count, 1) - 16
            if average > 4 * TEXT_CHARACTERS.value:
                raise TEXT_CHARACTERS.error(
                    f"{where}: the column {user(name)!r} averages {average:,.0f} bytes of text a cell, so some cell has "
                    f"more than {TEXT_CHARACTERS.value:,} characters, the limit. Leave long text columns out of the "
                    f"file, or raise the limit with the environment variable {TEXT_CHARACTERS.variable}.")
        fits = used + stored <= max_memory_bytes
        table = pq.ParquetFile(io.BytesIO(data), read_dictionary=text).read() if fits else None
    except InputError:
        raise
    except Exception as e:
        raise InputError(f"{where} cannot be read ({type(e).__name__}); the file is corrupted or uses an "
                         "unsupported encoding. Export it again.") from None
    if table is None:
        raise InputError(f"{where} decompresses to {_fmt_bytes(stored)}, over the memory budget of "
                         f"{_fmt_bytes(max_memory_bytes)}{' with the files before it' if used else ''}. Load fewer "
                         "rows or columns, or raise max_memory_bytes=...")
    need, largest = used + float64_need(md.num_rows * (md.num_columns - len(text))), (0, "")
    for name in text:
        size = longest = 0
        for chunk in table.column(name).chunks:
            values = chunk.dictionary if isinstance(chunk, pa.DictionaryArray) else chunk
            chars = pc.utf8_length(values) if _is_text(values.type) and pa.types.is_unicode(values.type) else \
                pc.binary_length(values)
            longest = max(longest, pc.max(chars).as_py() or 0)
            lengths = pc.binary_length(values)
            size += (pc.sum(pc.take(lengths, chunk.indices)) if values is not chunk else pc.sum(lengths)).as_py() or 0
        TEXT_CHARACTERS.check(longest, f"{where}: a cell of the column {user(name)!r}")
        need += 2 * size + TEXT_CELL_BYTES * md.num_rows
        largest = max(largest, (size, name))
    if need > max_memory_bytes:
        del table
        before = f" (with the files before it, {_fmt_bytes(need)})" if used else ""
        raise InputError(f"{where} holds text that takes about {_fmt_bytes(need - used)} once read (the column "
                         f"{user(largest[1])!r} alone {_fmt_bytes(largest[0])} of characters){before}, over the memory "
                         f"budget of {_fmt_bytes(max_memory_bytes)}. Leave long text columns out of the file, or raise "
                         "max_memory_bytes=...")
    try:
        return table.cast(schema).to_pandas(), need
    except Exception as e:
        raise InputError(f"{where} cannot be read ({type(e).__name__}); the file is corrupted or uses an "
                         "unsupported encoding. Export it again.") from None


#: Suffixes of the files a Parquet dataset folder is made of.
DATASET_SUFFIXES = (".parquet", ".pq")


def is_dataset_path(obj):
    """Whether ``obj`` is the path of a folder, read as a Parquet dataset (:func:`read_parquet_dataset`)."""
    if not isinstance(obj, (str, os.PathLike)) or (isinstance(obj, str) and ("\n" in obj or len(obj) > 4096)):
        return False
    try:
        return stat.S_ISDIR(Path(os.fsdecode(obj)).stat().st_mode)
    except OSError:
        return False


def dataset_files(path):
    """The Parquet files of the dataset folder ``path``: every ``*.parquet``/``*.pq`` file in it or
    in its subfolders (hive-style partitions), in sorted order, so the rows' order is the same
    on every read."""
    path = Path(os.fsdecode(path))
    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in DATASET_SUFFIXES and not p.name.startswith((".", "_")))
    if not files:
        raise InputError(f"{user(path)} is a folder without Parquet files (*.parquet); give the path of a "
                         "predictions file, or of a folder of Parquet files with the same columns (a dataset).")
    return files


def read_parquet_dataset(path, *, max_bytes, max_memory_bytes):
    """A folder of Parquet files with the same columns (a dataset, as Spark, Dask or
    ``pyarrow.dataset.write_dataset`` write one) as one :class:`Table`, the files' rows one
    after another in sorted file order.

    The budgets hold for the whole dataset: ``max_bytes`` for the files' summed size, checked
    before anything is read, and ``max_memory_bytes`` for the rows x columns the files declare.
    Each file is read as a regular file (:func:`read_regular_file`).
    """
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading a Parquet dataset needs pyarrow (pip install pyarrow).") from None
    root = Path(os.fsdecode(path))
    files = dataset_files(root)
    shown = f"{user(root.name or str(root))}/ ({len(files)} Parquet file{'s' if len(files) > 1 else ''})"
    total = sum(f.stat().st_size for f in files)
    if total > max_bytes:
        raise _too_big(shown, total, max_bytes)
    frames, schema, rows, used = [], None, 0, 0
    for f in files:
        where = f"{user(root.name)}/{user(str(f.relative_to(root)))}"
        data = read_regular_file(f, max_bytes=max_bytes, what="a Parquet file",
                                 too_big=lambda size, exact, where=where: _too_big(where, size, max_bytes, exact))
        try:
            pf = pq.ParquetFile(io.BytesIO(data))
            names = pf.schema_arrow.names
        except Exception as e:  # pyarrow reports damage with several exception types
            raise InputError(f"{where} is not a readable Parquet file ({type(e).__name__}); it is truncated or "
                             "corrupted. Export it again, or move it out of the folder.") from None
        if schema is None:
            schema = names
        elif names != schema:
            raise InputError(f"{where} has the columns {', '.join(map(user, names[:8]))}, but the dataset's first file "
                             f"has {', '.join(map(user, schema[:8]))}; every file of a dataset needs the same columns.")
        rows += pf.metadata.num_rows
        if float64_need(rows * max(len(names), 1)) > max_memory_bytes:
            raise InputError(f"{shown} declares at least {rows:,} rows x {len(names)} columns, about "
                             f"{_fmt_bytes(float64_need(rows * len(names)))} to load (in float64, with the loader's "
                             "working copies), over the memory budget of "
                             f"{_fmt_bytes(max_memory_bytes)}. Load fewer rows or raise max_memory_bytes=...")
        frame, used = _parquet_frame(data, pf, where, max_memory_bytes, used=used)
        frames.append(frame)
    import pandas as pd

    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    del frames
    _release_arrow_memory()
    if frame.shape[0] == 0:
        raise InputError(f"{shown} has no rows; it holds no predictions.")
    return Table(frame, [str(c) for c in frame.columns], shown)


def _release_arrow_memory():
    """Give the memory pyarrow's allocator keeps after a read back to the system: mimalloc
    holds the freed buffers of the decoded files for reuse (190 MB after reading 10,000,000
    rows of two columns), which nothing else in the process can use."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


# --------------------------------------------------------------------------- entry points


def parse_dataframe(frame, name):
    """An in-memory DataFrame as a :class:`Table`, read exactly like a Parquet file with the same columns."""
    import pandas as pd

    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise InputError(f"{name} is an empty DataFrame (shape {frame.shape}); it holds no predictions.")
    if isinstance(frame.columns, pd.RangeIndex):
        names = None  # default integer columns carry no names
    else:
        names = [str(c) for c in frame.columns]
    return Table(frame.reset_index(drop=True), names, name)


def is_table(blob):
    """Whether ``blob`` is read as a table (CSV/TSV/text or Parquet)."""
    return _format_of(blob) in ("parquet", "text")


def read_table(blob, *, is_header, max_memory_bytes):
    """A table file (CSV/TSV/text or Parquet) as a raw :class:`Table`.

    ``is_header`` is called with the stripped fields of a text file's first non-blank line
    and says whether that line is the header (:func:`calibdash.io.columns.header_rule`).
    """
    return _read_table(blob, _format_of(blob), is_header=is_header, max_memory_bytes=max_memory_bytes)


def _read_table(blob, fmt, *, is_header, max_memory_bytes):
    if fmt == "parquet":
        return _read_parquet(blob, max_memory_bytes=max_memory_bytes)
    return _read_text(blob, is_header=is_header, max_memory_bytes=max_memory_bytes)


def parse_predictions(blob, *, is_header, npz_keys, labels_separate, max_memory_bytes, table_options=None):
    """Read the predictions (and possibly labels and class names) out of ``blob``.

    A ``.npy`` or ``.npz`` file gives :class:`Parsed` arrays; a CSV/TSV/text or Parquet file
    gives its raw :class:`Table`, which :func:`calibdash.io.columns.split_table` splits.
    ``table_options`` maps the table options (``label_column``, ``prob_columns``,
    ``groups``) to their values, refused for NumPy files when given; ``is_header`` is as for
    :func:`read_table`.
    """
    fmt = _format_of(blob)
    for option, value in (table_options or {}).items():
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
    return _read_table(blob, fmt, is_header=is_header, max_memory_bytes=max_memory_bytes)


def parse_labels(blob, *, is_header, max_memory_bytes):
    """Read a separate labels file: (values, Where) of a ``.npy`` or ``.npz`` file, or the raw
    :class:`Table` of a CSV/TSV/text or Parquet file (:func:`calibdash.io.columns.labels_from_table`
    picks its labels); ``is_header`` is as for :func:`read_table`."""
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
    return _read_table(blob, fmt, is_header=is_header, max_memory_bytes=max_memory_bytes)
