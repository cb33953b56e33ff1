"""Hyperparameter grids as editable text: "1e-3, 1e-2, 0.1" <-> [0.001, 0.01, 0.1]."""

from __future__ import annotations

import math
import re

from calibdash.errors import ConfigError
from calibdash.estimators.registry import parameter
from calibdash.limits import GRID_VALUES


def format_grid(values):
    """Comma-separated text of a grid's values, short but exact enough to round-trip."""
    out = []
    for v in values:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, float):
            out.append(f"{v:.6g}")
        else:
            out.append(str(v))
    return ", ".join(out)


def parse_grid_text(text, param):
    """Parse comma-separated values for ``param`` into a list.

    Parameters
    ----------
    text : str
        For example ``"5, 10, 20"`` (n_bins) or ``"1e-4, 1e-3"`` (bandwidth, lam) or
        ``"fit, 1.5"`` (temperature). Semicolons, spaces and line breaks also separate values.
    param : str
        The hyperparameter's name; its registry description
        (:func:`calibdash.estimators.registry.parameter`) decides whether whole numbers or
        positive reals are expected, and which words are accepted besides numbers.

    Returns
    -------
    list
        Distinct values in the order given (ints for ``n_bins``, floats otherwise, and
        allowed words such as ``"fit"`` kept as strings).

    Raises
    ------
    ConfigError
        (a ``ValueError``) with a message naming the offending entry, or the limit on the
        number of values (:data:`calibdash.limits.GRID_VALUES`), checked before any value is read.
    """
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"Give at least one value for {param}.")
    # Any white space separates too: the app's grid boxes are text areas, where a line break may fall.
    tokens = [t for t in re.split(r"[,;\s]+", text) if t]
    GRID_VALUES.check(len(tokens), f"the grid of {param}")
    described = parameter(param)
    words = set(described.choices) if described else set()
    integer = described is not None and described.kind == "integer"
    zero = described is not None and described.zero
    values = []
    for tok in tokens:
        tok = tok.strip()
        if tok.lower() in words:
            value = tok.lower()
        else:
            try:
                number = float(tok)
            except ValueError:
                allowed = " or ".join(repr(w) for w in sorted(words))
                extra = f" (or {allowed})" if words else ""
                raise ConfigError(f"{param}: {tok!r} is not a number{extra}.") from None
            if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
                least = "0 or a positive number" if zero else "a positive number"
                raise ConfigError(f"{param}: every value must be {least}, got {tok!r}.")
            if integer:
                if number != int(number):
                    raise ConfigError(f"{param}: {tok!r} is not a whole number.")
                value = int(number)
            else:
                value = number
        if value not in values:
            values.append(value)
    return values


__all__ = ["format_grid", "parse_grid_text"]
