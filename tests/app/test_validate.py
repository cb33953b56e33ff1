"""The Validate page through Streamlit's AppTest: the demo validation on a first visit, an uploaded
clinical table validated by subgroup and by centre (a point score: four distinct risks), the threshold
range, settings kept across pages, the planning mode, the Data page's summary of a risk model, and
bad grouping columns refused with a clear message."""

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import calibdash as cd
from calibdash.clinical import METRICS
from calibdash.clinical.sample_size import DEFAULT_TARGETS, plan_sample_size
from calibdash.clinical.validation import DEFAULT_THRESHOLDS
from calibdash.display import clinical as views
from calibdash.display.text import markdown, plot_text
from calibdash.io.export import csv_text
from calibdash.lab import demo
from calibdash_app import clinical as uc

from ..hostile import HTML
from .conftest import go, no_exception, run_once
from .test_hostile import RAW, figure_strings, outside_code

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "app.py")
VALIDATE, DATA, RESULTS = "calibdash_app/app_pages/validate.py", "calibdash_app/app_pages/data.py", "calibdash_app/app_pages/results.py"
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


HOSPITALS = ("St Mary's", "General", "Royal", "County", "Valley")
SCORE_RISKS = (0.05, 0.1, 0.2, 0.35)


def point_score(n=1200, seed=7, hospitals=HOSPITALS, shifted="County", shift=1.2):
    """A point score's risks (four distinct values) with outcomes "died"/"survived" drawn from them
    and a hospital column; in the hospital ``shifted`` the true risks are ``shift`` higher on the
    logit scale (so it is the centre that is off)."""
    rng = np.random.default_rng(seed)
    hospital = rng.choice(hospitals, n)
    risk = rng.choice(SCORE_RISKS, n, p=[0.35, 0.3, 0.2, 0.15])
    lp = np.log(risk / (1 - risk)) + shift * (hospital == shifted)
    died = rng.random(n) < 1 / (1 + np.exp(-lp))
    return pd.DataFrame({"risk": risk, "outcome": np.where(died, "died", "survived"), "hospital": hospital})


def app(resamples=RESAMPLES, **state):
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state[uc.RESAMPLES_KEY] = resamples
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    no_exception(at)
    return at


def upload(at, df, name="clinic.csv", groups=("site",), positive=None):
    go(at, DATA)
    at.radio(key="source").set_value("upload").run()
    at.file_uploader(key="upload_predictions").set_value((name, df.to_csv(index=False).encode(), "text/csv")).run()
    no_exception(at)
    if positive is not None:
        at.selectbox(key="src__positive").set_value(positive).run()
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


def test_the_verdicts_print_the_one_vocabulary_of_statuses(monkeypatch):
    # issue 27: the app said "(ok)" where the report said "(fine)"; both print calibdash.clinical.verdicts.STATUS_WORDS
    # (tests/reporting/test_validation_report.py holds the report to it)
    from calibdash.clinical.verdicts import STATUS_WORDS, STATUSES

    assert set(STATUS_WORDS) == set(STATUSES)
    for status in STATUSES:
        assert f"({STATUS_WORDS[status]}): " in uc.verdict_markdown({"level": "weak calibration", "status": status,
                                                                    "verdict": "As expected."})
    monkeypatch.setitem(STATUS_WORDS, "ok", "all good")
    assert "(all good): " in uc.verdict_markdown({"level": "weak calibration", "status": "ok", "verdict": "As expected."})


def test_a_refused_validation_says_what_to_do_in_the_app_not_in_python():
    # issue 27: the app said "Pass positive=..." (the Python wording) to its users
    from types import SimpleNamespace

    from calibdash_app import jobs
    from calibdash_app.runs import failure_message

    with pytest.raises(cd.InputError) as info:
        cd.validate_risk_model(np.array([0.2, 0.7, 0.4, 0.9] * 50), np.array(["a", "b", "b", "a"] * 50))
    assert "Pass positive= one of 'a', 'b'." in str(info.value)  # Python users keep their wording
    job = SimpleNamespace(state=jobs.FAILED, error=info.value)
    text = failure_message(job, "The validation", fixes=uc.FIXES)
    assert "Which label is the outcome the risks predict?" in text and "positive=" not in text
    assert text.endswith("**In the app:** " + uc.FIXES["positive"])


def test_first_visit_shows_the_demo_validation(tmp_path):
    at = go(app(), VALIDATE)
    assert any("This is the demo" in i.value for i in at.info)
    assert not at.error
    (v,) = at.session_state["val_results"].values()
    assert v.group_name == demo.VALIDATION_DEMO_GROUPS and v.config["n_resamples"] == RESAMPLES
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
    assert markdown(views.sample_size_text(direct)) in text
    keys = [b.key for b in at.get("download_button")]
    assert keys == ["dl_val_recalibrated", "dl_val_report", "dl_val_metrics"]
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
    at = upload(app(**{uc.CAL_ERROR_KEY: True}), df)
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
    pd.testing.assert_frame_equal(v.calibration_error, direct.calibration_error)
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
    # the calibration error, switched on here, per judged group and the whole data
    assert any(d.value.equals(views.calibration_error_table(direct, cls="yes")) for d in at.dataframe)
    assert len(views.calibration_error_table(direct, cls="yes")) == 4
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
    at.button(key=next(b.key for b in at.button if b.key.startswith("again__"))).click()
    run_once(at)
    run_once(at)
    assert list(at.session_state["jobs"]) == [key]


def shown_frame(at, expected):
    """Whether ``expected`` (a display table) is one of the page's dataframes."""
    return any(d.value.reset_index(drop=True).equals(expected.reset_index(drop=True)) for d in at.dataframe)


def test_a_point_score_by_centre_reaches_the_meta_analysis():
    # the centre that is off is named by hostile text (tests/hostile.py): shown as text everywhere
    off = HTML
    df = point_score(hospitals=tuple(off if h == "County" else h for h in HOSPITALS), shifted=off)
    at = upload(app(), df, name="icu.csv", groups=("hospital",), positive="died")
    pred = at.session_state["upload"]
    assert pred.class_names == ("survived", "died") and list(pred.groups) == ["hospital"]
    go(at, VALIDATE)
    assert at.radio(key=uc.ROLE_KEY).value == "subgroups"  # the default: subgroups of patients
    (by_group,) = at.session_state["val_results"].values()
    assert by_group.group_name == "hospital" and by_group.clusters is None
    at.radio(key=uc.ROLE_KEY).set_value("centres").run()
    no_exception(at)
    assert not at.error
    results = at.session_state["val_results"]
    assert len(results) == 2  # centres are another job than subgroups, never the same result
    v = next(r for r in results.values() if r.clusters)
    # the page's numbers are validate_risk_model's with clusters= and the page's settings
    direct = cd.validate_risk_model(pred, clusters="hospital", positive="died", n_resamples=RESAMPLES, random_state=0,
                                    thresholds=DEFAULT_THRESHOLDS, calibration_error=False)
    assert v.clusters == "hospital" and v.config["thresholds"] == direct.config["thresholds"]
    pd.testing.assert_frame_equal(v.metrics, direct.metrics)
    pd.testing.assert_frame_equal(v.pooled, direct.pooled)
    assert set(direct.pooled["metric"]) == {"O:E", "calibration-in-the-large", "calibration slope", "AUROC"}
    assert not v.metrics.equals(by_group.metrics)  # the cluster bootstrap's intervals are not the rows'
    assert v.calibration_error.empty  # off on this page by default
    # what the page shows: the verdicts, the findings per centre, the pooled table, the net benefit,
    # the recalibration, the notes (a point score has no loess curve)
    text = markdown_text(at)
    for item in direct.verdicts(cls="died"):
        assert uc.verdict_markdown(item) in text
    findings = direct.group_findings(cls="died")
    assert findings and any(off in f for f in findings)
    # the sentences name centres unmarked: every character escaped (escape_markdown), shown as text;
    # everything else shows user text in code spans
    shown_findings = {"- " + markdown(sentence) for sentence in findings}
    assert shown_findings <= {m.value for m in at.markdown}
    for element in ("markdown", "caption", "warning", "error", "info", "subheader"):
        for e in getattr(at, element):
            if e.value not in shown_findings:
                assert not any(r in outside_code(e.value) for r in RAW), e.value
    strings = figure_strings(at)
    assert plot_text(off) in strings and not any(off in s for s in strings)  # escaped for plotly
    assert shown_frame(at, views.pooled_table(direct, cls="died"))
    assert shown_frame(at, views.centres_table(direct, cls="died"))
    assert shown_frame(at, views.net_benefit_table(direct, cls="died"))
    assert shown_frame(at, views.recalibration_table(direct, cls="died"))
    assert shown_frame(at, views.grouped_table(direct, cls="died"))
    captions = " ".join(c.value for c in at.caption)
    assert direct.curve_method["died"] == "levels"
    for note in direct.notes:
        assert markdown(note) in captions
    # one forest plot of the meta-analysis per pooled metric (display.meta), beside the groups' forest
    assert len(at.get("plotly_chart")) == 3 + len(direct.pooled)  # curve, decision, groups' forest, pooled forests
    keys = [b.key for b in at.get("download_button")]
    assert keys == ["dl_val_recalibrated", "dl_val_report", "dl_val_metrics"]
    # the recalibrated risks: every row, with the risks recalibrate() gives
    frame = uc.recalibrated_frame(v, pred, "died")
    assert len(frame) == pred.n and list(frame["hospital"]) == list(df["hospital"])
    np.testing.assert_array_equal(frame["predicted_risk"], df["risk"])
    np.testing.assert_array_equal(frame["event"], (df["outcome"] == "died").astype(int))
    for model in ("intercept update", "logistic recalibration"):
        np.testing.assert_allclose(frame["risk_after_" + model.replace(" ", "_")],
                                   direct.recalibrate(df["risk"].to_numpy(), cls="died", model=model), rtol=0, atol=0)
    back = pd.read_csv(io.StringIO(csv_text(frame)))
    np.testing.assert_allclose(back["risk_after_logistic_recalibration"], frame["risk_after_logistic_recalibration"],
                               rtol=1e-15)


def test_the_threshold_range_reaches_the_validation_and_settings_survive_page_changes():
    at = go(app(), VALIDATE)  # the demo
    assert at.slider(key=uc.THRESHOLDS_KEY).value == DEFAULT_THRESHOLDS
    assert at.toggle(key=uc.CAL_ERROR_KEY).value is False  # off on this page by default
    (first,) = at.session_state["val_results"].values()
    assert first.config["thresholds"] == DEFAULT_THRESHOLDS
    at.slider(key=uc.THRESHOLDS_KEY).set_value((0.1, 0.3)).run()
    no_exception(at)
    results = at.session_state["val_results"]
    assert len(results) == 2
    v = next(r for r in results.values() if r is not first)
    direct = cd.validate_risk_model(demo.load_validation_demo(), groups=demo.VALIDATION_DEMO_GROUPS,
                                    n_resamples=RESAMPLES, random_state=0, thresholds=(0.1, 0.3),
                                    calibration_error=False)
    assert v.config["thresholds"] == (0.1, 0.3)
    pd.testing.assert_frame_equal(v.net_benefit, direct.net_benefit)
    in_range = direct.net_benefit[direct.net_benefit["in_range"]]["threshold"]
    assert np.isclose(in_range.min(), 0.1) and np.isclose(in_range.max(), 0.3)
    nb = views.net_benefit_table(direct)
    assert list(nb["threshold"]) == ["10%", "20%", "30%"] and shown_frame(at, nb)
    assert [i["verdict"] for i in v.verdicts()] == [i["verdict"] for i in direct.verdicts()]
    # every setting survives other pages; back on Validate nothing runs again
    at.radio(key=uc.ROLE_KEY).set_value("centres").run()
    at.number_input(key=uc.SEED_KEY).set_value(3).run()
    no_exception(at)
    n_results = len(at.session_state["val_results"])
    for page in (DATA, RESULTS, "calibdash_app/app_pages/reliability.py", VALIDATE):
        go(at, page)
    assert at.slider(key=uc.THRESHOLDS_KEY).value == (0.1, 0.3)
    assert at.radio(key=uc.ROLE_KEY).value == "centres"
    assert at.number_input(key=uc.SEED_KEY).value == 3
    assert at.number_input(key=uc.RESAMPLES_KEY).value == RESAMPLES
    assert at.toggle(key=uc.CAL_ERROR_KEY).value is False
    assert len(at.session_state["val_results"]) == n_results and not at.session_state["jobs"]
    (v,) = [r for r in at.session_state["val_results"].values() if r.config["random_state"] == 3]
    assert v.clusters == demo.VALIDATION_DEMO_GROUPS and v.config["thresholds"] == (0.1, 0.3)


def test_an_empty_threshold_range_is_refused_before_any_run():
    at = go(app(), VALIDATE)
    n = len(at.session_state["val_results"])
    at.slider(key=uc.THRESHOLDS_KEY).set_value((0.2, 0.2)).run()
    no_exception(at)
    assert any("threshold range is empty" in e.value for e in at.error)
    assert len(at.session_state["val_results"]) == n and not at.session_state["jobs"]


def test_every_setting_is_part_of_the_job_key():
    pred = demo.load_validation_demo()
    base = {"groups": None, "clusters": None, "n_resamples": 100, "random_state": 0,
            "thresholds": DEFAULT_THRESHOLDS, "calibration_error": False}
    variants = [base, {**base, "groups": "site"}, {**base, "clusters": "site"},
                {**base, "thresholds": (0.05, 0.4)}, {**base, "thresholds": (0.1, 0.5)},
                {**base, "calibration_error": True}, {**base, "n_resamples": 200}, {**base, "random_state": 1}]
    keys = [uc.validation_key(pred, "malignant", s) for s in variants] + [uc.validation_key(pred, "benign", base)]
    assert len(set(keys)) == len(keys)
    assert uc.validation_key(pred, "malignant", dict(base)) == keys[0]  # equal settings, equal key
    # the values of the column count, not only its name
    other = cd.load_predictions(demo.validation_demo_frame().assign(site="one"), kind="probabilities",
                                prob_columns=list(demo.VALIDATION_DEMO_CLASSES), label_column="diagnosis",
                                groups=["site"])
    assert other.sha256 == pred.sha256
    assert uc.validation_key(other, "malignant", {**base, "clusters": "site"}) != keys[2]


def test_the_data_page_summarises_a_risk_model_by_its_mean_risk_and_event_rate():
    df = point_score()
    at = upload(app(), df, name="icu.csv", groups=("hospital",), positive="died")
    shown = {m.label: m.value for m in at.metric}
    assert shown["Mean predicted risk"] == f"{df['risk'].mean():.1%}"
    assert shown["Observed event rate"] == f"{(df['outcome'] == 'died').mean():.1%}"
    assert "Accuracy" not in shown and "Mean confidence" not in shown
    # the breast-cancer demo (two classes, probabilities of both): the risk of the second class
    at.radio(key="source").set_value("demo").run()
    at.selectbox(key="demo_name").set_value(demo.VALIDATION_DEMO_NAME).run()
    pred = demo.load_validation_demo()
    shown = {m.label: m.value for m in at.metric}
    assert shown["Mean predicted risk"] == f"{pred.probs[:, 1].mean():.1%}"
    assert shown["Observed event rate"] == f"{(pred.labels == 1).mean():.1%}"
    # more classes: accuracy and mean confidence, as before
    at.selectbox(key="demo_name").set_value(demo.DEFAULT_DEMO).run()
    no_exception(at)
    shown = {m.label: m.value for m in at.metric}
    assert "Mean predicted risk" not in shown and shown["Accuracy"].endswith("%") and "Mean confidence" in shown


def test_the_planning_mode_needs_no_data():
    at = go(app(), VALIDATE)
    inputs = {"prevalence": 0.05, "c_statistic": 0.8, "oe": 1.0, "slope": 1.0, "threshold": 0.1}
    for name, value in inputs.items():
        at.number_input(key=f"view__plan_{name}").set_value(value).run()
    at.number_input(key="view__plan_width_AUROC").set_value(0.08).run()
    no_exception(at)
    expected = plan_sample_size(**inputs, targets={**DEFAULT_TARGETS, "AUROC": 0.08})
    minimum = expected[expected["metric"] == "minimum"].iloc[0]
    assert any(f"**Minimum: {int(minimum['rows_needed']):,} rows**" in m.value for m in at.markdown)
    (table,) = [d.value for d in at.dataframe if "rows_needed" in d.value.columns]
    rows = expected[expected["metric"] != "minimum"]
    assert list(table["criterion"]) == list(rows["criterion"])
    assert [int(x.replace(",", "")) for x in table["rows_needed"]] == list(rows["rows_needed"])
    # inputs that contradict each other are a message, not an exception
    at.number_input(key="view__plan_prevalence").set_value(0.6).run()
    at.number_input(key="view__plan_oe").set_value(0.5).run()
    no_exception(at)
    assert any("means a mean predicted risk of 100% or more" in e.value for e in at.error)
    assert not [d for d in at.dataframe if "rows_needed" in d.value.columns]


def test_a_validation_beyond_the_servers_time_limit_is_refused_before_it_starts(monkeypatch):
    # Issue 28: the page allowed 10,000 resamples, about 21 minutes of the only worker at 100,000 rows.
    from calibdash_app.session import job_pool

    at = upload(app(resamples=10_000), clinical(n=2000, seed=28036))
    # 2,000 rows x 10,000 resamples: at least 0.5 s by the estimate; a server that allows 0.2 s a run
    monkeypatch.setattr(job_pool(), "max_seconds", 0.2)
    at.switch_page(VALIDATE)
    run_once(at)
    no_exception(at)
    assert not at.session_state["jobs"]  # nothing was started
    (message,) = [e.value for e in at.error if "would take at least" in e.value]
    assert "10,000 bootstrap resamples of 2,000 rows" in message and "Use at most 4,000 resamples" in message
    assert "calibdash validate" in message and not [b for b in at.button if (b.key or "").startswith("again__")]
    at.number_input(key=uc.RESAMPLES_KEY).set_value(4000)  # as the message says: it runs
    run_once(at)
    assert [k[0] for k in at.session_state["jobs"]] == ["validate"]
    assert not [e for e in at.error if "would take" in e.value]
    at.button(key=next(b.key for b in at.button if b.key.startswith("cancel__"))).click()  # not left running
    run_once(at)
