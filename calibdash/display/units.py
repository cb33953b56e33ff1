"""One unit per quantity, said in the header (issue 27).

Calibration errors (an estimate, its interval, a difference of two errors) are shown in
percentage points everywhere in the app and the reports: 0.1756 is shown as 17.56 and the
header or axis says "points" (tables, where room is short) or "percentage points" (axes,
titles). The Python API, JSON exports and CSV downloads keep fractions: they are data for
programs. Quantities that are not calibration errors on that scale keep their own, and the
header names it: the squared kernel calibration error (SKCE) is a squared kernel quantity,
the variational log-loss gap is in nats.

Nothing here imports Streamlit.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["PERCENTAGE_POINTS", "POINTS", "QUANTITY_UNITS", "POINTS_SCALE", "quantity_unit", "quantity_scale",
           "header_unit", "literature_tables", "LITERATURE_COLUMNS", "SUMMARY_ERROR_COLUMNS", "summary_points"]

PERCENTAGE_POINTS = "percentage points"
# The same unit in a table header, where room is short.
POINTS = "points"
# A fraction times this is in percentage points.
POINTS_SCALE = 100.0

# The unit each quantity of calibdash.metrics.literature.QUANTITIES is shown in.
QUANTITY_UNITS = {
    "calibration error (L2)": PERCENTAGE_POINTS,
    "L1 calibration error": PERCENTAGE_POINTS,
    "squared kernel calibration error": "SKCE's own scale, squared",
    "KL calibration error (nats)": "nats",
}


def quantity_unit(quantity):
    """The unit ``quantity`` is shown in (:data:`QUANTITY_UNITS`; "its own scale" for another)."""
    return QUANTITY_UNITS.get(quantity, "its own scale")


def quantity_scale(quantity):
    """What a value of ``quantity`` is multiplied by to be shown in :func:`quantity_unit`."""
    return POINTS_SCALE if quantity_unit(quantity) == PERCENTAGE_POINTS else 1.0


def header_unit(unit):
    """``unit`` as a table header says it: "points" for percentage points."""
    return POINTS if unit == PERCENTAGE_POINTS else unit


# The columns of a result's ``others`` table on the scale of its estimate.
LITERATURE_COLUMNS = ("estimate", "estimate_se", "ci_low", "ci_high")


def literature_tables(others):
    """The literature's estimates (``EvaluationResult.others``) as one table per quantity, each
    in that quantity's unit (:func:`quantity_unit`), so that a header can say it.

    Parameters
    ----------
    others : DataFrame
        With ``quantity``, ``estimator``, ``label``, the :data:`LITERATURE_COLUMNS`,
        ``p_value``, ``details`` and ``reference``.

    Returns
    -------
    list of (str, str, DataFrame)
        ``(quantity, unit, table)`` in the order of
        :data:`calibdash.metrics.literature.QUANTITIES`: the rows of that quantity with
        ``estimator``, ``label``, the :data:`LITERATURE_COLUMNS` times
        :func:`quantity_scale`, ``p_value`` (only when a row has one: a p-value is a
        probability, not a value of the quantity), ``details`` and ``reference``.
    """
    from calibdash.metrics.literature import QUANTITIES

    if not len(others):
        return []
    order = list(QUANTITIES) + [q for q in dict.fromkeys(others["quantity"]) if q not in QUANTITIES]
    out = []
    for quantity in order:
        rows = others[others["quantity"] == quantity]
        if not len(rows):
            continue
        cols = ["estimator", "label", *LITERATURE_COLUMNS]
        cols += ["p_value"] if rows["p_value"].notna().any() else []
        table = rows[cols + ["details", "reference"]].reset_index(drop=True)
        scale = quantity_scale(quantity)
        table = table.assign(**{c: scale * pd.to_numeric(table[c]) for c in LITERATURE_COLUMNS})
        out.append((quantity, quantity_unit(quantity), table))
    return out


# The columns of EvaluationResult.summary_with_reference that are calibration errors.
SUMMARY_ERROR_COLUMNS = ("estimate", "ci_low", "ci_high")


def summary_points(result):
    """The Results page's summary table: :meth:`EvaluationResult.summary_with_reference` with the
    estimator and its calibration error with the interval first, in percentage points (the unit
    of the forest plot beside it), then the risk columns. ``sqrt_risk_x100`` stays as it is: a
    ranking score on the risk's scale (the paper's tables), not an error."""
    table = result.summary_with_reference()
    first = ["estimator", *SUMMARY_ERROR_COLUMNS]
    table = table[first + [c for c in table.columns if c not in first]]
    return table.assign(**{c: POINTS_SCALE * pd.to_numeric(table[c]) for c in SUMMARY_ERROR_COLUMNS})
