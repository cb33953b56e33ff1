"""The Validate page through Streamlit's AppTest: the demo validation on a first visit, an uploaded
clinical table validated by subgroup, and bad grouping columns refused with a clear message."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import calibdash as cd
import ui_clinical as uc
from calibdash.clinical import METRICS
from calibdash.display import clinical as views
from calibdash.lab import demo

from .conftest import go, no_exception, run_once

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "app.py")
VALIDATE, DATA, RESULTS = "app_pages/validate.py", "app_pages/data.py", "app_pages/results.py"
RESAMPLES = 100  # small, to keep the runs fast (the page's default is 1000)


def clinical(n=600, seed=0, sites=("north", "south"), small_site=None):
    """A risk model's output: a probability column, outcomes as words, a subgroup column."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.6, 0.9, n)
    y = rng.random(n) < np.clip(0.05 + 0.9 * p, 0, 1)  # mildly miscalibrated
    site = rng.choice(list(sites), n)
    if small_site:
        site[:12] = small_site
    return pd.DataFrame({"p_yes": np.round(p, 4), "outcome": np.where(y, "yes", "no"), "site": site})


def app(resamples=RESAMPLES):
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state[uc.RESAMPLES_KEY] = resamples
    at.run()
    no_exception(at)
    return at


def upload(at, df, name="clinic.csv", groups=("site",)):
    go(at, DATA)
    at.radio(key="source").set_value("upload").run()
    at.file_uploader(key="upload_predictions").set_value((name, df.to_csv(index=False).encode(), "text/csv")).run()
    no_exception(at)
    if groups:
        at.multiselect(key="src__group_columns").set_value(list(groups)).run()
        no_exception(at)
    return at


def charts(at):
    """{name: plotly spec} of the page's figures, named by what they draw."""
    out = {}
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        names = {t.get("name") for t in spec["data"]}
        if "flexible calibration curve (loess)" in names:
            out["curve"] = spec
        elif {"model", "treat all", "treat none"} <= names:
            out["decision"] = spec
        elif any("heterogeneity" in a.get("text", "") or "calibration slope" in a.get("text", "")
                 for a in spec["layout"].get("annotations", [])):
            out["forest"] = spec
        else:
            out.setdefault("other", []).append(spec)
    return out


def metrics_frame(at):
    """The hierarchy table (the first dataframe with a "metric" column and 11 rows)."""
    for d in at.dataframe:
        df = d.value
        if "metric" in df.columns and len(df) == len(METRICS):
            return df
    raise AssertionError("no metrics table")


def markdown_text(at):
    return "\n".join(m.value for m in at.markdown)


def test_first_visit_shows_the_demo_validation(tmp_path):
    at = go(app(), VALIDATE)
    assert any("This is the demo" in i.value for i in at.info)
    assert not at.error
    (v,) = at.session_state["val_results"].values()
    assert v.group_name == demo.VALIDATION_DEMO_GROUPS and v.settings["n_resamples"] == RESAMPLES
    # the numbers are those of validate_risk_model on the demo with the page's settings
    direct = cd.validate_risk_model(demo.load_validation_demo(), groups=demo.VALIDATION_DEMO_GROUPS,
                                    n_resamples=RESAMPLES, random_state=0)
    pd.testing.assert_frame_equal(v.metrics, direct.metrics)
    shown = metrics_frame(at)
    assert list(shown["metric"]) == list(METRICS)
    assert shown.equals(views.metrics_table(direct))
    # one verdict per level, each with its status icon
    verdicts = views.hierarchy_verdicts(direct)
    text = markdown_text(at)
    for item in verdicts:
        assert uc.verdict_markdown(item) in text
        assert uc.STATUS_ICONS[item["status"]] in uc.verdict_markdown(item)
    assert {"curve", "decision", "forest"} <= set(charts(at))
    assert views.sample_size_text(direct) in text.replace("\\", "")
    keys = [b.key for b in at.get("download_button")]
    assert keys == ["dl_val_report", "dl_val_metrics"]
    # the job's result is kept: a page change and a return start nothing again
    go(at, RESULTS)
    go(at, VALIDATE)
    assert not at.session_state["jobs"] and len(at.session_state["val_results"]) == 1
    # the Data page offers the same demo: chosen there, it is the data in use, validated already
    go(at, DATA)
    at.selectbox(key="demo_name").set_value(demo.VALIDATION_DEMO_NAME).run()
    no_exception(at)
    assert at.session_state["data_demo"] == demo.VALIDATION_DEMO_NAME
    assert at.selectbox(key="group_column").value == demo.VALIDATION_DEMO_GROUPS
    go(at, VALIDATE)
    assert not any("This is the demo" in i.value for i in at.info)
    assert len(at.session_state["val_results"]) == 1 and {"curve", "decision", "forest"} <= set(charts(at))


def test_uploaded_table_is_validated_by_subgroup_with_small_groups_flagged():
    df = clinical(sites=("north", "south", "east"), small_site="tiny")
    at = upload(app(), df)
    # the Data page's grouping column: the column just kept, stored in the plain key
    assert at.selectbox(key="group_column").value == "site"
    pred = at.session_state["upload"]
    assert pred.class_names == ("no", "yes") and list(pred.groups) == ["site"]
    go(at, VALIDATE)
    assert not at.info or not any("This is the demo" in i.value for i in at.info)
    assert at.selectbox(key=uc.CLASS_KEY).value == "yes"
    (v,) = at.session_state["val_results"].values()
    direct = cd.validate_risk_model(pred, groups="site", positive="yes", n_resamples=RESAMPLES, random_state=0)
    pd.testing.assert_frame_equal(v.metrics, direct.metrics)
    assert set(v.groups["group"]) == {"north", "south", "east", "tiny"}
    got = charts(at)
    assert {"curve", "decision", "forest"} <= set(got)
    forest_titles = " ".join(a["text"] for a in got["forest"]["layout"]["annotations"])
    for metric in views.FOREST_METRICS:
        assert metric in forest_titles
    # the group too small to judge is flagged, in a warning and in the groups table
    assert any("too small to judge" in w.value and "`tiny`" in w.value for w in at.warning)
    groups = next(d.value for d in at.dataframe if "status" in d.value.columns)
    assert groups.set_index("group").loc["tiny", "status"] == uc.GROUP_FLAGS["too small"]
    text = markdown_text(at).replace("\\", "")  # unescaped
    assert "Calibration-in-the-large" in text and "likelihood-ratio test" in text
    assert any(len(d.value) == 4 and "estimator" in d.value.columns for d in at.dataframe)  # whole data + 3 judged
    # the choice survives page changes; choosing no subgroups on Validate drops the subgroup plots
    go(at, DATA)
    assert at.selectbox(key="group_column").value == "site"
    go(at, VALIDATE)
    at.selectbox(key="val_group").set_value(uc.NO_GROUPS).run()
    no_exception(at)
    assert at.session_state["data_group"] is uc.NO_GROUPS
    assert set(charts(at)) == {"curve", "decision"}
    go(at, DATA)
    assert at.selectbox(key="group_column").value is uc.NO_GROUPS


def test_a_grouping_column_with_one_value_gets_a_clear_message():
    df = clinical()
    df["ward"] = "A"
    at = upload(app(), df, groups=("ward",))
    go(at, VALIDATE)
    assert not at.get("plotly_chart")
    (error,) = at.error
    text = error.value.replace("\\", "")
    assert text.startswith("The validation failed: The grouping column 'ward' has 1 distinct value")
    assert "at least two" in text and "**In the app:** choose another grouping column" in text
    assert "Traceback" not in text and "bug" not in text


def test_too_many_groups_are_refused_in_words():
    df = clinical()
    df["patient"] = [f"p{i % 40}" for i in range(len(df))]
    at = upload(app(), df, groups=("patient",))
    go(at, VALIDATE)
    (error,) = at.error
    assert "40 distinct values" in error.value and "at most 20" in error.value and "In the app:" in error.value
    assert not at.get("plotly_chart")


def test_multiclass_data_are_validated_one_class_on_request():
    rng = np.random.default_rng(1)
    P = rng.dirichlet([1, 1, 1], 600)
    y = np.array([rng.choice(3, p=p) for p in P])
    df = pd.DataFrame({"p_a": P[:, 0], "p_b": P[:, 1], "p_c": P[:, 2], "label": np.array(["a", "b", "c"])[y]})
    at = upload(app(), df, name="three.csv", groups=())
    go(at, VALIDATE)
    assert any("choose the class" in i.value for i in at.info)
    assert not at.session_state["val_results"] and not at.get("plotly_chart")
    at.selectbox(key=uc.CLASS_KEY).set_value("c").run()
    no_exception(at)
    (v,) = at.session_state["val_results"].values()
    assert v.classes == ("c",)
    assert {"curve", "decision"} == set(charts(at))


def test_a_cancelled_validation_stays_cancelled_until_run_again():
    at = upload(app(resamples=5000), clinical(n=2000, seed=4))
    at.switch_page(VALIDATE)
    run_once(at)
    (key,) = at.session_state["jobs"]
    assert key[0] == "validate"
    at.button(key=next(b.key for b in at.button if b.key.startswith("cancel__"))).click()
    run_once(at)
    run_once(at)
    no_exception(at)
    assert not at.session_state["jobs"]  # not submitted again by the rerun
    assert any("Cancelled" in e.value for e in at.error)
    at.button(key="val_run_again").click()
    run_once(at)
    run_once(at)
    assert list(at.session_state["jobs"]) == [key]
