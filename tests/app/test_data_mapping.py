"""The Data page's column mapping through Streamlit's AppTest: a clinical table loads without editing it."""

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from calibdash.io.loading import Predictions
from calibdash_app import data

from .conftest import no_exception

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def clinical(n=1000, seed=0, percent=False, names=("p_malignant", "diagnosis", "site")):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 0.5, n)
    return pd.DataFrame({names[0]: np.round(100 * p, 2) if percent else p,
                         names[1]: np.where(rng.random(n) < p, "malignant", "benign"),
                         names[2]: rng.choice(["north", "south"], n)})


@pytest.fixture
def at():
    app = AppTest.from_file(APP, default_timeout=180).run()
    no_exception(app)
    app.switch_page("calibdash_app/app_pages/data.py").run()
    app.radio(key="source").set_value("upload").run()
    return app


def upload(at, df, name="clinic.csv", key="upload_predictions"):
    at.file_uploader(key=key).set_value((name, df.to_csv(index=False).encode(), "text/csv")).run()
    no_exception(at)


def test_clinical_csv_is_mapped_by_guesses_and_kept_across_pages(at):
    upload(at, clinical())
    assert not at.error
    pred = at.session_state["upload"]
    assert pred.class_names == ("benign", "malignant")
    assert at.selectbox(key="src__label_column").value == "diagnosis"
    assert at.multiselect(key="src__prob_columns").value == ["p_malignant"]
    assert "**Positive class:** `malignant`" in " ".join(m.value for m in at.markdown)
    at.multiselect(key="src__group_columns").set_value(["site"]).run()
    assert list(at.session_state["upload"].groups) == ["site"]
    assert at.session_state["upload"].sha256 == pred.sha256
    at.switch_page("calibdash_app/app_pages/evaluate.py").run()
    at.switch_page("calibdash_app/app_pages/data.py").run()
    no_exception(at)
    assert at.multiselect(key="src__group_columns").value == ["site"]  # the mapping and the file survive
    assert "In use: `clinic.csv`" in [h.value for h in at.subheader]


def test_a_table_without_telling_names_is_mapped_with_the_controls(at):
    upload(at, clinical(names=("score", "dx", "site")))
    # the question, with what to do in the app
    assert at.error and "`'dx'`, `'site'`" in at.error[0].value and "**Label column**" in at.error[0].value
    at.selectbox(key="src__label_column").set_value("dx").run()
    at.multiselect(key="src__prob_columns").set_value(["score"]).run()
    assert at.error and "**Positive class**" in at.error[0].value
    # in the app's words: the widget, not the Python option (issue 27: "Pass positive=...")
    assert "Which class is positive?" in at.error[0].value and "positive=" not in at.error[0].value
    assert at.selectbox(key="src__positive").options == [data.GUESS_POSITIVE, "benign", "malignant"]
    at.selectbox(key="src__positive").set_value("malignant").run()
    no_exception(at)
    assert not at.error
    assert at.session_state["upload"].class_names == ("benign", "malignant")


def test_percentages_are_recognised_and_the_kind_can_be_chosen(at):
    upload(at, clinical(percent=True))
    pred = at.session_state["upload"]
    assert pred.kind == "percent" and "percentages" in " ".join(c.value for c in at.caption)
    at.selectbox(key="src__kind").set_value("probabilities").run()
    assert at.error and "percent" in at.error[0].value and "**The numbers are**" in at.error[0].value
    at.selectbox(key="src__kind").set_value("percent").run()
    assert not at.error and at.session_state["upload"].kind == "percent"


def test_labels_file_in_the_labels_box_uses_the_same_mapping(at):
    df = clinical()
    buf = io.BytesIO()
    np.save(buf, df["diagnosis"].to_numpy(str))
    upload(at, df[["p_malignant"]], name="scores.csv")
    at.file_uploader(key="upload_labels").set_value(("labels.npy", buf.getvalue(), "application/octet-stream")).run()
    no_exception(at)
    assert not at.error
    assert at.session_state["upload"].class_names == ("benign", "malignant")


def test_class_balance_is_in_class_order():
    rng = np.random.default_rng(0)
    pred = Predictions(probs=rng.dirichlet(np.ones(12), 100), labels=np.arange(100) % 12,
                       class_names=tuple(str(k) for k in range(12)), kind="probabilities")
    table = data.class_balance(pred)
    assert list(table["class"].cat.categories) == [str(k) for k in range(12)] and table["class"].cat.ordered


def test_an_app_run_records_the_mapping_so_the_command_line_reruns_it(at, tmp_path):
    """The app's JSON download, rerun by `calibdash rerun --predictions FILE`, reads the file with the
    mapping chosen on the Data page (label and grouping columns, positive class) and gives the same numbers."""
    import subprocess
    import sys

    from calibdash.evaluation.evaluations import Evaluations

    df = clinical(n=600, seed=4)
    upload(at, df)
    at.multiselect(key="src__group_columns").set_value(["site"]).run()
    at.switch_page("calibdash_app/app_pages/evaluate.py").run()
    at.multiselect(key="cfg__notions").set_value(["top-label"]).run()
    at.multiselect(key="cfg__est__top-label").set_value(["15-bins"]).run()
    at.button(key="run").click().run()
    no_exception(at)
    results = ui_results(at)
    recorded = results["top-label"].config["input"]
    assert recorded["predictions"] == "clinic.csv"
    assert recorded["label_column"] == "diagnosis" and recorded["prob_columns"] == ["p_malignant"]
    assert recorded["groups"] == ["site"] and recorded["sha256"] == at.session_state["upload"].sha256
    path = tmp_path / "result.json"
    path.write_text(Evaluations.of(results, name="clinic.csv").to_json())
    df.to_csv(tmp_path / "clinic.csv", index=False)
    proc = subprocess.run([sys.executable, "-m", "calibdash", "rerun", str(path), "--predictions", str(tmp_path / "clinic.csv"),
                           "--out", str(tmp_path / "again"), "--quiet"], capture_output=True, text=True, timeout=600,
                          cwd=Path(APP).parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def ui_results(at):
    sha = at.session_state["upload"].sha256
    keys = at.session_state["active"][sha]
    return {n: at.session_state["results"][k] for n, k in keys.items()}


# -- a table too wide to list its columns (issue 28) ------------------------------------------
def wide_table(d=399, n=60, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.dirichlet(np.ones(d), n), columns=[f"p{k}" for k in range(d)])
    frame["label"] = rng.integers(0, 10, n)
    frame["site"] = rng.choice(["north", "south"], n)
    return frame


def test_typed_columns_are_ranges_of_neighbours_and_names():
    columns = ["id", "p0", "p1", "p2", "a:b", "p3", "label"]
    assert data.columns_text(columns, ["p2", "p0", "p1", "p3"]) == "p0:p2, p3"
    assert data.columns_text(columns, ["p0", "p1", "p2", "a:b", "p3"]) == "p0:p3"
    assert data.columns_text(columns, []) == ""
    assert data.parse_columns_text("p0:p2, p3", columns) == ["p0", "p1", "p2", "p3"]
    assert data.parse_columns_text("p2:p0", columns) == ["p0", "p1", "p2"]  # either order
    assert data.parse_columns_text(" a:b , label,, p1", columns) == ["a:b", "label", "p1"]  # a name with a colon
    assert data.parse_columns_text("p1, p0:p2", columns) == ["p1", "p0", "p2"]  # each column once, first mention first
    for chosen in (["p0", "p1", "p2", "a:b", "p3"], ["id", "p1", "label"]):
        assert data.parse_columns_text(data.columns_text(columns, chosen), columns) == chosen
    with pytest.raises(ValueError, match="no column"):
        data.parse_columns_text("p0:p9", columns)


def test_a_table_too_wide_to_list_is_mapped_by_typing(at):
    upload(at, wide_table(), "wide.csv")
    assert not [m for m in at.multiselect if m.key == "src__prob_columns"]  # no list of 399 chosen columns
    # the loader's guesses: the numeric columns as a range; the label column left to the loading,
    # which takes the only column of text and says why it cannot be the label
    assert at.text_input(key="src__label_text").value == ""
    assert at.text_input(key="src__prob_text").value == "p0:label"
    assert any("is not a known class" in e.value for e in at.error)
    at.text_input(key="src__label_text").set_value("label").run()
    no_exception(at)
    assert at.session_state["src__label_column"] == "label"
    assert at.text_input(key="src__prob_text").value == "p0:p398"  # the label is no longer a probability column
    assert not at.error
    assert any(m.value.startswith("**Columns:** 401: `p0`, `p1`") and ", ..., `p398`, `label`, `site`" in m.value
               for m in at.markdown)
    assert at.session_state["upload"].d == 399
    assert any("399 classes, too many for a bar each" in c.value for c in at.caption)
    at.selectbox(key="src__kind").set_value("logits").run()  # 11 of the columns do not sum to 1: read as scores
    at.text_input(key="src__prob_text").set_value("p0:p9, p20").run()  # 11 classes
    no_exception(at)
    assert not at.error
    assert at.session_state["src__prob_columns"] == [f"p{k}" for k in range(10)] + ["p20"]
    assert at.session_state["upload"].d == 11
    at.text_input(key="src__group_text").set_value("site").run()
    assert at.session_state["upload"].groups.keys() == {"site"}
    at.text_input(key="src__prob_text").set_value("p0:p999").run()  # a name the table lacks: said, nothing changed
    no_exception(at)
    assert any("no column" in e.value and "p999" in e.value for e in at.error)
    assert at.session_state["upload"].d == 11 and at.text_input(key="src__prob_text").value == "p0:p9, p20"
