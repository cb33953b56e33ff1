"""The data in use: the demo set chosen, the Data page's upload and its column mapping, and the
Compare page's uploads. Uploads are kept in the session (a file uploader forgets its file when
another page runs); messages are markdown in which the user's text is shown literally
(:mod:`calibdash.display.text`)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import streamlit as st

import calibdash as cd
from calibdash.display import text as display
from calibdash.io.loading import LOAD_OPTIONS
from calibdash.lab import demo
from calibdash_app.session import remember_session

# The Data page's demo sets: the classifiers and simulations, and the clinical risk model of the
# Validate page (binary, with a grouping column).
DEMO_CHOICES = (*demo.DEMO_NAMES, demo.VALIDATION_DEMO_NAME)


@st.cache_resource(show_spinner="Preparing the demo data (first use only)...")
def demo_predictions(name):
    """The Predictions of the demo set ``name`` (one of :data:`DEMO_CHOICES`), built once per server."""
    if name == demo.VALIDATION_DEMO_NAME:
        return demo.load_validation_demo()
    return demo.load_demo(name)


def demo_description(name):
    """One paragraph on the demo set ``name`` (one of :data:`DEMO_CHOICES`)."""
    return demo.VALIDATION_DEMO_DESCRIPTION if name == demo.VALIDATION_DEMO_NAME else demo.DESCRIPTIONS[name]


def data_choice_widgets():
    """Before the Data page draws its source and demo widgets: their values from the plain keys."""
    ss = st.session_state
    ss["source"], ss["demo_name"] = ss["data_source"], ss["data_demo"]


def choose_data():
    """on_change of the Data page's source and demo widgets: into the plain keys."""
    ss = st.session_state
    ss["data_source"] = ss.get("source", ss["data_source"])
    ss["data_demo"] = ss.get("demo_name", ss["data_demo"])


def current_dataset():
    """(label, Predictions, origin) of the data in use: the upload if chosen and valid, else the demo."""
    ss = st.session_state
    if ss["data_source"] == "upload" and ss.get("upload") is not None:
        return ss["upload"].source_name, ss["upload"], "upload"
    name = ss["data_demo"]
    return name, demo_predictions(name), "demo"


# -- the Data page's upload and its column mapping ------------------------------------
# The uploads are kept in the session as (name, bytes, id): a file uploader forgets its file
# when another page runs. The mapping widgets' keys start with "src__" (kept by init_state).
MAPPING_KEYS = ("src__label_column", "src__prob_columns", "src__positive", "src__class_names", "src__group_columns")
KIND_LABELS = {"auto": "auto (detect)", "probabilities": "probabilities (0-1)", "percent": "percentages (0-100)",
               "logits": "logits (scores)"}
NO_LABEL_COLUMN = "(none)"
GUESS_POSITIVE = "(from the column name)"

#: What to do in the app about the loader option that a refusal names (InputError.option).
APP_FIX = {
    "label_column": "Choose the label column under **Label column** below, or upload the labels in the **Labels** box.",
    "prob_columns": "Choose the probability columns under **Probability columns** below.",
    "positive": "Choose the positive class under **Positive class** below.",
    "class_names": "Type the class names under **Class names** below, in column order.",
    "groups": "Change the choice under **Grouping columns** below.",
    "kind": "Choose what the numbers are under **The numbers are** below.",
    "labels": "Upload the labels in the **Labels** box, or choose the label column under **Label column** below.",
}


def refusal(error, fixes, *lead):
    """Markdown of the refusal ``error`` after the pieces ``lead``, with what to do in the app when
    ``fixes`` ({option: markdown}) has an entry for the option it names: then without the error's
    own sentence in Python terms (its ``fix``, "Pass positive=..."), which names no widget."""
    fix = fixes.get(getattr(error, "option", None))
    if not fix:
        return display.markdown(*lead, error)
    shown = error.without_fix() if hasattr(error, "without_fix") else error
    return display.markdown(*lead, shown) + f"\n\n**In the app:** {fix}"


def load_error(e):
    """Markdown of a loader refusal, with what to do in the app when it names an option."""
    return refusal(e, APP_FIX)


def keep_upload(role, file):
    """Keep an uploaded file (``role`` "predictions" or "labels") in the session; None keeps the kept one."""
    if file is None:
        return
    files = st.session_state.setdefault("upload_files", {})
    file_id = getattr(file, "file_id", None) or file.name
    if role not in files or files[role][2] != file_id:
        files[role] = (file.name, file.getvalue(), file_id)


def forget_upload(role):
    """on_change of an uploader: when the user removed its file, forget the kept copy too."""
    ss = st.session_state
    if ss.get(f"upload_{role}") is None:
        ss.setdefault("upload_files", {}).pop(role, None)


def kept_uploads():
    """{role: (name, bytes, id)} of the kept uploads."""
    return st.session_state.setdefault("upload_files", {})


def _as_source(kept):
    name, data, _ = kept
    f = io.BytesIO(data)
    f.name = name
    return f


def inspect_upload():
    """(Inspection or None, error markdown or None) of the kept predictions (with the kept labels).

    On a new file, the mapping widgets are prefilled with the loader's guesses.
    """
    ss = st.session_state
    files = kept_uploads()
    if "predictions" not in files:
        return None, None
    pred, labels = files["predictions"], files.get("labels")
    ident = (pred[2], labels[2] if labels else None)
    try:
        if ss.get("src__inspected") != ident:
            fresh = cd.inspect_predictions(_as_source(pred), _as_source(labels) if labels else None, name=pred[0])
            ss["src__inspected"] = ident
            ss["src__label_column"] = fresh.label_column if fresh.table else None
            ss["src__prob_columns"] = list(fresh.prob_columns)
            ss["src__positive"] = None  # the loader guesses it from the column name, and says so
            ss["src__class_names"] = ", ".join(fresh.class_names or ()) if not fresh.table else ""
            ss["src__group_columns"] = []
            ss["src__typed_error"] = None
        # Kept by file and choice: the page reruns on every click, and reading the file again
        # each time would make a large upload slow to map.
        choice = (ident, ss.get("src__label_column"), tuple(ss.get("src__prob_columns") or ()))
        cached = ss.get("src__inspection")
        if cached is not None and cached[0] == choice:
            info = cached[1]
        else:
            info = cd.inspect_predictions(
                _as_source(pred), _as_source(labels) if labels else None, name=pred[0],
                label_column=ss.get("src__label_column"), prob_columns=ss.get("src__prob_columns") or None,
            )
            ss["src__inspection"] = (choice, info)
    except cd.InputError as e:
        return None, load_error(e)
    except Exception as e:  # noqa: BLE001 - any failure becomes a message, never a traceback
        return None, display.markdown("Could not read ", display.user(pred[0]), ": ", e)
    # widget values that the current columns no longer offer are dropped, not an exception (sets: a
    # table may have 100,000 columns)
    if info.table:
        columns, groupable = set(info.columns), set(group_choices(info))
        if ss.get("src__label_column") not in columns:
            ss["src__label_column"] = None
        ss["src__prob_columns"] = [c for c in ss.get("src__prob_columns", []) if c in columns]
        ss["src__group_columns"] = [c for c in ss.get("src__group_columns", []) if c in groupable]
    if ss.get("src__positive") not in positive_choices(info):
        ss["src__positive"] = None
    return info, None


# -- a table too wide to list its columns in widgets ------------------------------------
# Above this many columns the mapping is typed (names and first:last ranges) instead of chosen
# from lists: a multiselect of 99,999 chosen columns took the browser over a minute to draw,
# and a bar per class as long again (bench/bench_wide_app.py).
MAX_LISTED_COLUMNS = 300
# The typed mapping's widgets, each written into the plain key of the listed one on change.
TYPED_KEYS = {"src__label_column": "src__label_text", "src__prob_columns": "src__prob_text",
              "src__group_columns": "src__group_text"}


def is_wide(info):
    """Whether the Data page types the mapping of ``info``'s table instead of listing its columns."""
    return info.table and len(info.columns) > MAX_LISTED_COLUMNS


def columns_text(columns, chosen):
    """``chosen`` (names of ``columns``) as the typed mapping writes them: runs of neighbouring
    columns as ``first:last``, separated by commas."""
    position = {c: i for i, c in enumerate(columns)}
    runs = []
    for i in sorted(position[c] for c in chosen):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    # str() and +, not an f-string: a column name is a UserText, which f-strings write between marks
    return ", ".join(str(columns[a]) if a == b else str(columns[a]) + ":" + str(columns[b]) for a, b in runs)


def parse_columns_text(text, columns):
    """The columns that ``text`` names, in its order: names and ``first:last`` ranges of the file's
    columns, separated by commas. Raises ValueError with a message (markdown) for a name the table
    does not have."""
    position = {c: i for i, c in enumerate(columns)}
    chosen = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        if item in position:
            chosen.append(item)
            continue
        first, sep, last = (t.strip() for t in item.partition(":"))
        missing = [n for n in ((first, last) if sep else (item,)) if n not in position]
        if missing:
            raise ValueError(display.markdown("The table has no column ", display.user(missing[0]),
                                              ". Type column names, or ranges first:last, separated by commas."))
        a, b = position[first], position[last]
        chosen.extend(columns[min(a, b):max(a, b) + 1])
    return list(dict.fromkeys(chosen))


def type_columns(info, key):
    """on_change of a typed mapping widget: its text into the plain key ``key`` (one of
    :data:`TYPED_KEYS`), or a message in ``src__typed_error`` (the key keeps its value)."""
    ss = st.session_state
    text = ss.get(TYPED_KEYS[key]) or ""
    try:
        chosen = parse_columns_text(text, list(info.columns))
    except ValueError as e:
        ss["src__typed_error"] = str(e)
        return
    if key == "src__label_column" and len(chosen) > 1:
        ss["src__typed_error"] = "Type one label column."
        return
    ss["src__typed_error"] = None
    ss[key] = (chosen[0] if chosen else None) if key == "src__label_column" else chosen
    if key == "src__label_column" and chosen:  # the label column is no longer a probability column
        ss["src__prob_columns"] = [c for c in ss.get("src__prob_columns") or () if c != chosen[0]]


def typed_texts(info):
    """Before the typed mapping's widgets: their texts from the plain keys (a guess, a restore)."""
    ss = st.session_state
    columns = list(info.columns)
    label = ss.get("src__label_column")
    ss["src__label_text"] = str(label or "")
    ss["src__prob_text"] = columns_text(columns, ss.get("src__prob_columns") or ())
    ss["src__group_text"] = columns_text(columns, ss.get("src__group_columns") or ())


def columns_summary(info):
    """The **Columns:** line of the Data page, as markdown: every name of a narrow table, the first and last
    few of a wide one."""
    names = list(info.columns)
    if not is_wide(info):
        return "**Columns:** " + ", ".join(display.code(c) for c in names)
    return (f"**Columns:** {len(names):,}: " + ", ".join(display.code(c) for c in names[:5]) + ", ..., "
            + ", ".join(display.code(c) for c in names[-3:]))


def group_choices(info):
    """Columns that can be kept as grouping columns: neither the label nor a probability column."""
    ss = st.session_state
    used = {ss.get("src__label_column"), *(ss.get("src__prob_columns") or ())}
    return [c for c in info.columns if c not in used]


def positive_choices(info):
    """Options of the Positive class box (None: as guessed from the column name)."""
    return [None, *info.label_values]


def wants_positive(info):
    """Whether to offer Positive class: one probability column, labels given as names."""
    return info.n_scores == 1 and len(info.label_values) >= 1 and not all(v.lstrip("+-").isdigit() for v in info.label_values)


def wants_class_names(info):
    """Whether to offer Class names: several columns whose file does not name them."""
    return info.n_scores is not None and info.n_scores > 1 and not info.table and info.class_names is None


def upload_options(info):
    """The load_predictions options of the Data page's widgets."""
    ss = st.session_state
    options = {"kind": ss.get("src__kind", "auto")}
    if info.table:
        options["label_column"] = ss.get("src__label_column")
        options["prob_columns"] = list(ss.get("src__prob_columns") or ()) or None
        options["groups"] = list(ss.get("src__group_columns") or ()) or None
    if wants_positive(info):
        options["positive"] = ss.get("src__positive")
    if wants_class_names(info) and (ss.get("src__class_names") or "").strip():
        options["class_names"] = [t.strip() for t in ss["src__class_names"].split(",")]
    return options


def positive_class(pred):
    """The positive class of a two-class problem whose classes are named (None otherwise)."""
    return pred.class_names[1] if pred.d == 2 and pred.class_names != ("0", "1") else None


def risk_summary(pred):
    """(mean predicted risk, observed event rate) of a two-class problem: the mean probability of
    the second class (the event, the positive class) and the share of rows that are that class;
    None for more classes."""
    if pred.d != 2:
        return None
    return float(np.mean(pred.probs[:, 1])), float(np.mean(pred.labels == 1))


def load_upload(info):
    """Load the kept upload with the Data page's mapping into the session; returns an error
    message (markdown) or None (never raises). Reloads only when a file or a choice changed."""
    ss = st.session_state
    files = kept_uploads()
    pred, labels = files["predictions"], files.get("labels")
    options = upload_options(info)
    sig = (pred[2], labels[2] if labels else None, repr(sorted(options.items())))
    if ss.get("upload_sig") == sig:
        return ss.get("upload_error")
    ss["upload_sig"] = sig
    try:
        loaded = cd.load_predictions(_as_source(pred), _as_source(labels) if labels else None, name=pred[0],
                                     **{k: v for k, v in options.items() if v is not None})
    except cd.InputError as e:
        ss["upload_error"] = load_error(e)
    except Exception as e:  # noqa: BLE001 - any failure becomes a message, never a traceback
        ss["upload_error"] = display.markdown("Could not read ", display.user(pred[0]), ": ", e)
    else:
        ss["upload"], ss["upload_error"] = loaded, None
        # What a result of these data records of its input (as the command line's do), so
        # that `calibdash rerun RESULT --predictions FILE` reads the file with the same mapping.
        ss["upload_input"] = {"predictions": pred[0], "labels": labels[0] if labels else None,
                              **{k: options.get(k) for k in LOAD_OPTIONS}}
        remember_session()
    return ss["upload_error"]


def class_balance_summary(pred):
    """One sentence on the class balance when there are too many classes for a bar each (else None)."""
    if pred.d <= MAX_LISTED_COLUMNS:
        return None
    shares = np.bincount(pred.labels, minlength=pred.d) / max(pred.n, 1)
    return (f"{pred.d:,} classes, too many for a bar each: {np.count_nonzero(shares):,} of them have labels; the "
            f"largest holds {shares.max():.2%} of the labels.")


def class_balance(pred):
    """DataFrame of class name and share of labels (for the Data page), the classes as an
    ordered categorical in class order (so a chart does not sort "10" before "2")."""
    counts = np.bincount(pred.labels, minlength=pred.d)
    names = [str(c) for c in pred.class_names]
    return pd.DataFrame({"class": pd.Categorical(names, categories=names, ordered=True), "share": counts / max(pred.n, 1)})


# -- the Compare page's uploads ------------------------------------------------------
def forget_compare_uploads():
    """on_change of the Compare page's uploaders: the user changed the files, so the models loaded
    from the earlier ones go (the new ones are loaded by :func:`load_compare_uploads`). A page change
    or a reload empties the uploaders without this call, and the loaded models stay in use."""
    for key in ("cmp_uploads", "cmp_upload_sig", "cmp_upload_errors"):
        st.session_state.pop(key, None)


def load_compare_uploads(pred_files, labels_file):
    """Load several prediction files (and an optional shared labels file) into the session.

    Returns a list of error messages (markdown; empty when all loaded); never raises. The loaded
    sets are in ``st.session_state["cmp_uploads"]`` as {file name: Predictions}.
    """
    ss = st.session_state
    sig = (tuple(getattr(f, "file_id", f.name) for f in pred_files), getattr(labels_file, "file_id", None) if labels_file else None)
    if ss.get("cmp_upload_sig") == sig:
        return ss.get("cmp_upload_errors", [])
    loaded, errors = {}, []
    for f in pred_files:
        try:
            for g in (f, labels_file):
                if g is not None:
                    g.seek(0)
            loaded[f.name] = cd.load_predictions(f, labels_file, name=f.name)
        except cd.InputError as e:
            errors.append(display.markdown(e))
        except Exception as e:  # noqa: BLE001 - any failure becomes a message, never a traceback
            errors.append(display.markdown("Could not read ", display.user(f.name), ": ", e))
    ss["cmp_upload_sig"], ss["cmp_uploads"], ss["cmp_upload_errors"] = sig, loaded, errors
    return errors
