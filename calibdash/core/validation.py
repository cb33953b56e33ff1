"""Checks of settings shared by the estimators and the recalibration maps."""

from __future__ import annotations

import numbers

import numpy as np

from calibdash.errors import ConfigError

__all__ = ["check_positive"]


def check_positive(name, value, allow=()):
    """Raise ConfigError unless ``value`` is a finite positive number (or one of ``allow``)."""
    if value in allow and isinstance(value, str):
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
        extra = f" or one of {', '.join(map(repr, allow))}" if allow else ""
        raise ConfigError(f"{name} must be a positive finite number{extra}, got {value!r}.")
