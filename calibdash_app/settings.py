"""The settings the pages offer: the Evaluate page's notions, estimators, grids and split (read
and checked before a job is submitted), the paper's defaults, the Compare page's default models
and the Learn page's scenarios."""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from calibdash.estimators.registry import DEFAULT_ESTIMATORS, REGISTRY, parameter, tuned_param
from calibdash.evaluation.config import EvaluationConfig, resolve
from calibdash.evaluation.gridtext import format_grid, parse_grid_text
from calibdash.metrics.literature import DEFAULT_OTHERS

NOTIONS = ("top-label", "canonical", "classwise")
DEFAULT_NOTIONS = ["top-label", "canonical"]


def editable(name):
    """Whether the grid of ``name`` is offered for editing (not for the fixed 15-bin baseline)."""
    return REGISTRY[name].tunable


def estimator_summary(name):
    """One line saying what estimator ``name`` is (from the registry)."""
    return f"{name}: {REGISTRY[name].summary}"


def parameter_help(param):
    """Help for a grid's text box: what the parameter does, from the registry."""
    described = parameter(param)
    return (described.help + " " if described else "") + "The risk is computed for every value; the lowest wins."


def default_grid_text(notion, name):
    """The paper's grid of ``name`` for ``notion`` as editable text."""
    _, grids = resolve(notion, [name])
    return format_grid(grids[name][tuned_param(name)])


def _same_text(a, b):
    return [t.strip() for t in a.split(",")] == [t.strip() for t in b.split(",")]


def default_configs(notions=None):
    """The paper's settings (what the first visit runs on the demo): one
    :class:`~calibdash.evaluation.config.EvaluationConfig` per notion, on one split."""
    return EvaluationConfig.for_notions(DEFAULT_NOTIONS if notions is None else notions)


def config_key(data_sha, config):
    """Cache key of a run: :meth:`EvaluationConfig.key <calibdash.evaluation.config.EvaluationConfig.key>`
    of its settings on the data with fingerprint ``data_sha``."""
    return config.key(data_sha)


def read_settings(*, n_rows=None):
    """The Evaluate page's widgets as a tuple of
    :class:`~calibdash.evaluation.config.EvaluationConfig`, one per notion, on one split;
    raises ValueError (a :class:`~calibdash.errors.ConfigError` for a setting the library
    refuses) with a message.

    Every value and limit is checked here, before a job is submitted; with ``n_rows``, the
    data's rows, the bin counts too (at most one bin per row)."""
    ss = st.session_state
    notions = ss.get("cfg__notions", DEFAULT_NOTIONS)
    if not notions:
        raise ValueError("Choose at least one notion of calibration.")
    estimators, grids_of, others = {}, {}, {}
    for notion in notions:
        names = ss.get(f"cfg__est__{notion}", list(DEFAULT_ESTIMATORS[notion]))
        if not names:
            raise ValueError(f"Choose at least one estimator for the {notion} notion.")
        grids = {}
        for name in names:
            if not editable(name):
                continue
            text = ss.get(f"cfg__grid__{notion}__{name}")
            # The default text shows rounded values; unchanged text means the exact defaults
            # (and the same cache key as the automatic first run).
            if text is None or _same_text(text, default_grid_text(notion, name)):
                continue
            param = tuned_param(name)
            try:
                grids[name] = {param: parse_grid_text(text, param)}
            except ValueError as e:
                raise ValueError(f"{notion}, {name}: {e}") from None
        estimators[notion], grids_of[notion] = list(names), grids or None
        others[notion] = list(ss.get(f"cfg__others__{notion}", DEFAULT_OTHERS[notion]))
    # The split is given once, so the notions share it (one joint run); every value is
    # checked, with the library's messages.
    configs = EvaluationConfig.for_notions(notions, estimators=estimators, grids=grids_of, others=others,
                                           test_size=float(ss.get("cfg__test_size", 0.2)),
                                           n_folds=int(ss.get("cfg__n_folds", 5)),
                                           random_state=int(ss.get("cfg__seed", 0)))
    if n_rows is not None:
        for config in configs:
            config.check_rows(n_rows)
    return configs


# -- the Compare and Learn pages ------------------------------------------------------
# The Learn page's scenarios: {label: (kind, parameters) of calibdash.lab.studies}.
LAB_SCENARIOS = {
    "Dirichlet simulation (paper, Sec. 5.1)": ("dirichlet", {}),
    "Widmann et al.: calibrated (M1)": ("widmann", {"model": "calibrated"}),
    "Widmann et al.: mixed (M2)": ("widmann", {"model": "mixed"}),
    "Widmann et al.: uniform (M3)": ("widmann", {"model": "uniform"}),
    "Binary logistic": ("logistic", {}),
    "Class-dependent logit bias": ("logit-bias", {}),
    "Nearly calibrated (piecewise-linear log-probabilities)": ("piecewise", {}),
}


class LabSlider(NamedTuple):
    """The one parameter of a scenario the Learn page offers as a slider."""

    parameter: str  # of the scenario (calibdash.lab.studies)
    label: str
    low: float
    high: float
    step: float
    default: float
    key: str  # the widget's session key
    help: str  # its help text's key in calibdash_app.help.HELP_COMPARE (the Learn page's texts too)


# The Learn page's slider of each scenario kind that has one (the Widmann models have none).
LAB_SLIDERS = {
    "dirichlet": LabSlider("distortion", "Distortion", 0.1, 3.0, 0.1, 0.3, "view__lab_distortion", "distortion"),
    "logistic": LabSlider("slope", "Slope", 0.25, 4.0, 0.25, 2.0, "view__lab_slope", "slope"),
    "logit-bias": LabSlider("strength", "Bias strength", 0.0, 3.0, 0.25, 1.0, "view__lab_strength", "strength"),
    "piecewise": LabSlider("slope", "Log-slope below 0.2", 0.3, 1.5, 0.1, 0.7, "view__lab_pw_slope", "pw_slope"),
}
COMPARE_DEFAULT_MODELS = ["digits: random forest", "digits: logistic regression"]
