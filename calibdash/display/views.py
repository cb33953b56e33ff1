"""The reliability view that the app's Reliability page and the HTML report share.

Both show the same things, computed here once: the top-label reliability diagram with the
selected estimator's recalibration curve, and per-class panels (with the probability
triangle for three classes) for canonical or classwise calibration. A recalibration map is
only ever drawn on the holdout rows, which the estimator that made it never saw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibdash.core.rows import take_rows
from calibdash.deprecation import renamed_parameters
from calibdash.display import reliability as rl

__all__ = ["MAX_CLASS_PANELS", "TopLabelView", "PerClassView", "most_frequent_classes", "top_label_view", "per_class_view"]

#: Per-class panels shown by default: the most frequent classes.
MAX_CLASS_PANELS = 6

_NO_MODELS = "The recalibration curve needs the fitted models, which a result read from JSON does not hold."


@dataclass(frozen=True)
class TopLabelView:
    """The top-label reliability diagram.

    Attributes
    ----------
    table : DataFrame
        :func:`calibdash.display.reliability.reliability_table` of all rows.
    recalibration : (ndarray, ndarray, str) or None
        Holdout confidences, the selected estimator's map at them, and a legend label.
    note : str
        Why there is no recalibration curve, or "".
    """

    table: object
    recalibration: tuple | None
    note: str


@dataclass(frozen=True)
class PerClassView:
    """Per-class reliability panels of one notion.

    Attributes
    ----------
    notion : str
    classes : list of int
        The classes shown.
    tables : dict
        ``{class: reliability table}`` of all rows.
    recalibration : dict or None
        ``{class: (holdout probabilities of the class, the map's values)}``.
    estimator : str or None
        The estimator whose map is drawn.
    triangle : (ndarray, ndarray or None, ndarray) or None
        For three classes: holdout probabilities, the map's values and the labels.
    """

    notion: str
    classes: list
    tables: dict
    recalibration: dict | None
    estimator: str | None
    triangle: tuple | None


def most_frequent_classes(labels, n_classes, k=MAX_CLASS_PANELS):
    """The ``k`` most frequent classes in class order (ties go to the lower class)."""
    order = np.argsort(-np.bincount(labels, minlength=n_classes), kind="stable")
    return sorted(int(c) for c in order[: min(n_classes, k)])


@renamed_parameters(n_boot="n_resamples")
def top_label_view(predictions, result=None, *, n_bins=15, strategy="uniform", n_resamples=200):
    """The top-label diagram of ``predictions`` and, when ``result`` (the top-label
    :class:`~calibdash.evaluation.result.EvaluationResult`) holds fitted models, the map of
    the estimator the risk selected on the holdout rows."""
    P, y = predictions.probs, predictions.labels
    recalibration, note = None, ""
    if result is not None:
        held = take_rows(P, result.holdout_rows)
        name, G = rl.selected_recalibration(result, held)
        if G is not None:
            recalibration = (held.max(axis=1), G[:, 0], f"recalibrated by {name} (holdout rows)")
        else:
            note = _NO_MODELS
    table = rl.reliability_table(*rl.top_label(P, y), n_bins=n_bins, strategy=strategy, n_resamples=n_resamples)
    return TopLabelView(table, recalibration, note)


@renamed_parameters(n_boot="n_resamples")
def per_class_view(predictions, result, *, classes=None, n_bins=15, strategy="uniform", n_resamples=200):
    """Per-class panels of ``result``'s notion (canonical or classwise) for ``classes``
    (default: the most frequent ones), with the selected estimator's map on the holdout rows."""
    P, y, d = predictions.probs, predictions.labels, predictions.d
    classes = most_frequent_classes(y, d) if classes is None else [int(k) for k in classes]
    rows = result.holdout_rows
    name, G = rl.selected_recalibration(result, P[rows])
    recalibration = None if G is None or G.shape[1] != d else {k: (P[rows, k], G[:, k]) for k in classes}
    tables = rl.per_class_tables(P, y, classes, n_bins=n_bins, strategy=strategy, n_resamples=n_resamples) if classes else {}
    triangle = (P[rows], G, y[rows]) if d == 3 else None
    return PerClassView(result.config["call"]["notion"], classes, tables, recalibration, name, triangle)
