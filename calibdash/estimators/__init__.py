"""Calibration estimation functions and the factory that names them."""

from __future__ import annotations

import inspect

from calibdash.core.notions import NOTIONS, check_notion
from calibdash.errors import ConfigError
from calibdash.estimators.base import CalibrationEstimator, EstimatorPath
from calibdash.estimators.binning import BinningEstimator
from calibdash.estimators.kde import KDEEstimator
from calibdash.estimators.kernel_ridge import KKKREstimator, UKKREstimator
from calibdash.estimators.recalibration import BoostingEstimator, IsotonicEstimator, LogisticEstimator
from calibdash.estimators.registry import FAMILIES
from calibdash.estimators.temperature import TemperatureEstimator


def make_estimator(name, *, notion="canonical", **params):
    """Create a calibration estimation function by family name.

    Parameters
    ----------
    name : {"bins", "kde", "ukkr", "kkkr", "temperature", "isotonic", "logistic", "boosting"}
    notion : {"top-label", "canonical", "classwise"}, default="canonical"
    **params
        The family's hyperparameters (see each class).

    Returns
    -------
    CalibrationEstimator
        Unfitted; call ``fit(P, y)``.

    Raises
    ------
    ConfigError
        For an unknown family, notion or parameter, listing the valid choices.
    """
    if name not in FAMILIES:
        raise ConfigError(f"Unknown estimator {name!r}; choose one of {', '.join(map(repr, FAMILIES))}.")
    cls = FAMILIES[name]
    check_notion(notion, cls.supported_notions, name)
    valid = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "notion")]
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ConfigError(
            f"Unknown parameter(s) {', '.join(map(repr, unknown))} for {name!r}; "
            f"valid parameters: {', '.join(map(repr, valid))}."
        )
    est = cls(notion=notion, **params)
    est._validate_params()
    return est


__all__ = [
    "NOTIONS",
    "FAMILIES",
    "make_estimator",
    "CalibrationEstimator",
    "EstimatorPath",
    "BinningEstimator",
    "KDEEstimator",
    "UKKREstimator",
    "KKKREstimator",
    "TemperatureEstimator",
    "IsotonicEstimator",
    "LogisticEstimator",
    "BoostingEstimator",
]
