"""Streamlit glue shared by the pages: session state, the result cache, runs, help texts.

All computation lives in ``calibdash``; this module only keeps state between reruns and
pages and turns exceptions into messages. Messages are markdown built with
:mod:`calibdash.display.text`: text from the user's files (file, class and model names, cell
values) is shown literally, never as markdown, LaTeX, a link or an image.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pandas as pd
import streamlit as st

import calibdash as cd
from calibdash import jobs
from calibdash.display import tables
from calibdash.display import text as display
from calibdash.display.reliability import FIFTEEN_BIN_HELP
from calibdash.estimators.registry import DEFAULT_ESTIMATORS, REGISTRY, parameter, tuned_param
from calibdash.evaluation.config import check_rows, config_fingerprint, resolve
from calibdash.evaluation.evaluations import Evaluations
from calibdash.evaluation.gridtext import format_grid, parse_grid_text
from calibdash.io.loading import LOAD_OPTIONS
from calibdash.lab import demo
from calibdash.metrics.literature import DEFAULT_OTHERS

NOTIONS = ("top-label", "canonical", "classwise")
DEFAULT_NOTIONS = ["top-label", "canonical"]
MAX_CACHED_RESULTS = 24
# Widgets whose values init_state keeps across page changes (and a reload restores).
KEPT_WIDGETS = ("cfg__", "rel__", "view__", "src__")

HELP = {
    "notion": "What 'calibrated' means. Top-label: when the model says 80% for its predicted class, "
    "is it right 80% of the time? Canonical: is the whole probability vector right (every class at once)? "
    "Classwise: is each class's probability right, class by class?",
    "estimators": "Ways of estimating the calibration error; the risk decides which one to trust.\n\n"
    + "\n".join(f"- **{name}**: {entry.summary}" for name, entry in REGISTRY.items()),
    "risk": "The risk (Gruber & Bach, Eq. 20) scores an estimator by how well it predicts calibration "
    "gaps on data it did not see. Lower is better; it is how the app chooses between estimators and settings.",
    "paired": "The folds are shared by every estimator, so two estimators' risks are compared fold by fold: 'risk above "
    "best' is the mean over folds of the difference to the best estimator's risk, with its standard error. An "
    "estimator that is not measurably worse (one-sided paired t test at 5%) is 'tied' with the best: the data cannot "
    "tell them apart. The row 'h = 0' is the estimate 'perfectly calibrated': if it is tied, the data do not show "
    "any miscalibration.",
    "interval": "The 95% interval of each estimate covers both sources of chance: which rows were held out, and "
    "which rows fitted the fold models. It cannot cover an estimator's bias (smoothing estimators shrink small "
    "errors towards 0). The verdict's interval joins the intervals of all estimators tied with the best.",
    "others": "Estimators from the literature, computed on the same holdout rows and shown beside the ranked ones, "
    "grouped by what they estimate: the L1 ECE estimators of Posocco & Bonnefoy (the familiar 15-bin ECE among "
    "them), the squared kernel calibration error (SKCE) with its test of 'the model is calibrated', and the "
    "variational estimators of Berta et al. (a lower bound). The risk cannot rank them: they are not of its form.",
    "fifteen": FIFTEEN_BIN_HELP,
    "test_size": "Fraction of rows held out and used only for the final estimate, never for choosing.",
    "n_folds": "Cross-validation folds on the remaining rows, used to compute the risk of every setting.",
    "seed": "Random seed of the split, so a run can be repeated exactly.",
    "bins": "Number of bins of the reliability diagram (display only; it does not change the estimates).",
    "strategy": "Equal width: bins of the same width in confidence. Equal mass: bins holding the same "
    "number of predictions (better where predictions are crowded, e.g. near 100%).",
    "bootstrap": "Resamples used for the shaded band: the range where the observed frequency of a bin "
    "would fall 90% of the time if the data were drawn again. 0 turns the band off.",
}


# -- state ----------------------------------------------------------------------------
def init_state():
    """Defaults for the shared keys, and keep widget values alive when their page is not shown."""
    ss = st.session_state
    start_jobs_state()
    # The data in use, in plain keys that the Data page's widgets write through their
    # callbacks: Streamlit may drop a widget's value when a polling fragment reruns just after
    # a page change (seen in chromium: the upload fell back to the demo), never a plain key.
    ss.setdefault("data_source", "demo")
    ss.setdefault("data_demo", demo.DEFAULT_DEMO)
    # The grouping column of the subgroups (Data and Validate pages, ui_clinical): a column name,
    # False for no subgroups, None for the first grouping column the data keep.
    ss.setdefault("data_group", None)
    ss.setdefault("results", {})  # cache key -> EvaluationResult
    ss.setdefault("active", {})  # data sha256 -> {notion: cache key} of the last good run
    ss.setdefault("run_message", None)
    # Streamlit forgets a widget's value when a page without it runs; reassigning the
    # value every run keeps the Evaluate and Reliability settings across page changes.
    for key in list(ss.keys()):
        if isinstance(key, str) and key.startswith(KEPT_WIDGETS):
            ss[key] = ss[key]
    remember_session()


# The Data page's demo sets: the classifiers and simulations, and the clinical risk model of the
# Validate page (binary, with a grouping column).
DEMO_CHOICES = (*demo.DEMO_NAMES, demo.VALIDATION_DEMO_NAME)


@st.cache_resource(show_spinner="Preparing the demo data (first use only)...")
def _demo(name):
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
    return name, _demo(name), "demo"


# -- the Data page's upload and its column mapping ------------------------------------
# The uploads are kept in the session as (name, bytes, id): a file uploader forgets its file
# when another page runs. The mapping widgets' keys start with "src__" (kept by init_state).
MAPPING_KEYS = ("src__label_column", "src__prob_columns", "src__positive", "src__class_names", "src__group_columns")
KIND_LABELS = {"auto": "auto (detect)", "probabilities": "probabilities (0-1)", "percent": "percentages (0-100)",
               "logits": "logits (scores)"}
NO_LABEL_COLUMN = "(none)"
GUESS_POSITIVE = "(from the column name)"

HELP_SOURCE = {
    "kind": "'auto' reads non-negative rows summing to 1 as probabilities, rows summing to 100 (or one column in "
    "0-100 with values above 1) as percentages, and numbers with negative values as logits (turned into "
    "probabilities by the softmax). When the numbers fit none of these with confidence, the app asks you to "
    "choose here instead of guessing.",
    "label_column": "The column holding the true class of each row. Guessed from its name (label, y, target, "
    "class, outcome, diagnosis, truth, ...) or as the only column of text.",
    "prob_columns": "The columns of predicted probabilities (or percentages, logits), one per class in class order. "
    "A single column is the probability of the positive class of a two-class problem. Guessed from names such as "
    "p_malignant, prob_malignant, malignant_prob or P(malignant).",
    "positive": "For a single probability column: the label it is the probability of (the positive class); the "
    "other label is the negative class. Guessed from the column's name (p_malignant: malignant).",
    "class_names": "One name per class, in column order, separated by commas; labels given as names are matched "
    "to them. A table's header names its classes.",
    "group_columns": "Columns kept beside the predictions as grouping variables (e.g. the hospital site), for "
    "analyses by subgroup. They do not change any number.",
}

#: What to do in the app about the loader option that a refusal names (InputError.option).
APP_FIX = {
    "label_column": "Choose the label column under **Label column** below, or upload the labels in the **Labels** box.",
    "prob_columns": "Choose the probability columns under **Probability columns** below.",
    "positive": "Choose the positive class under **Positive class** below.",
    "class_names": "Type the class names under **Class names** below, in column order.",
    "group_columns": "Change the choice under **Grouping columns** below.",
    "kind": "Choose what the numbers are under **The numbers are** below.",
    "labels": "Upload the labels in the **Labels** box, or choose the label column under **Label column** below.",
}


def load_error(e):
    """Markdown of a loader refusal, with what to do in the app when it names an option."""
    fix = APP_FIX.get(getattr(e, "option", None))
    return display.markdown(e) + (f"\n\n**In the app:** {fix}" if fix else "")


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
    import io

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
    # widget values that the current columns no longer offer are dropped, not an exception
    if info.table:
        if ss.get("src__label_column") not in info.columns:
            ss["src__label_column"] = None
        ss["src__prob_columns"] = [c for c in ss.get("src__prob_columns", []) if c in info.columns]
        ss["src__group_columns"] = [c for c in ss.get("src__group_columns", []) if c in group_choices(info)]
    if ss.get("src__positive") not in positive_choices(info):
        ss["src__positive"] = None
    return info, None


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
        options["group_columns"] = list(ss.get("src__group_columns") or ()) or None
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


# -- configuration and cache ----------------------------------------------------------
def editable(name):
    """Whether the grid of ``name`` is offered for editing (not for the fixed 15-bin baseline)."""
    return REGISTRY[name].tunable


def estimator_summary(name):
    """One line saying what estimator ``name`` is (from the registry)."""
    return f"{name}: {REGISTRY[name].summary}"


def parameter_help(param):
    """Help for a grid's text box: what the parameter does, from the registry."""
    described = parameter(param)
    return (described.help + " " if described else "") + "The risk is computed for every value; the lowest wins."


def default_grid_text(notion, name):
    """The paper's grid of ``name`` for ``notion`` as editable text."""
    _, grids = resolve(notion, [name])
    return format_grid(grids[name][tuned_param(name)])


def _same_text(a, b):
    return [t.strip() for t in a.split(",")] == [t.strip() for t in b.split(",")]


def default_config(notion):
    """The paper's settings for one notion (what the first visit runs on the demo)."""
    return {"notion": notion, "estimators": list(DEFAULT_ESTIMATORS[notion]), "grids": {}, "others": list(DEFAULT_OTHERS[notion]),
            "test_size": 0.2, "n_folds": 5, "random_state": 0}


def config_key(data_sha, config):
    """Cache key of a run: :func:`calibdash.evaluation.config.config_fingerprint` of its settings."""
    return config_fingerprint(data_sha, **config)


def read_settings(*, n_rows=None):
    """The Evaluate page's widgets as one config per notion; raises ValueError with a message.

    Every value and limit is checked here, before a job is submitted; with ``n_rows``, the
    data's rows, the bin counts too (at most one bin per row)."""
    ss = st.session_state
    notions = ss.get("cfg__notions", DEFAULT_NOTIONS)
    if not notions:
        raise ValueError("Choose at least one notion of calibration.")
    configs = []
    for notion in notions:
        names = ss.get(f"cfg__est__{notion}", list(DEFAULT_ESTIMATORS[notion]))
        if not names:
            raise ValueError(f"Choose at least one estimator for the {notion} notion.")
        grids = {}
        for name in names:
            if not editable(name):
                continue
            text = ss.get(f"cfg__grid__{notion}__{name}")
            # The default text shows rounded values; unchanged text means the exact defaults
            # (and the same cache key as the automatic first run).
            if text is None or _same_text(text, default_grid_text(notion, name)):
                continue
            param = tuned_param(name)
            try:
                grids[name] = {param: parse_grid_text(text, param)}
            except ValueError as e:
                raise ValueError(f"{notion}, {name}: {e}") from None
        config = {
            "notion": notion,
            "estimators": list(names),
            "grids": grids,
            "others": list(ss.get(f"cfg__others__{notion}", DEFAULT_OTHERS[notion])),
            "test_size": float(ss.get("cfg__test_size", 0.2)),
            "n_folds": int(ss.get("cfg__n_folds", 5)),
            "random_state": int(ss.get("cfg__seed", 0)),
        }
        _, full = resolve(notion, config["estimators"], grids or None)  # checks every value, with clear messages
        if n_rows is not None:
            check_rows(notion, full, n_rows)
        configs.append(config)
    return configs


def _store(key, result):
    results = st.session_state["results"]
    results[key] = result
    while len(results) > MAX_CACHED_RESULTS:
        results.pop(next(iter(results)))


def run_configs(pred, configs, *, label=None, auto=False):
    """Evaluate every config (one per notion): from the session's results, else as one job of the server's pool.

    Returns (ok, message), the message as markdown: (True, message) when every result was
    there already, (None, None) once the job is submitted (:func:`job_panel` shows it; its
    outcome becomes ``run_message``), (False, message) when it cannot start. On failure the
    previous result stays active. ``auto``: the first visit's demo analysis.
    """
    ss = st.session_state
    try:
        keys = {c["notion"]: config_key(pred.sha256, c) for c in configs}
    except ValueError as e:
        return False, display.markdown(e)
    todo = [c for c in configs if keys[c["notion"]] not in ss["results"]]
    if not todo:
        ss["active"][pred.sha256] = keys
        return True, f"Loaded from cache: these data and settings were already evaluated ({', '.join(keys)})."
    # One joint run: the notions share the split and the pool of workers.
    split = {k: todo[0][k] for k in ("test_size", "n_folds", "random_state")}
    assert all(all(c[k] == v for k, v in split.items()) for c in todo), "notions must share the split"
    kwargs = dict(P=pred, notions=[c["notion"] for c in todo], estimators={c["notion"]: c["estimators"] for c in todo},
                  grids={c["notion"]: c["grids"] or None for c in todo}, others={c["notion"]: c["others"] for c in todo},
                  **split)
    label = pred.source_name if label is None else label
    title = (display.markdown("Analysing the demo set ", display.user(label), " with the default settings (first visit only)")
             if auto else display.markdown("Evaluating ", display.user(label), f" ({', '.join(keys)})"))
    record = {"kind": "evaluate", "slot": ("evaluate", pred.sha256), "title": title, "sha": pred.sha256, "keys": keys,
              "auto": auto, "input": ss.get("upload_input") if ss.get("upload") is pred else None}
    error = submit_job(("evaluate", *(keys[c["notion"]] for c in todo)), cd.evaluate_notions, kwargs, record)
    return (False, error) if error else (None, None)


def active_results():
    """{notion: EvaluationResult} of the last good run on the current data ({} when none)."""
    _, pred, _ = current_dataset()
    keys = st.session_state["active"].get(pred.sha256, {})
    return {n: st.session_state["results"][k] for n, k in keys.items() if k in st.session_state["results"]}


def ensure_demo_result():
    """Start the default evaluation of a demo set once, so that a first visitor sees results."""
    label, pred, origin = current_dataset()
    ss = st.session_state
    if origin != "demo" or active_results() or pending_evaluation(pred.sha256) or pred.sha256 in ss["declined"]:
        return
    ok, message = run_configs(pred, [default_config(n) for n in DEFAULT_NOTIONS], label=label, auto=True)
    if ok is False:
        ss["notices"].append(("error", message))


def notion_picker(results, key="view__notion"):
    """Radio to choose which notion's result to show; returns the chosen notion."""
    options = [n for n in NOTIONS if n in results]
    ss = st.session_state
    if ss.get(key) not in options:
        ss[key] = options[0]
    return st.radio("Notion shown", options, key=key, horizontal=True, help=HELP["notion"])


def sidebar():
    """The data in use and what has been evaluated, on every page."""
    label, pred, origin = current_dataset()
    with st.sidebar:
        st.markdown(f"**Data:** {display.code(label)}  \n{pred.n:,} rows, {pred.d} classes ({origin})")
        res = active_results()
        if res:
            st.markdown("**Evaluated:** " + ", ".join(res))
        elif pending_evaluation(pred.sha256):
            st.markdown("**Evaluated:** running (progress at the top of the page)")
        else:
            st.markdown("**Evaluated:** not yet (see Evaluate)")
        st.caption("Gruber & Bach, TMLR 2025: estimators of squared calibration errors, chosen by a risk.")


def grid_extension_buttons(notion, res):
    """One button per estimator whose tuned value lies at the edge of its grid with the risk still
    falling: it puts :meth:`GridEdge.extended_grid` in the Evaluate page's grid box (with the notion
    and the estimator chosen there) and opens that page, ready to run."""
    ss = st.session_state
    for edge in res.grid_edges:
        name = edge.estimator
        if edge.flat or name not in REGISTRY or not editable(name) or edge.param != tuned_param(name):
            continue
        text = format_grid(edge.extended_grid())
        if st.button(f"Extend the grid of {name} to {text} and run again", key=f"extend__{notion}__{name}",
                     help="Opens the Evaluate page with this grid filled in and every other setting as it is; "
                          "press Run there."):
            notions = list(ss.get("cfg__notions", DEFAULT_NOTIONS))
            ss["cfg__notions"] = notions + ([notion] if notion not in notions else [])
            names = list(ss.get(f"cfg__est__{notion}", DEFAULT_ESTIMATORS[notion]))
            ss[f"cfg__est__{notion}"] = names + ([name] if name not in names else [])
            ss[f"cfg__grid__{notion}__{name}"] = text
            st.switch_page("app_pages/evaluate.py")


def show_no_result():
    """What the Results page says before any evaluation of the current data."""
    _, pred, _ = current_dataset()
    if pending_evaluation(pred.sha256):
        st.info("The evaluation of these data is running (progress at the top of the page). Its results appear "
                "here when it is done; you may change pages or reload meanwhile.")
        return
    st.info("No evaluation of these data yet. Open **Evaluate** and press **Run**.")
    st.page_link("app_pages/evaluate.py", label="Go to Evaluate", icon=":material/play_arrow:")



def number_table(df, *, key, numbers, column_config=None):
    """``st.dataframe`` of ``df`` with the columns of ``numbers`` ({column: (label, format spec, help)})
    shown as right-aligned text wide enough for every value (a minus sign is never clipped) and
    missing values blank (not a grey "None"): :func:`calibdash.display.tables.formatted`."""
    table = tables.formatted(df, {c: spec for c, (_, spec, _) in numbers.items()})
    config = dict(column_config or {})
    for col, (label, _, help_) in numbers.items():
        if col in table:
            config[col] = st.column_config.TextColumn(label, help=help_, alignment="right",
                                                      width=tables.text_width(table[col], label))
    st.dataframe(table, key=key, hide_index=True, width="stretch", column_config=config)


def class_balance(pred):
    """DataFrame of class name and share of labels (for the Data page), the classes as an
    ordered categorical in class order (so a chart does not sort "10" before "2")."""
    counts = np.bincount(pred.labels, minlength=pred.d)
    names = [str(c) for c in pred.class_names]
    return pd.DataFrame({"class": pd.Categorical(names, categories=names, ordered=True), "share": counts / max(pred.n, 1)})


# -- HTML report (for the report download; calibdash.reporting.html builds it) -------------
_REPORTS = {}  # the latest few reports, shared by sessions: one is several megabytes
_REPORTS_LOCK = __import__("threading").Lock()


def report_bytes(results, pred, title=None, *, results_file=None):
    """The self-contained HTML report of ``results`` ({notion: EvaluationResult}) on ``pred``, as UTF-8.

    Runs outside the script thread (a deferred download), so it keeps its cache in this
    module, keyed by the data's sha256 and every notion's full call, not in the session.
    """
    import json

    key = (pred.sha256, title, results_file,
           tuple((n, json.dumps(r.config.get("call"), sort_keys=True, default=str)) for n, r in results.items()))
    with _REPORTS_LOCK:
        if key in _REPORTS:
            return _REPORTS[key]
    # The provenance names the Results page's JSON download, the file the app offers beside the report.
    data = cd.report(results, pred, title=title, results_file=results_file, made_by="app").encode("utf-8")
    with _REPORTS_LOCK:
        _REPORTS[key] = data
        while len(_REPORTS) > 4:
            _REPORTS.pop(next(iter(_REPORTS)))
    return data


def file_slug(label):
    """A file-name-safe form of a data set's label."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(label))[:60] or "data"


def download_name(what, ext, label, *, notion=None, seed=None):
    """The file name of every download: what it holds, then the data, the notion and the seed it
    was computed with, e.g. ``summary_digits__random_forest_top-label_seed0.csv``."""
    parts = [what, file_slug(label)] + ([notion] if notion else []) + ([f"seed{seed}"] if seed is not None else [])
    return "_".join(parts) + "." + ext


def result_seed(results):
    """The seed of the split of ``results`` ({notion: EvaluationResult}; the notions share it)."""
    return next(iter(results.values())).config.get("call", {}).get("random_state")


def results_file_name(results, label):
    """The name of the "Full results (JSON)" download (the report's provenance names it too)."""
    return download_name("results", "json", label, seed=result_seed(results))


def results_download(container, results, label):
    """The "Full results (JSON)" download: every notion evaluated, in calibdash's one result
    format, named after the data and the seed; built when it is clicked."""
    results = dict(results)
    container.download_button(
        "Full results (JSON)", lambda: Evaluations.of(results, name=str(label)).to_json(indent=1),
        results_file_name(results, label), "application/json", key="dl_json", on_click="ignore",
        help="Every notion's results, reloadable with calibdash.evaluation.evaluations.Evaluations.from_json "
             "(or `calibdash rerun FILE` to recompute and compare every number).",
    )


def report_download(container, results, pred, label):
    """The "Report (HTML)" download button; the report is built when it is clicked."""
    results = dict(results)
    container.download_button(
        "Report (HTML)",
        lambda: report_bytes(results, pred, title=f"Calibration report: {label}", results_file=results_file_name(results, label)),
        download_name("calibdash_report", "html", label, seed=result_seed(results)), "text/html", key="dl_report",
        on_click="ignore",
        help="A self-contained HTML document: data fingerprint, configuration and seed, library versions, verdict, "
             "tables, figures and references with BibTeX. Opens offline in any browser.",
    )


# -- Compare and Learn pages (calibdash.evaluation.compare and calibdash.lab.studies compute) ---------
# Widget keys start with "view__" so that init_state keeps them across page changes.
HELP_COMPARE = {
    "models": "The prediction sets to compare. They must be predictions for the same rows (the same patients, "
    "images...) in the same order, with the same labels.",
    "estimator": "One estimator measures every model, because estimators differ in their bias. 'auto' takes the one "
    "with the lowest validation risk summed over the models.",
    "difference": "Difference of the squared calibration errors (model a minus model b), estimated on the same held-out "
    "rows. Below 0: model a is better calibrated. The interval and p-value cover both which rows were held out (the "
    "variance of the paired row differences) and which rows fitted the fold models (a jackknife over them).",
    "p_value": "Probability of a difference at least this large if both models were equally well calibrated. "
    "Below 0.05 is the usual threshold for 'the difference is real'.",
    "brier": "Brier score: mean squared distance between the probability vector and the true class (0 is perfect). "
    "It mixes accuracy and calibration; the calibration error isolates calibration.",
    "accuracy": "How often the most probable class is the true one. A model can be accurate and badly calibrated.",
    "scenario": "A simulated classifier whose true calibration error is known exactly, so every estimator can be "
    "checked against the truth.",
    "distortion": "The model is softmax(distortion x log P) of the true probabilities P: 1 is calibrated, below 1 "
    "under-confident, above 1 over-confident.",
    "slope": "The model is sigmoid(slope x x) while the truth is sigmoid(x): 1 is calibrated, above 1 over-confident, "
    "below 1 under-confident.",
    "strength": "The model adds a fixed bias to the logits, strength x (-1 ... 1) from the first class to the last: "
    "0 is calibrated; the model then favours the later classes, over-confident for them and under-confident for the "
    "others. Not a temperature scaling, so no estimator is built for it.",
    "pw_slope": "Below probability 0.2 the model's log-probabilities are those of the truth times this slope "
    "(lifted when below 1): 1 is calibrated; 0.7 leaves a small error of about 2 points.",
    "ns": "Sample sizes to simulate. Each size is drawn several times to show the spread of the estimates.",
    "repeats": "Independent draws per sample size: more draws show the bias and spread more precisely (and take longer).",
    "f1_n": "Rows per simulated data set in the Figure 1 experiment (the paper uses 500).",
    "f1_seeds": "Independent data sets (seeds) whose risks are averaged (the paper uses 100).",
}

LAB_SCENARIOS = {
    "Dirichlet simulation (paper, Sec. 5.1)": ("dirichlet", {}),
    "Widmann et al.: calibrated (M1)": ("widmann", {"model": "calibrated"}),
    "Widmann et al.: mixed (M2)": ("widmann", {"model": "mixed"}),
    "Widmann et al.: uniform (M3)": ("widmann", {"model": "uniform"}),
    "Binary logistic": ("logistic", {}),
    "Class-dependent logit bias": ("logit-bias", {}),
    "Nearly calibrated (piecewise-linear log-probabilities)": ("piecewise", {}),
}
COMPARE_DEFAULT_MODELS = ["digits: random forest", "digits: logistic regression"]


def comparison_key(models, settings):
    """Cache key of a comparison: the data fingerprints and the settings."""
    return (tuple((name, pred.sha256) for name, pred in models.items()), tuple(sorted(settings.items())))


def run_comparison(models, settings):
    """Compare ``models`` ({name: Predictions}) with ``settings``, as a job of the server's pool.

    Returns (ComparisonResult or None, message (markdown) or None); never raises. While the
    job runs both are None and its progress is shown where this is called.
    """
    key = comparison_key(models, settings)
    kwargs = dict(models=dict(models), notion=settings["notion"], estimator=settings["estimator"],
                  random_state=settings["seed"])
    return job_result(("compare", key), cd.compare, kwargs, title="Comparing the models", store="cmp_results",
                      result_key=key)


def comparison_file_name(what, ext, res):
    """The name of a Compare page download: named after the models compared, the notion and the seed."""
    return download_name(what, ext, " vs ".join(map(str, res.models["model"])), notion=res.config["notion"],
                         seed=res.config["random_state"])


def comparison_report_download(container, res, models):
    """The Compare page's "Report (HTML)" download (:func:`calibdash.reporting.html.comparison_report`),
    built when it is clicked."""
    models = dict(models)
    container.download_button(
        "Report (HTML)", lambda: cd.comparison_report(res, models).encode("utf-8"),
        comparison_file_name("calibdash_comparison", "html", res), "text/html", key="dl_cmp_report", on_click="ignore",
        help="A self-contained HTML document: the comparison's tables and figures, settings and seed, every model's data "
             "fingerprint, library versions and references with BibTeX. Opens offline in any browser.",
    )


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


def lab_estimates(kind, params, ns, n_repeats, estimators, notion, seed):
    """calibdash.lab.studies.estimates_study for these settings, as a job: (result, error) as
    :func:`job_result` returns them."""
    from calibdash.lab import studies

    kwargs = dict(kind=kind, params=params, ns=ns, n_repeats=n_repeats, estimators=list(estimators), notion=notion,
                  random_state=seed)
    key = ("lab_estimates", kind, params, ns, n_repeats, estimators, notion, seed)
    return job_result(key, studies.estimates_study, kwargs, title="Simulating and estimating", store="lab_results")


def lab_figure1(n, n_seeds, seed):
    """calibdash.lab.studies.figure1 for these settings, as a job: (result, error) as :func:`job_result` returns them."""
    from calibdash.lab import studies

    return job_result(("lab_figure1", n, n_seeds, seed), studies.figure1, dict(n=n, n_seeds=n_seeds, random_state=seed),
                      title="Computing the risk curves", store="lab_results")


# -- jobs: runs in the server's shared pool, and a session kept across a reload ------------------
# Every evaluation, comparison and lab run is a job of one pool per server process
# (calibdash.jobs: child processes, a shared queue, deduplicated by key). A session keeps
# only the keys of the jobs it submitted and asks the pool for them as their owner.
POLL_SECONDS = 1.0
TOKEN_PARAM = "session"
# Dicts the session shares by reference with its entry in the session store, so that the
# entry is always up to date; and the values copied into it on every run.
SHARED_STATE = ("results", "active", "jobs", "cmp_results", "lab_results", "val_results", "job_errors", "cancelled")
COPIED_STATE = ("data_source", "data_demo", "data_group", "upload", "upload_input", "cmp_uploads")
RESULT_STORES = {"results": MAX_CACHED_RESULTS, "cmp_results": 8, "lab_results": 16, "val_results": 8, "job_errors": 16,
                 "cancelled": 16}


@st.cache_resource(show_spinner=False)
def job_pool():
    """The server's one pool of jobs (CALIBDASH_MAX_JOBS, CALIBDASH_JOB_CORES), shared by all sessions."""
    return jobs.JobPool.from_environment()


@st.cache_resource(show_spinner=False)
def session_store():
    """Sessions' state by token, so that a reload finds its upload, results and jobs again."""
    return jobs.SessionStore()


def start_jobs_state():
    """On a session's first run: its token, and the state a reload left behind under it (from init_state)."""
    ss = st.session_state
    if "token" in ss:
        return
    try:
        job_pool()
    except cd.ConfigError as e:  # a misconfigured server: say so on every page
        st.error(display.markdown(e), icon=":material/error:")
        st.stop()
    ss["notices"] = []
    given = st.query_params.get(TOKEN_PARAM)
    entry = session_store().get(given) if given else None
    if entry is None:
        ss["token"] = jobs.new_token()
        if given:
            ss["notices"].append(("warning", "This address names a session the server no longer has (unused for two "
                                  "hours, or the server restarted): its upload and results could not be restored. "
                                  "Upload your data again on the Data page."))
    else:
        ss["token"] = given
        for key, value in entry.items():
            ss[key] = value
        ss["notices"].append(("info", restored_message(entry)))
    for key in SHARED_STATE:
        ss.setdefault(key, {})
    ss.setdefault("declined", set())  # demo sets whose automatic analysis was cancelled or failed


def restored_message(entry):
    """What a reload restored, as markdown."""
    parts = []
    if entry.get("upload") is not None:
        parts += ["your upload ", display.user(entry["upload"].source_name), ", "]
    parts.append(f"{len(entry['active'])} analysed data set(s)")
    if entry["jobs"]:
        parts.append(f" and {len(entry['jobs'])} running job(s)")
    return display.markdown("Restored after the reload: ", *parts, ".")


def remember_session():
    """Keep the session's state on the server under its token, and the token in the address.

    Streamlit drops the address's query parameters on a page change; setting the token again
    on every run keeps it there, so that a reload brings it back.
    """
    ss = st.session_state
    entry = {key: ss[key] for key in SHARED_STATE}
    entry.update({key: ss[key] for key in COPIED_STATE if key in ss})
    entry.update({key: ss[key] for key in list(ss.keys()) if isinstance(key, str) and key.startswith(KEPT_WIDGETS)})
    session_store().put(ss["token"], entry)
    if st.query_params.get(TOKEN_PARAM) != ss["token"]:
        st.query_params[TOKEN_PARAM] = ss["token"]


def _bounded(store, key, value):
    d = st.session_state[store]
    d[key] = value
    while len(d) > RESULT_STORES[store]:
        d.pop(next(iter(d)))


def submit_job(key, fn, kwargs, record):
    """Submit ``fn(**kwargs)`` to the pool as this session's job ``key``; returns an error message or None.

    ``record`` says what the job is for: ``kind``, ``slot`` (a newer job in the same slot
    replaces the session's older one) and ``title`` (markdown), and what :func:`collect_jobs`
    needs to file the outcome.
    """
    ss = st.session_state
    for old, rec in list(ss["jobs"].items()):
        if rec["slot"] == record["slot"] and old != key:
            cancel_job(old)
    try:
        job_pool().submit(key, fn, kwargs, owner=ss["token"], label=record["title"][:80])
    except jobs.BusyError as e:
        return display.markdown(e)
    ss["jobs"][key] = record
    return None


def cancel_job(key):
    """This session gives up its job ``key`` (the pool stops it unless another session wants it too)."""
    ss = st.session_state
    job_pool().cancel(key, owner=ss["token"])
    record = ss["jobs"].pop(key, None)
    if record and record.get("stay_cancelled"):
        _bounded("cancelled", key, True)
    if record and record["kind"] == "evaluate":
        ss["run_message"] = (record["sha"], None, "Cancelled. Any earlier results of these data stay.")
        if record["auto"]:
            ss["declined"].add(record["sha"])


def failure_message(job, what):
    """Why ``job`` failed, as markdown: its error for the user, or a bug to report."""
    if job is None or job.state == jobs.CANCELLED:
        return f"{what} was stopped or forgotten by the server (it keeps the last few dozen jobs). Start it again."
    if job.error is not None:
        return display.markdown(f"{what} failed: ", job.error)
    return display.markdown(f"{what} failed because of a bug in calibdash: ", job.bug,
                            ". The details are in the server's log; please report it.")


def collect_jobs():
    """File the outcome of the session's finished jobs into its results and messages (before every page)."""
    ss = st.session_state
    pool = job_pool()
    for key, record in list(ss["jobs"].items()):
        job = pool.job(key, owner=ss["token"])
        if job is not None and not job.finished:
            continue
        del ss["jobs"][key]
        ok = job is not None and job.state == jobs.DONE
        if record["kind"] != "evaluate":
            if ok:
                _bounded(record["store"], record["result_key"], job.result)
            elif job is not None and job.state == jobs.FAILED:
                message = failure_message(job, record.get("what", "The run"))
                fix = record.get("fixes", {}).get(getattr(job.error, "option", None))
                _bounded("job_errors", key, message + (f"\n\n**In the app:** {fix}" if fix else ""))
            continue
        sha = record["sha"]
        if ok:
            for notion, res in job.result.items():
                if record.get("input"):
                    # a copy: sessions that asked for the same data and settings share the job's
                    # result, and another session's file name must not show in this one's
                    res = dataclasses.replace(res, config=dict(res.config, input=dict(record["input"], sha256=sha)))
                _bounded("results", record["keys"][notion], res)
            ss["active"][sha] = record["keys"]
            message = f"Finished in {job.seconds:.1f} s ({', '.join(record['keys'])})."
        else:
            message = failure_message(job, "The evaluation")
            if record["auto"]:
                ss["declined"].add(sha)
                ss["notices"].append(("error", message))
        if not (ok and record["auto"]):  # the first visit's analysis was not the user's Run: no "Finished" on Evaluate
            ss["run_message"] = (sha, ok, message)


def pending_evaluation(sha):
    """Whether this session has an evaluation of the data ``sha`` queued or running."""
    return any(r["kind"] == "evaluate" and r["sha"] == sha for r in st.session_state["jobs"].values())


CANCELLED_MESSAGE = "Cancelled. Change a setting, or press **Run again**, to start it again."


def job_result(key, fn, kwargs, *, title, store, result_key=None, stay_cancelled=False, what="The run", fixes=None):
    """(result, error message) of the job ``key`` computing ``fn(**kwargs)``, submitted if new; both
    None while it runs, its progress and Cancel button then shown here. The result is kept in the
    session's ``store`` under ``result_key`` (default ``key``), a failure's message in ``job_errors``.
    ``stay_cancelled``: once cancelled, the job is not submitted again (the error is
    :data:`CANCELLED_MESSAGE`) until :func:`forget_cancel` (a page that runs its job without a
    button, on every rerun, would otherwise start it again at once). A failure's message begins
    with ``what`` ("The run failed: ...") and ends with what to do in the app, ``fixes[option]``
    (markdown), when the error names a loader option (``InputError.option``).
    """
    ss = st.session_state
    result_key = key if result_key is None else result_key
    if result_key in ss[store]:
        return ss[store][result_key], None
    if key in ss["job_errors"]:
        return None, ss["job_errors"][key]
    if stay_cancelled and key in ss["cancelled"]:
        return None, CANCELLED_MESSAGE
    if key not in ss["jobs"]:
        record = {"kind": key[0], "slot": (key[0],), "title": title, "store": store, "result_key": result_key,
                  "stay_cancelled": stay_cancelled, "what": what, "fixes": dict(fixes or {})}
        error = submit_job(key, fn, kwargs, record)
        if error:
            return None, error
    job_progress(key)
    return None, None


def forget_cancel(key):
    """Allow the cancelled job ``key`` (see :func:`job_result`) to be submitted again."""
    st.session_state["cancelled"].pop(key, None)


def job_panel(container, page):
    """In ``container``: the session's notices and the progress of its evaluations (after the page, on every page).

    A notice stays until the user opens another page (``page``: the current page's url_path):
    the rerun that files a finished job follows a first visit within a second, too soon to read it.
    """
    ss = st.session_state
    with container:
        shown = ss.setdefault("notices_page", page)
        if shown != page:
            ss["notices"], ss["notices_page"] = [], page
        for kind, message in ss["notices"]:
            getattr(st, kind)(message)
        for key, record in list(ss["jobs"].items()):
            if record["kind"] == "evaluate":
                job_progress(key)


@st.fragment(run_every=POLL_SECONDS)
def job_progress(key):
    """Progress bar and Cancel button of the session's job ``key``, refreshed until it is over; then the
    whole app reruns, and :func:`collect_jobs` files the outcome."""
    ss = st.session_state
    record = ss["jobs"].get(key)
    job = job_pool().job(key, owner=ss["token"]) if record else None
    if job is None or job.finished:
        st.rerun()
    done, total, message = job.progress
    if job.state == jobs.QUEUED:
        ahead = job_pool().position(job)
        status = f"waiting for a free worker ({ahead} job(s) ahead)" if ahead else "waiting for a free worker"
    else:
        status = f"{message} ({job.seconds:.0f} s)"
    with st.container(border=True, key=f"job__{hashlib.sha256(repr(key).encode()).hexdigest()[:16]}"):
        st.progress(min(max(done / total, 0.0), 1.0) if total else 0.0,
                    text=record["title"] + ": " + display.escape_markdown(status))
        if st.button("Cancel", key=f"cancel__{hashlib.sha256(repr(key).encode()).hexdigest()[:16]}",
                     help="Stop this run. Results computed earlier stay."):
            cancel_job(key)
            st.rerun()
