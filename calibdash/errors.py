"""Errors and warnings raised while reading user-supplied predictions.

Everything the loader refuses is an :class:`InputError`; everything it accepts with a
reservation is a :class:`LoadWarning` carried on the returned object (never printed
behind the caller's back, so the app decides where to show it).
"""

from __future__ import annotations

__all__ = ["InputError", "LoadWarning"]


class InputError(ValueError):
    """The input cannot be used as predictions; the message says what, where and how to fix it.

    Subclasses :class:`ValueError`, so ``except ValueError`` keeps working for callers
    that do not know about calibdash.

    Parameters
    ----------
    message : str
        Human-readable explanation: what is wrong, where (file, line or row, column)
        and what to do about it.
    internal : bool, default=False
        True when the loader hit an exception it did not anticipate and wrapped it.
        Such an error is still reported to the user as an ``InputError``, but it points
        at a gap in calibdash's own checks; the tests assert it never happens.
    """

    def __init__(self, message, *, internal=False):
        super().__init__(message)
        self.internal = bool(internal)


class LoadWarning(str):
    """A reservation about loaded predictions: the message text plus a stable ``code``.

    A ``str`` subclass, so ``Predictions.warnings`` is a plain tuple of strings for
    display, while the app can still branch on ``w.code`` without parsing prose.

    Codes
    -----
    ``"absent-class"``
        A class never occurs in the labels.
    ``"small-n"``
        Too few rows for the default split and folds to give stable estimates.
    ``"saturated"``
        Many probabilities are exactly 0 or 1.
    ``"kind-override"``
        ``kind="logits"`` was forced on numbers that look like probabilities.
    ``"index-column"``
        An unnamed index column (as written by ``DataFrame.to_csv``) was dropped.
    """

    code: str

    def __new__(cls, code, message):
        self = super().__new__(cls, message)
        self.code = str(code)
        return self

    def __reduce__(self):
        return (LoadWarning, (self.code, str(self)))
