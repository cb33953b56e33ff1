"""Gathers of rows by their numbers, the commonest copy of the pipeline (each fold's training
and validation rows, the holdout rows)."""

from __future__ import annotations

import numpy as np

__all__ = ["SortedParts", "take_rows"]


def take_rows(A, rows):
    """``A[rows]`` for an array of row numbers ``rows``, as a plain ndarray: the same numbers.

    NumPy's fancy indexing copies a 2-D array's rows one by one, ``np.take`` along axis 0 in
    one typed loop: for 6,400,000 of 10,000,000 rows of two columns 0.43 s against 0.09 s.
    ``np.asarray`` first, so that a memory-mapped input (joblib's) gives an ndarray, as
    indexing does, not a ``np.memmap`` that maps nothing.
    """
    return np.take(np.asarray(A), rows, axis=0)


class SortedParts:
    """Each part of a split (arrays of row numbers) in the stable order of ``values``, so
    that the stable order of the rows of any concatenation of parts (a fold's training rows)
    is a merge of sorted runs: NumPy's stable sort is a timsort, which finds the runs and
    merges them, 0.14 s instead of 1.28 s for 6,400,000 rows of 4 parts.

    Parameters
    ----------
    values : ndarray (n,)
    parts : list of integer arrays into ``values``
    """

    def __init__(self, values, parts):
        self.values = values
        self.parts = list(parts)
        self.orders = [np.argsort(take_rows(values, p), kind="stable") for p in self.parts]

    def order_of(self, keep):
        """``np.argsort(values[np.concatenate([parts[j] for j in keep])], kind="stable")``.

        Within a run, tied values keep their order in their part, and the runs come in the
        order of ``keep``: so ties come in the order of the concatenation, as a stable sort of
        it puts them."""
        keep = list(keep)
        runs = np.concatenate([take_rows(self.parts[j], self.orders[j]) for j in keep])
        merged = np.argsort(take_rows(self.values, runs), kind="stable")
        starts = np.cumsum([0] + [len(self.parts[j]) for j in keep[:-1]])
        positions = np.concatenate([self.orders[j] + s for j, s in zip(keep, starts)])
        return take_rows(positions, merged)
