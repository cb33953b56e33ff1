"""Hyperparameter grids as editable text: "1e-3, 1e-2, 0.1" <-> [0.001, 0.01, 0.1]."""

from __future__ import annotations

import math

# Parameters that take whole numbers; the rest are positive reals.
_INTEGER_PARAMS = {"n_bins"}
# Words a parameter accepts besides numbers (temperature scaling can fit its temperature).
_WORDS = {"temperature": {"fit"}}


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
        ``"fit, 1.5"`` (temperature). Semicolons and spaces also separate values.
    param : str
        The hyperparameter's name; decides whether integers or positive reals are expected.

    Returns
    -------
    list
        Distinct values in the order given (ints for ``n_bins``, floats otherwise, and
        allowed words such as ``"fit"`` kept as strings).

    Raises
    ------
    ValueError
        With a message naming the offending entry.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"Give at least one value for {param}.")
    tokens = [t for t in text.replace(";", ",").replace(" ", ",").split(",") if t.strip()]
    words = _WORDS.get(param, set())
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
                raise ValueError(f"{param}: {tok!r} is not a number{extra}.") from None
            if not math.isfinite(number) or number <= 0:
                raise ValueError(f"{param}: every value must be a positive number, got {tok!r}.")
            if param in _INTEGER_PARAMS:
                if number != int(number):
                    raise ValueError(f"{param}: {tok!r} is not a whole number.")
                value = int(number)
            else:
                value = number
        if value not in values:
            values.append(value)
    return values


__all__ = ["format_grid", "parse_grid_text"]
