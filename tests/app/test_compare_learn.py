"""The Compare and Learn pages through Streamlit's AppTest (no browser)."""

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import calibdash as cd
from calibdash.lab import studies as lab
from calibdash.lab.demo import load_demo
from calibdash.lab.simulation import dirichlet_simulation

from .conftest import go, no_exception

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "app.py")
COMPARE, LEARN = "calibdash_app/app_pages/compare.py", "calibdash_app/app_pages/learn.py"


@pytest.fixture(scope="module")
def app():
    """One app session for the module: the first visit analyses the demo (shared work)."""
    at = AppTest.from_file(APP, default_timeout=300).run()
    no_exception(at)
    return at


def widgets_have_help(at):
    for kind in ["selectbox", "multiselect", "radio", "slider", "number_input", "select_slider"]:
        for w in getattr(at, kind):
            assert w.help, f"{kind} {w.label!r} has no help text"


def test_learn_default_view(app):
    at = go(app, LEARN)
    assert len(at.get("plotly_chart")) == 2  # estimates against n, Figure 1
    widgets_have_help(at)
    metric = {m.label: m.value for m in at.metric}["theta of the lowest mean risk"]
    assert 0.9 <= float(metric) <= 1.1
    text = " ".join(m.value for m in at.markdown)
    assert "What it teaches" in text
    caption = " ".join(c.value for c in at.caption)
    truth = lab.scenario("dirichlet").truth("top-label")
    assert f"{100 * truth:.2f} percentage points" in caption


def test_learn_scenarios_and_settings(app):
    at = go(app, LEARN)
    # small settings first, so that every scenario below is quick
    at.slider(key="view__lab_repeats").set_value(2)
    at.multiselect(key="view__lab_ns").set_value([250, 500])
    at.slider(key="view__lab_f1_seeds").set_value(10).run()
    no_exception(at)
    at.selectbox(key="view__lab_scenario").set_value("Binary logistic").run()
    no_exception(at)
    at.slider(key="view__lab_slope").set_value(0.5).run()
    no_exception(at)
    truth = lab.scenario("logistic", slope=0.5).truth("top-label")
    assert f"{100 * truth:.2f} percentage points" in " ".join(c.value for c in at.caption)
    at.selectbox(key="view__lab_scenario").set_value("Widmann et al.: uniform (M3)").run()
    at.radio(key="view__lab_notion").set_value("canonical").run()
    no_exception(at)
    assert len(at.get("plotly_chart")) == 2
    at.multiselect(key="view__lab_ns").set_value([]).run()
    no_exception(at)
    assert any("at least one" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 1  # Figure 1 stays
    at.multiselect(key="view__lab_ns").set_value([250]).run()
    at.selectbox(key="view__lab_scenario").set_value("Dirichlet simulation (paper, Sec. 5.1)").run()
    at.slider(key="view__lab_distortion").set_value(1.0).run()
    no_exception(at)
    assert "0.00 percentage points" in " ".join(c.value for c in at.caption)  # calibrated: truth 0
    # the two distortions that are not a temperature scaling, with their own controls
    at.selectbox(key="view__lab_scenario").set_value("Class-dependent logit bias").run()
    at.slider(key="view__lab_strength").set_value(2.0).run()
    no_exception(at)
    truth = lab.scenario("logit-bias", strength=2.0).truth("canonical")
    assert f"{100 * truth:.2f} percentage points" in " ".join(c.value for c in at.caption)
    at.selectbox(key="view__lab_scenario").set_value("Nearly calibrated (piecewise-linear log-probabilities)").run()
    at.slider(key="view__lab_pw_slope").set_value(1.0).run()
    no_exception(at)
    assert "0.00 percentage points" in " ".join(c.value for c in at.caption)  # slope 1: calibrated


def test_compare_default_view_matches_the_library(app):
    at = go(app, COMPARE)
    assert len(at.get("plotly_chart")) == 3  # estimates + accuracy + Brier, pairs, reliability
    widgets_have_help(at)
    (res,) = at.session_state["cmp_results"].values()
    want = cd.compare({name: load_demo(name) for name in ["digits: random forest", "digits: logistic regression"]},
                      notion="top-label", random_state=0)
    pd.testing.assert_frame_equal(res.pairs, want.pairs, rtol=1e-9)
    pd.testing.assert_frame_equal(res.models, want.models, rtol=1e-9)
    shown = at.dataframe[1].value  # models table, then pairs table
    assert list(shown["model_a"]) == ["digits: random forest"]
    np.testing.assert_allclose(shown["p_value"], want.pairs["p_value"], rtol=1e-9)
    assert "better calibrated" in " ".join(m.value for m in at.markdown)


def test_compare_settings_and_too_few_models(app):
    at = go(app, COMPARE)
    at.selectbox(key="view__cmp_estimator").set_value("bins").run()
    no_exception(at)
    res = list(at.session_state["cmp_results"].values())[-1]
    assert res.estimator == "bins" and res.config["estimator_chosen_by"] == "user"
    at.multiselect(key="view__cmp_demo").set_value(["digits: naive Bayes"]).run()
    no_exception(at)
    assert any("at least two" in i.value for i in at.info)
    assert not at.get("plotly_chart")
    at.multiselect(key="view__cmp_demo").set_value(["digits: random forest", "digits: logistic regression"]).run()
    at.selectbox(key="view__cmp_estimator").set_value("auto").run()
    no_exception(at)


def csv_bytes(P, y=None):
    df = pd.DataFrame(P, columns=[f"p{k}" for k in range(P.shape[1])])
    if y is not None:
        df["label"] = y
    return df.to_csv(index=False).encode()


def test_compare_uploads_and_a_mismatch_message(app):
    at = go(app, COMPARE)
    at.radio(key="view__cmp_source").set_value("upload").run()
    no_exception(at)
    assert any("at least two" in i.value for i in at.info)
    sim = dirichlet_simulation(n=500, n_classes=3, alpha=1.0, distortion=1.0, random_state=2)
    sharp = cd.softmax(2.5 * sim.log_true_probs)
    labels = io.BytesIO()
    np.save(labels, sim.labels)
    at.file_uploader(key="cmp_upload_predictions").set_value(
        [("calibrated.csv", csv_bytes(sim.probs), "text/csv"), ("sharp.csv", csv_bytes(sharp), "text/csv")])
    at.file_uploader(key="cmp_upload_labels").set_value(("labels.npy", labels.getvalue(), "application/octet-stream"))
    at.run()
    no_exception(at)
    assert not at.error
    assert set(at.session_state["cmp_uploads"]) == {"calibrated.csv", "sharp.csv"}
    assert len(at.get("plotly_chart")) == 3
    (res,) = [r for r in at.session_state["cmp_results"].values() if "sharp.csv" in r.results]
    row = res.pairs.iloc[0]
    assert (row["model_a"], row["model_b"]) == ("calibrated.csv", "sharp.csv") and row["difference"] < 0
    # a third file with other rows: a plain message, no traceback
    at.file_uploader(key="cmp_upload_predictions").set_value(
        [("calibrated.csv", csv_bytes(sim.probs), "text/csv"), ("short.csv", csv_bytes(sharp[:400], sim.labels[:400]), "text/csv")])
    at.file_uploader(key="cmp_upload_labels").set_value(None)
    at.run()
    no_exception(at)
    assert at.error
