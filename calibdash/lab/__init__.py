"""Simulations with known truth, the studies run on them, and the demo data.

The studies' functions (:mod:`calibdash.lab.studies`) are available here too, loaded on
first use: ``calibdash.lab.scenario("dirichlet")``, ``calibdash.lab.figure1()``.
"""

import importlib

_STUDIES = ("SCENARIOS", "Scenario", "scenario", "estimates_vs_n", "estimates_of_draws", "missing_draws",
            "select_estimates", "estimates_study", "summarise_estimates", "describe_bias",
            "BIAS_SE", "coverage_study", "summarise_coverage", "VERDICT", "figure1", "summarise_figure1", "DEFAULT_THETAS")

__all__ = list(_STUDIES)


def __getattr__(name):
    if name in _STUDIES:
        return getattr(importlib.import_module("calibdash.lab.studies"), name)
    raise AttributeError(f"module 'calibdash.lab' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
