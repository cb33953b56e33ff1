"""Results page: verdict, risk curves, forest plot, summary table and downloads."""

import streamlit as st

from calibdash.display import plots, units
from calibdash.display.text import code
from calibdash.display.verdict import verdict
from calibdash.formatting import format_p
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
    widgets.number_table(units.summary_points(res), key="summary_table", pinned=("estimate",), numbers={
        "estimate": ("calibration error (points)", ".2f", "Estimated error in percentage points (0 = calibrated)."),
        "ci_low": ("95% low (points)", ".2f", HELP["interval"]),
        "ci_high": ("95% high (points)", ".2f", HELP["interval"]),
        "val_risk": ("risk", ".5g", HELP["risk"]),
        "risk_diff": ("risk above best", ".3g", HELP["paired"]),
        "risk_diff_se": ("its s.e.", ".2g", None),
        "sqrt_risk_x100": ("100 √risk (a score, not an error)", ".3f", HELP["sqrt_risk"]),
    }, column_config={
        "estimator": st.column_config.TextColumn("estimator", pinned=True),
        "tied": st.column_config.CheckboxColumn("tied with best", help=HELP["paired"]),
        "at_grid_edge": st.column_config.CheckboxColumn("at grid edge", help="The chosen value is the smallest or largest tried."),
    })

    st.subheader("All estimates, by what they estimate", help=HELP["others"] + "\n\n" + HELP["fifteen"])
    st.caption("The ranked estimators and the literature's, on the same holdout rows, in one panel per quantity: "
               "an L1 error, a squared kernel error and an L2 error are different numbers, never to be compared "
               "across panels. Red: the estimator the risk selected.")
    st.plotly_chart(plots.estimates_by_quantity(res), key="estimates_by_quantity", width="stretch")
    for quantity, unit, table in units.literature_tables(res.others):
        st.markdown(f"**{quantity}**" + ("" if f"({unit})" in quantity else f", in {unit}"))
        u = units.header_unit(unit)
        fmt = ".2f" if unit == units.PERCENTAGE_POINTS else ".4g"  # points: two decimals, as in every table
        widgets.number_table(table, key=f"others_table__{quantity}", numbers={
            "estimate": (f"estimate ({u})", fmt, None),
            "estimate_se": (f"s.e. ({u})", ".2f" if unit == units.PERCENTAGE_POINTS else ".2g", None),
            "ci_low": (f"95% low ({u})", fmt, HELP["interval"]),
            "ci_high": (f"95% high ({u})", fmt, HELP["interval"]),
            "p_value": ("p-value (a probability)", format_p, "Of the calibration test of 'the model is calibrated' (SKCE "
                                                          "rows): small means the data are unlikely under a calibrated model."),
        })

    c1, c2, c3, c4 = st.columns(4)
    name = dict(notion=notion, random_state=res.config["call"]["random_state"])
    c1.download_button("Summary (CSV)", csv_text(res.summary), downloads.download_name("summary", "csv", label, **name),
                       "text/csv", key="dl_summary", on_click="ignore", help=HELP["summary_csv"])
    c2.download_button("Risk curves (CSV)", csv_text(res.curves), downloads.download_name("curves", "csv", label, **name),
                       "text/csv", key="dl_curves", on_click="ignore", help="Validation risk per estimator, hyperparameter value and fold.")
    downloads.results_download(c3, results, label)
    downloads.report_download(c4, results, pred, label)


# No st.stop() here: the sidebar is drawn after the page, and must still be drawn.
if results:
    show(results)
else:
    widgets.show_no_result()
