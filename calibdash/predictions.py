"""The predictions calibdash works on: :class:`Predictions`, validated and read-only.

:func:`calibdash.load_predictions` (:mod:`calibdash.io.loading`) builds a :class:`Predictions`
from a file or arrays; everything else (the evaluation, the clinical validation, the report)
only takes one. The type lives here, on the package's ground floor beside
:mod:`calibdash.errors`, so that they need not import the loader for it. Here too are what
identifies and describes a :class:`Predictions`: :func:`canonical_sha256` of its numbers,
and the vocabulary of how a source was read (:data:`KINDS`, :data:`LOAD_OPTIONS`), which a
run records in its result file. :mod:`calibdash.io.loading` re-exports all four.

Nothing here imports another calibdash module.
"""

from __future__ import annotations

import hashlib
import types
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Predictions", "canonical_sha256", "KINDS", "LOAD_OPTIONS"]

#: The readings of the numbers: detected, or chosen by the caller.
KINDS = ("auto", "probabilities", "percent", "logits")
#: The options of :func:`calibdash.load_predictions` that decide how a source is read (a run records them).
LOAD_OPTIONS = ("kind", "label_column", "prob_columns", "positive", "class_names", "groups")

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
    h.update(memoryview(probs).cast("B"))  # the array's own bytes: no copy of them (tobytes made one)
    h.update(memoryview(labels).cast("B"))
    return h.hexdigest()


@dataclass(frozen=True, eq=False, repr=False)
class Predictions:
    """Predicted class probabilities and true labels, validated and read-only.

    Build it with :func:`calibdash.load_predictions`; constructing it directly skips every check
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
    kind : {"logits", "probabilities", "percent"}
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
        Neutral remarks on how the input was interpreted, every guess among them
        (:class:`~calibdash.errors.LoadNote` strings, each with a ``code``).
    groups : mapping of str to ndarray of str
        Grouping columns kept from a table (``groups``): column name -> one string
        per row (missing values as ``""``). Read-only; not part of ``sha256``.
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
    groups: types.MappingProxyType = field(default_factory=dict)
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
        # str() of a marked name (calibdash.text.UserText) is the plain string: the marks
        # belong to messages, not to the data.
        object.__setattr__(self, "class_names", tuple(str(c) for c in self.class_names))
        object.__setattr__(self, "source_name", str(self.source_name))
        object.__setattr__(self, "warnings", tuple(self.warnings))
        object.__setattr__(self, "notes", tuple(self.notes))
        groups = {}
        for col, values in dict(self.groups).items():
            values = np.array(values, dtype=str)
            values.flags.writeable = False
            groups[str(col)] = values
        object.__setattr__(self, "groups", types.MappingProxyType(groups))
        object.__setattr__(self, "sha256", canonical_sha256(probs, labels))

    def __reduce__(self):
        # Unpickled arrays come back writeable (st.cache_data pickles return values), so
        # rebuild through the constructor, which freezes them and recomputes the hash.
        return (
            Predictions,
            (self.probs, self.labels, self.class_names, self.kind, self.kind_detected,
             self.source_name, self.warnings, self.notes, dict(self.groups)),
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
        elif self.kind == "percent":
            conv = "divided by 100, rows renormalised to sum to 1 at float64 precision"
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
        if self.d == 2 and not default:
            lines.append(f"positive class: {self.class_names[1]!r} (the probability of class 1)")
        if self.groups:
            lines.append(f"grouping columns: {', '.join(map(repr, self.groups))}")
        lines += [f"note: {s}" for s in self.notes]
        lines += [f"warning: {s}" for s in self.warnings] or ["warnings: none"]
        return "\n".join(lines)
