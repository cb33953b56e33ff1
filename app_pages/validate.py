"""Validate page: a clinical risk model's calibration hierarchy, curve, decision curve and subgroups."""

import streamlit as st

import ui
import ui_clinical as uc
from calibdash.display import clinical as views
from calibdash.display.text import code, markdown, user
from calibdash.lab import demo

H = uc.HELP
st.title("Validate a risk model")
st.markdown(
    "The validation of a clinical risk model as Van Calster et al. (2019) and TRIPOD+AI describe it: is the model "
    "calibrated on average, in its spread and along the whole range of risk, does it discriminate, is it useful for "
    "decisions, overall and in subgroups; every number with its 95% interval."
)
label, pred, is_demo = uc.validation_data()
if is_demo:
    st.info(markdown("This is the demo, already validated: ", demo.VALIDATION_DEMO_DESCRIPTION, " (The data in use, ",
                     user(ui.current_dataset()[0]), ", have more than two classes.) To validate your own model, "
                     "upload its predicted risks and outcomes on the Data page: a table with a probability column, "
                     "the outcome (e.g. yes/no) and optionally a subgroup column, kept under Grouping columns."),
            icon=":material/info:")
    st.page_link("app_pages/data.py", label="Go to Data", icon=":material/upload_file:")

c1, c2 = st.columns(2)
cls = uc.class_widget(c1, pred)
if pred.groups:
    uc.group_widget(c2, "val_group", pred)
else:
    c2.caption("No grouping column: keep one on the Data page (**Grouping columns**) for subgroups.")
group = uc.grouping_column(pred)
settings = uc.settings_widgets(st.columns(3))


def show(v):
    st.caption(f"Data: {code(label)} ({v.n:,} rows; event: class {code(cls)}"
               + (f"; subgroups by {code(v.group_name)}" if v.group_name else "")
               + f"). {v.settings['n_resamples']:,} bootstrap resamples, seed {v.settings['random_state']}.")
    for note in v.notes:
        st.caption(markdown(note))

    st.subheader("The calibration hierarchy", help=H["hierarchy"])
    with st.container(border=True, key="val_verdicts"):
        for item in views.hierarchy_verdicts(v, cls=cls):
            st.markdown(uc.verdict_markdown(item))
    with st.container(key="val_table"):
        table = views.metrics_table(v, cls=cls)
        st.dataframe(table, key="val_metrics", hide_index=True, width="stretch", height=35 * (len(table) + 1) + 3)

    c1, c2 = st.columns(2)
    with c1:
        st.subheader("Flexible calibration curve", help=H["curve"])
        st.plotly_chart(views.validation_curve_figure(v, cls=cls), key="val_curve", width="stretch")
    with c2:
        st.subheader("Decision curve", help=H["decision"])
        st.plotly_chart(views.decision_curve_figure(v, cls=cls), key="val_decision", width="stretch")

    st.subheader("Sample size")
    st.markdown(markdown(views.sample_size_text(v, cls=cls)))

    if v.group_name:
        st.subheader(f"Subgroups by {code(v.group_name)}", anchor=False)
        for message in uc.flagged_groups(v, cls):
            st.warning(message, icon=":material/warning:")
        ui.number_table(uc.groups_table(v, cls), key="val_groups", numbers={})
        st.plotly_chart(views.forest_figure(v, cls=cls), key="val_forest", width="stretch")
        st.caption(H["forest"])
        if len(uc.class_rows(v.heterogeneity, cls)):
            st.markdown("**Heterogeneity between groups**", help=H["heterogeneity"])
            for sentence in uc.heterogeneity_sentences(v, cls):
                st.markdown("- " + sentence)
        cal = uc.calibration_error_table(v, cls)
        if len(cal):
            st.markdown("**Risk-optimised calibration error per group**", help=H["cal_error_table"])
            ui.number_table(cal, key="val_cal_error", numbers={
                "estimate": ("estimate", ".4f", "Squared calibration error (0 = calibrated)."),
                "ci_low": ("95% low", ".4f", None), "ci_high": ("95% high", ".4f", None)})
        judged = list(uc.class_rows(v.groups, cls).query("status != 'too small'")["group"])
        if judged:
            if st.session_state.get("view__val_group_table") not in judged:
                st.session_state["view__val_group_table"] = judged[0]
            shown = st.selectbox("Every metric of one group", judged, key="view__val_group_table",
                                 help="The metrics table of one subgroup.")
            st.dataframe(views.metrics_table(v, cls=cls, group=shown), key="val_group_metrics", hide_index=True,
                         width="stretch")

    d1, d2 = st.columns(2)
    uc.report_download(d1, v, label, pred, cls)
    uc.metrics_download(d2, v, label, pred, cls)


if cls is None:
    st.info(f"The data have {pred.d} classes: choose the class to validate against the others.")
else:
    v, error = uc.run_validation(label, pred, group, cls, settings)  # a job: its progress is shown until it is over
    if error:
        st.error(error, icon=":material/error:")
        uc.run_again(label, pred, group, cls, settings)
    elif v is not None:
        show(v)
