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
import math
import numbers
from dataclasses import dataclass

import numpy as np

from calibdash.core.notions import NOTIONS, check_notion
from calibdash.errors import ConfigError, InputError
from calibdash.estimators import make_estimator
from calibdash.estimators.registry import DEFAULT_ESTIMATORS, N_BINS, REGISTRY, available_estimators
from calibdash.limits import FOLDS, GRID_COMBINATIONS, GRID_VALUES


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

    Raises
    ------
    ConfigError
        For an unknown name or value, or a grid over :data:`calibdash.limits.GRID_VALUES`
        values of a parameter or :data:`calibdash.limits.GRID_COMBINATIONS` combinations,
        checked before any estimator is built.
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
            GRID_VALUES.check(len(values), f"the {param} grid of {name!r}")
            grid[param] = values
        GRID_COMBINATIONS.check(math.prod(len(v) for v in grid.values()), f"the grid of {name!r}")
        # make_estimator checks names and every value (raising with the valid choices)
        for combo in combinations(grid):
            make_estimator(REGISTRY[name].family, notion=notion, **combo)
        full[name] = grid
    return names, full


def check_split(test_size, n_folds):
    """Raise :class:`ConfigError` unless the holdout fraction and the fold count can be used
    (at least 2 folds, at most :data:`calibdash.limits.FOLDS`)."""
    if isinstance(test_size, bool) or not isinstance(test_size, numbers.Real) or not 0 < test_size < 1:
        raise ConfigError(f"test_size must lie strictly between 0 and 1, got {test_size!r}.")
    if isinstance(n_folds, bool) or not isinstance(n_folds, numbers.Integral) or n_folds < 2:
        raise ConfigError(f"n_folds must be an integer of at least 2, got {n_folds!r}.")
    FOLDS.check(int(n_folds), "the cross-validation")


def check_rows(notion, full_grids, n):
    """Raise :class:`ConfigError` if a grid asks for more bins than the data have rows.

    Checked once the data are known and before any work: a bin count is allocated as it
    is given (``n_bins=10**12`` would exhaust the memory), and bins beyond the number of
    rows are empty anyway. The registry's default values are always allowed (they are
    bounded, and a small data set keeps the paper's grid).

    Parameters
    ----------
    notion : str
    full_grids : dict
        ``{name: {param: [values]}}``, as :func:`resolve` returns them.
    n : int
        The number of rows of the data.
    """
    for name, grid in full_grids.items():
        defaults = set(REGISTRY[name].default_grid(notion).get(N_BINS.name, ())) if name in REGISTRY else set()
        too_many = [v for v in grid.get(N_BINS.name, ())
                    if isinstance(v, numbers.Integral) and v > n and v not in defaults]
        if too_many:
            raise ConfigError(f"{name!r}: {N_BINS.name}={max(too_many)} is more bins than the data's {n:,} rows; "
                              f"give at most {n:,} bins.")


@dataclass(frozen=True)
class EvaluationConfig:
    """The settings of one notion's evaluation, resolved and checked once.

    Build it with :meth:`resolve`; every default is written out (the estimator names, each
    estimator's full grid, the literature's estimators), so two configurations are equal,
    and have equal :meth:`key`, exactly when they run the same computation, however their
    settings were spelled. Frozen and hashable: it is also the cache key of a run.

    Attributes
    ----------
    notion : str
    estimators : tuple of str
        Names from :data:`calibdash.estimators.registry.REGISTRY`, in the order run.
    grids : tuple of (str, tuple of (str, tuple))
        Per estimator, its parameters and their values (read it with :meth:`grid`).
    others : tuple of str
        The literature's estimators reported beside the ranked ones.
    test_size : float
        Fraction of rows held out (strictly between 0 and 1).
    n_folds : int
        Cross-validation folds of the optimisation set (at least 2).
    random_state : int
        Seed of the split.
    """

    notion: str
    estimators: tuple
    grids: tuple
    others: tuple
    test_size: float = 0.2
    n_folds: int = 5
    random_state: int = 0

    @classmethod
    def resolve(cls, notion, *, estimators=None, grids=None, others=None, test_size=0.2, n_folds=5, random_state=0):
        """Defaults filled in and every setting checked (a :class:`ConfigError` says what
        is wrong and lists the valid choices).

        Parameters are those of :func:`calibdash.evaluate`.
        """
        from calibdash.metrics.literature import resolve_others

        names, full = resolve(notion, estimators, grids or None)
        check_split(test_size, n_folds)
        if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral) or random_state < 0:
            raise ConfigError(f"random_state must be a non-negative integer (a seed), got {random_state!r}.")
        frozen = tuple((name, tuple((param, tuple(values)) for param, values in full[name].items())) for name in names)
        return cls(notion, tuple(names), frozen, tuple(resolve_others(notion, others)), float(test_size), int(n_folds),
                   int(random_state))

    @classmethod
    def for_notions(cls, notions, *, estimators=None, grids=None, others=None, test_size=0.2, n_folds=5,
                    random_state=0):
        """One configuration per notion, all on the same split: what :func:`calibdash.evaluate_notions` runs.

        The split is given once, so the configurations share it by construction.

        Parameters
        ----------
        notions : str or sequence of str
            Distinct notions, e.g. ``("top-label", "canonical")``.
        estimators, grids, others
            One value for every notion, as in :meth:`resolve`, or a dict keyed by notion
            giving one each (e.g. ``estimators={"top-label": ["bins"], "canonical": ["kde"]}``).
        test_size, n_folds, random_state
            The split, as in :meth:`resolve`.

        Returns
        -------
        tuple of EvaluationConfig
            In the order of ``notions``.

        Raises
        ------
        ConfigError
            For no notion, a notion listed twice, a dict keyed by notion that misses one, or
            any setting :meth:`resolve` refuses.
        """
        notions = [notions] if isinstance(notions, str) else list(notions)
        if not notions:
            raise ConfigError("Choose at least one notion.")
        if len(set(notions)) != len(notions):
            raise ConfigError(f"Notions are listed twice: {notions}.")
        for notion in notions:
            check_notion(notion)
        estimators = _per_notion(estimators, notions, "Estimators")
        grids = _per_notion(grids, notions, "Grids")
        others = _per_notion(others, notions, "Estimators from the literature")
        return tuple(cls.resolve(n, estimators=estimators[n], grids=grids[n], others=others[n], test_size=test_size,
                                 n_folds=n_folds, random_state=random_state) for n in notions)

    @property
    def split(self):
        """``(test_size, n_folds, random_state)``: configurations with equal splits can run
        together (:func:`shared_split`)."""
        return (self.test_size, self.n_folds, self.random_state)

    def check_rows(self, n):
        """Raise :class:`ConfigError` if a grid asks for more bins than ``n``, the data's rows
        (:func:`check_rows`)."""
        check_rows(self.notion, self.full_grids, n)

    def grid(self, name):
        """``{parameter: [values]}`` searched for estimator ``name``."""
        for estimator, params in self.grids:
            if estimator == name:
                return {param: list(values) for param, values in params}
        raise ConfigError(f"{name!r} is not among the estimators of this configuration ({', '.join(self.estimators)}).")

    @property
    def full_grids(self):
        """``{name: {parameter: [values]}}`` for every estimator, in order."""
        return {name: self.grid(name) for name in self.estimators}

    def to_dict(self):
        """The configuration as plain JSON values (lists, not tuples)."""
        return {
            "notion": self.notion,
            "estimators": list(self.estimators),
            "grids": self.full_grids,
            "others": list(self.others),
            "test_size": self.test_size,
            "n_folds": self.n_folds,
            "random_state": self.random_state,
        }

    def key(self, data_sha256):
        """sha256 identifying this evaluation of the data with fingerprint ``data_sha256``."""
        text = data_sha256 + json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()


def split_parts(n, test_size=0.2, n_folds=5, random_state=0):
    """The seeded holdout rows and the k validation parts of the optimisation set, without
    the training rows of each fold (:func:`fold_train_rows`), which at 10,000,000 rows take
    256 MB more.

    Returns
    -------
    test : ndarray of row indices
    parts : list of k index arrays
    """
    check_split(test_size, n_folds)
    perm = np.random.default_rng(random_state).permutation(n)
    n_test = int(np.ceil(test_size * n))
    test, opt = perm[:n_test], perm[n_test:]
    if n_test < 2 or len(opt) < 2 * n_folds:
        raise InputError(
            f"{n} rows are too few for a {test_size:.0%} holdout and {n_folds} folds: every "
            "validation fold and the holdout set need at least 2 rows. Use more data or fewer folds."
        )
    return test, np.array_split(opt, n_folds)


def fold_train_rows(parts, k):
    """The training rows of fold ``k``: every validation part but the k-th, in order."""
    return np.concatenate(parts[:k] + parts[k + 1 :])


def make_split(n, test_size=0.2, n_folds=5, random_state=0):
    """Seeded holdout split and k folds of the optimisation set.

    Returns
    -------
    test : ndarray of row indices
    folds : list of (train, validation) index arrays
    """
    test, parts = split_parts(n, test_size, n_folds, random_state)
    return test, [(fold_train_rows(parts, k), parts[k]) for k in range(n_folds)]


def shared_split(configs):
    """The split that every configuration uses, after checking that they can run together.

    Parameters
    ----------
    configs : sequence of EvaluationConfig
        One per notion, e.g. from :meth:`EvaluationConfig.for_notions`.

    Returns
    -------
    tuple
        ``(test_size, n_folds, random_state)``.

    Raises
    ------
    ConfigError
        For no configuration, something else than an :class:`EvaluationConfig`, a notion
        given twice, or configurations whose splits differ (the notions of one run share
        its split; run the others with a call of their own).
    """
    configs = list(configs)
    if not configs:
        raise ConfigError("Give at least one EvaluationConfig.")
    wrong = [c for c in configs if not isinstance(c, EvaluationConfig)]
    if wrong:
        raise ConfigError(f"configs must be EvaluationConfig objects (EvaluationConfig.resolve or .for_notions), "
                          f"got {type(wrong[0]).__name__}.")
    notions = [c.notion for c in configs]
    if len(set(notions)) != len(notions):
        raise ConfigError(f"Notions are listed twice: {notions}.")
    splits = {c.split for c in configs}
    if len(splits) > 1:
        shown = "; ".join(f"{c.notion}: test_size={c.test_size}, n_folds={c.n_folds}, random_state={c.random_state}"
                          for c in configs)
        raise ConfigError(f"The notions of one run share its split, but these configurations differ ({shown}). "
                          "Build them with EvaluationConfig.for_notions, or run each split on its own.")
    return configs[0].split


def _per_notion(value, notions, what):
    """``value`` for each notion: a dict keyed by notion gives one per notion."""
    if isinstance(value, dict) and value and set(value) <= set(NOTIONS):
        missing = [n for n in notions if n not in value]
        if missing:
            raise ConfigError(f"{what} were given per notion but not for {', '.join(map(repr, missing))}.")
        return {n: value[n] for n in notions}
    return {n: value for n in notions}


def config_fingerprint(data_sha256, notion, estimators=None, grids=None, test_size=0.2, n_folds=5, random_state=0,
                       others=None):
    """sha256 identifying an evaluation: ``EvaluationConfig.resolve(...).key(data_sha256)``."""
    return EvaluationConfig.resolve(notion, estimators=estimators, grids=grids, others=others, test_size=test_size,
                                    n_folds=n_folds, random_state=random_state).key(data_sha256)


def combinations(grid):
    """Every combination of the grid's values, as dicts, in order."""
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


__all__ = ["EvaluationConfig", "check_split", "check_rows", "resolve", "combinations", "config_fingerprint", "shared_split"]
