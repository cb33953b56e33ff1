"""The contract every registered estimator keeps, and the tables derived from the registry.

Parametrised over :data:`calibdash.estimators.registry.REGISTRY`: an estimator added to the
registry is checked here without editing this file.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

import calibdash as cd
from calibdash.errors import ConfigError, NotFittedError
from calibdash.estimators import make_estimator
from calibdash.estimators.registry import (
    DEFAULT_ESTIMATORS,
    FAMILIES,
    PARAMETERS,
    REGISTRY,
    available_estimators,
    default_grid,
    entry,
    parameter,
    tuned_param,
)
from calibdash.evaluation.config import resolve
from calibdash.evaluation.gridtext import format_grid, parse_grid_text
from calibdash.reporting.references import REFERENCES, reference_keys

from .test_estimators import random_problem, same_confidences

CASES = [(name, notion) for name, e in REGISTRY.items() for notion in e.notions]
# The boosting map (many trees a fit) takes seconds where the others take milliseconds: its
# cases of the costliest checks run in `make test`, the others in `make test-fast` too.
CASES_BOOSTING_SLOW = [pytest.param(*c, marks=pytest.mark.slow) if c[0] == "boosting" else c for c in CASES]
# The scikit-learn maps are slow on many fits: the contract is checked on small problems.
N, D = 120, 3


def small_grid(name, notion):
    """At most three values of the default grid (ends and middle), the others at their first value."""
    grid = default_grid(name, notion)
    values = grid[tuned_param(name)]
    pick = values if len(values) <= 3 else [values[0], values[len(values) // 2], values[-1]]
    fixed = {k: v[0] for k, v in grid.items() if k != tuned_param(name)}
    return pick, fixed


@pytest.mark.parametrize("name,notion", CASES)
def test_parameters_round_trip_and_fit_returns_self(name, notion):
    values, fixed = small_grid(name, notion)
    est = make_estimator(entry(name).family, notion=notion, **fixed, **{tuned_param(name): values[0]})
    params = est.get_params()
    assert params[tuned_param(name)] == values[0] and params["notion"] == notion
    twin = clone(est)
    assert twin.get_params() == params and twin is not est
    assert est.set_params(**params) is est and est.get_params() == params
    P, y = random_problem(seed=1, n=N, d=D)
    assert est.fit(P, y) is est


@pytest.mark.parametrize("name,notion", CASES)
def test_using_an_unfitted_estimator_raises_not_fitted(name, notion):
    values, fixed = small_grid(name, notion)
    est = make_estimator(entry(name).family, notion=notion, **fixed, **{tuned_param(name): values[0]})
    P, _ = random_problem(seed=2, n=10, d=D)
    for method in (est.h_diag, est.squared_error, est.bilinear_form):
        with pytest.raises(NotFittedError, match="not fitted yet; call fit"):
            method(P)
    assert issubclass(NotFittedError, cd.CalibdashError)


@pytest.mark.parametrize("name,notion", CASES_BOOSTING_SLOW)
def test_fit_path_equals_separate_fits(name, notion):
    values, fixed = small_grid(name, notion)
    P, y = random_problem(seed=3, n=N, d=D)
    P_val, y_val = random_problem(seed=4, n=50, d=D)
    family, param = entry(name).family, tuned_param(name)
    path = make_estimator(family, notion=notion, **fixed).fit_path(P, y, values)
    risks = path.risks(P_val, y_val)
    assert len(path.estimators) == len(values) == len(risks)
    for value, model, r in zip(values, path.estimators, risks):
        alone = make_estimator(family, notion=notion, **fixed, **{param: value}).fit(P, y)
        np.testing.assert_allclose(model.h_diag(P_val), alone.h_diag(P_val), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(r, cd.risk(alone, P_val, y_val), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("name", [n for n, e in REGISTRY.items() if "top-label" in e.notions])
def test_top_label_estimators_depend_on_the_confidence_only(name):
    values, fixed = small_grid(name, "top-label")
    P, y = random_problem(seed=5, n=200, d=4)
    est = make_estimator(entry(name).family, notion="top-label", **fixed, **{tuned_param(name): values[0]}).fit(P, y)
    P_a = random_problem(seed=6, n=40, d=4)[0]
    P_b = same_confidences(P_a, np.random.default_rng(7))
    # equal up to rounding (a tiny bandwidth sums kernel values of very different sizes)
    np.testing.assert_allclose(est.h_diag(P_b), est.h_diag(P_a), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.h(P_a, P_b), est.h(P_a, P_a), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name,notion", CASES)
def test_registry_facts_agree(name, notion):
    e = entry(name)
    assert FAMILIES[e.family] is e.estimator and name in available_estimators(notion)
    # the default grid resolves, every value is accepted, and its text round-trips
    names, grids = resolve(notion, [name])
    assert names == [name] and grids[name] == default_grid(name, notion)
    param = tuned_param(name)
    assert parameter(param) is PARAMETERS[param] and parameter(param).words and parameter(param).help
    if parameter(param).numeric or parameter(param).choices:
        text = format_grid(grids[name][param])
        parsed = parse_grid_text(text, param)
        np.testing.assert_allclose([float(v) if not isinstance(v, str) else np.nan for v in parsed],
                                   [float(v) if not isinstance(v, str) else np.nan for v in grids[name][param]],
                                   rtol=1e-5)
    assert e.summary.endswith(".") and reference_keys(name) and all(k in REFERENCES for k in reference_keys(name))
    assert len(e.cost) == 2 and all(c > 0 for c in e.cost)


def test_default_sets_are_the_papers():
    assert DEFAULT_ESTIMATORS == {
        "top-label": ("15-bins", "bins", "kde", "kkkr", "ukkr"),
        "canonical": ("kde", "kkkr", "ukkr", "temperature"),
        "classwise": ("15-bins", "bins", "kde", "kkkr", "ukkr", "temperature"),
    }


def test_unknown_names_are_config_errors_listing_the_choices():
    with pytest.raises(ConfigError, match="Unknown estimator 'nope'; choose from '15-bins', 'bins'"):
        entry("nope")
    with pytest.raises(ValueError, match="Unknown estimator"):  # a ConfigError is a ValueError
        default_grid("nope", "top-label")
    with pytest.raises(ConfigError, match="does not support"):
        default_grid("bins", "canonical")
    assert parameter("no-such-parameter") is None


def test_grid_text_follows_the_registrys_parameter_descriptions():
    assert parse_grid_text("5, 10.0", "n_bins") == [5, 10]
    with pytest.raises(ConfigError, match="not a whole number"):
        parse_grid_text("7.5", "n_bins")
    assert parse_grid_text("0, 0.1", "y_min") == [0.0, 0.1]  # isotonic's floor may be 0
    with pytest.raises(ConfigError, match="positive number, got '0'"):
        parse_grid_text("0", "lam")
    assert parse_grid_text("fit, 1.5", "temperature") == ["fit", 1.5]
    with pytest.raises(ConfigError, match=r"'fit' is not a number\.$"):
        parse_grid_text("fit", "bandwidth")
