"""Reliability page: reliability diagrams, the selected recalibration map, per-class panels, simplex."""

import numpy as np
import streamlit as st

import ui
from calibdash import plots
from calibdash import reliability as rl
from calibdash.pipeline import make_split

ss = st.session_state
st.title("Reliability")
label, pred, _ = ui.current_dataset()
results = ui.active_results()

c1, c2, c3 = st.columns(3)
ss.setdefault("rel__bins", 15)
ss.setdefault("rel__strategy", "uniform")
ss.setdefault("rel__boot", 200)
c1.slider("Bins", 5, 50, key="rel__bins", help=ui.HELP["bins"])
c2.radio("Binning", ["uniform", "quantile"], key="rel__strategy", horizontal=True, help=ui.HELP["strategy"],
         format_func={"uniform": "equal width", "quantile": "equal mass"}.get)
c3.number_input("Bootstrap resamples", 0, 2000, step=100, key="rel__boot", help=ui.HELP["bootstrap"])
opts = dict(n_bins=ss["rel__bins"], strategy=ss["rel__strategy"], n_boot=int(ss["rel__boot"]))

notion = ui.notion_picker(results) if results else None


def holdout(res):
    """Rows the selected estimator never saw, so its recalibration map is shown honestly."""
    call = res.config["call"]
    test, _ = make_split(pred.n, call["test_size"], call["n_folds"], call["random_state"])
    return np.sort(test)


top = results.get("top-label")
recal = None
if top is not None:
    idx = holdout(top)
    name, G = rl.selected_recalibration(top, pred.probs[idx])
    if G is not None:
        recal = (pred.probs[idx].max(axis=1), G[:, 0], f"recalibrated by {name} (holdout rows)")
table = rl.reliability_table(*rl.top_label(pred.probs, pred.labels), **opts)
st.subheader("Top-label reliability diagram")
st.caption("Bars: how often the predicted class is right, per confidence bin (all rows), with a 90% bootstrap band. "
           "On the dashed diagonal the model would be calibrated. Orange: the smooth estimate of P(correct | confidence) "
           "by the estimator the risk selected. Binned ECE of this diagram: "
           f"{100 * table.attrs['ece']:.2f} points.")
st.plotly_chart(plots.reliability_figure(table, title=None, recal=recal), key="reliability_diagram", width="stretch")

if notion in ("canonical", "classwise"):
    res = results[notion]
    st.subheader(f"Per-class reliability ({notion})")
    order = np.argsort(-np.bincount(pred.labels, minlength=pred.d))
    ss.setdefault("rel__classes", [pred.class_names[k] for k in sorted(order[: min(pred.d, 6)])])
    ss["rel__classes"] = [c for c in ss["rel__classes"] if c in pred.class_names] or [pred.class_names[0]]
    chosen = st.multiselect("Classes shown", list(pred.class_names), key="rel__classes",
                            help="Each panel compares the predicted probability of one class with how often that class occurs.")
    classes = [pred.class_names.index(c) for c in chosen]
    idx = holdout(res)
    name, G = rl.selected_recalibration(res, pred.probs[idx])
    recal_k = None if G is None or G.shape[1] != pred.d else {k: (pred.probs[idx, k], G[:, k]) for k in classes}
    if classes:
        tables = rl.per_class_tables(pred.probs, pred.labels, classes, **opts)
        st.plotly_chart(plots.per_class_figure(tables, pred.class_names, recal_k), key="per_class", width="stretch")
    if pred.d == 3:
        st.subheader("Simplex")
        st.caption("Each dot is a prediction in the triangle of three-class probability vectors; orange is where the "
                   f"selected estimator ({name}) moves it once recalibrated (holdout rows).")
        st.plotly_chart(plots.ternary_figure(pred.probs[idx], G, pred.class_names, labels=pred.labels[idx]),
                        key="ternary", width="stretch")
elif not results:
    st.info("Run an evaluation (Evaluate page) to add the selected estimator's recalibration curve.")
