"""Results page: verdict, risk curves, forest plot, summary table and downloads."""

import streamlit as st

import ui
from calibdash.display import plots
from calibdash.display.text import code
from calibdash.display.verdict import verdict

st.title("Results")
label, pred, _ = ui.current_dataset()
results = ui.active_results()


def show(results):
    notion = ui.notion_picker(results)
    res = results[notion]
    positive = ui.positive_class(pred)
    st.caption(f"Data: {code(label)} ({res.config['n']:,} rows; {res.config['n_test']:,} held out"
               + (f"; positive class {code(positive)}" if positive else "") + f"). Computed in {res.config['seconds']:.1f} s.")

    v = verdict(res)
    with st.container(border=True, key="verdict"):
        st.markdown(v.markdown())

    st.subheader("Risk against hyperparameter", help=ui.HELP["risk"])
    st.caption("Each panel: mean validation risk over folds (line), +- one paired standard error of the fold-by-fold "
               "difference to the chosen value (band; where it stays above the diamond, the data tell the values "
               "apart), the chosen value (red diamond), the 15-bin baseline's risk (dotted) and the risk of h = 0, "
               "perfectly calibrated (dashed). Lower is better.")
    st.plotly_chart(plots.risk_curves(res), key="risk_curves", width="stretch")

    st.subheader("Estimates", help=ui.HELP["interval"])
    st.plotly_chart(plots.forest_plot(res), key="forest", width="stretch")

    st.subheader("Summary table", help=ui.HELP["paired"])
    table = res.summary_with_reference()
    st.dataframe(table, key="summary_table", hide_index=True, width="stretch",
                 column_config={
                     "val_risk": st.column_config.NumberColumn("risk", help=ui.HELP["risk"], format="%.5g"),
                     "risk_diff": st.column_config.NumberColumn("risk above best", help=ui.HELP["paired"], format="%.3g"),
                     "risk_diff_se": st.column_config.NumberColumn("its s.e.", format="%.2g"),
                     "tied": st.column_config.CheckboxColumn("tied with best", help=ui.HELP["paired"]),
                     "sqrt_risk_x100": st.column_config.NumberColumn("sqrt(risk) x100", format="%.3f", help="As in the paper's tables."),
                     "estimate": st.column_config.NumberColumn("calibration error", format="%.4f",
                                                               help="Estimated error (0 = calibrated)."),
                     "ci_low": st.column_config.NumberColumn("95% low", format="%.4f", help=ui.HELP["interval"]),
                     "ci_high": st.column_config.NumberColumn("95% high", format="%.4f", help=ui.HELP["interval"]),
                     "at_grid_edge": st.column_config.CheckboxColumn("at grid edge",
                                                                     help="The chosen value is the smallest or largest tried."),
                 })

    st.subheader("All estimates, by what they estimate", help=ui.HELP["others"])
    st.caption("The ranked estimators and the literature's, on the same holdout rows, in one panel per quantity: "
               "an L1 error, a squared kernel error and an L2 error are different numbers, never to be compared "
               "across panels. Red: the estimator the risk selected.")
    st.plotly_chart(plots.estimates_by_quantity(res), key="estimates_by_quantity", width="stretch")
    if len(res.others):
        others = res.others.assign(p_value=res.others["p_value"].where(res.others["p_value"].notna(), None))
        st.dataframe(others[["quantity", "estimator", "label", "estimate", "estimate_se", "ci_low", "ci_high", "p_value",
                             "details", "reference"]],
                     key="others_table", hide_index=True, width="stretch",
                     column_config={
                         "estimate": st.column_config.NumberColumn("estimate", format="%.4g"),
                         "estimate_se": st.column_config.NumberColumn("s.e.", format="%.2g"),
                         "ci_low": st.column_config.NumberColumn("95% low", format="%.4g", help=ui.HELP["interval"]),
                         "ci_high": st.column_config.NumberColumn("95% high", format="%.4g", help=ui.HELP["interval"]),
                         "p_value": st.column_config.NumberColumn(
                             "p-value", format="%.3g",
                             help="Of the calibration test of 'the model is calibrated' (SKCE rows): small means the "
                                  "data are unlikely under a calibrated model."),
                     })

    c1, c2, c3, c4 = st.columns(4)
    slug = notion.replace("-", "_")
    c1.download_button("Summary (CSV)", res.summary.to_csv(index=False), f"summary_{slug}.csv", "text/csv", key="dl_summary",
                       help="One row per estimator, full precision.")
    c2.download_button("Risk curves (CSV)", res.curves.to_csv(index=False), f"curves_{slug}.csv", "text/csv", key="dl_curves",
                       help="Validation risk per estimator, hyperparameter value and fold.")
    ui.results_download(c3, results, label)
    ui.report_download(c4, results, pred, label)


# No st.stop() here: the sidebar is drawn after the page, and must still be drawn.
if results:
    show(results)
else:
    ui.show_no_result()
