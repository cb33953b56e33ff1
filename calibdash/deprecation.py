"""Retired names that keep working for one release, with a warning that names the new one.

calibdash speaks the scientific Python vocabulary (NumPy, SciPy, scikit-learn):
``strategy={"uniform", "quantile"}`` for bins, ``n_resamples`` for a bootstrap or a
resampling test, ``random_state`` for a seed, ``groups`` for grouping columns and
``estimate``/``se`` for a number and its standard error. The names it used before
(:data:`RETIRED`) are accepted for one release through :func:`renamed_parameters` and
:func:`renamed_attribute`, which warn with a :class:`DeprecationWarning`.

This module is on the ground floor: it imports nothing of calibdash.
"""

from __future__ import annotations

import functools
import inspect
import warnings

__all__ = ["renamed_parameters", "renamed_attribute", "RenamedKeys", "retired_module_attribute", "RETIRED",
           "RETIRED_VALUES", "translate_keys"]

#: The retired parameter names and the names that replaced them.
RETIRED = {"n_boot": "n_resamples", "seed": "random_state", "binning": "strategy", "group_columns": "groups"}
#: The retired values of a renamed parameter (under the old name): ``binning="width"`` is ``strategy="uniform"``.
RETIRED_VALUES = {"binning": {"width": "uniform", "mass": "quantile"}}


def renamed_parameters(*, values=None, **renames):
    """Decorator: accept the retired keyword names ``renames`` (old=new) for one release.

    The decorated function keeps its own (new) signature, which ``inspect.signature``
    shows; an old name arrives through the wrapper only, is translated to the new one
    with a :class:`DeprecationWarning` that names it, and its value is mapped through
    ``values[old]`` when given (e.g. ``{"binning": {"width": "uniform"}}``). Passing
    both the old and the new name is a :class:`TypeError`, as passing a name twice is.

    Parameters
    ----------
    values : dict of str to dict, optional
        Per old name, the old values and the new values they stand for; other values pass
        unchanged.
    **renames : str
        ``old_name="new_name"``.
    """
    values = dict(values or {})

    def decorate(func):
        params = inspect.signature(func).parameters
        for old, new in renames.items():
            if new not in params:  # a typo here would silently accept nothing
                raise TypeError(f"{func.__qualname__} has no parameter {new!r} to rename {old!r} to")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{func.__qualname__}() got both {old!r} and its new name {new!r}; "
                                        f"pass {new!r} only")
                    value = kwargs.pop(old)
                    mapped = values.get(old, {})
                    shown = ""
                    if isinstance(value, str) and value in mapped:
                        shown = f" ({old}={value!r} is {new}={mapped[value]!r})"
                        value = mapped[value]
                    warnings.warn(f"{func.__qualname__}: {old!r} is deprecated and will be removed in the next "
                                  f"release; use {new!r}{shown}.", DeprecationWarning, stacklevel=2)
                    kwargs[new] = value
            return func(*args, **kwargs)

        wrapper.__deprecated_parameters__ = dict(renames)
        return wrapper

    return decorate


def renamed_attribute(new, old):
    """A read-only property ``old`` that returns attribute ``new`` with a :class:`DeprecationWarning`.

    Put it in a class body: ``value = renamed_attribute("estimate", "value")``.
    """

    def getter(self):
        warnings.warn(f"{type(self).__name__}.{old} is deprecated and will be removed in the next release; "
                      f"use .{new}.", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    getter.__deprecated__ = new  # how a check of the vocabulary tells this alias from a plain attribute
    return property(getter, doc=f"Deprecated: the same as ``{new}``.")


def translate_keys(mapping, renames, values=None):
    """A copy of ``mapping`` with the retired keys ``renames`` (old=new) under their new names and
    retired values mapped (``values`` as in :func:`renamed_parameters`); a new key already present
    wins. For settings stored in files written before the renaming, so no warning is given."""
    values = dict(values or {})
    out = dict(mapping)
    for old, new in renames.items():
        if old in out:
            value = out.pop(old)
            if isinstance(value, str):
                value = values.get(old, {}).get(value, value)
            out.setdefault(new, value)
    return out


class RenamedKeys(dict):
    """A dict whose retired keys (:data:`RETIRED`) still read, for one release, with a
    :class:`DeprecationWarning`: ``spec["binning"]`` gives ``spec["strategy"]`` in the old
    words (``"width"`` for ``"uniform"``), so code written against the old settings reads
    what it read before. Anything else behaves as a plain dict (equality, JSON, copies)."""

    def __missing__(self, key):
        new = RETIRED.get(key)
        if new is None or new not in self:
            raise KeyError(key)
        old_words = {v: k for k, v in RETIRED_VALUES.get(key, {}).items()}
        value = self[new]
        warnings.warn(f"the key {key!r} is deprecated and will be removed in the next release; read {new!r}"
                      + (f" ({new}={value!r} is {key}={old_words[value]!r})" if value in old_words else "") + ".",
                      DeprecationWarning, stacklevel=2)
        return old_words.get(value, value)


def retired_module_attribute(module, name, retired):
    """The body of a module's ``__getattr__`` (PEP 562) for its retired names.

    ``retired`` maps an old name to ``(value, replacement)``: the value it had before (given
    with a :class:`DeprecationWarning` naming ``replacement``); other names raise the
    ``AttributeError`` Python would.
    """
    if name not in retired:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    value, replacement = retired[name]
    warnings.warn(f"{module}.{name} is deprecated and will be removed in the next release; use {replacement}.",
                  DeprecationWarning, stacklevel=3)
    return value
