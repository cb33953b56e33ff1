"""The result file read back safely: parsed within limits, every field it is read for checked.

A result file comes from outside (it may have been edited, or be someone else's), and
``calibdash rerun`` acts on it: it runs the configuration it records on the data it names
and writes folders named after its models. So its text is parsed within two limits,
:data:`calibdash.limits.RESULT_BYTES` and :data:`calibdash.limits.RESULT_DEPTH` (the
nesting is measured on the raw text, before the parser builds anything), and every field
calibdash reads from it is checked by type and range against the small schema below
before any object is rebuilt from it. Fields calibdash does not read are ignored.

A refusal is an :class:`~calibdash.errors.InputError` that names the field by its place
in the file (models by their position), never by quoting the file.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

from calibdash.core.notions import NOTIONS
from calibdash.errors import InputError
from calibdash.limits import FOLDS, GRID_VALUES, RESULT_BYTES, RESULT_DEPTH, TABLE_COLUMNS
from calibdash.predictions import KINDS, LOAD_OPTIONS

__all__ = ["parse_json", "check_file", "CALL_KEYS", "INPUT_KEYS", "FRAME_DTYPES"]

#: The keys of a recorded call: the settings of :func:`calibdash.evaluate`, every one, nothing else.
CALL_KEYS = ("notion", "estimators", "grids", "others", "test_size", "n_folds", "random_state")
#: The keys of a recorded input: the files, their loading options and the data's sha256.
INPUT_KEYS = ("predictions", "labels", *LOAD_OPTIONS, "sha256")
#: The column types of a table in a result file.
FRAME_DTYPES = ("object", "str", "string", "bool", "boolean", "float64", "float32", "int64", "int32", "Int64", "Float64")
# Text fields: a path, a name or a sentence; longer is not something calibdash wrote.
_MAX_TEXT = 100_000
_MAX_PATH = 4096
_MAX_ITEMS = 100_000
_SEED_BOUND = 2**64
_SHA256 = re.compile(r"[0-9a-f]{64}")
# A JSON string, skipped whole (possessive: no backtracking over a long string).
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"')
_DAMAGED = "This calibdash result file is damaged or was edited"


# ----------------------------------------------------------------------------- parsing
def _depth(text):
    """The deepest nesting of ``[`` and ``{`` in JSON text, outside its strings."""
    data = _JSON_STRING.sub('""', text).encode("utf-8")
    codes = np.frombuffer(data, dtype=np.uint8)
    deepest, level, step = 0, 0, 2**22
    for i in range(0, len(codes), step):  # in pieces: a few MiB of work arrays at a time
        part = codes[i : i + step]
        moves = np.zeros(len(part), dtype=np.int32)
        moves[(part == ord("[")) | (part == ord("{"))] = 1
        moves[(part == ord("]")) | (part == ord("}"))] = -1
        levels = level + np.cumsum(moves)
        if len(levels):
            deepest, level = max(deepest, int(levels.max())), int(levels[-1])
    return deepest


def _refuse_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text):
    """The object of JSON ``text`` (str or UTF-8 bytes), within the result file's limits.

    Raises
    ------
    InputError
        Over :data:`calibdash.limits.RESULT_BYTES` or :data:`calibdash.limits.RESULT_DEPTH`,
        not UTF-8, not JSON, or with the non-standard constants ``NaN`` and ``Infinity``
        (calibdash writes null).
    """
    if isinstance(text, (bytes, bytearray)):
        RESULT_BYTES.check(len(text), "This file")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("This is not a calibdash result file: it is not UTF-8 text.") from None
    elif not isinstance(text, str):
        raise InputError(f"A result file's text must be str or bytes, got {type(text).__name__}.")
    RESULT_BYTES.check(len(text), "This file")
    RESULT_DEPTH.check(_depth(text), "This file")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        where = f" at line {e.lineno}, column {e.colno}" if isinstance(e, json.JSONDecodeError) else ""
        raise InputError(f"This is not a calibdash result file: it is not valid JSON{where}.") from None


# ----------------------------------------------------------------------------- the schema
def _type_name(value):
    return {type(None): "null", bool: "true or false", int: "a whole number", float: "a number", str: "text",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


# Most rows of a split recorded by its seed: reading the file rebuilds the permutation (8 bytes a row).
SEEDED_SPLIT_ROWS = 100_000_000


def _fail(where, expected, value):
    raise InputError(f"{_DAMAGED}: {where} must be {expected}, not {_type_name(value)}.")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_text(value, longest=_MAX_TEXT):
    return isinstance(value, str) and len(value) <= longest and "\0" not in value


def _is_scalar(value):
    return value is None or isinstance(value, bool) or _is_int(value) or _is_real(value) or _is_text(value)


def _object(value, where, required=(), optional=(), closed=False):
    if not isinstance(value, dict):
        _fail(where, "an object", value)
    missing = [k for k in required if k not in value]
    if missing:
        raise InputError(f"{_DAMAGED}: {where} has no {missing[0]!r}.")
    if closed:
        known = set(required) | set(optional)
        if any(k not in known for k in value):
            raise InputError(f"{_DAMAGED}: {where} has a field other than {', '.join(sorted(known))}.")
    return value


def _list(value, where, item_ok, expected, *, longest=_MAX_ITEMS, optional=False):
    if optional and value is None:
        return
    if not isinstance(value, list) or len(value) > longest or not all(item_ok(v) for v in value):
        _fail(where, f"a list of {expected} (at most {longest:,})" + (", or null" if optional else ""), value)


def _check(ok, where, expected, value):
    if not ok:
        _fail(where, expected, value)


def _check_call(call, where):
    _object(call, where, required=CALL_KEYS, closed=True)
    _check(call["notion"] in NOTIONS, f"{where}.notion", f"one of {', '.join(NOTIONS)}", call["notion"])
    for key in ("estimators", "others"):
        _list(call.get(key), f"{where}.{key}", lambda v: _is_text(v, 100), "names", longest=1000, optional=True)
    grids = call.get("grids")
    if grids is not None:
        _object(grids, f"{where}.grids")
        for i, (name, params) in enumerate(grids.items()):
            _object(params, f"{where}.grids (entry {i + 1})")
            _check(_is_text(name, 100), f"{where}.grids (entry {i + 1})", "named by text", name)
            for param, values in params.items():
                _check(_is_text(param, 100), f"{where}.grids (entry {i + 1})", "parameters named by text", param)
                _list(values, f"{where}.grids (entry {i + 1})", lambda v: _is_scalar(v) and v is not None,
                      "numbers or words", longest=GRID_VALUES.value)
    _check(_is_real(call["test_size"]) and 0 < call["test_size"] < 1, f"{where}.test_size",
           "a number strictly between 0 and 1", call["test_size"])
    _check(_is_int(call["n_folds"]) and 2 <= call["n_folds"] <= FOLDS.value, f"{where}.n_folds",
           f"a whole number from 2 to {FOLDS.value}", call["n_folds"])
    _check(_is_int(call["random_state"]) and 0 <= call["random_state"] < _SEED_BOUND, f"{where}.random_state",
           "a whole number of at least 0 (a seed)", call["random_state"])


def _is_path(value):
    return value is None or (_is_text(value, _MAX_PATH) and value != "")


def _check_input(record, where):
    if record is None:
        return
    _object(record, where, optional=INPUT_KEYS, closed=True)
    for key in ("predictions", "labels"):
        _check(_is_path(record.get(key)), f"{where}.{key}", f"a path of at most {_MAX_PATH} characters, or null",
               record.get(key))
    _check(record.get("kind") in (None, *KINDS), f"{where}.kind", f"one of {', '.join(KINDS)}, or null", record.get("kind"))
    _check(_is_sha(record.get("sha256"), optional=True), f"{where}.sha256", "a sha256 (64 hexadecimal digits), or null",
           record.get("sha256"))
    for key in ("label_column", "positive"):
        value = record.get(key)
        _check(value is None or _is_int(value) or _is_text(value, 1000), f"{where}.{key}",
               "a name or a position, or null", value)
    for key in ("prob_columns", "class_names", "groups"):
        _list(record.get(key), f"{where}.{key}", lambda v: _is_int(v) or _is_text(v, 1000), "names or positions",
              longest=TABLE_COLUMNS.value, optional=True)


def _is_sha(value, optional=False):
    return (optional and value is None) or (isinstance(value, str) and bool(_SHA256.fullmatch(value)))


def _check_frame(frame, where):
    _object(frame, where, required=("columns", "dtypes", "data"))
    columns, dtypes, data = frame["columns"], frame["dtypes"], frame["data"]
    _list(columns, f"{where}.columns", lambda v: _is_text(v, 1000), "names", longest=1000)
    _list(dtypes, f"{where}.dtypes", lambda v: v in FRAME_DTYPES, f"column types ({', '.join(FRAME_DTYPES)})",
          longest=1000)
    if len(dtypes) != len(columns):
        raise InputError(f"{_DAMAGED}: {where} has {len(columns)} columns but {len(dtypes)} column types.")
    width = len(columns)
    _list(data, f"{where}.data", lambda row: isinstance(row, list) and len(row) == width, f"rows of {width} cells",
          longest=10**7)
    for i, row in enumerate(data):
        for j, cell in enumerate(row):
            # object columns may hold an estimator's parameters as an object (e.g. params)
            if not (_is_scalar(cell) or (dtypes[j] == "object" and isinstance(cell, (dict, list)))):
                _fail(f"{where}.data, row {i + 1}, column {j + 1}", "a number, text or null", cell)


def _check_result(result, where):
    _object(result, where, required=("config", "warnings", "summary", "curves", "folds"))
    config = _object(result["config"], f"{where}.config", required=("call", "data_sha256"))
    _check_call(config["call"], f"{where}.config.call")
    _check(_is_sha(config["data_sha256"]), f"{where}.config.data_sha256", "a sha256 (64 hexadecimal digits)",
           config["data_sha256"])
    _check_input(config.get("input"), f"{where}.config.input")
    for key in ("n", "n_classes", "n_optimisation", "n_test"):
        if key in config:
            _check(_is_int(config[key]) and config[key] >= 0, f"{where}.config.{key}", "a whole number of at least 0",
                   config[key])
    _list(result["warnings"], f"{where}.warnings", _is_text, "sentences")
    edges = result.get("grid_edges", [])
    _list(edges, f"{where}.grid_edges", lambda v: isinstance(v, dict), "objects", longest=1000)
    for i, edge in enumerate(edges):
        at = f"{where}.grid_edges, entry {i + 1}"
        keys = ("estimator", "param", "value", "side", "grid", "flat")
        _object(edge, at, required=keys, closed=True)
        _check(_is_text(edge["estimator"], 100) and _is_text(edge["param"], 100), at, "named by text", edge["estimator"])
        _check(_is_real(edge["value"]), f"{at}.value", "a number", edge["value"])
        _check(edge["side"] in ("low", "high"), f"{at}.side", "low or high", edge["side"])
        _list(edge["grid"], f"{at}.grid", _is_real, "numbers", longest=GRID_VALUES.value)
        _check(isinstance(edge["flat"], bool), f"{at}.flat", "true or false", edge["flat"])
    for key in ("summary", "curves", "folds"):
        _check_frame(result[key], f"{where}.{key}")
    if "others" in result:
        _check_frame(result["others"], f"{where}.others")
    split = result.get("split")
    if isinstance(split, dict) and "seeded" in split:
        _object(split, f"{where}.split", required=("seeded", "sha256"), closed=True)
        recipe = _object(split["seeded"], f"{where}.split.seeded", required=("n", "test_size", "n_folds", "random_state"),
                         closed=True)
        _check(_is_int(recipe["n"]) and 0 < recipe["n"] <= SEEDED_SPLIT_ROWS, f"{where}.split.seeded.n",
               f"a number of rows up to {SEEDED_SPLIT_ROWS:,}", recipe["n"])
        for key in ("n_folds", "random_state"):
            _check(_is_int(recipe[key]) and 0 <= recipe[key] < 2**63, f"{where}.split.seeded.{key}", "a whole number", recipe[key])
        _check(_is_real(recipe["test_size"]), f"{where}.split.seeded.test_size", "a number", recipe["test_size"])
        _check(_is_text(split["sha256"], 64), f"{where}.split.sha256", "a sha256", split["sha256"])
    elif split is not None:
        _object(split, f"{where}.split", required=("test", "folds"))
        _list(split["test"], f"{where}.split.test", lambda v: _is_int(v) and v >= 0, "row numbers", longest=10**9)
        _list(split["folds"], f"{where}.split.folds", lambda v: isinstance(v, list), "lists", longest=FOLDS.value)
        for k, fold in enumerate(split["folds"]):
            _list(fold, f"{where}.split.folds, fold {k + 1}", lambda v: _is_int(v) and v >= 0, "row numbers", longest=10**9)


def check_file(obj, kind):
    """Raise :class:`InputError` unless ``obj``, a parsed result file, has the fields and
    values calibdash reads from it.

    Parameters
    ----------
    obj : dict
        The parsed file (its format and version already checked).
    kind : {"single", "models"}
        A single result (the oldest format), or ``{"command", "models": {name: {notion: result}}}``.
    """
    if kind == "single":
        _check_result(obj, "the result")
        return
    _list(obj.get("command"), "command", lambda v: _is_text(v, _MAX_PATH * 4), "words", optional=True)
    models = _object(obj, "the file", required=("models",))["models"]
    _object(models, "models")
    if not models:
        raise InputError(f"{_DAMAGED}: it records no model.")
    for i, (name, notions) in enumerate(models.items()):
        where = f"model {i + 1} of {len(models)}"
        _check(_is_text(name, 1000) and name != "", f"the name of {where}", "text of 1 to 1,000 characters", name)
        _object(notions, where)
        if not notions:
            raise InputError(f"{_DAMAGED}: {where} records no result.")
        for notion, result in notions.items():
            _check(notion in NOTIONS, f"a notion of {where}", f"one of {', '.join(NOTIONS)}", notion)
            _check_result(result, f"{where}, {notion}")
