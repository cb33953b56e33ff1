"""Probability vectors on the simplex: the stable softmax and the input checks every
estimator applies before it touches the numbers."""

from __future__ import annotations

import numpy as np

from calibdash.core.elementwise import at_least
from calibdash.errors import InputError

# float32 exports sum to 1 only within a few 1e-7 per entry; 1e-4 accepts them
# (and d in the thousands) while still catching logits and unnormalised scores.
ROW_SUM_TOLERANCE = 1e-4

# Smallest positive float64: log(LOG_FLOOR) is about -708, finite, so exact zeros
# never turn into -inf or NaN inside the kernels.
LOG_FLOOR = np.finfo(np.float64).tiny


def softmax(logits, axis=-1):
    """Map logits to probabilities along ``axis``, stably and in float64.

    Parameters
    ----------
    logits : array-like
        Real scores; ``-inf`` is allowed (a probability of exactly 0) as long as each
        vector has at least one finite entry.
    axis : int, default=-1
        Axis along which the vectors lie.

    Returns
    -------
    ndarray of float64
        Non-negative values that sum to 1 along ``axis``.
    """
    x = np.asarray(logits, dtype=np.float64)
    if np.isnan(x).any() or np.isposinf(x).any():
        raise InputError("softmax: the logits contain NaN or +inf; remove or fix those rows.")
    top = np.max(x, axis=axis, keepdims=True)
    if not np.isfinite(top).all():
        raise InputError("softmax: a row of logits is entirely -inf; it has no probability.")
    e = np.exp(x - top)
    return e / e.sum(axis=axis, keepdims=True)


def log_clipped(p):
    """Natural log with probabilities clipped at the smallest positive float64."""
    return np.log(at_least(p, LOG_FLOOR))


def check_probabilities(P, name="P"):
    """Return ``P`` as a float64 (n, d) array of probability vectors, or raise InputError.

    Rows must be finite, non-negative and sum to 1 within ``ROW_SUM_TOLERANCE``; they are
    not renormalised, so no number is silently changed.
    """
    P = np.asarray(P)
    if P.dtype == object or not np.issubdtype(P.dtype, np.number):
        raise InputError(f"{name} must be a numeric array, got dtype {P.dtype}.")
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2:
        raise InputError(f"{name} must be a 2-D array (n samples x d classes), got shape {P.shape}.")
    n, d = P.shape
    if n == 0:
        raise InputError(f"{name} has no rows.")
    if d < 2:
        raise InputError(f"{name} has {d} column(s); give one probability per class (at least 2).")
    bad = ~np.isfinite(P).all(axis=1)
    if bad.any():
        raise InputError(f"{name} has NaN or infinite values (first at row {int(np.argmax(bad))}).")
    neg = (P < 0).any(axis=1)
    if neg.any():
        raise InputError(
            f"{name} has negative entries (first at row {int(np.argmax(neg))}); "
            "these look like logits: convert them with cd.softmax."
        )
    off = np.abs(P.sum(axis=1) - 1.0) > ROW_SUM_TOLERANCE
    if off.any():
        i = int(np.argmax(off))
        raise InputError(
            f"{name} row {i} sums to {P[i].sum():.6g}, not 1; "
            "if these are logits or scores, convert them with cd.softmax."
        )
    return P


def check_labels(y, n, d, name="y"):
    """Return ``y`` as int64 labels in [0, d) of length ``n``, or raise InputError."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise InputError(f"{name} must be a 1-D array of class indices, got shape {y.shape}.")
    if y.shape[0] != n:
        raise InputError(f"{name} has {y.shape[0]} labels but there are {n} prediction rows.")
    if y.dtype.kind == "f":
        frac = y != np.round(y)
        if frac.any():
            raise InputError(f"{name} has a non-integer label at row {int(np.argmax(frac))}.")
    elif y.dtype.kind not in "iub":
        raise InputError(f"{name} must hold integer class indices, got dtype {y.dtype}.")
    # No copy of labels that are int64 already (the probabilities are not copied either):
    # at 10,000,000 rows a copy is 80 MB more for the whole run.
    y = y.astype(np.int64, copy=False)
    out = (y < 0) | (y >= d)
    if out.any():
        i = int(np.argmax(out))
        raise InputError(f"{name} row {i} is {y[i]}, outside the classes 0..{d - 1}.")
    return y


def one_hot(y, d):
    """(n, d) float64 indicator matrix of the labels."""
    T = np.zeros((y.shape[0], d), dtype=np.float64)
    T[np.arange(y.shape[0]), y] = 1.0
    return T


def sample_labels(rng, P):
    """One categorical draw per row of P, by inverse CDF."""
    cdf = np.cumsum(P, axis=1)
    u = rng.random(P.shape[0]) * cdf[:, -1]
    return np.minimum((cdf < u[:, None]).sum(axis=1), P.shape[1] - 1).astype(np.int64)
