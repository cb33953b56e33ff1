"""Streamlit glue of the Validate page (and the Data page's grouping column): which data and
grouping column are validated, the validation as a job of the server's pool, its downloads.

The validation is :func:`calibdash.validate_risk_model`; what the page shows of it is
:mod:`calibdash.display.clinical`; the report is :func:`calibdash.validation_report`. Like
:mod:`ui`, this module only keeps state between reruns and pages.
"""

from __future__ import annotations

import hashlib

import streamlit as st

import calibdash as cd
import ui
from calibdash.clinical.validation import MAX_GROUPS
from calibdash.display import text as display
from calibdash.lab import demo
from calibdash.reporting.validation import metrics_csv

DEFAULT_RESAMPLES = 1000
MAX_APP_RESAMPLES = 10_000
# The Validate page's settings: "view__" keys, which ui.init_state keeps across page changes.
RESAMPLES_KEY, SEED_KEY, CAL_ERROR_KEY, CLASS_KEY = ("view__val_resamples", "view__val_seed", "view__val_cal_error",
                                                     "view__val_class")
NO_GROUPS = False  # the grouping column "none" (None in the plain key means "the first one kept")
NO_GROUPS_LABEL = "(no subgroups)"
STATUS_ICONS = {"ok": ":green[:material/check_circle:]", "problem": ":red[:material/error:]",
                "uncertain": ":orange[:material/help:]"}
STATUS_WORDS = {"ok": "ok", "problem": "problem", "uncertain": "uncertain"}
GROUP_FLAGS = {"judged": "judged", "imprecise": "imprecise: read the intervals", "too small": "too small: not judged"}

HELP = {
    "group": "The column whose values are the subgroups (e.g. the hospital site): every metric is computed per group, "
    "with forest plots and tests of heterogeneity. The Data page keeps a table's grouping columns (under **Grouping "
    f"columns**). Between 2 and {MAX_GROUPS} groups; groups with fewer than 10 events or non-events are listed but not "
    "judged.",
    "class": "The class whose predicted risk is validated against all the others (the event). For two classes, the "
    "positive class.",
    "resamples": "Bootstrap resamples for the intervals of O:E, ICI, E50, E90, the Brier scores, the curve's band and "
    "the decision curve (calibration-in-the-large and the slope have profile-likelihood intervals, AUROC DeLong's). "
    "More take longer; 0 skips those intervals.",
    "seed": "Random seed of the bootstrap (and of the calibration error's split): equal seeds give equal numbers.",
    "cal_error": "Also estimate the risk-optimised calibration error (Gruber & Bach; calibdash's Evaluate run, canonical "
    "notion) on the whole data and in every judged group. It takes a few seconds per group.",
    "hierarchy": "Van Calster et al. (2019): mean calibration (do the risks match the event rate on average? O:E, "
    "calibration-in-the-large), weak calibration (are they too extreme or too modest? the slope), moderate calibration "
    "(does the observed frequency follow the risk? the flexible curve and its summaries ICI, E50, E90, Emax), beside "
    "discrimination (AUROC), overall accuracy (Brier) and clinical usefulness (net benefit). A level is a problem when "
    "its interval excludes the ideal value, uncertain when the interval is too wide to tell.",
    "curve": "The loess curve of the observed outcome on the predicted risk (span 0.75, degree 2, as R computes it) with "
    "its bootstrap band, as R's CalibrationCurves::val.prob.ci.2 draws it; on the diagonal, the risks are right. Below: "
    "how many events (up) and non-events (down) received each predicted risk.",
    "decision": "Net benefit (Vickers & Elkin 2006): true positives minus false positives weighted by the odds of the "
    "threshold, per patient, for treating those whose risk is above the threshold; against treating everyone and no "
    "one. The model is useful at thresholds where its curve is above both.",
    "forest": "Each group's estimate and interval beside the value of a calibrated model (dashed); the panel titles give "
    "the likelihood-ratio test of heterogeneity between groups. Open markers: imprecise groups.",
    "heterogeneity": "Likelihood-ratio tests of 'calibration-in-the-large (or the slope) is the same in every judged "
    "group'. A small p-value means the groups differ.",
    "cal_error_table": "The risk-optimised estimate of the squared calibration error (canonical notion) with its 95% "
    "interval, from the estimator the risk selected, per group.",
}


#: What to do on this page about a refusal that names a loader option (InputError.option).
FIXES = {
    "group_columns": "choose another grouping column under **Grouping column** above, or "
                     f"{NO_GROUPS_LABEL.strip('()')}.",
    "positive": "choose the class under **Class validated** above.",
}


# -- the data validated ---------------------------------------------------------------
def validation_data():
    """(label, Predictions, is_demo) of the data the Validate page validates: the data in use, or,
    when that is a built-in demo with more than two classes, the breast-cancer validation demo
    (:func:`calibdash.lab.demo.load_validation_demo`, also a demo choice of the Data page)."""
    label, pred, origin = ui.current_dataset()
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
                                args=(key,), help=HELP["group"],
                                format_func=lambda c: NO_GROUPS_LABEL if c is NO_GROUPS else c)


def choose_group(key):
    """on_change of a grouping-column selectbox: into the plain key."""
    st.session_state["data_group"] = st.session_state[key]


def groups_kept():
    """on_change of the Data page's Grouping columns: a grouping column no longer kept (or "none",
    when columns are added) gives way to the first one kept."""
    ss = st.session_state
    kept = list(ss.get("src__group_columns") or ())
    chosen = ss.get("data_group")
    if (chosen is NO_GROUPS and kept) or (isinstance(chosen, str) and chosen not in kept):
        ss["data_group"] = None


def class_widget(container, pred):
    """The validated class: the positive (second) class of binary data; for more classes, one
    chosen by the user (None until then)."""
    ss = st.session_state
    names = [str(c) for c in pred.class_names]
    if ss.get(CLASS_KEY) not in names:
        ss[CLASS_KEY] = names[1] if pred.d == 2 else None
    return container.selectbox("Class validated", names, key=CLASS_KEY, help=HELP["class"],
                               placeholder="choose a class" if pred.d > 2 else None)


def settings_widgets(columns):
    """The number of resamples, the seed and the calibration-error toggle, in three ``columns``."""
    ss = st.session_state
    ss.setdefault(RESAMPLES_KEY, DEFAULT_RESAMPLES)
    ss.setdefault(SEED_KEY, 0)
    ss.setdefault(CAL_ERROR_KEY, True)
    c1, c2, c3 = columns
    c1.number_input("Bootstrap resamples", min_value=0, max_value=MAX_APP_RESAMPLES, step=100, key=RESAMPLES_KEY,
                    help=HELP["resamples"])
    c2.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key=SEED_KEY, help=HELP["seed"])
    c3.toggle("Calibration error per group", key=CAL_ERROR_KEY, help=HELP["cal_error"])
    return {"n_resamples": int(ss[RESAMPLES_KEY]), "random_state": int(ss[SEED_KEY]),
            "calibration_error": bool(ss[CAL_ERROR_KEY])}


# -- the validation as a job ----------------------------------------------------------
def validation_key(pred, group, cls, settings):
    """The job's key: ("validate", sha256 of the data, the grouping column's values and the settings)."""
    h = hashlib.sha256(pred.sha256.encode())
    if group is not None:
        h.update(b"\x00group\x00" + group.encode())
        h.update("\x1f".join(map(str, pred.groups[group])).encode())
    h.update(repr((cls, sorted(settings.items()))).encode())
    return ("validate", h.hexdigest())


def run_validation(label, pred, group, cls, settings):
    """(RiskValidation or None, message (markdown) or None) of ``pred`` validated for class ``cls``:
    from the session's results, else as a job of the server's pool (its progress and Cancel
    button shown here meanwhile, both None). Never raises."""
    key = validation_key(pred, group, cls, settings)
    kwargs = dict(p=pred, groups=group, positive=cls, **settings)
    title = display.markdown("Validating ", display.user(label), f" ({settings['n_resamples']:,} resamples"
                             + (", by " if group else ""), *([display.user(group)] if group else []), ")")
    return ui.job_result(key, cd.validate_risk_model, kwargs, title=title, store="val_results", stay_cancelled=True,
                         what="The validation", fixes=FIXES)


def run_again(label, pred, group, cls, settings):
    """The "Run again" button of a cancelled validation."""
    key = validation_key(pred, group, cls, settings)
    if key in st.session_state["cancelled"] and st.button("Run again", key="val_run_again",
                                                          help="Start the cancelled validation again."):
        ui.forget_cancel(key)
        st.rerun()


# -- what the page shows --------------------------------------------------------------
def verdict_markdown(item):
    """One level of :func:`calibdash.display.clinical.hierarchy_verdicts` as markdown, with its status icon."""
    icon = STATUS_ICONS.get(item["status"], ":gray[:material/info:]")
    return f"{icon} **{display.escape_markdown(item['level'])}** ({STATUS_WORDS.get(item['status'], item['status'])}): " \
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
        shown = "< 0.001" if p < 0.001 else f"= {p:.3f}"
        what = "differs between the groups" if p < 0.05 else "shows no clear difference between the groups"
        out.append(display.escape_markdown(f"{t['metric'][0].upper()}{t['metric'][1:]} {what} (likelihood-ratio test, "
                                           f"chi-squared {t['statistic']:.2f} on {int(t['df'])} df, p {shown})."))
    return out


def calibration_error_table(v, cls):
    """The risk-optimised calibration error per group of ``cls`` ("whole data" first)."""
    t = class_rows(v.calibration_error, cls).copy()
    if len(t):
        t["group"] = ["whole data" if g is None or g != g else str(g) for g in t["group"]]
    return t


def file_label(label, pred, cls):
    """The data part of a download's name: the data's label, with the class when there are more than two."""
    return label if pred.d == 2 else f"{label}_{cls}"


def report_download(container, v, label, pred, cls):
    """The "Validation report (HTML)" download, built when it is clicked."""
    name = file_label(label, pred, cls)
    seed = v.settings.get("random_state")
    csv_name = ui.download_name("validation_metrics", "csv", name, seed=seed)
    container.download_button(
        "Validation report (HTML)",
        lambda: cd.validation_report(v, title=f"Validation report: {label}", made_by="app",
                                     results_file=csv_name, predictions=pred).encode("utf-8"),
        ui.download_name("validation_report", "html", name, seed=seed), "text/html", key="dl_val_report",
        on_click="ignore",
        help="A self-contained HTML document ordered like TRIPOD+AI's items on model performance: data and outcome, "
             "events, sample size, the calibration hierarchy, discrimination, clinical usefulness, subgroups and "
             "provenance, with every figure. Opens offline in any browser.",
    )


def metrics_download(container, v, label, pred, cls):
    """The "Metrics (CSV)" download: every metric, class and group at full precision."""
    name = file_label(label, pred, cls)
    container.download_button(
        "Metrics (CSV)", lambda: metrics_csv(v).encode("utf-8"), ui.download_name("validation_metrics", "csv", name,
                                                                  seed=v.settings.get("random_state")),
        "text/csv", key="dl_val_metrics", on_click="ignore",
        help="One row per metric and group, with the interval, its method, p-values, counts and notes; full precision.",
    )
