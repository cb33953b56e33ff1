"""Reliability page: reliability diagrams, the selected recalibration map, per-class panels, simplex."""

import streamlit as st

from calibdash.display import plots
from calibdash.display import reliability as rl
from calibdash.display.text import markdown
from calibdash.display.views import most_frequent_classes, per_class_view, top_label_view
from calibdash_app import data, runs, widgets
from calibdash_app.help import HELP
from calibdash_app.memo import memo
from calibdash_app.session import kept

ss = st.session_state
st.title("Reliability")
label, pred, _ = data.current_dataset()
results = runs.active_results()
result_keys = runs.active_result_keys()

c1, c2, c3 = st.columns(3)
ss.setdefault("rel__bins", 15)
ss.setdefault("rel__strategy", "uniform")
ss.setdefault("rel__boot", 200)
c1.slider("Bins", 5, 50, **kept("rel__bins"), help=HELP["bins"])
c2.radio("Binning", ["uniform", "quantile"], **kept("rel__strategy"), horizontal=True, help=HELP["strategy"],
         format_func={"uniform": "equal width", "quantile": "equal mass"}.get)
c3.number_input("Bootstrap resamples", 0, 2000, step=100, **kept("rel__boot"), help=HELP["bootstrap"])
opts = dict(n_bins=ss["rel__bins"], strategy=ss["rel__strategy"], n_resamples=int(ss["rel__boot"]))

notion = widgets.notion_picker(results) if results else None


view = memo("top-label", (pred.sha256, result_keys.get("top-label"), *opts.items()),
            lambda: top_label_view(pred, results.get("top-label"), **opts))
st.subheader("Top-label reliability diagram", help=HELP["fifteen"])
left, right = st.columns(2)
left.caption("Bars: how often the predicted class is right, per confidence bin (all rows), with a 90% bootstrap band. "
             "On the dashed diagonal the model would be calibrated. Orange: the smooth estimate of P(correct | confidence) "
             f"by the estimator the risk selected. {rl.diagram_ece_name(ss['rel__bins'], ss['rel__strategy'], sentence=True)}: "
             f"{100 * view.table.attrs['ece']:.2f} points.")
left.plotly_chart(plots.reliability_figure(view.table, title=None, recal=view.recalibration), key="reliability_diagram",
                  width="stretch")


def continuous_curve(n_resamples, bandwidth):
    """The continuous reliability curve of the current data, kept per data set and settings."""
    return memo("continuous curve", (pred.sha256, n_resamples, bandwidth),
                lambda: rl.continuous_reliability_curve(pred.probs, pred.labels, n_resamples=n_resamples, bandwidth=bandwidth))


ss.setdefault("rel__curve_bw", "auto")
right.select_slider("Curve bandwidth", [*rl.BANDWIDTHS, 0.005, 0.01, 0.02, 0.05, 0.1], **kept("rel__curve_bw"),
                    format_func=lambda v: {"auto": "automatic", "silverman": "Silverman (the paper's)"}[v] if isinstance(v, str)
                    else f"{v:g}",
                    help="How far each prediction's influence spreads along the confidence axis (the kernel's standard "
                         "deviation). Silverman's rule is the paper's choice; when nearly all predictions are close to "
                         "100% it becomes tiny and leaves the curve without an estimate where predictions are rare. "
                         "'automatic' is Silverman's rule, but not below about a tenth of the confidence range "
                         "(shrinking as the data grow).")
try:
    curve = continuous_curve(int(ss["rel__boot"]), ss["rel__curve_bw"])
except ValueError as e:
    right.warning(markdown("The continuous reliability curve could not be drawn: ", e))
else:
    h = curve.attrs["bandwidth"]
    right.caption("No bins: the line is a kernel estimate of P(correct | confidence) at every confidence (triweight "
                  f"kernel of bandwidth {h:.3g}, reflected at the ends; Posocco & Bonnefoy 2021), the band its 90% "
                  "bootstrap band, and below, how the predictions are spread. Gaps: fewer than "
                  f"{rl.MIN_EFFECTIVE_ROWS} predictions close enough for an estimate. "
                  f"KDE ECE with this bandwidth: {100 * curve.attrs['ece']:.2f} points.")
    if h < 0.005:
        right.caption(f"The bandwidth {h:.2g} is very small (most predictions are nearly certain), so the curve has "
                      "gaps or is noisy where predictions are rare: choose a larger curve bandwidth to read it.")
    right.plotly_chart(plots.continuous_reliability_figure(curve), key="continuous_reliability", width="stretch")

if notion in ("canonical", "classwise"):
    res = results[notion]
    st.subheader(f"Per-class reliability ({notion})")
    default = most_frequent_classes(pred.labels, pred.d)
    ss.setdefault("rel__classes", [pred.class_names[k] for k in default])
    ss["rel__classes"] = [c for c in ss["rel__classes"] if c in pred.class_names] or [pred.class_names[0]]
    chosen = st.multiselect("Classes shown", list(pred.class_names), **kept("rel__classes"),
                            help="Each panel compares the predicted probability of one class with how often that class occurs.")
    classes = tuple(pred.class_names.index(c) for c in chosen)
    panels = memo("per-class", (pred.sha256, result_keys[notion], classes, *opts.items()),
                  lambda: per_class_view(pred, res, classes=list(classes), **opts))
    if panels.classes:
        st.plotly_chart(plots.per_class_figure(panels.tables, pred.class_names, panels.recalibration), key="per_class",
                        width="stretch")
    if panels.triangle is not None:
        st.subheader("Simplex")
        st.caption("Each dot is a prediction in the triangle of three-class probability vectors; orange is where the "
                   f"selected estimator ({panels.estimator}) moves it once recalibrated (holdout rows).")
        P_rows, G, labels = panels.triangle
        st.plotly_chart(plots.ternary_figure(P_rows, G, pred.class_names, labels=labels), key="ternary", width="stretch")
elif not results:
    st.info("Run an evaluation (Evaluate page) to add the selected estimator's recalibration curve.")
