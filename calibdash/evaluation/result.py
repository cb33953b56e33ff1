"""The outcome of an evaluation, with an exact JSON round trip."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from calibdash.core.uncertainty import REFERENCE, check_level, paired_risks, root_interval, t_quantile
from calibdash.deprecation import translate_keys
from calibdash.errors import ConfigError, InputError
from calibdash.estimators.registry import REGISTRY
from calibdash.evaluation import schema
from calibdash.evaluation.advice import GridEdge
from calibdash.evaluation.config import split_parts

# The columns of the literature's rows (``EvaluationResult.others``).
OTHER_COLUMNS = ["estimator", "label", "quantity", "estimate", "estimate_se", "ci_low", "ci_high", "squared_estimate",
                 "squared_estimate_se", "p_value", "details", "reference", "seconds"]


def recalibration_candidates(summary):
    """The estimators of ``summary`` (an evaluation's, with ``estimator`` and ``val_risk``) whose
    recalibration map the reliability views may show, in the order they try them: the tuned
    plug-ins (not the Kronecker estimator, whose h has no map, nor the fixed 15-bin baseline, which
    was not tuned), lowest validation risk first."""
    order = summary.sort_values("val_risk", kind="stable")["estimator"]
    entries = [(name, REGISTRY.get(name)) for name in order]  # a file's names may predate the registry's
    return [name for name, entry in entries if entry is not None and entry.tunable and entry.estimator.plug_in]


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
        (``val_risk``, with its unpaired standard error over folds ``val_risk_se``), the
        paired comparison with the best estimator (``risk_diff``, ``risk_diff_se``,
        ``tied``: see :func:`calibdash.core.uncertainty.paired_risks`), sqrt(risk) x 100 as in the
        paper's tables, the holdout estimate of the calibration error (``estimate``) with
        its standard error and 95% interval (``estimate_se``, ``ci_low``, ``ci_high``), the
        signed squared estimate with its standard error and that error's two parts
        (``squared_estimate_se``, ``squared_se_holdout``: which rows were held out,
        ``squared_se_fit``: which rows fitted the fold models) and degrees of freedom
        (``se_df``), whether the choice lies at the edge of its grid, and seconds.
    curves : pandas.DataFrame
        One row per estimator x hyperparameter value x fold with the validation risk.
    folds : pandas.DataFrame
        One row per estimator x fold: the fold model's holdout squared estimate and its
        validation risk at the chosen hyperparameters; rows named ``"h = 0"`` hold the fold
        risks of the trivial estimator h = 0 ("perfectly calibrated"), the reference of the
        paired comparison.
    config : dict
        Everything needed to rerun: the call's arguments, split sizes, library versions
        and the data's sha256.
    warnings : list of str
        Warnings for the Python and command-line user, for example a choice at the edge of
        its grid.
    grid_edges : list of GridEdge
        Every chosen hyperparameter at the edge of its grid, as facts: the app words them
        for its readers and offers :meth:`GridEdge.extended_grid`
        (:mod:`calibdash.evaluation.advice`).
    models : dict or None
        The fitted fold ensembles by estimator name (in memory only; not in the JSON).
    split : dict or None
        ``{"test": holdout row indices, "folds": [validation row indices of each fold]}``,
        the rows every number was computed on (fold f trains on the other folds).
    diagonals : dict or None
        ``{estimator: array (k, n_test)}``: each fold model's h(z_i, z_i) on the holdout
        rows, in the order of ``split["test"]`` (in memory only; not in the JSON); None
        when evaluated with ``keep_diagonals=False``.
    others : pandas.DataFrame
        Estimators from the literature that the risk cannot rank (ECE, SKCE, variational),
        on the same split: one row each with the quantity it estimates (group estimates by
        it: they are on different scales), the estimate and its standard error, the
        p-value of a calibration test where there is one, and how it was computed.
    """

    def __post_init__(self):
        if self.others is None:
            self.others = pd.DataFrame(columns=OTHER_COLUMNS)

    summary: pd.DataFrame
    curves: pd.DataFrame
    folds: pd.DataFrame
    config: dict
    warnings: list = field(default_factory=list)
    grid_edges: list = field(default_factory=list)
    models: dict | None = field(default=None, repr=False, compare=False)
    others: pd.DataFrame | None = None
    split: dict | None = field(default=None, repr=False, compare=False)
    diagonals: dict | None = field(default=None, repr=False, compare=False)

    @property
    def best(self):
        """The summary row of the estimator with the lowest mean validation risk."""
        return self.summary.loc[self.summary["val_risk"].idxmin()]

    @property
    def recalibration_candidates(self):
        """The estimators whose recalibration map the reliability views show, best first
        (:func:`recalibration_candidates` of the summary); the first with a fitted model is shown."""
        return recalibration_candidates(self.summary)

    @property
    def holdout_rows(self):
        """The holdout rows in increasing order: the rows no estimator saw while it was
        fitted or selected (where a recalibration map may be shown honestly)."""
        if self.split is None:
            raise InputError("This result does not record its split; evaluate the data again.")
        return np.sort(np.asarray(self.split["test"]))

    @property
    def tied(self):
        """Names of the estimators the risk cannot tell apart from the best (the best
        included), and ``"h = 0"`` when the trivial estimator is among them: then the
        data do not show that the model is miscalibrated at all."""
        names = list(self.summary.loc[self.summary["tied"], "estimator"])
        ref = self.reference
        return names + ([REFERENCE] if ref is not None and bool(ref["tied"]) else [])

    @property
    def reference(self):
        """The paired comparison of the trivial estimator h = 0 with the best estimator:
        a dict with ``val_risk``, ``risk_diff``, ``risk_diff_se`` and ``tied``; None for a
        result without its fold risks."""
        part = self.folds[self.folds["estimator"] == REFERENCE] if "val_risk" in self.folds else self.folds.iloc[:0]
        if not len(part):
            return None
        fold_risks = {REFERENCE: part.sort_values("fold")["val_risk"].to_numpy()}
        best = self.best["estimator"]
        best_part = self.folds[self.folds["estimator"] == best].sort_values("fold")
        fold_risks[best] = best_part["val_risk"].to_numpy()
        diff, se, tied = paired_risks(fold_risks, best)[REFERENCE]
        return {"estimator": REFERENCE, "val_risk": float(fold_risks[REFERENCE].mean()), "risk_diff": diff,
                "risk_diff_se": se, "tied": tied}

    def summary_with_reference(self):
        """The summary's display columns, sorted by validation risk, with a last row for the
        reference h = 0 ("perfectly calibrated": estimate 0, no interval)."""
        cols = ["estimator", "hyperparameters", "val_risk", "risk_diff", "risk_diff_se", "tied", "sqrt_risk_x100",
                "estimate", "ci_low", "ci_high", "at_grid_edge", "seconds"]
        table = self.summary.sort_values("val_risk")[cols]
        ref = self.reference
        if ref is None:
            return table.reset_index(drop=True)
        row = {c: None for c in cols}
        part = self.folds[self.folds["estimator"] == REFERENCE]
        row.update(ref, hyperparameters="perfectly calibrated (reference)", estimate=0.0,
                   sqrt_risk_x100=100 * float(np.mean(np.sqrt(part["val_risk"]))), at_grid_edge=False)
        return pd.concat([table, pd.DataFrame([row], columns=cols).astype(table.dtypes.to_dict(), errors="ignore")],
                         ignore_index=True)

    def confidence_interval(self, estimator=None, level=0.95):
        """Interval of an estimator's calibration error (not squared).

        It covers both the sampling of the holdout rows and the fitting of the fold
        models (:mod:`calibdash.core.uncertainty`): the squared-error interval
        ``squared_estimate +- t se`` (Student's t at ``se_df`` degrees of freedom), taken
        to the error's scale by square roots of its ends, clipped at 0. The summary's
        ``ci_low`` and ``ci_high`` are this at level 0.95.

        Parameters
        ----------
        estimator : str or None
            An estimator of ``summary``; None means the best (lowest validation risk).
        level : float, default=0.95

        Returns
        -------
        ConfidenceInterval
            ``(low, high)``, a named tuple with SciPy's field names.
        """
        check_level(level)
        if estimator is None:
            row = self.best
        else:
            rows = self.summary[self.summary["estimator"] == estimator]
            if not len(rows):
                raise ConfigError(f"{estimator!r} is not an estimator of this result; choose from "
                                 f"{', '.join(map(repr, self.summary['estimator']))}.")
            row = rows.iloc[0]
        sq, se = float(row["squared_estimate"]), float(row["squared_estimate_se"])
        q = t_quantile(level, float(row["se_df"]))
        return root_interval(sq - q * se, sq + q * se)

    def to_dict(self):
        """The result as plain JSON values (the payload of one result in the file format)."""
        return {
            "config": _plain(self.config),
            "warnings": list(self.warnings),
            "grid_edges": [_plain(edge.to_dict()) for edge in self.grid_edges],
            "summary": _frame_to_json(self.summary),
            "curves": _frame_to_json(self.curves),
            "folds": _frame_to_json(self.folds),
            "others": _frame_to_json(self.others),
            "split": None if self.split is None else split_to_json(self.split, self.config),
        }

    @classmethod
    def from_dict(cls, obj):
        """Rebuild a result from :meth:`to_dict`'s values (without the fitted models)."""
        return cls(
            summary=_frame_from_json(obj["summary"]),
            curves=_frame_from_json(obj["curves"]),
            folds=_frame_from_json(obj["folds"]),
            config=obj["config"],
            warnings=list(obj["warnings"]),
            grid_edges=[GridEdge.from_dict(edge) for edge in obj.get("grid_edges", [])],  # absent in older files
            others=_frame_from_json(obj["others"]) if "others" in obj else None,
            split=None if obj.get("split") is None else split_from_json(obj["split"]),
        )

    def to_json(self, indent=None):
        """The JSON text of this result: the file format of :class:`calibdash.evaluation.evaluations.Evaluations`
        with one model and one notion (standard JSON: NaN is written as null)."""
        return results_to_json({None: {self.config["call"]["notion"]: self}}, indent=indent)

    @classmethod
    def from_json(cls, text):
        """Rebuild a result written by :meth:`to_json` (without the fitted models). A file
        holding several results is read with ``Evaluations.from_json``."""
        models, _ = results_from_json(text)
        found = [res for results in models.values() for res in results]
        if len(found) != 1:
            raise InputError(f"This file holds {len(found)} results; read it with "
                             "calibdash.evaluation.evaluations.Evaluations.from_json.")
        return found[0]


# ----------------------------------------------------------------------------- the split in a file
def split_sha256(split):
    """Fingerprint of a split's row numbers (the test rows, then each fold, as little-endian int64)."""
    h = hashlib.sha256()
    for part in (split["test"], *split["folds"]):
        h.update(np.asarray(part, dtype="<i8").tobytes())
        h.update(b"|")
    return h.hexdigest()


def _seeded_split(recipe):
    test, parts = split_parts(recipe["n"], recipe["test_size"], recipe["n_folds"], recipe["random_state"])
    return {"test": test, "folds": parts}


def split_to_json(split, config):
    """The split as a file writes it. The pipeline's split is the seeded one of
    ``split_parts``, so the file records that recipe and the row numbers' sha256 instead of
    the row numbers (156 MB of JSON at 10,000,000 rows, over the reader's own size limit); a
    split made otherwise is written out."""
    call = config.get("call", {}) if isinstance(config, dict) else {}
    try:
        recipe = {"n": int(config["n"]), "test_size": float(call["test_size"]), "n_folds": int(call["n_folds"]),
                  "random_state": int(call["random_state"])}
        seeded = _seeded_split(recipe)
    except (KeyError, TypeError, ValueError, InputError, ConfigError):
        seeded = None
    sha = split_sha256(split)
    if seeded is not None and recipe["n"] <= schema.SEEDED_SPLIT_ROWS and split_sha256(seeded) == sha:
        return {"seeded": recipe, "sha256": sha}
    return {"test": [int(i) for i in split["test"]], "folds": [[int(i) for i in v] for v in split["folds"]]}


def split_from_json(obj):
    """The split of a file: its row numbers, or the seeded split rebuilt and checked against
    the recorded sha256. None when this NumPy draws another permutation from the seed than the
    one that wrote the file (the holdout rows are then unknown; nothing else changes)."""
    if "seeded" not in obj:
        return {"test": np.asarray(obj["test"], dtype=np.int64), "folds": [np.asarray(v, dtype=np.int64) for v in obj["folds"]]}
    try:
        split = _seeded_split(obj["seeded"])
    except (ConfigError, InputError):  # a recipe split_parts refuses: not a split calibdash wrote
        return None
    return split if split_sha256(split) == obj["sha256"] else None


# ----------------------------------------------------------------------------- the file format
#: One JSON format for every result file: {"format", "version", "calibdash", "command",
#: "models": {model name: {notion: EvaluationResult.to_dict()}}}.
FORMAT = "calibdash.Evaluations"
VERSION = 1
# Read as well: the formats it replaced, the command line's run file (the same layout) and a
# single result as EvaluationResult.to_json wrote it.
_RUN_FORMAT, _RUN_VERSION = "calibdash.Run", 1
# (Version 2 of the single-result format added the interval columns, the paired risk
# comparison, the h = 0 rows of ``folds`` and the split; version 1 files are refused.)
_RESULT_FORMAT, _RESULT_VERSION = "calibdash.EvaluationResult", 2
#: The name a single unnamed model is written under.
UNNAMED = "model"


def results_to_json(models, command=None, indent=None):
    """The file text of ``{model name or None: {notion: EvaluationResult}}``."""
    from calibdash import __version__

    obj = {
        "format": FORMAT,
        "version": VERSION,
        "calibdash": __version__,
        "command": list(command) if command else None,
        "models": {UNNAMED if name is None else str(name): {notion: res.to_dict() for notion, res in notions.items()}
                   for name, notions in models.items()},
    }
    return json.dumps(obj, indent=indent, allow_nan=False)


#: Keys of the input record that earlier releases wrote under other names (the loader's
#: options were renamed to the scientific Python vocabulary: group_columns -> groups).
_RENAMED_INPUT_KEYS = {"group_columns": "groups"}


def _upgrade_vocabulary(obj, kind):
    """Rename, in place, the retired keys of every result's input record, so a file written
    before the renaming reads as one written now (the numbers are not touched)."""
    if not isinstance(obj, dict):
        return
    if kind == _RESULT_FORMAT:
        results = [obj]
    else:
        models = obj.get("models")
        results = [r for notions in models.values() if isinstance(notions, dict) for r in notions.values()] \
            if isinstance(models, dict) else []
    for res in results:
        config = res.get("config") if isinstance(res, dict) else None
        record = config.get("input") if isinstance(config, dict) else None
        if isinstance(record, dict):
            config["input"] = translate_keys(record, _RENAMED_INPUT_KEYS)


def results_from_json(text, name=UNNAMED):
    """``({model name: [EvaluationResult]}, command)`` from a result file's text. A model
    written without a name (under ``"model"``, as :meth:`EvaluationResult.to_json` writes
    it), and a single result in the old format, are model ``name``.

    The text is parsed within the limits on its size and nesting, and every field read
    from it is checked before anything is rebuilt (:mod:`calibdash.evaluation.schema`);
    anything else is refused with an :class:`~calibdash.errors.InputError`.
    """
    obj = schema.parse_json(text)
    kind = obj.get("format") if isinstance(obj, dict) else None
    if kind not in (FORMAT, _RUN_FORMAT, _RESULT_FORMAT):
        raise InputError("This JSON file is not a calibdash evaluation result.")
    expected = {FORMAT: VERSION, _RUN_FORMAT: _RUN_VERSION, _RESULT_FORMAT: _RESULT_VERSION}[kind]
    if obj.get("version") != expected or isinstance(obj.get("version"), bool):
        shown = obj.get("version") if isinstance(obj.get("version"), int) else "(not a number)"
        raise InputError(f"Result format version {shown} is not supported (expected {expected}): "
                         "it was written by an older calibdash; evaluate the data again.")
    _upgrade_vocabulary(obj, kind)
    schema.check_file(obj, "single" if kind == _RESULT_FORMAT else "models")
    try:
        if kind == _RESULT_FORMAT:
            return {name: [EvaluationResult.from_dict(obj)]}, None
        return ({name if model == UNNAMED else model: [EvaluationResult.from_dict(r) for r in notions.values()]
                 for model, notions in obj["models"].items()}, obj.get("command"))
    except (KeyError, TypeError, AttributeError, ValueError, OverflowError) as e:
        # e.g. text in a column of numbers: the message names the kind of damage, not the file's text
        raise InputError(f"This calibdash result file is damaged: a table cannot be rebuilt ({type(e).__name__}).") from None
