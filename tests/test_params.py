"""calibdash.params: scikit-learn's estimator protocol without scikit-learn. Its repr,
get_params and set_params agree with sklearn.base.BaseEstimator's on every estimator family
and recalibration map, and sklearn.base.clone works on them."""

from __future__ import annotations

import pytest
from sklearn.base import BaseEstimator, clone

from calibdash.estimators.registry import FAMILIES
from calibdash.metrics.recalibrators import RECALIBRATORS, make_recalibrator
from calibdash.params import Parametrized

CHANGES = [{}, {"notion": "top-label"}, {"notion": "classwise", "random_state": 3}]


def sklearn_twin(obj):
    """The same class on sklearn's BaseEstimator: the oracle for repr and get_params."""
    twin = type(type(obj).__name__, (BaseEstimator,), {"__init__": type(obj).__init__})
    return twin(**obj.get_params(deep=False))


def instances():
    for cls in FAMILIES.values():
        names = cls._get_param_names()
        for change in CHANGES:
            yield cls(**{k: v for k, v in change.items() if k in names})
        params = {k: v for k, v in cls().get_params().items()}
        numeric = {k: v * 2 for k, v in params.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        yield cls(**numeric)
    for name in RECALIBRATORS:
        yield make_recalibrator(name)


@pytest.mark.parametrize("obj", list(instances()), ids=repr)
def test_repr_and_params_are_sklearns(obj):
    assert isinstance(obj, Parametrized) and not isinstance(obj, BaseEstimator)
    twin = sklearn_twin(obj)
    assert repr(obj) == repr(twin)
    assert obj.get_params() == twin.get_params() and obj._get_param_names() == twin._get_param_names()
    copy = clone(obj)
    assert copy is not obj and type(copy) is type(obj) and copy.get_params() == obj.get_params()


def test_set_params_sets_and_refuses_unknown_names():
    est = FAMILIES["kde"]()
    assert est.set_params(bandwidth=0.3) is est and est.bandwidth == 0.3
    with pytest.raises(ValueError, match="Invalid parameter 'width'"):
        est.set_params(width=1)


def test_nested_parameters_are_reached_with_double_underscores():
    class Outer(Parametrized):
        def __init__(self, inner=None, k=1):
            self.inner = inner
            self.k = k

    outer = Outer(inner=make_recalibrator("isotonic"))
    assert outer.get_params()["inner__y_min"] == 0.0
    outer.set_params(inner__y_min=0.2, k=4)
    assert outer.inner.y_min == 0.2 and outer.k == 4
    assert repr(outer) == "Outer(inner=IsotonicRecalibrator(y_min=0.2), k=4)"


def test_the_repr_decides_changed_values_as_sklearn_does():
    """By the values' reprs (1 is not 1.0, a NumPy float is not a float) with NaN equal to NaN."""
    import numpy as np

    class M(Parametrized):
        def __init__(self, a=1.0, b=float("nan"), c=None):
            self.a = a
            self.b = b
            self.c = c

    for kwargs in [{}, {"a": 1}, {"a": 1.0}, {"a": np.float64(1.0)}, {"b": float("nan")}, {"b": 0.0}, {"c": [1, 2]}]:
        obj = M(**kwargs)
        assert repr(obj) == repr(sklearn_twin(obj)), kwargs
    assert repr(M(b=float("nan"))) == "M()" and repr(M(a=1)) == "M(a=1)"
