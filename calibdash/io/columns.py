"""What a table's columns mean: labels, probabilities, groups and class names.

:mod:`calibdash.io.formats` reads a CSV/TSV/text file, a Parquet file or a DataFrame into a
raw :class:`~calibdash.io.formats.Table` (the cells, the header's column names and how to
name a line). This module decides what its columns are:

* whether the first line of a text table is a header (:func:`header_rule`, which the reader
  asks);
* which column holds the labels (the ``label_column`` option, else one named like
  :data:`LABEL_COLUMN_NAMES`, else the only column of text, else the last column of a
  table without header);
* which hold the probabilities or logits (``prob_columns``, else the columns named after a
  class such as ``p_cat``, else every other column) and which group rows (``groups``);
* the class names a header gives (``p_cat`` -> ``cat``).

:func:`split_table` turns a table into the :class:`~calibdash.io.formats.Parsed` content
that :mod:`calibdash.io.loading` interprets, :func:`labels_from_table` reads a separate
labels table, and :func:`inspect_table` reports the guesses without refusing anything. Each
guess is recorded as a :class:`~calibdash.errors.LoadNote`; a choice that cannot be made is
refused with an :class:`~calibdash.errors.InputError` that says which option settles it.
Column names arrive marked as user text (:func:`calibdash.text.user`) and every message
that quotes them keeps the mark.
"""

from __future__ import annotations

import re

import numpy as np

from calibdash.errors import InputError, LoadNote, LoadWarning
from calibdash.io.formats import Parsed, Where
from calibdash.text import cell, quoted, user

__all__ = [
    "LABEL_COLUMN_NAMES",
    "header_rule",
    "split_table",
    "labels_from_table",
    "inspect_table",
    "class_name_of_column",
    "class_names_of_columns",
    "is_text_column",
    "column_values",
    "group_values",
    "preview",
]

# Column names (case-insensitive) taken to hold the true labels of a table.
LABEL_COLUMN_NAMES = (
    "label", "labels", "y", "target", "targets", "ground_truth", "class", "true_label",
    "y_true", "true_class", "outcome", "diagnosis", "truth", "gt",
)
# A probability (or logit) column named after its class: p_cat, prob-cat, proba_cat,
# probability cat, cat_prob, cat_proba, P(cat), p(cat), logit_cat, cat_logit.
_PROB_WORDS = r"(?:p|prob|proba|probability|pred_proba|logit|logits|score)"
_PROB_NAME = re.compile(
    rf"{_PROB_WORDS}[ _.:-]+(.+)|(.+?)[ _.:-]+{_PROB_WORDS}|[pP]\((.+)\)", re.IGNORECASE
)


def _is_number(s):
    try:
        float(s)
    except ValueError:
        return False
    return "_" not in s  # Python accepts 1_000; pandas does not


def header_rule(header=None, *, role="predictions", label_column=None, labels_separate=False,
                prob_columns=None, groups=None):
    """The rule that says whether the first line of a text table is its header.

    :func:`calibdash.io.formats.read_table` calls the returned function with the stripped
    fields of the table's first non-blank line. ``header`` (True or False) decides; when it
    is None, a line is a header when it names a label column or an option names columns,
    else when a field other than the label column's is not a number. ``role`` is
    ``"predictions"`` or ``"labels"`` (a separate labels file: a header when it names the
    label column, or, with several fields, when one is not a number).
    """

    def is_header(fields):
        m = len(fields)
        lowered = [f.lower() for f in fields]
        if role == "labels":
            has_header = bool(header) if header is not None else any(f in LABEL_COLUMN_NAMES for f in lowered)
            if header is None and not has_header and m > 1:
                has_header = any(f and not _is_number(f) for f in fields)
            return has_header
        if header is not None:
            return bool(header)
        if (isinstance(label_column, str) or any(f in LABEL_COLUMN_NAMES for f in lowered)
                or any(isinstance(c, str) for c in (prob_columns or ()))
                or any(isinstance(c, str) for c in (groups or ()))):
            return True
        if isinstance(label_column, int) and -m <= label_column < m:
            li = label_column % m
        else:
            li = None if labels_separate else m - 1
        return any(f and not _is_number(f) for j, f in enumerate(fields) if j != li)

    return is_header


def split_table(table, *, label_column=None, labels_separate=False, prob_columns=None, groups=None):
    """Split a :class:`~calibdash.io.formats.Table` into class columns, the label column and
    grouping columns: the :class:`~calibdash.io.formats.Parsed` content of a predictions table.

    ``label_column``, ``prob_columns`` and ``groups`` are the options of
    :func:`calibdash.load_predictions` (None: guessed); ``labels_separate`` says the labels
    were passed on their own, so the table holds none.
    """
    import pandas as pd

    frame, names, name, where_kwargs = table.frame, table.names, table.name, table.where_kwargs
    n, m = frame.shape
    groups = _column_list(groups, "groups", names, m, name)
    probs = _column_list(prob_columns, "prob_columns", names, m, name)
    for j in set(groups) & set(probs or ()):
        raise InputError(
            f"{name}: column {_col_name(names, j)} is both a probability column and a grouping column; "
            "choose one role for it.", option="groups",
        )
    notes = []
    li = _label_index(names, m, name, label_column=label_column, labels_separate=labels_separate,
                      taken=set(groups) | set(probs or ()), frame=frame, notes=notes)
    for option, chosen in (("prob_columns", probs or ()), ("groups", groups)):
        if li is not None and li in chosen:
            raise InputError(
                f"{name}: column {_col_name(names, li)} is the label column, so it cannot also be one of "
                f"{option}; choose other columns, or another label column.", option=option,
            )
    warnings = []
    drop = set()
    if names is not None:
        for j, nm in enumerate(names):
            if j == li or nm or j in groups:
                continue
            col = frame.iloc[:, j]
            if j == 0 and pd.api.types.is_integer_dtype(col) and np.array_equal(
                col.to_numpy(), np.arange(n)
            ):
                drop.add(0)
                warnings.append(LoadWarning(
                    "index-column",
                    f"{name}: dropped the unnamed first column (0, 1, 2, ...), a row index as "
                    "written by DataFrame.to_csv; pass index=False when saving to avoid it.",
                ))
            elif probs is None or j in probs:
                raise InputError(
                    f"{name}: column {j} (0-based) has no name in the header; name it after its "
                    "class, or remove it."
                )
        seen = {}
        for j, nm in enumerate(names):
            if j in drop or not nm:
                continue
            if nm in seen:
                raise InputError(
                    f"{name}: the column name '{nm}' appears twice (columns {seen[nm]} and {j}, "
                    "0-based); class columns need distinct names."
                )
            seen[nm] = j
    if probs is not None:
        class_idx = list(probs)
    else:
        class_idx = _guess_prob_columns(frame, names, name, li, set(groups) | drop, notes)
    if not class_idx:
        what = f"besides the label column {_col_name(names, li)}" if li is not None else ""
        raise InputError(
            f"{name} has no class columns {what}; fewer than two classes cannot be assessed. "
            "Give one column per class (or one column with the positive-class probability for "
            "a binary problem)."
        )
    where = Where(
        name,
        columns=[names[j] for j in class_idx] if names is not None else None,
        positions=class_idx,
        **where_kwargs,
    )
    block = frame.iloc[:, class_idx]
    for k, dtype in enumerate(block.dtypes):
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
            _refuse_non_numeric(block.iloc[:, k], where, k)
    try:
        scores = block.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as e:
        raise InputError(f"{name}: the class columns cannot be read as numbers ({e}).") from None
    parsed = Parsed(scores=np.ascontiguousarray(scores), where=where, warnings=warnings, notes=notes)
    if names is not None:
        parsed.score_names = tuple(names[j] for j in class_idx)
    if names is not None and len(class_idx) > 1:
        parsed.class_names = class_names_of_columns(parsed.score_names, notes)
        parsed.class_names_origin = f"the header of {name}"
    if li is not None:
        parsed.labels = column_values(frame.iloc[:, li])
        parsed.labels_where = Where(
            name, columns=[names[li]] if names is not None else None, positions=[li], **where_kwargs
        )
    parsed.groups = {(names[j] if names is not None else str(j)): group_values(frame.iloc[:, j]) for j in groups}
    return parsed


def class_name_of_column(column):
    """The class a probability column is named after (``p_malignant``, ``prob_malignant``,
    ``malignant_prob``, ``P(malignant)`` -> ``malignant``), or None."""
    match = _PROB_NAME.fullmatch(str(column).strip())
    if match is None:
        return None
    return next(g for g in match.groups() if g is not None).strip() or None


def class_names_of_columns(columns, notes):
    """Class names of several probability columns: their names, or the classes they are
    all named after when every one follows a pattern such as ``p_cat``."""
    stripped = [class_name_of_column(c) for c in columns]
    if all(stripped) and len(set(stripped)) == len(stripped):
        pairs = ", ".join(f"{c!r} -> {user(s)!r}" for c, s in zip(columns[:4], stripped))
        notes.append(LoadNote(
            "class-names", f"class names taken from the column names: {pairs}{', ...' if len(columns) > 4 else ''}"
        ))
        return tuple(user(s) for s in stripped)
    return tuple(columns)


def is_text_column(col):
    """True for a column of words (a label or grouping column), not of numbers with a typo:
    non-numeric, and fewer than half of its values read as numbers."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        return False
    values = col.dropna()
    if values.empty:
        return False
    numeric = pd.to_numeric(values.astype(str).str.strip(), errors="coerce").notna()
    return bool(numeric.mean() < 0.5)


def numeric_columns(frame):
    """A boolean per column of ``frame``: whether its dtype is numeric (or boolean), from the
    dtypes alone. Taking 100,000 columns one by one with ``iloc`` took seconds."""
    import pandas as pd

    return np.array([pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t) for t in frame.dtypes], bool)


def text_columns(frame, columns, numeric=None):
    """The positions among ``columns`` whose column is text (:func:`is_text_column`); a numeric
    column (``numeric``, from :func:`numeric_columns`) never is, and is not looked at."""
    numeric = numeric_columns(frame) if numeric is None else numeric
    return [j for j in columns if not numeric[j] and is_text_column(frame.iloc[:, j])]


class _NameIndex:
    """First position of each column name, exactly and ignoring case, for many look-ups: a
    list's ``index`` per name made choosing 100,000 columns quadratic (minutes)."""

    def __init__(self, names):
        self.exact, self.lower = {}, {}
        for j, nm in enumerate(names):
            self.exact.setdefault(nm, j)
            self.lower.setdefault(nm.lower(), j)


def _column_index(value, option, names, m, name, index=None):
    if isinstance(value, str):
        if names is None:
            raise InputError(
                f"{option} names column '{user(value)}', but {name} has no header row; give the column's "
                "0-based position instead.", option=option,
            )
        index = _NameIndex(names) if index is None else index
        if value in index.exact:
            return index.exact[value]
        if value.strip().lower() in index.lower:
            return index.lower[value.strip().lower()]
        raise InputError(
            f"{name} has no column named '{user(value)}'; its columns are {preview(names)}. "
            f"Pass one of these in {option}.", option=option,
        )
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if not -m <= value < m:
            raise InputError(
                f"{option}={value} is out of range: {name} has {m} columns "
                f"(positions 0..{m - 1}).", option=option,
            )
        return int(value) % m
    raise InputError(
        f"{option} must hold column names (str) or 0-based positions (int), got "
        f"{type(value).__name__}.", option=option,
    )


def _column_list(values, option, names, m, name):
    """0-based positions of the columns named in an option (None: not given)."""
    if values is None:
        return None if option == "prob_columns" else []
    if isinstance(values, (str, int, np.integer)):
        values = [values]
    try:
        values = list(values)
    except TypeError:
        raise InputError(f"{option} must be a list of column names or positions.", option=option) from None
    if option == "prob_columns" and not values:
        raise InputError("prob_columns is empty; give at least one column of probabilities or logits.",
                         option=option)
    out, seen = [], set()
    index = _NameIndex(names) if names is not None and any(isinstance(v, str) for v in values) else None
    for v in values:
        j = _column_index(v, option, names, m, name, index)
        if j in seen:
            raise InputError(f"{option} names column {_col_name(names, j)} twice.", option=option)
        out.append(j)
        seen.add(j)
    return out


def _guess_prob_columns(frame, names, name, li, excluded, notes):
    """The class columns when prob_columns is not given: the columns named like probability
    columns (``p_cat``), if some are, else every column but the label and grouping columns."""
    excluded = set(excluded)
    rest = [j for j in range(frame.shape[1]) if j != li and j not in excluded]
    if names is None:
        return rest
    named = [j for j in rest if class_name_of_column(names[j])]
    if named and len(named) < len(rest):
        named_set = set(named)
        unused = [j for j in rest if j not in named_set]
        notes.append(LoadNote(
            "prob-columns",
            f"probability columns taken from their names: {preview([names[j] for j in named])}; not used: "
            f"{preview([names[j] for j in unused])} (keep them as grouping columns with groups=[...])",
        ))
        return named
    text = text_columns(frame, rest)
    if text and len(text) < len(rest):
        raise InputError(
            f"{name}: column {_col_name(names, text[0])} holds text ({preview(frame.iloc[:, text[0]].dropna().unique(), 3)}), "
            f"not probabilities. Choose the probability columns with prob_columns=[...] (of {preview([names[j] for j in rest])}); "
            "to keep a text column for subgroups, pass it in groups.", option="prob_columns",
        )
    return rest


def inspect_table(table, *, label_column=None, prob_columns=None, labels_separate=False):
    """What the loader finds in a :class:`~calibdash.io.formats.Table` and would guess, without
    refusing anything.

    Returns a dict: ``columns``, ``numeric`` (columns of numbers), ``label_candidates``,
    ``label_column`` (the guess, or None when none or several fit), ``prob_columns`` (the
    guess), ``notes`` (the guesses made) and ``problem`` (the message a load with these
    choices would refuse with, or None).
    """
    frame, names, name = table.frame, table.names, table.name
    m = frame.shape[1]
    shown = names if names is not None else [str(j) for j in range(m)]
    is_numeric = numeric_columns(frame)
    numeric = [int(j) for j in np.flatnonzero(is_numeric)]  # a numeric column is never text
    if names is not None:
        candidates = [j for j, nm in enumerate(names) if nm.lower() in LABEL_COLUMN_NAMES]
        candidates = candidates or text_columns(frame, range(m), is_numeric)
    else:
        candidates = [m - 1]
    notes, problem = [], None
    try:
        probs = _column_list(prob_columns, "prob_columns", names, m, name)
        li = _label_index(names, m, name, label_column=label_column, labels_separate=labels_separate,
                          taken=set(probs or ()), frame=frame, notes=notes)
        if probs is None:
            probs = _guess_prob_columns(frame, names, name, li, set(), notes)
    except InputError as e:
        problem = e
        li = None if label_column is None or labels_separate else _try(lambda: _column_index(
            label_column, "label_column", names, m, name))
        probs = [j for j in numeric if j != li]
    return {
        "columns": tuple(shown), "numeric": tuple(shown[j] for j in numeric),
        "label_candidates": tuple(shown[j] for j in candidates),
        "label_column": None if li is None else shown[li],
        "prob_columns": tuple(shown[j] for j in probs), "notes": tuple(notes), "problem": problem,
    }


def _try(f):
    try:
        return f()
    except InputError:
        return None


def group_values(col):
    """A grouping column as read-only strings (missing values as '')."""
    values = column_values(col)
    if values.dtype.kind == "f":
        texts = ["" if np.isnan(v) else (str(int(v)) if v.is_integer() else repr(v)) for v in values.tolist()]
    else:
        texts = ["" if v is None else str(v).strip() for v in values.tolist()]
    out = np.array(texts, dtype=str)
    out.flags.writeable = False
    return out


def _col_name(names, j):
    return f"'{names[j]}'" if names is not None else f"{j} (0-based)"


def _label_index(names, m, name, *, label_column, labels_separate, taken=frozenset(), frame=None, notes=None):
    if label_column is not None:
        if labels_separate:
            raise InputError(
                f"labels were given twice: label_column={quoted(label_column)} in {name} and the labels "
                "argument; drop one of them.", option="label_column",
            )
        if isinstance(label_column, (str, int, np.integer)) and not isinstance(label_column, bool):
            return _column_index(label_column, "label_column", names, m, name)
        raise InputError(
            f"label_column must be a column name (str) or a 0-based position (int), got "
            f"{type(label_column).__name__}.", option="label_column",
        )
    if names is not None:
        hits = [j for j, nm in enumerate(names) if nm.lower() in LABEL_COLUMN_NAMES and j not in taken]
        if len(hits) > 1:
            raise InputError(
                f"{name} has several columns that could hold the labels: "
                f"{', '.join(repr(names[j]) for j in hits)}. Which one? Pass label_column=...",
                option="label_column",
            )
        if hits:
            if labels_separate:
                raise InputError(
                    f"labels were given twice: {name} has a label column '{names[hits[0]]}' and "
                    "the labels argument was also passed. Drop the labels argument, or remove "
                    "that column.", option="label_column",
                )
            return hits[0]
        if labels_separate:
            return None
        text = [] if frame is None else text_columns(frame, [j for j in range(m) if j not in taken])
        if len(text) == 1:
            notes.append(LoadNote("label-column",
                                  f"the labels were taken from column '{names[text[0]]}', the only column of text"))
            return text[0]
        if len(text) > 1:
            raise InputError(
                f"{name} has several text columns that could hold the labels: "
                f"{', '.join(repr(names[j]) for j in text)}. Which one? Pass label_column=...",
                option="label_column",
            )
        raise InputError(
            f"{name} has a header but no label column (none of its columns is named "
            f"{', '.join(LABEL_COLUMN_NAMES[:6])}, ...; columns: {preview(names)}). Pass "
            "label_column='...' (or a 0-based position), or give the labels separately.",
            option="label_column",
        )
    if labels_separate:
        return None
    if m < 2:
        raise InputError(
            f"{name} has a single column and no labels: put the labels in the last column, or "
            "pass them separately (labels=...).", option="labels",
        )
    return m - 1


def labels_from_table(table):
    """The labels of a separate labels table: its only column, or its one column named like
    :data:`LABEL_COLUMN_NAMES`; a :class:`~calibdash.io.formats.Parsed` without scores."""
    frame, names, name, where_kwargs = table.frame, table.names, table.name, table.where_kwargs
    m = frame.shape[1]
    if m == 1:
        j = 0
    else:
        hits = [j for j, nm in enumerate(names or []) if nm.lower() in LABEL_COLUMN_NAMES]
        if len(hits) != 1:
            raise InputError(
                f"{name} has {m} columns, but a labels file needs a single column of labels (or "
                "exactly one column named 'label')."
            )
        j = hits[0]
    where = Where(name, columns=[names[j]] if names is not None else None, positions=[j], **where_kwargs)
    return Parsed(scores=np.empty((0, 0)), where=where, labels=column_values(frame.iloc[:, j]),
                  labels_where=where)


def column_values(col):
    """Label column as an int/float/bool ndarray, or an object array of strings/None."""
    import pandas as pd

    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "biuf":
        return col.to_numpy()
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(dtype=np.float64, na_value=np.nan)
    return col.to_numpy(dtype=object, na_value=None)


def _refuse_non_numeric(col, where, k):
    values = col.to_numpy(dtype=object, na_value=None)
    for i, v in enumerate(values):
        if v is None:
            continue
        if isinstance(v, (list, tuple, np.ndarray, dict)):
            raise InputError(
                f"{where.cell(i, k)} holds a list of values, not a number; store one column "
                "per class (e.g. pd.DataFrame(np.stack(df[col]))) before saving."
            )
        if isinstance(v, (bool, int, float, np.number)):
            continue
        try:
            float(str(v))
        except ValueError:
            hint = " (or, if this line is a header, pass header=True)" if i == 0 else ""
            if re.fullmatch(r"[+-]?\d+,\d+", str(v).strip()):
                hint = "; decimal commas are not supported: export with '.' as the decimal point"
            raise InputError(
                f"{where.cell(i, k)} is {user(v)!r}, not a number; class columns must hold "
                f"numbers only. Fix or remove that row{hint}."
            ) from None
    # Numbers stored as strings (e.g. an all-text Parquet column) are a format choice,
    # not damage, but converting silently would hide precision loss; ask for numbers.
    raise InputError(
        f"{where.col(k)} of {where.name} holds numbers stored as text ({col.dtype}); store it as a "
        "numeric column."
    )


def preview(items, k=8):
    """The first ``k`` names or values (a user's), quoted and marked, each cut at
    :data:`calibdash.text.CELL_CHARACTERS`."""
    items = list(items)
    shown = ", ".join(repr(cell(x)) for x in items[:k])
    return f"[{shown}{', ...' if len(items) > k else ''}]"

