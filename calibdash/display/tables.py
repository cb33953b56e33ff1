"""Tables as the app shows them: every number as text in a stated format, a missing value blank.

``st.dataframe`` draws a missing value as a grey "None", which reads as a word in the data,
and sizes a column of numbers by a measure of its own that can clip a right-aligned number's
leading characters (its minus sign, its first digit). Text cells have neither problem, and
:func:`text_width` gives each column the width its longest text needs. The downloads keep
the numbers at full precision; this is the display only.

Nothing here imports Streamlit.
"""

from __future__ import annotations

import math

import pandas as pd

from calibdash.formatting import format_number

# format_number lives in calibdash.formatting (the verdicts and the reports use it too); its
# name stays here, where the app's tables and earlier callers import it.
__all__ = ["format_number", "formatted", "text_width"]


def formatted(df, formats, *, default=".4g"):
    """A copy of ``df`` for display: numbers as text, missing values as "".

    Parameters
    ----------
    df : DataFrame
    formats : dict
        ``{column: format spec}`` for the numeric columns shown with a stated precision, or
        ``{column: function}`` writing one value (e.g. :func:`calibdash.formatting.format_p`).
    default : str, default=".4g"
        The spec of every other floating-point column.

    Returns
    -------
    DataFrame
        The same columns and rows: the columns of ``formats`` and every other float column
        as text; booleans and integers unchanged; a missing value in a text column as "".
    """
    out = df.copy()
    for col in out.columns:
        series = out[col]
        if col in formats and callable(formats[col]):
            out[col] = [formats[col](v) for v in series]
        elif col in formats:
            out[col] = [format_number(v, formats[col]) for v in series]
        elif pd.api.types.is_float_dtype(series):
            out[col] = [format_number(v, default) for v in series]
        elif pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series):
            out[col] = ["" if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in series]
    return out


def text_width(values, label, *, char_px=8, padding_px=28):
    """Pixels a table column needs for its longest text (or its label): generous by design,
    since a column too narrow clips the start of a right-aligned number."""
    longest = max([len(str(label))] + [len(str(v)) for v in values])
    return int(longest * char_px + padding_px)
