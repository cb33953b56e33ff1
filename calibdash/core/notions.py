"""Notions of calibration: how (P, y) become conditioning inputs and residuals.

Design note, section 1. Every notion yields

* ``U`` (n, du): the residuals whose pair products <u_i, u_j> are the risk's targets;
* one or more *problems* (Z_k, U_k): what a calibration estimation function regresses.
  Top-label and canonical have one problem; classwise has one 1-D problem per class,
  and its estimate is the sum over classes.

One-dimensional problems also carry the complement 1 - z computed as the sum of the
other probabilities, because ``1 - z`` in floating point loses every digit when z is
within 1e-16 of 1 (a quarter of the rows of a confident CIFAR-10 network).
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

import numpy as np

from calibdash.core.simplex import check_labels, check_probabilities, one_hot
from calibdash.errors import ConfigError

NOTIONS = ("top-label", "canonical", "classwise")


def check_notion(notion, supported=NOTIONS, family=None):
    """Raise ConfigError listing the valid choices when ``notion`` is not one of them."""
    if notion not in NOTIONS:
        raise ConfigError(f"Unknown notion {notion!r}; choose one of {', '.join(map(repr, NOTIONS))}.")
    if notion not in supported:
        who = f"The {family!r} estimator" if family else "This estimator"
        raise ConfigError(
            f"{who} does not support the {notion!r} notion; it supports "
            f"{', '.join(map(repr, supported))}."
        )
    return notion


@dataclass(frozen=True)
class Problem:
    """One regression problem: inputs ``Z`` (n, dz) and, for 1-D inputs, the simplex
    form ``S`` = [z, 1 - z] (n, 2); for canonical ``S`` is P itself."""

    Z: np.ndarray
    S: np.ndarray


# Set inside :func:`validated_inputs`: the top-label problem of a read-only array, keyed by
# the array's identity. The pipeline's tasks make their rows read-only, and every estimator
# of a fold asks for the same problem of them again (about 150 times per evaluation, 8 s of
# a 10,000,000-row top-label run). A read-only array cannot change under the memo, and the
# memo keeps the array itself, so that its id is not reused while the scope lasts.
_TOP_LABEL_MEMO = contextvars.ContextVar("calibdash_top_label_memo", default=None)


def _memoised(kind, arrays, compute):
    """``compute()``, remembered for the scope when every array is read-only; the remembered
    arrays are made read-only too, so that no caller can change what the next one gets."""
    memo = _TOP_LABEL_MEMO.get()
    if memo is None or any(a.flags.writeable for a in arrays):
        return compute()
    key = (kind, *map(id, arrays))
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    out = compute()
    for a in _arrays_of(out):
        a.flags.writeable = False
    memo[key] = (arrays, out)
    return out


def _arrays_of(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, Problem):
        yield value.Z
        yield value.S
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _arrays_of(v)


def top_label(P):
    """Confidence c = max_k p_k, its complement 1 - c (accurately) and the argmax."""
    return _memoised("top_label", (P,), lambda: _top_label(P))


def _top_label(P):
    if P.shape[1] == 2:
        return _top_label_of_two(P[:, 0], P[:, 1])
    k = np.argmax(P, axis=1)  # ties go to the first index, numpy's convention
    rows = np.arange(P.shape[0])
    c = P[rows, k]
    # a boolean mask is an eighth of a copy of P (which is 320 MB at 40,000 x 1,000)
    others = np.ones(P.shape, dtype=bool)
    others[rows, k] = False
    return c, np.sum(P, axis=1, where=others), k


def _top_label_of_two(p0, p1):
    """:func:`_top_label` of a binary classifier's columns, the same numbers: np.argmax along
    rows of two loops over each row (about 30 ms per million rows), and the gathers by it
    as long; two comparisons and two selections are a tenth of that. The other column is the
    complement, exactly (the sum is not). NaN is the largest value for np.argmax, the first
    one winning, and so here."""
    second = (p1 > p0) | (np.isnan(p1) & ~np.isnan(p0))
    return np.where(second, p1, p0), np.where(second, p0, p1), second.astype(np.intp)


def problems(P, notion):
    """The estimator inputs of ``P`` for ``notion`` (labels are not needed)."""
    if notion == "top-label":
        return _memoised("problems", (P,), lambda: _top_label_problems(P))
    if notion == "canonical":
        return [Problem(P, P)]
    if notion == "classwise":
        # total - p_k is accurate whenever p_k <= 1/2; only a row's largest entry can
        # exceed that, and its complement is taken from the exact sum of the others.
        rest = P.sum(axis=1, keepdims=True) - P
        _, top_rest, k = top_label(P)
        rest[np.arange(P.shape[0]), k] = top_rest
        return [Problem(P[:, [j]], np.column_stack([P[:, j], rest[:, j]])) for j in range(P.shape[1])]
    raise ConfigError(f"Unknown notion {notion!r}; choose one of {', '.join(map(repr, NOTIONS))}.")


def _top_label_problems(P, top=None):
    c, rest, _ = top_label(P) if top is None else top
    return [Problem(c[:, None], np.column_stack([c, rest]))]


def residuals(P, y, notion):
    """Residuals U = Z - T for the risk targets; (n, 1) for top-label, (n, d) otherwise."""
    if notion == "top-label":
        c, _, k = top_label(P)
        return (c - (k == y))[:, None]
    if notion in ("canonical", "classwise"):
        return P - one_hot(y, P.shape[1])
    raise ConfigError(f"Unknown notion {notion!r}; choose one of {', '.join(map(repr, NOTIONS))}.")


def training_problems(P, y, notion):
    """(Problem, residual block U_k, target block T_k) for each problem of the notion, with
    the top-label confidence and the one-hot targets computed once (an estimator's fit)."""
    if notion == "top-label":
        return _memoised("training_problems", (P, y), lambda: _top_label_training_problems(P, y))
    T = one_hot(y, P.shape[1])
    U = P - T
    if notion == "canonical":
        return [(Problem(P, P), U, T)]
    if notion == "classwise":
        return [(p, U[:, [k]], T[:, [k]]) for k, p in enumerate(problems(P, notion))]
    raise ConfigError(f"Unknown notion {notion!r}; choose one of {', '.join(map(repr, NOTIONS))}.")


def _top_label_training_problems(P, y):
    top = c, _, k = top_label(P)
    (problem,) = _memoised("problems", (P,), lambda: _top_label_problems(P, top))
    t = (k == y).astype(np.float64)[:, None]
    return [(problem, c[:, None] - t, t)]


# Set while calibdash runs work on arrays it has already checked (the pipeline's tasks):
# every fit and evaluation inside calls validate, about 180 times per evaluation, each a
# pass over n x d numbers (0.14 s at 40,000 x 1,000).
_INPUTS_VALIDATED = contextvars.ContextVar("calibdash_inputs_validated", default=False)


@contextlib.contextmanager
def validated_inputs():
    """Context in which :func:`validate` trusts its arguments: they were checked at the public
    entry (float64 probability rows, int64 labels in range) and only indexed since. Checks
    change no number (rows are never renormalised), so results are the same inside and out.
    Inside it, the top-label problem of a read-only array is also computed once (the same
    numbers: the same function of the same array)."""
    token = _INPUTS_VALIDATED.set(True)
    memo = _TOP_LABEL_MEMO.set({})
    try:
        yield
    finally:
        _TOP_LABEL_MEMO.reset(memo)
        _INPUTS_VALIDATED.reset(token)


def validate(P, y=None):
    """Checked float64 probabilities and, when given, int64 labels (passed through unchecked
    inside :func:`validated_inputs`)."""
    if _INPUTS_VALIDATED.get():
        return P, y
    P = check_probabilities(P)
    if y is None:
        return P, None
    return P, check_labels(y, P.shape[0], P.shape[1])
