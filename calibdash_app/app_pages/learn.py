"""Learn page: a simulation lab with known truth, and the paper's Figure 1."""

import streamlit as st

from calibdash.display import plots
from calibdash.estimators.registry import available_estimators
from calibdash.io.export import csv_text
from calibdash.lab.studies import describe_bias, summarise_figure1
from calibdash_app import downloads, runs, settings
from calibdash_app.help import HELP, HELP_COMPARE
from calibdash_app.session import kept

ss = st.session_state
H = HELP_COMPARE
st.title("Learn: a simulation lab with known truth")
st.markdown(
    "On real data nobody knows the true calibration error, so nobody can say which estimate is right. In a "
    "simulation the true probabilities are known, and with them the true error: here every estimator can be checked."
)

st.header("1. Estimates against the truth as the sample grows")
c1, c2, c3 = st.columns([1.4, 1, 1])
ss.setdefault("view__lab_scenario", next(iter(settings.LAB_SCENARIOS)))
label = c1.selectbox("Scenario", list(settings.LAB_SCENARIOS), **kept("view__lab_scenario"), help=H["scenario"])
kind, params = settings.LAB_SCENARIOS[label]
params = dict(params)
slider = settings.LAB_SLIDERS.get(kind)
if slider is not None:
    ss.setdefault(slider.key, slider.default)
    params[slider.parameter] = c2.slider(slider.label, slider.low, slider.high, step=slider.step, key=slider.key,
                                         help=H[slider.help])
ss.setdefault("view__lab_notion", "top-label")
notion = c3.radio("Notion", list(settings.NOTIONS), **kept("view__lab_notion"), help=HELP["notion"])

c1, c2, c3, c4 = st.columns([1.6, 1.4, 1, 1])
ests = available_estimators(notion)
# The estimators asked for, over every notion: one the notion does not support is left out
# of the list while it is shown (and said so), and back when a notion that supports it is.
ss.setdefault("view__lab_wanted", ["bins", "kde", "temperature"])
ss["view__lab_estimators"] = [e for e in ss["view__lab_wanted"] if e in ests]
hidden = [e for e in ss["view__lab_wanted"] if e not in ests]


def remember_estimators():
    ss["view__lab_wanted"] = ss["view__lab_estimators"] + [e for e in ss["view__lab_wanted"] if e not in ests]


estimators = c1.multiselect("Estimators", ests, **kept("view__lab_estimators"), help=HELP["estimators"], wrap=True,
                            on_change=remember_estimators)
if hidden:
    c1.caption(f"Not defined for {notion} calibration, so left out here (kept for the other notions): "
               f"{', '.join(hidden)}.")
ss.setdefault("view__lab_ns", [250, 500, 1000])
ns = c2.multiselect("Sample sizes", [100, 250, 500, 1000, 2000, 5000], **kept("view__lab_ns"), help=H["ns"],
                    wrap=True)
ss.setdefault("view__lab_repeats", 5)
repeats = c3.slider("Draws per size", 2, 30, **kept("view__lab_repeats"), help=H["repeats"])
ss.setdefault("view__lab_seed", 0)
seed = c4.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, **kept("view__lab_seed"), help=HELP["seed"])

if not estimators or not ns:
    st.info("Choose at least one estimator and one sample size.")
else:
    # a job: its progress, or its failure, shows here
    out = runs.lab_estimates(kind, tuple(sorted(params.items())), tuple(sorted(ns)), int(repeats), tuple(estimators),
                             notion, int(seed))
    if out is not None:
        df, summary, truth, scen_label = out
        st.caption(f"{scen_label}; true {notion} calibration error: **{100 * truth:.2f} percentage points**. "
                   f"Every draw runs the full pipeline (tuning by the risk, holdout estimate).")
        st.plotly_chart(plots.lab_estimates_figure(summary, truth), key="lab_estimates", width="stretch")
        st.markdown(
            "**What it teaches.** Each line is an estimator's average over the draws, the band its spread from draw to "
            "draw, the dashed line the truth. The spread shrinks as n grows; what remains is *bias*. "
            + describe_bias(summary) + " Squaring a noisy estimate pushes an estimate up on small samples, most of "
            "all for a calibrated model; a recalibration map too simple for the true miscalibration (temperature "
            "scaling has one parameter) can stay below the truth at any n. That is why the estimator matters, and "
            "why the app chooses it by the risk."
        )
        # the chart's unit, percentage points, in the table too
        points = {
            "mean": st.column_config.NumberColumn("mean estimate (points)", format="%.2f"),
            "sd": st.column_config.NumberColumn("spread (sd, points)", format="%.2f", help="Standard deviation over draws."),
            "se_mean": st.column_config.NumberColumn("s.e. of mean (points)", format="%.2f"),
            "bias": st.column_config.NumberColumn("bias (points)", format="%+.2f", help="Mean estimate minus the truth."),
            "rmse": st.column_config.NumberColumn("RMSE (points)", format="%.2f", help="Root mean squared error against the truth."),
            "truth": st.column_config.NumberColumn("truth (points)", format="%.2f"),
        }
        st.dataframe(plots.lab_summary_points(summary), key="lab_summary_table", hide_index=True, width="stretch",
                     column_config=points)
        st.download_button("Estimates (CSV)", csv_text(df),
                           downloads.download_name("lab_estimates", "csv", scen_label, notion=notion, random_state=int(seed)), "text/csv",
                           key="dl_lab_estimates", on_click="ignore", help="One row per sample size, draw and estimator.")

st.header("2. The paper's Figure 1: the risk finds the truth")
st.markdown(
    "The paper's simulation (5 classes, under-confident model). The candidate h_theta recalibrates the model with "
    "softmax(theta/0.3 x log p); theta = 1 gives back the true probabilities exactly. The risk (Eq. 20) of each "
    "candidate is computed on each simulated data set."
)
c1, c2, c3 = st.columns(3)
ss.setdefault("view__lab_f1_n", 500)
ss.setdefault("view__lab_f1_seeds", 100)
ss.setdefault("view__lab_f1_seed", 0)
f1_n = c1.select_slider("Rows per data set", [100, 250, 500, 1000, 2000], **kept("view__lab_f1_n"), help=H["f1_n"])
f1_seeds = c2.slider("Seeds", 5, 200, step=5, **kept("view__lab_f1_seeds"), help=H["f1_seeds"])
f1_seed = c3.number_input("Base seed", min_value=0, max_value=2**31 - 1, step=1, **kept("view__lab_f1_seed"),
                          help=HELP["seed"])
fig1 = runs.lab_figure1(int(f1_n), int(f1_seeds), int(f1_seed))
if fig1 is not None:
    best = summarise_figure1(fig1).attrs["argmin"]
    st.metric("theta of the lowest mean risk", f"{best:.3g}", help="The paper's Figure 1 finds the minimum at theta = 1.")
    st.plotly_chart(plots.figure1_figure(fig1), key="lab_figure1", width="stretch")
    st.markdown(
        "**What it teaches.** On a single data set (grey lines) the risk is noisy and its minimum wanders; averaged over "
        "many data sets (blue) it is lowest at theta = 1, the true calibration map. The risk can therefore rank "
        "estimators and choose their settings without knowing the truth: on real data it is all we have."
    )
    st.download_button("Risk per theta and seed (CSV)", csv_text(fig1),
                       downloads.download_name("figure1", "csv", f"{int(f1_seeds)} data sets of {int(f1_n)} rows",
                                               random_state=int(f1_seed)),
                       "text/csv", key="dl_lab_figure1", on_click="ignore", help="One row per theta and seed.")
