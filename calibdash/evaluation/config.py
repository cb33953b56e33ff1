"""The settings of an evaluation, resolved once: estimator names and their full grids.

What each named estimator is (its class, notions, default grid and tuned parameter) is
in :mod:`calibdash.estimators.registry`; this module combines it with the caller's
choices and fingerprints the result, so that equal runs get equal keys however their
settings were spelled.
"""

from __future__ import annotations

import hashlib
import itertools
import json

from calibdash.core.notions import check_notion
from calibdash.errors import ConfigError
from calibdash.estimators import make_estimator
from calibdash.estimators.registry import DEFAULT_ESTIMATORS, REGISTRY, available_estimators


def resolve(notion, estimators=None, grids=None):
    """The estimator names and full grids to run: defaults with the caller's overrides.

    Parameters
    ----------
    notion : str
    estimators : list of str or None
        None means ``DEFAULT_ESTIMATORS[notion]``.
    grids : dict or None
        ``{name: {param: values}}``; a parameter given here replaces that parameter's
        default values, the others keep theirs. A parameter given with one value is held
        fixed; several values of a parameter other than the family's tuned one are
        searched as a product.

    Returns
    -------
    names : list of str
    full_grids : dict  ``{name: {param: [values]}}``
    """
    check_notion(notion)
    names = list(DEFAULT_ESTIMATORS[notion] if estimators is None else estimators)
    if not names:
        raise ConfigError("Choose at least one estimator.")
    valid = available_estimators(notion)
    for name in names:
        if name not in REGISTRY:
            raise ConfigError(f"Unknown estimator {name!r}; choose from {', '.join(map(repr, REGISTRY))}.")
        if name not in valid:
            raise ConfigError(f"{name!r} does not support the {notion!r} notion; choose from {', '.join(map(repr, valid))}.")
    if len(set(names)) != len(names):
        raise ConfigError(f"Estimators are listed twice: {names}.")
    grids = dict(grids or {})
    unknown = set(grids) - set(names)
    if unknown:
        raise ConfigError(
            f"Grids were given for {', '.join(map(repr, sorted(unknown)))}, which are not among the "
            f"estimators to run ({', '.join(map(repr, names))})."
        )
    full = {}
    for name in names:
        grid = REGISTRY[name].default_grid(notion)
        for param, values in grids.get(name, {}).items():
            values = list(values) if isinstance(values, (list, tuple)) else [values]
            if not values:
                raise ConfigError(f"The grid of {name!r} gives no values for {param!r}.")
            grid[param] = values
        # make_estimator checks names and every value (raising with the valid choices)
        for combo in combinations(grid):
            make_estimator(REGISTRY[name].family, notion=notion, **combo)
        full[name] = grid
    return names, full


def config_fingerprint(data_sha256, notion, estimators=None, grids=None, test_size=0.2, n_folds=5, random_state=0, others=None):
    """sha256 identifying an evaluation: the data's fingerprint and the fully resolved
    configuration (default grids written out), so that equal runs get equal keys however
    their settings were spelled."""
    from calibdash.metrics.literature import resolve_others

    names, full = resolve(notion, estimators, grids or None)
    canon = {
        "notion": notion,
        "estimators": names,
        "grids": full,
        "others": resolve_others(notion, others),
        "test_size": float(test_size),
        "n_folds": int(n_folds),
        "random_state": int(random_state),
    }
    text = data_sha256 + json.dumps(canon, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def combinations(grid):
    """Every combination of the grid's values, as dicts, in order."""
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


__all__ = ["resolve", "combinations", "config_fingerprint"]
