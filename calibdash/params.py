"""scikit-learn's estimator protocol -- ``get_params``, ``set_params`` and a repr of the
parameters that differ from their defaults -- without importing scikit-learn.

The calibration estimators and recalibration maps follow scikit-learn's conventions (every
``__init__`` argument stored as an attribute of the same name, nothing else done there), so
``sklearn.base.clone`` and grid-search tools work on them through this protocol. They do not
inherit ``sklearn.base.BaseEstimator`` because importing it loads ``scipy.stats`` and
pandas (about a second), which every worker process that runs the pipeline's tasks would pay
before its first task, while none of the default estimators needs scikit-learn itself.
"""

from __future__ import annotations

import copy
import inspect


def _init_parameters(cls):
    init = cls.__init__
    if init is object.__init__:
        return []
    params = [p for p in inspect.signature(init).parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        raise RuntimeError(f"{cls.__name__}'s __init__ may not take *args: its parameters must be named.")
    return params


def _is_nan(value):
    return isinstance(value, float) and value != value


def _same(value, default):
    """Whether a parameter is at its default, as scikit-learn's repr decides it: by the two
    values' reprs (so 1 and 1.0 differ), NaN equal to NaN."""
    return repr(value) == repr(default) or (_is_nan(value) and _is_nan(default))


class Parametrized:
    """Mixin with ``get_params``/``set_params`` (scikit-learn's semantics, nested
    ``name__param`` keys included) and ``Class(changed=value)`` as repr."""

    @classmethod
    def _get_param_names(cls):
        """The ``__init__`` parameter names, sorted (as scikit-learn lists them)."""
        return sorted(p.name for p in _init_parameters(cls))

    def get_params(self, deep=True):
        """The parameters as a dict; with ``deep``, also those of parameters that have some
        (as ``name__param``)."""
        out = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params):
        """Set parameters (``name__param`` for a parameter's own); returns self."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested = {}
        for key, value in params.items():
            key, delim, sub = key.partition("__")
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {self}. Valid parameters are: "
                                 f"{self._get_param_names()!r}.")
            if delim:
                nested.setdefault(key, {})[sub] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub in nested.items():
            valid[key].set_params(**sub)
        return self

    def __repr__(self):
        defaults = {p.name: p.default for p in _init_parameters(type(self))}
        changed = [f"{k}={v!r}" for k, v in self.get_params(deep=False).items()
                   if defaults.get(k, inspect.Parameter.empty) is inspect.Parameter.empty or not _same(v, defaults[k])]
        return f"{type(self).__name__}({', '.join(changed)})"


def clone(estimator):
    """A new unfitted object with the same parameters, as ``sklearn.base.clone`` makes it:
    for an object of this protocol, its class called with its parameters, each cloned if it
    is such an object itself and deep-copied otherwise; any other object goes to
    scikit-learn's ``clone`` (imported then), so a user's own estimator is cloned as
    scikit-learn would."""
    if isinstance(estimator, Parametrized):
        params = {key: clone(value) if isinstance(value, Parametrized) else copy.deepcopy(value)
                  for key, value in estimator.get_params(deep=False).items()}
        return type(estimator)(**params)
    from sklearn.base import clone as sklearn_clone

    return sklearn_clone(estimator)
