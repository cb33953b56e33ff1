"""Streamlit glue of the Validate page (and the Data page's grouping column): which data and
grouping column are validated, the validation as a job of the server's pool, its downloads.

The validation is :func:`calibdash.validate_risk_model`; what the page shows of it is
:mod:`calibdash.display.clinical`; the report is :func:`calibdash.validation_report`. Like the
other modules of :mod:`calibdash_app`, this one only keeps state between reruns and pages.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

import calibdash as cd
from calibdash.clinical.sample_size import DEFAULT_TARGETS, plan_sample_size
from calibdash.clinical.validation import DEFAULT_THRESHOLDS
from calibdash.clinical.verdicts import STATUS_WORDS
from calibdash.display import text as display
from calibdash.display.meta import pooled_forest_figure
from calibdash.formatting import p_statement
from calibdash.io.export import csv_text
from calibdash.lab import demo
from calibdash.reporting.validation import metrics_csv
from calibdash_app.data import current_dataset, type_columns
from calibdash_app.downloads import built, download_name
from calibdash_app.help import HELP_VALIDATE
from calibdash_app.runs import job_result
from calibdash_app.session import job_pool, kept
from calibdash_app.widgets import number_table

DEFAULT_RESAMPLES = 1000
MAX_APP_RESAMPLES = 10_000
# A lower bound of the bootstrap's time per resample and row: 3.9e-8 s measured with
# validate_risk_model at 200,000 rows (9.4 s with 1,000 resamples, 1.6 s without; BENCHMARKS.md's
# machine), taken a third lower so that a faster server is not refused a run it could finish.
SECONDS_PER_RESAMPLE_ROW = 2.5e-8
# The Threshold range slider's ends (its default: validate_risk_model's DEFAULT_THRESHOLDS).
THRESHOLD_LIMITS = (0.01, 0.99)
# The Validate page's settings: "view__" keys, which calibdash_app.session.init_state keeps across page changes.
RESAMPLES_KEY, SEED_KEY, CAL_ERROR_KEY, CLASS_KEY = ("view__val_resamples", "view__val_seed", "view__val_cal_error",
                                                     "view__val_class")
ROLE_KEY, THRESHOLDS_KEY = "view__val_role", "view__val_thresholds"
# What the grouping column is: subgroups of patients (groups=) or centres (clusters=).
ROLES = {"subgroups": "subgroups of patients", "centres": "centres (hospitals)"}
# The planning mode's inputs ("view__" keys too): {argument of plan_sample_size: (label, default, min, max,
# step, format, help)}.
PLAN_INPUTS = {
    "prevalence": ("Anticipated prevalence", 0.15, 0.001, 0.999, 0.01, "%.3f",
                   "The share of patients expected to have the event in the validation population."),
    "c_statistic": ("Anticipated C statistic (AUROC)", 0.75, 0.51, 0.99, 0.01, "%.2f",
                    "The discrimination expected in the validation population (from the development study or "
                    "earlier validations)."),
    "oe": ("Anticipated O:E", 1.0, 0.2, 5.0, 0.05, "%.2f",
           "Observed over expected events expected in the validation population (1: calibrated on average)."),
    "slope": ("Anticipated calibration slope", 1.0, 0.2, 3.0, 0.05, "%.2f",
              "The calibration slope expected (1: neither too extreme nor too modest)."),
    "threshold": ("Risk threshold", 0.1, 0.01, 0.99, 0.01, "%.2f",
                  "The risk threshold at which the net benefit's precision is targeted (Riley et al.'s fourth "
                  "criterion): the risk above which patients would be treated."),
}
# Target widths of the 95% intervals, by key of plan_sample_size's targets (default DEFAULT_TARGETS):
# {target: (label, what)}.
PLAN_WIDTHS = {
    "O:E": ("Target width: O:E", "O:E"),
    "calibration slope": ("Target width: slope", "the calibration slope"),
    "AUROC": ("Target width: C statistic", "the C statistic"),
    "net benefit": ("Target width: standardised net benefit", "the standardised net benefit (net benefit / "
                    "prevalence) at the threshold"),
}
NO_GROUPS = False  # the grouping column "none" (None in the plain key means "the first one kept")
NO_GROUPS_LABEL = "(no subgroups)"
STATUS_ICONS = {"ok": ":green[:material/check_circle:]", "problem": ":red[:material/error:]",
                "uncertain": ":orange[:material/help:]"}
GROUP_FLAGS = {"judged": "judged", "imprecise": "imprecise: read the intervals", "too small": "too small: not judged"}


#: What to do on this page about a refusal that names a loader option (InputError.option).
FIXES = {
    "groups": "choose another grouping column under **Grouping column** above, or "
                     f"{NO_GROUPS_LABEL.strip('()')}.",
    "positive": "choose the class under **Class validated** above.",
    "clusters": "choose another grouping column under **Grouping column** above, use it as subgroups, or "
                f"{NO_GROUPS_LABEL.strip('()')}.",
    "thresholds": "choose another range under **Threshold range** above.",
}


# -- the data validated ---------------------------------------------------------------
def validation_data():
    """(label, Predictions, is_demo) of the data the Validate page validates: the data in use, or,
    when that is a built-in demo with more than two classes, the breast-cancer validation demo
    (:func:`calibdash.lab.demo.load_validation_demo`, also a demo choice of the Data page)."""
    label, pred, origin = current_dataset()
    if origin == "demo" and pred.d != 2:
        return demo.VALIDATION_DEMO_NAME, demo.load_validation_demo(), True
    return label, pred, False


def grouping_column(pred):
    """The grouping column chosen for ``pred`` (None: no subgroups).

    The plain key ``data_group`` holds a column name, :data:`NO_GROUPS`, or None for "the first
    grouping column the data keep" (so that keeping one column on the Data page chooses it).
    """
    chosen = st.session_state.get("data_group")
    if chosen is NO_GROUPS:
        return None
    if isinstance(chosen, str) and chosen in pred.groups:
        return chosen
    return next(iter(pred.groups), None)


def group_widget(container, key, pred):
    """The grouping column's selectbox (widget ``key``), showing and writing the plain key ``data_group``."""
    ss = st.session_state
    ss[key] = grouping_column(pred) or NO_GROUPS
    return container.selectbox("Grouping column", [NO_GROUPS, *pred.groups], key=key, on_change=choose_group,
                                args=(key,), help=HELP_VALIDATE["group"],
                                format_func=lambda c: NO_GROUPS_LABEL if c is NO_GROUPS else c)


def choose_group(key):
    """on_change of a grouping-column selectbox: into the plain key."""
    st.session_state["data_group"] = st.session_state[key]


def type_groups(info):
    """on_change of the Data page's typed Grouping columns (a wide table): as the list's, then groups_kept."""
    type_columns(info, "src__group_columns")
    groups_kept()


def groups_kept():
    """on_change of the Data page's Grouping columns: a grouping column no longer kept (or "none",
    when columns are added) gives way to the first one kept."""
    ss = st.session_state
    columns = list(ss.get("src__group_columns") or ())
    chosen = ss.get("data_group")
    if (chosen is NO_GROUPS and columns) or (isinstance(chosen, str) and chosen not in columns):
        ss["data_group"] = None


def role_widget(container):
    """Whether the grouping column is subgroups of patients or centres (the radio of :data:`ROLE_KEY`)."""
    st.session_state.setdefault(ROLE_KEY, "subgroups")
    return container.radio("The groups are", list(ROLES), **kept(ROLE_KEY), format_func=ROLES.get, horizontal=True,
                           help=HELP_VALIDATE["role"])


def grouping(pred):
    """{"groups": column or None, "clusters": column or None} of validate_risk_model for ``pred``: the
    grouping column chosen (:func:`grouping_column`) as subgroups or as centres (:data:`ROLE_KEY`)."""
    column = grouping_column(pred)
    centres = st.session_state.get(ROLE_KEY) == "centres"
    return {"groups": None if centres else column, "clusters": column if centres else None}


def class_widget(container, pred):
    """The validated class: the positive (second) class of binary data; for more classes, one
    chosen by the user (None until then)."""
    ss = st.session_state
    names = [str(c) for c in pred.class_names]
    if ss.get(CLASS_KEY) not in names:
        ss[CLASS_KEY] = names[1] if pred.d == 2 else None
    return container.selectbox("Class validated", names, **kept(CLASS_KEY), help=HELP_VALIDATE["class"],
                               placeholder="choose a class" if pred.d > 2 else None)


def thresholds_setting():
    """The threshold range (low, high) of :data:`THRESHOLDS_KEY`, rounded to the slider's step."""
    low, high = st.session_state.get(THRESHOLDS_KEY, DEFAULT_THRESHOLDS)
    return round(float(low), 2), round(float(high), 2)


def settings_widgets(columns):
    """The number of resamples, the seed, the threshold range and the calibration-error toggle, in
    four ``columns``; returns them as validate_risk_model's keyword arguments."""
    ss = st.session_state
    ss.setdefault(RESAMPLES_KEY, DEFAULT_RESAMPLES)
    ss.setdefault(SEED_KEY, 0)
    ss.setdefault(CAL_ERROR_KEY, False)
    ss.setdefault(THRESHOLDS_KEY, DEFAULT_THRESHOLDS)
    c1, c2, c3, c4 = columns
    c1.number_input("Bootstrap resamples", min_value=0, max_value=MAX_APP_RESAMPLES, step=100, **kept(RESAMPLES_KEY),
                    help=HELP_VALIDATE["resamples"])
    c2.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, **kept(SEED_KEY), help=HELP_VALIDATE["seed"])
    c3.slider("Threshold range", min_value=THRESHOLD_LIMITS[0], max_value=THRESHOLD_LIMITS[1], step=0.01,
              **kept(THRESHOLDS_KEY), help=HELP_VALIDATE["thresholds"])
    c4.toggle("Calibration error per group", **kept(CAL_ERROR_KEY), help=HELP_VALIDATE["cal_error"])
    return {"n_resamples": int(ss[RESAMPLES_KEY]), "random_state": int(ss[SEED_KEY]),
            "thresholds": thresholds_setting(), "calibration_error": bool(ss[CAL_ERROR_KEY])}


# -- the validation as a job ----------------------------------------------------------
def validation_key(pred, cls, settings):
    """The job's key: ("validate", sha256 of the data, of the subgroup and centre columns' names and
    values, of the class and of every other setting). ``settings``: validate_risk_model's keyword
    arguments (``groups`` and ``clusters`` column names of ``pred`` or None)."""
    h = hashlib.sha256(pred.sha256.encode())
    for role in ("groups", "clusters"):
        column = settings.get(role)
        if column is not None:
            h.update(f"\x00{role}\x00".encode() + column.encode() + b"\x00")
            h.update("\x1f".join(map(str, pred.groups[column])).encode())
    rest = {k: v for k, v in settings.items() if k not in ("groups", "clusters")}
    h.update(repr((cls, sorted(rest.items()))).encode())
    return ("validate", h.hexdigest())


def validation_estimate(n_rows, n_resamples, max_seconds):
    """``(seconds, why, fix)`` for the pool (:meth:`calibdash_app.jobs.JobPool.submit`): a lower bound of
    the bootstrap's time for ``n_resamples`` resamples of ``n_rows`` rows, and how many resamples fit
    in ``max_seconds`` (the pool's limit; None for none)."""
    seconds = SECONDS_PER_RESAMPLE_ROW * n_rows * n_resamples
    fit = 0 if max_seconds is None else int(max_seconds / (SECONDS_PER_RESAMPLE_ROW * max(n_rows, 1)))
    fix = (f"Use at most {fit // 100 * 100:,} resamples for these data, or " if fit >= 100 else
           "These data have too many rows for a bootstrap here: set the resamples to 0, or ")
    fix += ("validate from the command line (`calibdash validate FILE --n-resamples N`), which has no time "
            "limit.")
    return seconds, f"{n_resamples:,} bootstrap resamples of {n_rows:,} rows", fix


def run_validation(label, pred, cls, settings):
    """The RiskValidation of ``pred`` for class ``cls`` with ``settings`` (validate_risk_model's keyword
    arguments): from the session's results, else as a job of the server's pool. None while it runs
    or when it failed or was cancelled (its progress, or its message with "Run again", shown here
    as :func:`calibdash_app.runs.job_result` does). Never raises."""
    key = validation_key(pred, cls, settings)
    kwargs = dict(p=pred, positive=cls, **settings)
    by = [(", by ", settings["groups"]), (", centres ", settings["clusters"])]
    title = display.markdown("Validating ", display.user(label), f" ({settings['n_resamples']:,} resamples",
                             *[piece for words, column in by if column for piece in (words, display.user(column))], ")")
    estimate = validation_estimate(pred.n, settings["n_resamples"], job_pool().max_seconds)
    return job_result(key, cd.validate_risk_model, kwargs, title=title, store="val_results", page="Validate",
                      what="The validation", fixes=FIXES, estimate=estimate)


# -- what the page shows --------------------------------------------------------------
def verdict_markdown(item):
    """One level of :func:`calibdash.display.clinical.hierarchy_verdicts` as markdown, with its status icon."""
    icon = STATUS_ICONS.get(item["status"], ":gray[:material/info:]")
    return f"{icon} **{display.escape_markdown(item['level'])}** ({STATUS_WORDS[item['status']]}): " \
           + display.escape_markdown(item["verdict"])


def class_rows(df, cls):
    """The rows of one class block of a RiskValidation table."""
    return df[df["class"] == cls].drop(columns="class") if len(df) else df


def groups_table(v, cls):
    """The groups of ``cls`` with their status in words (flagged when imprecise or too small)."""
    g = class_rows(v.groups, cls).copy()
    g["status"] = [GROUP_FLAGS.get(s, s) for s in g["status"]]
    return g


def flagged_groups(v, cls):
    """Markdown warnings for the groups that are too small to judge or imprecise ([] when none)."""
    g = class_rows(v.groups, cls)
    out = []
    for status, words in (("too small", "too small to judge (left out of the tests and plots' points)"),
                          ("imprecise", "imprecise (fewer events than recommended: read their intervals)")):
        names = list(g.loc[g["status"] == status, "group"])
        if names:
            out.append(display.markdown(f"{len(names)} group{'s' if len(names) != 1 else ''} ", words, ": ")
                       + ", ".join(display.code(n) for n in names))
    return out


def heterogeneity_sentences(v, cls):
    """One markdown sentence per heterogeneity test of ``cls``."""
    out = []
    for _, t in class_rows(v.heterogeneity, cls).iterrows():
        p = float(t["p_value"])
        shown = p_statement(p)
        units = "centres" if v.clusters else "groups"
        what = f"differs between the {units}" if p < 0.05 else f"shows no clear difference between the {units}"
        out.append(display.escape_markdown(f"{t['metric'][0].upper()}{t['metric'][1:]} {what} (likelihood-ratio test, "
                                           f"chi-squared {t['statistic']:.2f} on {int(t['df'])} df, {shown})."))
    return out


def pooled_forests(v, cls):
    """The forest plots of the meta-analysis of ``cls``, one per pooled metric
    (:func:`calibdash.display.meta.pooled_forest_figure`)."""
    centres, pooled = (frame[frame["class"] == cls] for frame in (v.centres, v.pooled))
    return [pooled_forest_figure(centres, pooled, m) for m in dict.fromkeys(pooled["metric"])]


def recalibrated_frame(v, pred, cls):
    """One row per row of ``pred``: its outcome, the predicted risk of ``cls`` and the risk after each
    recalibration model of ``v`` (:meth:`RiskValidation.recalibrate`), with the grouping columns."""
    k = list(pred.class_names).index(cls)
    p = pred.probs[:, k]
    frame = pd.DataFrame({"row": np.arange(1, pred.n + 1), "outcome": np.asarray(pred.class_names)[pred.labels],
                          "event": (pred.labels == k).astype(int), "predicted_risk": p})
    for model in dict.fromkeys(class_rows(v.recalibration, cls)["model"]):
        frame["risk_after_" + model.replace(" ", "_")] = v.recalibrate(p, cls=cls, model=model)
    for column, values in pred.groups.items():
        if column not in frame:
            frame[column] = values
    return frame


def recalibrated_download(container, v, label, pred, cls):
    """The "Recalibrated risks (CSV)" download (built once: :func:`calibdash_app.downloads.built`)."""
    data = built("recalibrated risks", (v, pred), (cls,), lambda: csv_text(recalibrated_frame(v, pred, cls)))
    container.download_button(
        "Recalibrated risks (CSV)", data,
        download_name("recalibrated_risks", "csv", file_label(label, pred, cls)), "text/csv",
        key="dl_val_recalibrated", on_click="ignore",
        help="Every row with its outcome, the model's risk and the risk after the intercept update and after the "
             "logistic recalibration fitted here (full precision). Use them only for patients like these: a "
             "recalibration fitted on one population does not transport to another without validation.",
    )


def file_label(label, pred, cls):
    """The data part of a download's name: the data's label, with the class when there are more than two."""
    return label if pred.d == 2 else f"{label}_{cls}"


def report_download(container, v, label, pred, cls):
    """The "Validation report (HTML)" download (built once: :func:`calibdash_app.downloads.built`)."""
    name = file_label(label, pred, cls)
    seed = v.config.get("random_state")
    csv_name = download_name("validation_metrics", "csv", name, random_state=seed)
    data = built("validation report", (v, pred), (str(label), csv_name),
                 lambda: cd.validation_report(v, title=f"Validation report: {label}", made_by="app",
                                              results_file=csv_name, predictions=pred))
    container.download_button(
        "Validation report (HTML)", data,
        download_name("validation_report", "html", name, random_state=seed), "text/html", key="dl_val_report",
        on_click="ignore",
        help="A self-contained HTML document ordered like TRIPOD+AI's items on model performance: data and outcome, "
             "events, sample size, the calibration hierarchy, discrimination, clinical usefulness, subgroups and "
             "provenance, with every figure. Opens offline in any browser.",
    )


def metrics_download(container, v, label, pred, cls):
    """The "Metrics (CSV)" download: every metric, class and group at full precision."""
    name = file_label(label, pred, cls)
    data = built("validation metrics", (v,), (), lambda: metrics_csv(v))
    container.download_button(
        "Metrics (CSV)", data, download_name("validation_metrics", "csv", name,
                                                                  random_state=v.config.get("random_state")),
        "text/csv", key="dl_val_metrics", on_click="ignore",
        help="One row per metric and group, with the interval, its method, p-values, counts and notes; full precision, "
             "as computed: ICI, E50, E90 and Emax as fractions (0.054 is 5.4 percentage points).",
    )


# -- planning a validation study ------------------------------------------------------
def plan_settings(columns_inputs, columns_widths):
    """The planning inputs (number boxes in ``columns_inputs``) and target widths (in ``columns_widths``);
    returns plan_sample_size's keyword arguments. The values are "view__plan_" keys, kept across pages."""
    ss = st.session_state
    kwargs = {}
    for (name, (label, default, low, high, step, fmt, help_)), box in zip(PLAN_INPUTS.items(), columns_inputs):
        key = f"view__plan_{name}"
        ss.setdefault(key, default)
        kwargs[name] = float(box.number_input(label, min_value=low, max_value=high, step=step, format=fmt, **kept(key),
                                              help=help_))
    targets = {}
    for (name, (label, what)), box in zip(PLAN_WIDTHS.items(), columns_widths):
        key = "view__plan_width_" + name.replace(" ", "_").replace(":", "")
        ss.setdefault(key, DEFAULT_TARGETS[name])
        targets[name] = float(box.number_input(
            label, min_value=0.01, max_value=1.0, step=0.01, format="%.2f", **kept(key),
            help=f"Width of the 95% interval of {what} (Riley et al. 2021 suggest {DEFAULT_TARGETS[name]:g})."))
    kwargs["targets"] = targets
    return kwargs


def planning():
    """The "Plan a validation study" mode: Riley et al.'s criteria from anticipated values, no data needed
    (:func:`calibdash.clinical.sample_size.plan_sample_size`)."""
    st.markdown("How many patients does an external validation need? " + HELP_VALIDATE["plan"])
    kwargs = plan_settings(st.columns(len(PLAN_INPUTS)), st.columns(len(PLAN_WIDTHS)))
    try:
        table = plan_sample_size(**kwargs)
    except cd.CalibdashError as e:
        st.error(display.markdown(e), icon=":material/error:")
        return
    minimum = table[table["metric"] == "minimum"].iloc[0]
    with st.container(key="val_plan_result"):
        st.markdown(f"**Minimum: {int(minimum['rows_needed']):,} rows** (about {int(minimum['events_needed']):,} "
                    "events). " + display.escape_markdown(minimum["note"][:1].upper() + minimum["note"][1:]) + ".")
        number_table(table[table["metric"] != "minimum"].drop(columns=["metric"]), key="val_plan", numbers={
            "anticipated": ("anticipated", ".3g", "The anticipated value each criterion assumes (net benefit: "
                            "standardised, net benefit / prevalence)."),
            "target": ("target width", ".3g", "The width of the 95% interval aimed at."),
            "se": ("standard error", ".4f", "The standard error that width means."),
            "rows_needed": ("rows needed", ",.0f", "The rows that reach the target."),
            "events_needed": ("events needed", ",.0f", "The events among those rows, at the anticipated prevalence.")})
