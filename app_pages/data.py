"""Data page: choose a demo set or upload predictions (and labels); show what was understood."""

import streamlit as st

import ui
from calibdash.display.text import code, markdown
from calibdash.lab import demo

st.title("Data")
st.radio(
    "Data source", ["demo", "upload"], key="source", horizontal=True,
    format_func={"demo": "Built-in demo", "upload": "Upload my predictions"}.get,
    help="The demo sets are computed offline from scikit-learn's handwritten digits and the paper's simulation. "
    "Uploads stay in this browser session until you close it.",
)
if st.session_state["source"] == "demo":
    st.selectbox("Demo set", demo.DEMO_NAMES, key="demo_name", help="Classifiers of very different calibration.")
    st.caption(demo.DESCRIPTIONS[st.session_state["demo_name"]])
else:
    st.markdown(
        "Upload the model's **probabilities or logits** (rows = examples, one column per class) and the "
        "**true labels**: in the same file (a `.npz` with two arrays, or a table with a label column) or as a second file."
    )
    c1, c2 = st.columns(2)
    pred_file = c1.file_uploader(
        "Predictions", type=["npy", "npz", "csv", "tsv", "txt", "parquet"], key="upload_predictions",
        help="NumPy .npy/.npz, CSV/TSV/text or Parquet. A .npz may hold both predictions and labels.",
    )
    labels_file = c2.file_uploader(
        "Labels (optional)", type=["npy", "npz", "csv", "tsv", "txt", "parquet"], key="upload_labels",
        help="Only needed when the predictions file has no labels: integers 0..d-1 or class names, one per row.",
    )
    st.selectbox(
        "The numbers are", ["auto", "logits", "probabilities"], key="src__kind",
        help="'auto' treats non-negative rows summing to 1 as probabilities and anything else as logits "
        "(unnormalised scores, turned into probabilities by the softmax).",
    )
    if pred_file is not None:
        error = ui.load_upload(pred_file, labels_file, st.session_state["src__kind"])
        if error:
            st.error(error, icon=":material/error:")
    if st.session_state.get("upload") is None:
        st.info("No valid upload yet; the demo set stays in use until one is loaded.")

label, pred, origin = ui.current_dataset()
st.subheader(f"In use: {code(label)}", anchor=False)  # no anchor: its address would be made of the name
c = st.columns([1, 1, 1.5, 1, 1.2])
c[0].metric("Rows", f"{pred.n:,}", help="Number of examples (predictions with a label).")
c[1].metric("Classes", pred.d)
c[2].metric("Input", pred.kind, help="Whether the numbers were read as probabilities or as logits (then softmaxed).")
c[3].metric("Accuracy", f"{pred.accuracy:.1%}", help="How often the most probable class is the true one.")
c[4].metric("Mean confidence", f"{pred.mean_confidence:.1%}",
            help="Average probability of the predicted class. Far from the accuracy means miscalibration.")
for w in pred.warnings:
    st.warning(markdown(w), icon=":material/warning:")
for n in pred.notes:
    st.caption(markdown(n))
st.markdown("**Class balance** (share of labels per class)")
st.bar_chart(ui.class_balance(pred), x="class", y="share", height=220)
