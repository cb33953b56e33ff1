"""Validating a clinical risk model (binary outcome): the calibration hierarchy of Van Calster
et al. (2019), discrimination, net benefit, sample-size adequacy (Riley et al. 2021) and
subgroups, with the reference numbers of R (``rms::val.prob``, ``glm``, ``loess``).

- :mod:`~calibdash.clinical.validation`: :func:`validate_risk_model` and its result;
- :mod:`~calibdash.clinical.measures`: O:E, Brier, AUROC (DeLong), Spiegelhalter, the loess
  summaries, net benefit;
- :mod:`~calibdash.clinical.logistic`: calibration-in-the-large, the slope, heterogeneity tests;
- :mod:`~calibdash.clinical.loess`: R's loess (through scikit-misc);
- :mod:`~calibdash.clinical.sample_size`: Riley's four sample-size criteria, to plan a study
  (:func:`~calibdash.clinical.sample_size.plan_sample_size`) or check one;
- :mod:`~calibdash.clinical.meta`: the random-effects meta-analysis of per-centre results
  (REML, Hartung-Knapp, prediction interval; R's ``metafor``);
- :mod:`~calibdash.clinical.verdicts`: the judgments (one status and sentence per level).

The submodules are imported when first used: they need ``scipy.stats`` (about 0.6 s), which
the command line's other commands and the evaluation pipeline do not.
"""

import importlib

__all__ = ["MAX_GROUPS", "METRICS", "RiskValidation", "validate_risk_model"]

# A grouping variable is categorical (sex, age band, hospital): more distinct values than this
# is almost always a continuous column chosen by mistake. Here, not in validation, because the
# command line's help and the app's help text state it without running a validation.
MAX_GROUPS = 20

_EXPORTS = {"METRICS": "validation", "RiskValidation": "validation", "validate_risk_model": "validation"}


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"calibdash.clinical.{_EXPORTS[name]}"), name)
        globals()[name] = value  # later accesses skip this function
        return value
    raise AttributeError(f"module 'calibdash.clinical' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
