"""Compare page: several models on the same labels, a paired test of their calibration."""

import streamlit as st

from calibdash.display import plots
from calibdash.display import reliability as rl
from calibdash.display.text import code
from calibdash.estimators.registry import available_estimators
from calibdash.formatting import p_statement
from calibdash.io.export import csv_text
from calibdash.lab import demo
from calibdash_app import data, downloads, runs
from calibdash_app.help import HELP, HELP_COMPARE
from calibdash_app.memo import memo
from calibdash_app.session import kept
from calibdash_app.settings import COMPARE_DEFAULT_MODELS, NOTIONS

ss = st.session_state
H = HELP_COMPARE
st.title("Compare models")
st.markdown(
    "Is the new model better calibrated than the old one, **on the same rows**? Every model is evaluated with the "
    "same split and seed and measured by the same estimator; the difference between two models gets a paired "
    "interval and a p-value. Accuracy and the Brier score are shown beside calibration: they answer other questions."
)

ss.setdefault("view__cmp_source", "demo")
st.radio("Models", ["demo", "upload"], **kept("view__cmp_source"), horizontal=True, help=H["models"],
         format_func={"demo": "Demo classifiers (digits)", "upload": "Upload prediction files"}.get)

models, problems = {}, []
if ss["view__cmp_source"] == "demo":
    ss.setdefault("view__cmp_demo", list(COMPARE_DEFAULT_MODELS))
    chosen = st.multiselect("Demo classifiers (all on the same 1,797 digits)", list(demo.DIGITS_MODELS),
                            **kept("view__cmp_demo"), help=H["models"])
    for name in chosen:
        models[name] = data.demo_predictions(name)
else:
    c1, c2 = st.columns(2)
    files = c1.file_uploader("Prediction files (two or more)", type=["npy", "npz", "csv", "tsv", "txt", "parquet"],
                             accept_multiple_files=True, key="cmp_upload_predictions",
                             on_change=data.forget_compare_uploads,
                             help="One file per model: probabilities or logits for the same rows, in the same order. "
                             "A file may hold its labels too (.npz with two arrays, or a label column).")
    labels_file = c2.file_uploader("Labels (optional, shared by all)", type=["npy", "npz", "csv", "tsv", "txt", "parquet"],
                                   key="cmp_upload_labels", on_change=data.forget_compare_uploads,
                                   help="Needed when the prediction files have no labels: one label per row.")
    if files:
        for message in data.load_compare_uploads(files, labels_file):
            st.error(message, icon=":material/error:")
        models = dict(ss.get("cmp_uploads", {}))
    elif ss.get("cmp_uploads"):  # uploaded before a page change or a reload, which empty the uploaders
        models = dict(ss["cmp_uploads"])
        st.caption("In use: " + ", ".join(code(name) for name in models)
                   + " (uploaded earlier; upload files here to compare others).")
    else:
        st.info("Upload at least two prediction files for the same rows.")

c1, c2, c3 = st.columns(3)
ss.setdefault("view__cmp_notion", "top-label")
ss.setdefault("view__cmp_estimator", "auto")
ss.setdefault("view__cmp_seed", 0)
notion = c1.radio("Notion", list(NOTIONS), **kept("view__cmp_notion"), help=HELP["notion"])
options = ["auto"] + available_estimators(notion)
if ss["view__cmp_estimator"] not in options:
    ss["view__cmp_estimator"] = "auto"
c2.selectbox("Estimator", options, **kept("view__cmp_estimator"), help=H["estimator"],
             format_func=lambda e: "auto (lowest total risk)" if e == "auto" else e)
c3.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, **kept("view__cmp_seed"), help=HELP["seed"])

settings = {"notion": notion, "estimator": None if ss["view__cmp_estimator"] == "auto" else ss["view__cmp_estimator"],
            "seed": int(ss["view__cmp_seed"])}


def drawn(res):
    """The comparison's figures and tables, made once per comparison (a rerun of the page
    draws them again; the overlaid diagrams bootstrap every model's rows)."""
    tables = {name: rl.reliability_table(*rl.top_label(P, res.labels), n_resamples=100) for name, P in res.probs.items()}
    return {"estimates": plots.comparison_figure(res), "models": plots.comparison_models_points(res.models),
            "pairs": plots.pairs_figure(res), "pairs_table": plots.comparison_pairs_points(res),
            "reliability": plots.overlaid_reliability_figure(tables)}


def show(res):
    views = memo("compare", runs.comparison_key(models, settings), lambda: drawn(res))
    st.caption(f"{res.config['n']:,} rows, {res.config['n_test']:,} held out; estimator **{res.estimator}** "
               f"({res.config['estimator_chosen_by']}). Intervals and p-values cover which rows were held out and "
               "which rows fitted the fold models.")
    how = ("the one you chose" if res.config["estimator_chosen_by"] == "user" else
           "the candidate whose validation risk, summed over the models, is lowest")
    st.markdown(
        f"**Why one estimator.** Estimators differ in their bias, so two models are compared only when measured the "
        f"same way: every model here is measured with **{res.estimator}**, {how}. Each model's own Results page "
        "chooses the estimator with the lowest risk for that model alone, so its estimate there (and the estimator "
        "it names) can differ from the one here; both are honest, they answer different questions.")
    st.subheader("Calibration, accuracy and Brier score", help=H["brier"])
    st.caption("Left: estimated calibration error in percentage points with a 95% interval (0 = calibrated). "
               "Middle and right: accuracy and Brier score, which mix in how often the model is right.")
    st.plotly_chart(views["estimates"], key="cmp_estimates", width="stretch")
    st.dataframe(views["models"], key="cmp_models_table", hide_index=True, width="stretch",
                 column_config={
        "accuracy": st.column_config.NumberColumn("accuracy (% correct)", format="%.2f", help=H["accuracy"]),
        "brier": st.column_config.NumberColumn("Brier", format="%.4f", help=H["brier"]),
        "estimate": st.column_config.NumberColumn("calibration error (points)", format="%.2f"),
        "ci_low": st.column_config.NumberColumn("95% low (points)", format="%.2f"),
        "ci_high": st.column_config.NumberColumn("95% high (points)", format="%.2f"),
        "val_risk": st.column_config.NumberColumn("risk", format="%.5g", help=HELP["risk"]),
    })

    st.subheader("Differences between models", help=H["difference"])
    best = res.pairs.sort_values("p_value").iloc[0]
    better, worse = (best["model_a"], best["model_b"]) if best["difference"] < 0 else (best["model_b"], best["model_a"])
    if best["p_value"] < 0.05:
        errors = {best["model_a"]: best["estimate_a"], best["model_b"]: best["estimate_b"]}
        p = p_statement(best["p_value"])
        st.markdown(f"**{code(better)}** is better calibrated than **{code(worse)}**: calibration errors of "
                    f"{100 * errors[better]:.2f} and {100 * errors[worse]:.2f} percentage points ({p}; the test "
                    "compares their squared errors: equal squares are equal errors).")
    else:
        st.markdown("No pair differs clearly in calibration (every p-value is at least 0.05).")
    st.caption("Difference of the calibration errors (model a minus model b) in percentage points, with its 95% "
               f"interval; a pair without one says why on hover (\"{plots.NO_PAIR_INTERVAL}\"), its table row is "
               "blank there. Red: p < 0.05.")
    st.plotly_chart(views["pairs"], key="cmp_pairs", width="stretch")
    st.dataframe(views["pairs_table"], key="cmp_pairs_table", hide_index=True, width="stretch",
                 column_config={
        "error_difference": st.column_config.NumberColumn("difference of errors (points)", format="%.2f",
                                                          help=H["difference"]),
        "error_difference_low": st.column_config.NumberColumn("95% low (points)", format="%.2f", help=H["difference"]),
        "error_difference_high": st.column_config.NumberColumn("95% high (points)", format="%.2f", help=H["difference"]),
        "p_value": st.column_config.NumberColumn("p-value", format="%.3g", help=H["p_value"]),
        "estimate_a": st.column_config.NumberColumn("error of a (points)", format="%.2f"),
        "estimate_b": st.column_config.NumberColumn("error of b (points)", format="%.2f"),
    })

    st.subheader("Reliability diagrams, overlaid")
    st.caption("Top-label reliability of every model (15 equal-width bins, all rows): the closer to the dashed "
               "diagonal, the better calibrated.")
    st.plotly_chart(views["reliability"], key="cmp_reliability", width="stretch")

    d1, d2, d3 = st.columns(3)
    d1.download_button("Models table (CSV)", csv_text(res.models), downloads.comparison_file_name("compare_models", "csv", res),
                       "text/csv", key="dl_cmp_models", on_click="ignore", help=H["models_csv"])
    d2.download_button("Pairs table (CSV)", csv_text(res.pairs), downloads.comparison_file_name("compare_pairs", "csv", res),
                       "text/csv", key="dl_cmp_pairs", on_click="ignore", help=H["pairs_csv"])
    downloads.comparison_report_download(d3, res, models)


if len(models) < 2:
    if ss["view__cmp_source"] == "demo":
        st.info("Choose at least two classifiers.")
else:
    res = runs.run_comparison(models, settings)  # a job: its progress, or its failure, shows here
    if res is not None:
        show(res)
