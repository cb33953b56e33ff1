"""One entry per named estimator: everything calibdash knows about it, in one place.

An :class:`Entry` holds an estimator's class, the notions it supports, its default search
space, the parameter the pipeline tunes, what it costs, which works it rests on, its help
text and the words used to show it. Every other table is derived from :data:`REGISTRY`:
the factory's families, the default sets per notion, the pipeline's task groups and costs,
the grid-text parser, the command line, the figures' axis titles, the app's help and the
report's references. Adding an estimator family means writing its module and adding its
entry here (``CONTRIBUTING.md`` walks through an example).

How ``lam`` relates to the fold size: the ridge enters as K + lam * n * I (UKKR) and
K (x) K + lam * n^2 * I (KKKR), with n the number of training rows of the fold, so a fixed
``lam`` means the same amount of smoothing per data point whatever the fold size. The
authors' published code writes the ridge as c * n^0.75 (two-step) and c * n^1.5 (Kronecker)
instead (docs/design.md, section 7); their c corresponds to lam = c * n^-0.25 and
lam = c * n^-0.5. For n = 6,400 (5 folds of an 8,000-row optimisation set) that is
lam ~ 0.11 c and lam ~ 0.0125 c; the grids below cover the span of their c grids at that
size, in half-decade (UKKR) or decade (KKKR) steps, and reach two to four decades lower for
canonical calibration (and two for top-label KKKR), where the paper's simulation and
CIFAR-10 select values at the low end: the risk must be seen to rise again (or stay flat)
beyond the selection, not guessed (issue 13). Below ``kernel_ridge.LAM_FLOOR`` (2.2e-10) the
exact path (small training sets) truncates the kernel at its numerical rank, as the Nystroem
path does at every lam: exact ridge regression there would follow the computer's rounding.

The recalibration plug-ins: isotonic regression has no smoothing parameter, so its grid is
the single floor y_min = 0 (like temperature's single "fit"); logistic recalibration tunes
its L2 penalty C over five decades around scikit-learn's default 1 (0.01 to 100: one fit of
100 classes on 8,000 rows takes about a minute, so the grid is kept short); boosting tunes
only its learning rate, over three values, because each fit grows one tree per class and
iteration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from calibdash.core.notions import NOTIONS, check_notion
from calibdash.errors import ConfigError
from calibdash.estimators.binning import BinningEstimator
from calibdash.estimators.kde import KDEEstimator
from calibdash.estimators.kernel_ridge import KKKREstimator, UKKREstimator
from calibdash.estimators.recalibration import BoostingEstimator, IsotonicEstimator, LogisticEstimator
from calibdash.estimators.temperature import TemperatureEstimator

__all__ = [
    "Parameter", "Entry", "REGISTRY", "FAMILIES", "DEFAULT_ESTIMATORS", "available_estimators", "default_grid",
    "tuned_param", "parameter", "PARAMETERS",
]


@dataclass(frozen=True)
class Parameter:
    """A hyperparameter as the user meets it.

    Attributes
    ----------
    name : str
        The keyword of the estimator's constructor.
    words : str
        How figures and tables name it (an axis title).
    help : str
        One or two sentences for the app's help.
    kind : {"real", "integer", "word"}
        Positive reals, positive whole numbers, or words from ``choices``.
    zero : bool
        Whether 0 is allowed besides the positive values (isotonic's floor).
    choices : tuple of str
        Words accepted (besides numbers for "real"/"integer", e.g. temperature's "fit").
    """

    name: str
    words: str
    help: str
    kind: str = "real"
    choices: tuple = ()
    zero: bool = False

    @property
    def numeric(self):
        return self.kind in ("real", "integer")


@dataclass(frozen=True)
class Entry:
    """One named estimator of the pipeline (a row of its results).

    Attributes
    ----------
    name : str
        The name users type ("bins", "15-bins", "kde", ...).
    estimator : type
        The :class:`~calibdash.estimators.base.CalibrationEstimator` subclass. Its
        ``family``, ``supported_notions`` and ``path_param`` (the tuned parameter) are read
        from it.
    summary : str
        What it is, in one sentence (the app's help, the command line's list).
    grid : mapping
        The default search space: ``{notion or "any": {parameter: values}}``. A parameter
        with one value is held fixed.
    parameters : tuple of Parameter
        How its parameters are shown and parsed (at least the tuned one).
    default_for : tuple of str
        The notions whose default set includes it.
    task_group : str
        Estimators of one group are fitted in one task per fold (the kernel ridge pair
        shares its eigenbasis); "fast" for the cheap ones.
    cost : (float, float)
        Rough seconds per fold on CIFAR-100 for a one-dimensional problem and for
        canonical calibration, only to start the longest tasks first.
    cost_per_million_rows : float
        Rough seconds per fold and per million rows of the file for a one-dimensional problem
        where the work is linear in the rows (the Beta kernel's grid route, interpolated
        kernels), measured at 10,000,000 rows; the larger of this and ``cost`` orders the
        tasks (:func:`calibdash.evaluation.pipeline.task_cost`). 0 where not measured.
    refit_on_use : bool
        Its fitted state is the training set itself (refitting costs nothing), so fold
        models are refitted where they are used instead of shipped between processes.
    references : tuple of str
        BibTeX keys (:mod:`calibdash.reporting.references`) of the works it rests on.
    tunable : bool
        False for an estimator reported as the literature fixes it (15-bins): the app does
        not offer its grid for editing.
    """

    name: str
    estimator: type
    summary: str
    grid: dict
    parameters: tuple
    default_for: tuple = ()
    task_group: str = "fast"
    cost: tuple = (0.01, 0.05)
    cost_per_million_rows: float = 0.0
    refit_on_use: bool = False
    references: tuple = ("gruber2025optimizing",)
    tunable: bool = True

    @property
    def family(self):
        return self.estimator.family

    @property
    def notions(self):
        return tuple(self.estimator.supported_notions)

    @property
    def tuned(self):
        return self.estimator.path_param

    def default_grid(self, notion):
        """``{parameter: [values]}`` searched by default for ``notion``."""
        check_notion(notion, self.notions, self.name)
        grid = self.grid.get(notion, self.grid.get("any"))
        return {k: list(v) for k, v in grid.items()}


# -- parameters -----------------------------------------------------------------------------
N_BINS = Parameter("n_bins", "number of bins", "Number of bins: more bins follow the data more closely but each bin "
                   "is noisier.", kind="integer")
STRATEGY = Parameter("strategy", "binning", "Equal width ('uniform') or equal mass ('quantile') bins.", kind="word",
                     choices=("uniform", "quantile"))
BANDWIDTH = Parameter("bandwidth", "bandwidth", "Bandwidth of the kernel: how far each prediction's influence spreads. "
                      "Small = wiggly (noisy), large = smooth (may miss real structure).")
LAM = Parameter("lam", "ridge lambda", "Ridge lambda: the strength of the smoothing penalty of the kernel ridge "
                "estimator. Large = smoother, small = follows the data (noisier).")
GAMMA = Parameter("gamma", "kernel gamma", "Scale of the kernel ridge estimators' Laplacian kernel on the features.")
TEMPERATURE = Parameter("temperature", "temperature", "'fit' fits the temperature on each training fold; numbers are "
                        "fixed temperatures (below 1 sharpens, above 1 softens the probabilities).", choices=("fit",))
Y_MIN = Parameter("y_min", "floor", "Lowest value the isotonic map may take (0 lets it reach the simplex's edge).",
                  zero=True)
C = Parameter("C", "inverse penalty C", "Inverse L2 penalty of the logistic map (scikit-learn's C): small = smoother.")
LEARNING_RATE = Parameter("learning_rate", "learning rate", "Learning rate of the gradient-boosted trees.")


# -- default grids (after the paper's Appendix B; see the module docstring) -----------------
_KDE_BANDWIDTHS = tuple(sorted(np.logspace(-5, -1, 15).tolist() + [0.2, 0.4, 0.6, 0.8, 1.0]))
# Canonical calibration of confident many-class models selects the top of the paper's grid
# (bandwidth 1 in every split of CIFAR-10 WRN-16-4, whose risk is lowest near 1.8 and rises
# steeply by 3): three wider values keep the selection off the edge.
_KDE_BANDWIDTHS_CANONICAL = _KDE_BANDWIDTHS + (1.5, 2.0, 3.0)
_N_BINS = tuple(range(5, 101, 5))


def _frozen(grid):
    return MappingProxyType({k: MappingProxyType({p: tuple(v) for p, v in g.items()}) for k, g in grid.items()})


_ENTRIES = (
    Entry("15-bins", BinningEstimator, "The literature's fixed 15-bin estimator, reported without tuning.",
          _frozen({"any": {"n_bins": (15,), "strategy": ("uniform",)}}), (N_BINS, STRATEGY),
          default_for=("top-label", "classwise"), references=("guo2017calibration",), tunable=False),
    Entry("bins", BinningEstimator, "Histogram binning in equal-width bins, the number of bins tuned.",
          _frozen({"any": {"n_bins": _N_BINS, "strategy": ("uniform",)}}), (N_BINS, STRATEGY),
          default_for=("top-label", "classwise"), cost_per_million_rows=0.25),
    Entry("bins-quantile", BinningEstimator, "Histogram binning in equal-mass bins, the number of bins tuned.",
          _frozen({"any": {"n_bins": _N_BINS, "strategy": ("quantile",)}}), (N_BINS, STRATEGY)),
    Entry("kde", KDEEstimator, "Dirichlet kernel density estimate of the calibration map, the bandwidth tuned.",
          _frozen({"any": {"bandwidth": _KDE_BANDWIDTHS}, "canonical": {"bandwidth": _KDE_BANDWIDTHS_CANONICAL}}),
          (BANDWIDTH,), default_for=NOTIONS, task_group="kde", cost=(0.6, 4.0), cost_per_million_rows=0.4,
          refit_on_use=True,
          references=("popordanoska2022consistent",)),
    # Top-label KKKR's risk falls down to about 1e-14 and is flat below (CIFAR-10 WRN-16-4):
    # the grid reaches 1e-18 so that the flat part is seen, not guessed.
    Entry("kkkr", KKKREstimator, "Kernel ridge regression on pairs (Kronecker kernel), the ridge lambda tuned.",
          _frozen({"top-label": {"lam": np.logspace(-2, -18, 17).tolist()},
                   "canonical": {"lam": np.logspace(3, -14, 18).tolist()},
                   "classwise": {"lam": np.logspace(-2, -18, 17).tolist()}}),
          (LAM, GAMMA), default_for=NOTIONS, task_group="kernel ridge", cost=(0.1, 3.0),
          cost_per_million_rows=0.4),
    # The paper's simulation (n = 10,000) selects 1e-8 for canonical UKKR and the risk rises
    # below it; above 10 the risk is flat (the fit is ~0) on every file tried.
    Entry("ukkr", UKKREstimator, "Two-step kernel ridge regression of the calibration gaps, the ridge lambda tuned.",
          _frozen({"top-label": {"lam": np.logspace(0, -10, 11).tolist()},
                   "canonical": {"lam": np.logspace(1, -10, 23).tolist()},
                   "classwise": {"lam": np.logspace(0, -10, 11).tolist()}}),
          (LAM, GAMMA), default_for=NOTIONS, task_group="kernel ridge", cost=(0.1, 3.0),
          cost_per_million_rows=0.4),
    # Not a top-label default: there the map may see the confidence alone (it is then
    # g(c) = c^b / (c^b + (1 - c)^b), which passes through (1/2, 1/2) and so cannot follow
    # P(correct | c) when many classes put the confidence below 1/2: 0.151 against a true
    # 0.190 on the paper's simulation).
    Entry("temperature", TemperatureEstimator, "Temperature scaling as a recalibration map (one number fitted).",
          _frozen({"any": {"temperature": ("fit",)}}), (TEMPERATURE,), default_for=("canonical", "classwise"),
          references=("guo2017calibration",)),
    Entry("isotonic", IsotonicEstimator, "Isotonic regression as a recalibration map (no smoothing parameter).",
          _frozen({"any": {"y_min": (0.0,)}}), (Y_MIN,), references=("zadrozny2002transforming",)),
    Entry("logistic", LogisticEstimator, "Multinomial logistic regression on the log-probabilities, its penalty tuned.",
          _frozen({"any": {"C": np.logspace(-2, 2, 5).tolist()}}), (C,), task_group="sklearn", cost=(1.0, 60.0)),
    Entry("boosting", BoostingEstimator, "Gradient-boosted trees on the log-probabilities, the learning rate tuned.",
          _frozen({"any": {"learning_rate": (0.03, 0.1, 0.3)}}), (LEARNING_RATE,), task_group="sklearn",
          cost=(1.0, 60.0)),
)

#: name -> Entry, in the order the app and the command line list them.
REGISTRY = MappingProxyType({entry.name: entry for entry in _ENTRIES})

#: family -> estimator class (the factory :func:`calibdash.estimators.make_estimator`).
FAMILIES = MappingProxyType({entry.family: entry.estimator for entry in _ENTRIES})

#: notion -> the names run when the caller chooses none: the paper's sets (Tables 1-3)
#: plus the temperature-scaling plug-in for canonical and classwise calibration.
DEFAULT_ESTIMATORS = MappingProxyType(
    {notion: tuple(e.name for e in _ENTRIES if notion in e.default_for) for notion in NOTIONS})

#: parameter name -> Parameter (one description per name across the registry).
PARAMETERS = MappingProxyType({p.name: p for e in _ENTRIES for p in e.parameters})


def entry(name):
    """The registry entry of estimator ``name`` (a :class:`ConfigError` lists the valid ones)."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ConfigError(f"Unknown estimator {name!r}; choose from {', '.join(map(repr, REGISTRY))}.") from None


def available_estimators(notion):
    """Names of the estimators that support ``notion``, in registry order."""
    check_notion(notion)
    return [name for name, e in REGISTRY.items() if notion in e.notions]


def default_grid(name, notion):
    """The default search space of estimator ``name`` for ``notion``: {parameter: [values]}.

    Examples
    --------
    >>> default_grid("bins", "top-label")["n_bins"][:3]
    [5, 10, 15]
    """
    return entry(name).default_grid(notion)


def tuned_param(name):
    """The hyperparameter the pipeline tunes for estimator ``name`` (e.g. "bandwidth")."""
    return entry(name).tuned


def parameter(name):
    """The :class:`Parameter` called ``name``, or None for a parameter no entry describes."""
    return PARAMETERS.get(name)


def _check_registry():
    # Facts that must agree; checked at import so that a wrong entry fails at once. A wrong
    # entry is a bug in calibdash, not a user's bad setting: RuntimeError, not ConfigError.
    for e in _ENTRIES:
        names = {p.name for p in e.parameters}
        if e.tuned not in names:
            raise RuntimeError(f"registry entry {e.name!r}: its tuned parameter {e.tuned!r} is not described.")
        for key, grid in e.grid.items():
            if key != "any" and key not in NOTIONS:
                raise RuntimeError(f"registry entry {e.name!r}: grid key {key!r} is not a notion or 'any'.")
            if e.tuned not in grid:
                raise RuntimeError(f"registry entry {e.name!r}: its grid for {key!r} does not give {e.tuned!r}.")
        for notion in e.default_for:
            if notion not in e.notions:
                raise RuntimeError(f"registry entry {e.name!r} is a default for {notion!r}, which it does not support.")
    for e in _ENTRIES:
        for p in e.parameters:
            if PARAMETERS[p.name] != p:
                raise RuntimeError(f"parameter {p.name!r} is described twice, differently.")
    for e in _ENTRIES:
        for values in (v for g in e.grid.values() for v in g.values()):
            if not values or any(isinstance(v, float) and not math.isfinite(v) for v in values):
                raise RuntimeError(f"registry entry {e.name!r} has an empty or non-finite grid.")


_check_registry()
