"""The interval every ``confidence_interval`` returns.

SciPy's results return their intervals as a ``ConfidenceInterval(low, high)`` (e.g.
``scipy.stats.bootstrap(...).confidence_interval``), but SciPy does not make that class
public; this one has the same fields. It is a named tuple, so ``low, high = ...`` and
comparisons with a plain tuple keep working. This module is on the ground floor: it
imports only :mod:`calibdash.errors`, beside it.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ConfidenceInterval", "stored_interval"]


class ConfidenceInterval(NamedTuple):
    """A confidence interval ``(low, high)``, with the field names of SciPy's."""

    low: float
    high: float


def stored_interval(low, high, computed_at, level=None):
    """The interval ``(low, high)`` computed at level ``computed_at``, asked for at ``level``.

    Intervals a fit or a bootstrap produced (profile likelihood, DeLong, the bootstrap's
    percentiles) cannot be redone at another level without the data, so ``level`` may only
    be None (the level they were computed at) or that level; another is a
    :class:`~calibdash.errors.ConfigError` that says how to get it. A ``computed_at`` of
    None (not recorded) checks nothing.
    """
    from calibdash.errors import ConfigError

    if level is not None and computed_at is not None and not (isinstance(level, (int, float)) and not isinstance(level, bool)
                                  and abs(float(level) - float(computed_at)) < 1e-12):
        raise ConfigError(f"This interval was computed at level {computed_at:g}; for level {level!r}, compute it "
                          f"again with level={level!r}.")
    return ConfidenceInterval(float(low), float(high))
