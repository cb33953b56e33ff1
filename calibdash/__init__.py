"""calibdash: estimate how miscalibrated a classifier is, with honest error bars.

The compute package behind the app, usable from Python and the command line. Its
subpackages, by role:

- the ground floor, which every layer may use: :mod:`calibdash.predictions` (the
  :class:`Predictions` type), :mod:`calibdash.errors`, :mod:`calibdash.limits` and
  :mod:`calibdash.text` (user text shown literally);
- :mod:`calibdash.io`: reading predictions and labels from files and arrays;
- :mod:`calibdash.core`: the probability simplex, the notions of calibration, the risk
  (Eq. 20 of Gruber & Bach) and the statistics of holdout estimates;
- :mod:`calibdash.estimators`: the calibration estimation functions and their registry;
- :mod:`calibdash.metrics`: the literature's estimators (ECE, SKCE, variational) and
  recalibration maps;
- :mod:`calibdash.evaluation`: Algorithm 1 (tune, select, report), its result, the
  comparison of models and the verdict's judgment;
- :mod:`calibdash.display`: what the app and the report show (figures, reliability
  diagrams, the verdict in words);
- :mod:`calibdash.reporting`: the offline HTML report and the references;
- :mod:`calibdash.lab`: simulations with known truth, studies and the demo data;
- :mod:`calibdash.clinical`: validating a clinical risk model (the calibration hierarchy,
  discrimination, net benefit, subgroups) and planning its sample size.

The Streamlit dashboard is a package of its own beside this one, :mod:`calibdash_app` (the
``app`` extra): nothing in ``calibdash`` imports it or Streamlit.

Submodules and the names below load on first use: ``import calibdash`` is cheap and
imports neither plotly nor streamlit. The mathematics is in ``docs/design.md``.
"""

import importlib

__version__ = "0.1.0"

# Public name -> the module that defines it (loaded on first access, PEP 562).
_EXPORTS = {
    "softmax": "calibdash.core.simplex",
    "risk": "calibdash.core.risk",
    "NOTIONS": "calibdash.core.notions",
    "CalibdashError": "calibdash.errors",
    "InputError": "calibdash.errors",
    "ConfigError": "calibdash.errors",
    "NotFittedError": "calibdash.errors",
    "Predictions": "calibdash.predictions",
    "load_predictions": "calibdash.io.loading",
    "inspect_predictions": "calibdash.io.loading",
    "FAMILIES": "calibdash.estimators",
    "CalibrationEstimator": "calibdash.estimators",
    "EstimatorPath": "calibdash.estimators",
    "make_estimator": "calibdash.estimators",
    "evaluate": "calibdash.evaluation.pipeline",
    "evaluate_notions": "calibdash.evaluation.pipeline",
    "EvaluationResult": "calibdash.evaluation.result",
    "compare": "calibdash.evaluation.compare",
    "ComparisonResult": "calibdash.evaluation.compare",
    "skce": "calibdash.metrics.skce",
    "calibration_test": "calibdash.metrics.skce",
    "SKCEEstimate": "calibdash.metrics.skce",
    "CalibrationTest": "calibdash.metrics.skce",
    "ece_kde": "calibdash.metrics.ece",
    "ece_by_name": "calibdash.metrics.ece",
    "ece_bootstrap": "calibdash.metrics.ece",
    "ECE_ESTIMATORS": "calibdash.metrics.ece",
    "variational_error": "calibdash.metrics.variational",
    "variational_top_label": "calibdash.metrics.variational",
    "holdout_loss_gap": "calibdash.metrics.variational",
    "VariationalEstimate": "calibdash.metrics.variational",
    "VariationalTopLabel": "calibdash.metrics.variational",
    "validate_risk_model": "calibdash.clinical.validation",
    "RiskValidation": "calibdash.clinical.validation",
    "plan_sample_size": "calibdash.clinical.sample_size",
    "report": "calibdash.reporting.html",
    "comparison_report": "calibdash.reporting.html",
    "validation_report": "calibdash.reporting.validation",
}
_SUBPACKAGES = ("io", "core", "estimators", "metrics", "evaluation", "display", "reporting", "lab", "clinical", "cli", "errors",
                "limits", "text", "predictions")

__all__ = sorted(_EXPORTS) + list(_SUBPACKAGES)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # later accesses skip this function
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"calibdash.{name}")
    raise AttributeError(f"module 'calibdash' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
