"""Validate page: a clinical risk model's calibration hierarchy, curve, decision curve, subgroups or centres,
recalibration, and the planning of a validation study."""

import streamlit as st

from calibdash.display import clinical as views
from calibdash.display.text import code, markdown, user
from calibdash.lab import demo
from calibdash_app import clinical, data, widgets
from calibdash_app.app_pages import page_path
from calibdash_app.help import HELP_VALIDATE
from calibdash_app.session import kept

H = HELP_VALIDATE
st.title("Validate a risk model")
st.markdown(
    "The validation of a clinical risk model as Van Calster et al. (2019) and TRIPOD+AI describe it: is the model "
    "calibrated on average, in its spread and along the whole range of risk, does it discriminate, is it useful for "
    "decisions, overall, in subgroups of patients and across centres; every number with its 95% interval."
)
label, pred, is_demo = clinical.validation_data()
if is_demo:
    st.info(markdown("This is the demo, already validated: ", demo.VALIDATION_DEMO_DESCRIPTION, " (The data in use, ",
                     user(data.current_dataset()[0]), ", have more than two classes.) To validate your own model, "
                     "upload its predicted risks and outcomes on the Data page: a table with a probability column, "
                     "the outcome (e.g. yes/no) and optionally a subgroup or centre column, kept under Grouping "
                     "columns."),
            icon=":material/info:")
    st.page_link(page_path("data"), label="Go to Data", icon=":material/upload_file:")

c1, c2, c3 = st.columns(3)
cls = clinical.class_widget(c1, pred)
if pred.groups:
    clinical.group_widget(c2, "val_group", pred)
    if clinical.grouping_column(pred) is not None:
        clinical.role_widget(c3)
else:
    c2.caption("No grouping column: keep one on the Data page (**Grouping columns**) for subgroups or centres.")
settings = {**clinical.grouping(pred), **clinical.settings_widgets(st.columns([1, 1, 1.6, 1.2]))}


def show(v):
    low, high = v.config.get("thresholds", settings["thresholds"])
    by = (f"; centres: {code(v.clusters)}" if v.clusters
          else f"; subgroups by {code(v.group_name)}" if v.group_name else "")
    st.caption(f"Data: {code(label)} ({v.n:,} rows; event: class {code(cls)}{by}). "
               f"{v.config['n_resamples']:,} bootstrap resamples"
               + (" (of whole centres)" if v.clusters else "")
               + f", seed {v.config['random_state']}; usefulness judged over thresholds {low:.0%} to {high:.0%}.")
    if v.notes:
        with st.container(key="val_notes"):
            for note in v.notes:
                st.caption(":material/info: " + markdown(note))

    st.subheader("The calibration hierarchy", help=H["hierarchy"])
    with st.container(border=True, key="val_verdicts"):
        for item in v.verdicts(cls=cls):
            st.markdown(clinical.verdict_markdown(item))
    findings = v.group_findings(cls=cls)
    if findings:
        with st.container(key="val_findings"):
            st.markdown(f"**{'Centres' if v.clusters else 'Subgroups'} that are off**", help=H["findings"])
            for sentence in findings:
                st.markdown("- " + markdown(sentence))
    with st.container(key="val_table"):
        table = views.metrics_table(v, cls=cls)
        st.dataframe(table, key="val_metrics", hide_index=True, width="stretch", height=35 * (len(table) + 1) + 3)

    c1, c2 = st.columns(2)
    with c1:
        st.subheader("Calibration curve", help=H["curve"])
        st.plotly_chart(views.validation_curve_figure(v, cls=cls), key="val_curve", width="stretch")
    with c2:
        st.subheader("Decision curve", help=H["decision"])
        st.plotly_chart(views.decision_curve_figure(v, cls=cls), key="val_decision", width="stretch")
    c1, c2 = st.columns(2)
    with c1:
        with st.expander("Observed against predicted risk, by group of patients"):
            st.dataframe(views.grouped_table(v, cls=cls), key="val_grouped", hide_index=True, width="stretch")
    nb = views.net_benefit_table(v, cls=cls)
    if len(nb):
        with st.container(key="val_usefulness"):
            st.markdown(f"**Net benefit at thresholds {low:.0%} to {high:.0%}**", help=H["net_benefit"])
            st.dataframe(nb, key="val_net_benefit", hide_index=True, width="stretch")

    if v.clusters:
        st.subheader(f"Centres: {code(v.clusters)}", anchor=False)
        pooled = views.pooled_table(v, cls=cls)
        if len(pooled):
            with st.container(key="val_meta"):
                st.markdown("**Random-effects meta-analysis of the centres**", help=H["pooled"])
                st.dataframe(pooled, key="val_pooled", hide_index=True, width="stretch")
                for i, fig in enumerate(clinical.pooled_forests(v, cls)):
                    if i % 2 == 0:
                        cols = st.columns(2)
                    cols[i % 2].plotly_chart(fig, key=f"val_pooled_forest_{i}", width="stretch")
                st.caption(H["pooled_forest"])
        with st.expander("Each centre's estimates (the meta-analysis' inputs)"):
            st.dataframe(views.centres_table(v, cls=cls), key="val_centres", hide_index=True, width="stretch")

    if v.group_name:
        what = "Centres" if v.clusters else "Subgroups"
        st.subheader(f"{what} by {code(v.group_name)}" if not v.clusters else "Every centre", anchor=False)
        for message in clinical.flagged_groups(v, cls):
            st.warning(message, icon=":material/warning:")
        widgets.number_table(clinical.groups_table(v, cls), key="val_groups", numbers={})
        st.plotly_chart(views.forest_figure(v, cls=cls), key="val_forest", width="stretch")
        st.caption(H["forest"])
        if len(clinical.class_rows(v.heterogeneity, cls)):
            st.markdown(f"**Heterogeneity between {what.lower()}**", help=H["heterogeneity"])
            for sentence in clinical.heterogeneity_sentences(v, cls):
                st.markdown("- " + sentence)
        cal = views.calibration_error_table(v, cls=cls)
        if len(cal):
            st.markdown("**Risk-optimised calibration error per group**", help=views.CALIBRATION_ERROR_HELP)
            st.dataframe(cal, key="val_cal_error", hide_index=True, width="stretch")
        judged = list(clinical.class_rows(v.groups, cls).query("status != 'too small'")["group"])
        if judged:
            if st.session_state.get("view__val_group_table") not in judged:
                st.session_state["view__val_group_table"] = judged[0]
            shown = st.selectbox(f"Every metric of one {'centre' if v.clusters else 'group'}", judged,
                                 **kept("view__val_group_table"), help="The metrics table of one subgroup or centre.")
            group_table = views.metrics_table(v, cls=cls, group=shown)
            st.dataframe(group_table, key="val_group_metrics", hide_index=True, width="stretch",
                         height=35 * (len(group_table) + 1) + 3)

    recal = views.recalibration_table(v, cls=cls)
    if len(recal):
        st.subheader("Recalibration", help=H["recalibration"], anchor=False)
        st.markdown(markdown(views.recalibration_text(v, cls=cls)))
        st.dataframe(recal, key="val_recalibration", hide_index=True, width="stretch")
        clinical.recalibrated_download(st, v, label, pred, cls)

    st.subheader("Sample size", anchor=False)
    st.markdown(markdown(views.sample_size_text(v, cls=cls)))

    d1, d2 = st.columns(2)
    clinical.report_download(d1, v, label, pred, cls)
    clinical.metrics_download(d2, v, label, pred, cls)


if cls is None:
    st.info(f"The data have {pred.d} classes: choose the class to validate against the others.")
elif settings["thresholds"][0] >= settings["thresholds"][1]:
    st.error("The threshold range is empty: move its two ends apart under **Threshold range**.",
             icon=":material/error:")
else:
    v = clinical.run_validation(label, pred, cls, settings)  # a job: its progress, or its failure, shows here
    if v is not None:
        show(v)

with st.expander("Plan a validation study", icon=":material/calculate:"):
    clinical.planning()
