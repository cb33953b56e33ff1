"""calibdash's exceptions and the loader's warnings.

Every error calibdash raises on purpose is a :class:`CalibdashError`: bad data is an
:class:`InputError`, bad settings a :class:`ConfigError`, using an unfitted estimator a
:class:`NotFittedError`. The first two are also ``ValueError`` subclasses, so that callers who do
not know calibdash can catch them as usual. Anything else that escapes is a bug (the
command line shows its traceback and asks for a report).

Everything the loader refuses is an :class:`InputError`; everything it accepts with a
reservation is a :class:`LoadWarning` carried on the returned object (never printed
behind the caller's back, so the app decides where to show it).

Both keep the user text in their message marked (:func:`calibdash.text.user`): ``str()``
is the plain message, ``.parts`` its ``(text, is_user)`` pieces, from which the app shows the
user's words literally (:func:`calibdash.text.markdown`).
"""

from __future__ import annotations

from calibdash.text import CLOSE, OPEN, split_marked, strip_marks

__all__ = ["CalibdashError", "InputError", "ConfigError", "NotFittedError", "LoadWarning", "LoadNote", "check_is_fitted",
           "detached"]


def _marked(parts):
    return "".join(f"{OPEN}{t}{CLOSE}" if is_user else t for t, is_user in parts)


class CalibdashError(Exception):
    """Base class of the errors calibdash raises on purpose (a message for the user)."""


class ConfigError(CalibdashError, ValueError):
    """A setting cannot be used (unknown estimator, notion, parameter or value); the
    message lists the valid choices."""


class NotFittedError(CalibdashError, ValueError, AttributeError):
    """An estimator or map was used before ``fit`` (a ValueError and an AttributeError,
    like scikit-learn's)."""


def check_is_fitted(estimator, attribute="n_classes_"):
    """Raise :class:`NotFittedError` unless ``estimator`` has the fitted ``attribute``."""
    if getattr(estimator, attribute, None) is None:
        raise NotFittedError(f"This {type(estimator).__name__} is not fitted yet; call fit(P, y) first.")


class InputError(CalibdashError, ValueError):
    """The input cannot be used as predictions; the message says what, where and how to fix it.

    Subclasses :class:`ValueError`, so ``except ValueError`` keeps working for callers
    that do not know about calibdash.

    Parameters
    ----------
    message : str
        Human-readable explanation: what is wrong, where (file, line or row, column)
        and what to do about it. User text in it is marked with
        :func:`calibdash.text.user`; the marks are kept in ``parts`` and left out of
        ``str(error)``.
    internal : bool, default=False
        True when the loader hit an exception it did not anticipate and wrapped it.
        Such an error is still reported to the user as an ``InputError``, but it points
        at a gap in calibdash's own checks; the tests assert it never happens.
    option : str, optional
        The :func:`calibdash.load_predictions` option that resolves the problem (e.g.
        ``"label_column"``), when the message asks for one. The message names it in Python
        terms; the app and the command line use it to say what to do in their own terms.
    fix : str, optional
        The sentence that says how to fix it in Python terms ("Pass positive=... (one of the
        labels)."), appended to ``message``. Kept apart so that a front end with its own
        words for ``option`` (the app's widgets) shows :attr:`problem` and its own sentence.

    Attributes
    ----------
    parts : tuple of (str, bool)
        The message in pieces, each with whether it is user text.
    option : str or None
        See the parameter.
    fix : str or None
        See the parameter.
    problem : tuple of (str, bool)
        The pieces of the message without ``fix``: what is wrong, for a front end that says
        how to fix it in its own terms (``parts`` when there is no ``fix``).
    """

    def __init__(self, message, *, internal=False, option=None, fix=None):
        self.problem = tuple(split_marked(message))
        full = message if fix is None else f"{message} {fix}"
        self.parts = tuple(split_marked(full))
        super().__init__(strip_marks(full))
        self.internal = bool(internal)
        self.option = option
        self.fix = fix

    def without_fix(self):
        """This error without its ``fix`` sentence (itself when it has none): for a front end
        that says how to fix it in its own terms."""
        if self.fix is None:
            return self
        return type(self)(_marked(self.problem), internal=self.internal, option=self.option)

    def __reduce__(self):
        # The marks travel with a pickled error (to and from worker processes).
        return (_rebuilt, (type(self), _marked(self.problem), self.internal, self.option, self.fix))


def _rebuilt(cls, message, internal, option, fix):
    # Unpickles an InputError (its keyword arguments, which an exception's own pickling drops).
    return cls(message, internal=internal, option=option, fix=fix)


def detached(error):
    """``error`` without its traceback, cause and context, to be kept after it was caught.

    A caught exception holds the frames it passed through, and with them their locals: kept
    in an object that outlives the call (the app's inspection of an upload, stored in the
    session for hours), an :class:`InputError` pinned the decoded file it was raised about
    (953 MB for a 920-byte Parquet file). The message, parts and option stay.
    """
    error.__traceback__ = None
    error.__cause__ = error.__context__ = None
    error.__suppress_context__ = True
    return error


class LoadWarning(str):
    """A reservation about loaded predictions: the message text plus a stable ``code``.

    A ``str`` subclass, so ``Predictions.warnings`` is a plain tuple of strings for
    display, while the app can still branch on ``w.code`` without parsing prose. The
    string is the plain message; ``parts`` holds its pieces with the user text marked, as
    :class:`InputError`'s.

    The codes:

    ``"absent-class"``
        A class never occurs in the labels.
    ``"small-n"``
        Too few rows for the default split and folds to give stable estimates.
    ``"saturated"``
        Many probabilities are exactly 0 or 1.
    ``"kind-override"``
        ``kind="logits"`` was forced on numbers that look like probabilities or percentages.
    ``"index-column"``
        An unnamed index column (as written by ``DataFrame.to_csv``) was dropped.
    """

    code: str
    parts: tuple

    def __new__(cls, code, message):
        self = super().__new__(cls, strip_marks(message))
        self.code = str(code)
        self.parts = tuple(split_marked(message))
        return self

    def __reduce__(self):
        return (type(self), (self.code, _marked(self.parts)))


class LoadNote(LoadWarning):
    """A neutral remark on how the loader read the input (``Predictions.notes``): a guess it
    made or a conversion it applied. Built like :class:`LoadWarning` (text, ``code``, ``parts``).

    The codes: ``"label-column"``, ``"prob-columns"``, ``"class-names"`` and ``"positive"``
    (a column-mapping guess), ``"percent"`` (values divided by 100), ``"renormalised"``
    (low-precision rows rescaled), ``"float16"`` and ``"by-name"`` (integer labels matched to
    numeric class names).
    """
