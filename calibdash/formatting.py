"""Numbers as text: the one place the package writes a number for a reader (the app's tables,
the clinical verdicts, the reports).

:func:`format_number` applies a stated format; :func:`format_count` writes a count as an
integer with thousands separators ("2,520", never "2.52e+03"); :func:`format_significant`
writes a measured value to a few significant digits without switching to powers of ten
for ordinary magnitudes ("0.00051", not "0.0005102" or "5.1e-04"). A missing value is ""
in each. P-values have their own convention, medicine's: :func:`format_p` ("< 0.001", else
three decimals), in the app, the reports and the command line alike.

Nothing here imports another calibdash module: the module is on the package's ground floor.
"""

from __future__ import annotations

import math
import numbers

__all__ = ["format_number", "format_count", "format_significant", "format_p", "p_statement"]

# Between these magnitudes a value is written in fixed point; outside them in powers of ten
# (1.2e-06), which reads better than a run of zeros.
_FIXED_FROM, _FIXED_BELOW = 1e-4, 1e6


def _finite(value):
    """``value`` as a float, or None when missing (None, NaN) or not a number."""
    if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    v = float(value)
    return None if math.isnan(v) else v


def format_number(value, spec):
    """``value`` formatted with ``spec`` (a format() spec such as ".4g"), "" when missing.

    A negative number keeps its minus sign; infinities are "inf" and "-inf"; booleans and
    text are returned as text unchanged.
    """
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    v = float(value)
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return format(v, spec)


def format_count(value):
    """A count as an integer with thousands separators ("2,520"); "" when missing."""
    v = _finite(value)
    if v is None or math.isinf(v):
        return "" if v is None else format_number(v, "")
    return f"{round(v):,}"


def format_significant(value, digits=3):
    """``value`` to ``digits`` significant digits, trailing zeros dropped as format's "g" drops
    them: in fixed point from 0.0001 to a million (thousands separated: "2,520", "0.00051"), in
    powers of ten beyond ("1.2e-06"); "" when missing."""
    v = _finite(value)
    if v is None or math.isinf(v):
        return "" if v is None else format_number(v, "")
    rounded = float(format(v, f".{digits}g"))  # the significant digits, then written out
    if rounded == 0:
        return "0"
    if not _FIXED_FROM <= abs(rounded) < _FIXED_BELOW:
        return format(rounded, f".{digits}g")
    decimals = max(digits - 1 - math.floor(math.log10(abs(rounded))), 0)
    text = format(rounded, f",.{decimals}f")
    return text.rstrip("0").rstrip(".") if "." in text else text  # as "g" does: no trailing zeros


def format_p(p):
    """A p-value as medicine writes it: "< 0.001", else three decimals; "" when missing. A value
    just below 0.05 keeps the decimals that show it below ("0.0496", not "0.050", beside a sentence
    that says the test rejects at the 5% level)."""
    v = _finite(p)
    if v is None or math.isinf(v):
        return ""
    if v < 0.001:
        return "< 0.001"
    decimals = 3
    while v < 0.05 <= float(f"{v:.{decimals}f}") and decimals < 12:
        decimals += 1
    return f"{v:.{decimals}f}"


def p_statement(p):
    """"p < 0.001" or "p = 0.034" (:func:`format_p`), for a sentence; "" when missing."""
    text = format_p(p)
    return "" if not text else ("p " + text if text.startswith("<") else "p = " + text)
