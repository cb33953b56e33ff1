"""Results page: verdict, risk curves, forest plot, summary table and downloads."""

import streamlit as st

from calibdash.display import plots
from calibdash.display.text import code
from calibdash.display.verdict import verdict
from calibdash.io.export import csv_text
from calibdash_app import data, downloads, runs, widgets
from calibdash_app.help import HELP

st.title("Results")
label, pred, _ = data.current_dataset()
results = runs.active_results()


def show(results):
    notion = widgets.notion_picker(results)
    res = results[notion]
    positive = data.positive_class(pred)
    st.caption(f"Data: {code(label)} ({res.config['n']:,} rows; {res.config['n_test']:,} held out"
               + (f"; positive class {code(positive)}" if positive else "") + f"). Computed in {res.config['seconds']:.1f} s.")

    v = verdict(res)
    with st.container(border=True, key="verdict"):
        st.markdown(v.markdown())
        widgets.grid_extension_buttons(notion, res)

    st.subheader("Risk against hyperparameter", help=HELP["risk"])
    st.caption("Each panel: mean validation risk over folds (line), +- one paired standard error of the fold-by-fold "
               "difference to the chosen value (band; where it stays above the diamond, the data tell the values "
               "apart), the chosen value (red diamond), the 15-bin baseline's risk (dotted) and the risk of h = 0, "
               "perfectly calibrated (dashed). Lower is better.")
    st.plotly_chart(plots.risk_curves(res), key="risk_curves", width="stretch")

    st.subheader("Estimates", help=HELP["interval"])
    st.plotly_chart(plots.forest_plot(res), key="forest", width="stretch")

    st.subheader("Summary table", help=HELP["paired"])
    widgets.number_table(res.summary_with_reference(), key="summary_table", numbers={
        "val_risk": ("risk", ".5g", HELP["risk"]),
        "risk_diff": ("risk above best", ".3g", HELP["paired"]),
        "risk_diff_se": ("its s.e.", ".2g", None),
        "sqrt_risk_x100": ("sqrt(risk) x100", ".3f", "As in the paper's tables."),
        "estimate": ("calibration error", ".4f", "Estimated error (0 = calibrated)."),
        "ci_low": ("95% low", ".4f", HELP["interval"]),
        "ci_high": ("95% high", ".4f", HELP["interval"]),
    }, column_config={
        "tied": st.column_config.CheckboxColumn("tied with best", help=HELP["paired"]),
        "at_grid_edge": st.column_config.CheckboxColumn("at grid edge", help="The chosen value is the smallest or largest tried."),
    })

    st.subheader("All estimates, by what they estimate", help=HELP["others"] + "\n\n" + HELP["fifteen"])
    st.caption("The ranked estimators and the literature's, on the same holdout rows, in one panel per quantity: "
               "an L1 error, a squared kernel error and an L2 error are different numbers, never to be compared "
               "across panels. Red: the estimator the risk selected.")
    st.plotly_chart(plots.estimates_by_quantity(res), key="estimates_by_quantity", width="stretch")
    if len(res.others):
        widgets.number_table(res.others[["quantity", "estimator", "label", "estimate", "estimate_se", "ci_low", "ci_high", "p_value",
                                    "details", "reference"]], key="others_table", numbers={
            "estimate": ("estimate", ".4g", None),
            "estimate_se": ("s.e.", ".2g", None),
            "ci_low": ("95% low", ".4g", HELP["interval"]),
            "ci_high": ("95% high", ".4g", HELP["interval"]),
            "p_value": ("p-value", ".3g", "Of the calibration test of 'the model is calibrated' (SKCE rows): small means the "
                                          "data are unlikely under a calibrated model."),
        })

    c1, c2, c3, c4 = st.columns(4)
    name = dict(notion=notion, random_state=res.config["call"]["random_state"])
    c1.download_button("Summary (CSV)", csv_text(res.summary), downloads.download_name("summary", "csv", label, **name),
                       "text/csv", key="dl_summary", on_click="ignore", help="One row per estimator, full precision.")
    c2.download_button("Risk curves (CSV)", csv_text(res.curves), downloads.download_name("curves", "csv", label, **name),
                       "text/csv", key="dl_curves", on_click="ignore", help="Validation risk per estimator, hyperparameter value and fold.")
    downloads.results_download(c3, results, label)
    downloads.report_download(c4, results, pred, label)


# No st.stop() here: the sidebar is drawn after the page, and must still be drawn.
if results:
    show(results)
else:
    widgets.show_no_result()
