"""Data page: choose a demo set or upload predictions (and labels); show what was understood."""

import streamlit as st

from calibdash.display.text import code, markdown, user
from calibdash_app import clinical, data
from calibdash_app.help import HELP_SOURCE
from calibdash_app.session import kept

st.title("Data")
data.data_choice_widgets()
st.radio(
    "Data source", ["demo", "upload"], key="source", horizontal=True, on_change=data.choose_data,
    format_func={"demo": "Built-in demo", "upload": "Upload my predictions"}.get,
    help="The demo sets are computed offline from scikit-learn's handwritten digits and the paper's simulation. "
    "Uploads stay in this browser session until you close it.",
)
if st.session_state["data_source"] == "demo":
    st.selectbox("Demo set", data.DEMO_CHOICES, key="demo_name", on_change=data.choose_data,
                 help="Classifiers of very different calibration, and a clinical risk model with hospital sites "
                      "(for the Validate page).")
    st.caption(data.demo_description(st.session_state["data_demo"]))
else:
    st.markdown(
        "Upload the model's **probabilities or logits** (rows = examples, one column per class) and the "
        "**true labels**: in the same file (a `.npz` with two arrays, or a table with a label column) or as a second file."
    )
    c1, c2 = st.columns(2)
    pred_file = c1.file_uploader(
        "Predictions", type=["npy", "npz", "csv", "tsv", "txt", "parquet"], key="upload_predictions",
        on_change=data.forget_upload, args=("predictions",),
        help="NumPy .npy/.npz, CSV/TSV/text or Parquet. A .npz may hold both predictions and labels.",
    )
    labels_file = c2.file_uploader(
        "Labels (optional)", type=["npy", "npz", "csv", "tsv", "txt", "parquet"], key="upload_labels",
        on_change=data.forget_upload, args=("labels",),
        help="Only needed when the predictions file has no labels: integers 0..d-1 or class names, one per row.",
    )
    data.keep_upload("predictions", pred_file)
    data.keep_upload("labels", labels_file)
    kept_files = data.kept_uploads()
    for role, box in (("predictions", c1), ("labels", c2)):
        if role in kept_files and (pred_file if role == "predictions" else labels_file) is None:
            box.caption(markdown("Kept from earlier: ", user(kept_files[role][0])))
    info, error = data.inspect_upload()
    if error:
        st.error(error, icon=":material/error:")
    if info is not None:
        wide = data.is_wide(info)
        if info.table:
            st.markdown(data.columns_summary(info))
            m1, m2 = st.columns(2)
            if wide:  # typed: lists of this many columns take the browser minutes to draw
                data.typed_texts(info)
                m1.text_input("Label column", **kept("src__label_text"), on_change=data.type_columns,
                              args=(info, "src__label_column"), help=HELP_SOURCE["label_column"])
                m2.text_input("Probability columns", **kept("src__prob_text"), on_change=data.type_columns,
                              args=(info, "src__prob_columns"), help=HELP_SOURCE["typed_columns"])
                if st.session_state.get("src__typed_error"):
                    st.error(st.session_state["src__typed_error"], icon=":material/error:")
            else:
                m1.selectbox("Label column", [None, *info.columns], **kept("src__label_column"),
                             help=HELP_SOURCE["label_column"],
                             format_func=lambda c: data.NO_LABEL_COLUMN if c is None else c)
                m2.multiselect("Probability columns", list(info.columns), **kept("src__prob_columns"), wrap=True,
                               help=HELP_SOURCE["prob_columns"])
        m3, m4 = st.columns(2)
        if data.wants_positive(info):
            m3.selectbox("Positive class", data.positive_choices(info), **kept("src__positive"), help=HELP_SOURCE["positive"],
                         format_func=lambda v: data.GUESS_POSITIVE if v is None else v)
        if data.wants_class_names(info):
            m3.text_input("Class names", **kept("src__class_names"), help=HELP_SOURCE["class_names"])
        if info.table and wide:
            m4.text_input("Grouping columns", **kept("src__group_text"), on_change=clinical.type_groups,
                          args=(info,), help=HELP_SOURCE["group_columns"])
        elif info.table:
            m4.multiselect("Grouping columns", data.group_choices(info), **kept("src__group_columns"), wrap=True,
                           help=HELP_SOURCE["group_columns"], on_change=clinical.groups_kept)
    st.selectbox("The numbers are", list(data.KIND_LABELS), **kept("src__kind"), format_func=data.KIND_LABELS.get,
                 help=HELP_SOURCE["kind"])
    if info is not None:
        error = data.load_upload(info)
        if error:
            st.error(error, icon=":material/error:")
    if st.session_state.get("upload") is None:
        st.info("No valid upload yet; the demo set stays in use until one is loaded.")

label, pred, origin = data.current_dataset()
st.subheader(f"In use: {code(label)}", anchor=False)  # no anchor: its address would be made of the name
c = st.columns([1, 1, 1.5, 1, 1.2])
c[0].metric("Rows", f"{pred.n:,}", help="Number of examples (predictions with a label).")
c[1].metric("Classes", pred.d)
c[2].metric("Input", pred.kind, help="Whether the numbers were read as probabilities or as logits (then softmaxed).")
risk = data.risk_summary(pred)
if risk is None:
    c[3].metric("Accuracy", f"{pred.accuracy:.1%}", help="How often the most probable class is the true one.")
    c[4].metric("Mean confidence", f"{pred.mean_confidence:.1%}",
                help="Average probability of the predicted class. Far from the accuracy means miscalibration.")
else:  # a risk model: its risks on average against how often the event happened
    event = pred.class_names[1]
    c[3].metric("Mean predicted risk", f"{risk[0]:.1%}",
                help=f"The average predicted probability of the event (class {code(event)}) over all rows.")
    c[4].metric("Observed event rate", f"{risk[1]:.1%}",
                help=f"The share of rows whose outcome is the event (class {code(event)}). Far from the mean predicted "
                     "risk means the risks are too high or too low on average (O:E, on the Validate page).")
for w in pred.warnings:
    st.warning(markdown(w), icon=":material/warning:")
for n in pred.notes:
    st.caption(markdown(n))
if data.positive_class(pred):
    st.markdown(f"**Positive class:** {code(pred.class_names[1])} (the other class: {code(pred.class_names[0])})")
if pred.groups:
    st.caption("Grouping columns kept: " + ", ".join(code(g) for g in pred.groups))
    clinical.group_widget(st.columns(2)[0], "group_column", pred)
st.markdown("**Class balance** (share of labels per class, in class order)")
if data.class_balance_summary(pred):
    st.caption(data.class_balance_summary(pred))
else:
    st.bar_chart(data.class_balance(pred), x="class", y="share", height=220, sort=False)
