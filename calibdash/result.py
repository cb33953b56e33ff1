"""The outcome of an evaluation, with an exact JSON round trip."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

_FORMAT = "calibdash.EvaluationResult"
_VERSION = 1


def _plain(value):
    """JSON-safe Python value: NaN becomes null (restored from the column's dtype)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return None if math.isnan(value) else value
    return value


def _frame_to_json(df):
    return {
        "columns": list(df.columns),
        "dtypes": [str(t) for t in df.dtypes],
        "data": [[_plain(v) for v in row] for row in df.itertuples(index=False, name=None)],
    }


def _frame_from_json(obj):
    df = pd.DataFrame(obj["data"], columns=obj["columns"])
    for col, dtype in zip(obj["columns"], obj["dtypes"]):
        if dtype in ("object", "str", "string"):
            df[col] = pd.Series([v for v in df[col]], dtype=object if dtype == "object" else dtype)
        elif dtype.startswith("float"):
            df[col] = pd.to_numeric(df[col].astype(object).where(df[col].notna(), np.nan), errors="raise").astype(dtype)
        else:
            df[col] = df[col].astype(dtype)
    return df


@dataclass
class EvaluationResult:
    """What :func:`calibdash.evaluate` found.

    Attributes
    ----------
    summary : pandas.DataFrame
        One row per estimator: its family, chosen hyperparameters, mean validation risk
        and its standard error over folds, sqrt(risk) x 100 as in the paper's tables, the
        holdout estimate of the calibration error and its standard error, the signed
        squared estimate, whether the choice lies at the edge of its grid, and seconds.
    curves : pandas.DataFrame
        One row per estimator x hyperparameter value x fold with the validation risk.
    folds : pandas.DataFrame
        One row per estimator x fold: the fold model's holdout squared estimate.
    config : dict
        Everything needed to rerun: the call's arguments, split sizes, library versions
        and the data's sha256.
    warnings : list of str
        Plain-language warnings, for example a choice at the edge of its grid.
    models : dict or None
        The fitted fold ensembles by estimator name (in memory only; not in the JSON).
    others : pandas.DataFrame
        Estimators from the literature that the risk cannot rank (ECE, SKCE, variational),
        on the same split: one row each with the quantity it estimates (group estimates by
        it: they are on different scales), the estimate and its standard error, the
        p-value of a calibration test where there is one, and how it was computed.
    """

    def __post_init__(self):
        if self.others is None:
            from .pipeline import OTHER_COLUMNS

            self.others = pd.DataFrame(columns=OTHER_COLUMNS)

    summary: pd.DataFrame
    curves: pd.DataFrame
    folds: pd.DataFrame
    config: dict
    warnings: list = field(default_factory=list)
    models: dict | None = field(default=None, repr=False, compare=False)
    others: pd.DataFrame | None = None

    @property
    def best(self):
        """The summary row of the estimator with the lowest mean validation risk."""
        return self.summary.loc[self.summary["val_risk"].idxmin()]

    def to_json(self, indent=None):
        """Serialise to a JSON string (standard JSON: NaN is written as null)."""
        return json.dumps(
            {
                "format": _FORMAT,
                "version": _VERSION,
                "config": _plain(self.config),
                "warnings": list(self.warnings),
                "summary": _frame_to_json(self.summary),
                "curves": _frame_to_json(self.curves),
                "folds": _frame_to_json(self.folds),
                "others": _frame_to_json(self.others),
            },
            indent=indent,
            allow_nan=False,
        )

    @classmethod
    def from_json(cls, text):
        """Rebuild a result written by :meth:`to_json` (without the fitted models)."""
        try:
            obj = json.loads(text)
        except (TypeError, ValueError) as e:
            raise ValueError(f"This is not a calibdash result file: it is not valid JSON ({e}).") from None
        if not isinstance(obj, dict) or obj.get("format") != _FORMAT:
            raise ValueError("This JSON file is not a calibdash evaluation result.")
        if obj.get("version") != _VERSION:
            raise ValueError(f"Result format version {obj.get('version')!r} is not supported (expected {_VERSION}).")
        return cls(
            summary=_frame_from_json(obj["summary"]),
            curves=_frame_from_json(obj["curves"]),
            folds=_frame_from_json(obj["folds"]),
            config=obj["config"],
            warnings=list(obj["warnings"]),
            others=_frame_from_json(obj["others"]) if "others" in obj else None,
        )
