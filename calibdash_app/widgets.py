"""Widgets shared by the pages: the notion picker, the sidebar, the buttons that extend a grid,
what the Results page says before a result, and tables of right-aligned numbers."""

from __future__ import annotations

import streamlit as st

from calibdash.display import tables
from calibdash.display import text as display
from calibdash.estimators.registry import DEFAULT_ESTIMATORS, REGISTRY, tuned_param
from calibdash.evaluation.gridtext import format_grid
from calibdash_app.app_pages import page_path
from calibdash_app.data import current_dataset
from calibdash_app.help import HELP
from calibdash_app.runs import active_results, pending_evaluation
from calibdash_app.session import kept
from calibdash_app.settings import DEFAULT_NOTIONS, NOTIONS, editable


def notion_picker(results, key="view__notion"):
    """Radio to choose which notion's result to show; returns the chosen notion."""
    options = [n for n in NOTIONS if n in results]
    ss = st.session_state
    if ss.get(key) not in options:
        ss[key] = options[0]
    return st.radio("Notion shown", options, **kept(key), horizontal=True, help=HELP["notion"])


# The pages (url paths) that evaluate the data in use or show its evaluation: the sidebar says how
# far the evaluation is on these only. Elsewhere it said "Evaluated: not yet" beside a validation,
# a comparison or a simulation that does not use it (issue 27).
EVALUATION_PAGES = ("data", "evaluate", "results", "reliability")


def sidebar(page):
    """The data in use on every page, and what has been evaluated on the pages of the evaluation
    (:data:`EVALUATION_PAGES`; ``page``: the current page's url path)."""
    label, pred, origin = current_dataset()
    with st.sidebar:
        st.markdown(f"**Data:** {display.code(label)}  \n{pred.n:,} rows, {pred.d} classes ({origin})")
        if page in EVALUATION_PAGES:
            st.markdown(evaluation_status(pred))
        st.caption("Gruber & Bach, TMLR 2025: estimators of squared calibration errors, chosen by a risk.")


def evaluation_status(pred):
    """The sidebar's "Evaluated:" line about ``pred``, the data in use, as markdown."""
    res = active_results()
    if res:
        return "**Evaluated:** " + ", ".join(res)
    if pending_evaluation(pred.sha256):
        return "**Evaluated:** running (progress at the top of the page)"
    return "**Evaluated:** not yet (see Evaluate)"


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
            st.switch_page(page_path("evaluate"))


def show_no_result():
    """What the Results page says before any evaluation of the current data."""
    _, pred, _ = current_dataset()
    if pending_evaluation(pred.sha256):
        st.info("The evaluation of these data is running (progress at the top of the page). Its results appear "
                "here when it is done; you may change pages or reload meanwhile.")
        return
    st.info("No evaluation of these data yet. Open **Evaluate** and press **Run**.")
    st.page_link(page_path("evaluate"), label="Go to Evaluate", icon=":material/play_arrow:")


def number_table(df, *, key, numbers, column_config=None, pinned=()):
    """``st.dataframe`` of ``df`` with the columns of ``numbers`` ({column: (label, format spec or function, help)})
    shown as right-aligned text wide enough for every value (a minus sign is never clipped) and
    missing values blank (not a grey "None"): :func:`calibdash.display.tables.formatted`. The
    columns of ``pinned`` stay in view when the table scrolls sideways on a narrow screen."""
    table = tables.formatted(df, {c: spec for c, (_, spec, _) in numbers.items()})
    config = dict(column_config or {})
    for col, (label, _, help_) in numbers.items():
        if col in table:
            config[col] = st.column_config.TextColumn(label, help=help_, alignment="right",
                                                      width=tables.text_width(table[col], label), pinned=col in pinned)
    st.dataframe(table, key=key, hide_index=True, width="stretch", column_config=config)
