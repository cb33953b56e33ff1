"""Evaluate page: choose notions, estimators, grids and the split; run with a progress bar."""

import streamlit as st

from calibdash.display.text import code, markdown
from calibdash.estimators.registry import DEFAULT_ESTIMATORS, available_estimators, tuned_param
from calibdash.metrics.literature import DEFAULT_OTHERS, OTHER_ESTIMATORS, available_others
from calibdash_app import data, runs, settings
from calibdash_app.app_pages import page_path
from calibdash_app.help import HELP
from calibdash_app.session import kept

ss = st.session_state
st.title("Evaluate")
label, pred, _ = data.current_dataset()
st.caption(f"Data: {code(label)} ({pred.n:,} rows, {pred.d} classes). Defaults are the paper's settings.")

ss.setdefault("cfg__notions", list(settings.DEFAULT_NOTIONS))
st.multiselect("Notions of calibration", list(settings.NOTIONS), **kept("cfg__notions"), help=HELP["notion"])

for notion in ss["cfg__notions"]:
    with st.expander(f"{notion}: estimators and hyperparameter grids", expanded=False):
        key = f"cfg__est__{notion}"
        ss.setdefault(key, list(DEFAULT_ESTIMATORS[notion]))
        st.multiselect("Estimators", available_estimators(notion), **kept(key), help=HELP["estimators"])
        for name in ss[key]:
            if not settings.editable(name):
                st.caption(settings.estimator_summary(name))
                continue
            param = tuned_param(name)
            gkey = f"cfg__grid__{notion}__{name}"
            ss.setdefault(gkey, settings.default_grid_text(notion, name))
            # A text area of its content's height: a long grid (23 bandwidths) shows in full, wrapped.
            st.text_area(f"{name}: {param} (comma-separated values)", **kept(gkey), height="content",
                         help=settings.parameter_help(param))
        okey = f"cfg__others__{notion}"
        ss.setdefault(okey, list(DEFAULT_OTHERS[notion]))
        st.multiselect("Other estimators (not ranked by the risk)", available_others(notion), **kept(okey),
                       format_func=lambda n: f"{n}: {OTHER_ESTIMATORS[n].label}", help=HELP["others"])

c1, c2, c3 = st.columns(3)
ss.setdefault("cfg__test_size", 0.2)
ss.setdefault("cfg__n_folds", 5)
ss.setdefault("cfg__seed", 0)
c1.slider("Holdout fraction", 0.1, 0.5, step=0.05, **kept("cfg__test_size"), help=HELP["test_size"])
c2.number_input("Folds", min_value=2, max_value=10, step=1, **kept("cfg__n_folds"), help=HELP["n_folds"])
c3.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, **kept("cfg__seed"), help=HELP["seed"])

b1, b2 = st.columns([1, 4])
if b2.button("Reset to the paper's defaults", key="reset", help="Restore every setting on this page."):
    for k in [k for k in ss.keys() if isinstance(k, str) and k.startswith("cfg__")]:
        del ss[k]
    st.rerun()
if b1.button("Run", key="run", type="primary",
             help="Tune every estimator by cross-validated risk and estimate the error on the holdout rows."):
    try:
        configs = settings.read_settings(n_rows=pred.n)
    except ValueError as e:
        ss["run_message"] = (pred.sha256, False, markdown(e))
    else:
        # A job: its progress is shown at the top of the page, and its outcome here once over.
        ss["run_message"] = (pred.sha256, *runs.run_configs(pred, configs, label=label))

# The last message belongs to the data it was about; another data set starts clean.
if ss.get("run_message") and ss["run_message"][0] == pred.sha256 and ss["run_message"][2]:
    _, ok, message = ss["run_message"]
    {True: st.success, False: st.error, None: st.info}[ok](message)
    if ok:
        st.page_link(page_path("results"), label="See the results", icon=":material/insights:")
