"""Gathers of rows by their numbers, the commonest copy of the pipeline (each fold's training
and validation rows, the holdout rows)."""

from __future__ import annotations

import numpy as np

__all__ = ["take_rows"]


def take_rows(A, rows):
    """``A[rows]`` for an array of row numbers ``rows``, as a plain ndarray: the same numbers.

    NumPy's fancy indexing copies a 2-D array's rows one by one, ``np.take`` along axis 0 in
    one typed loop: for 6,400,000 of 10,000,000 rows of two columns 0.43 s against 0.09 s.
    ``np.asarray`` first, so that a memory-mapped input (joblib's) gives an ndarray, as
    indexing does, not a ``np.memmap`` that maps nothing.
    """
    return np.take(np.asarray(A), rows, axis=0)
