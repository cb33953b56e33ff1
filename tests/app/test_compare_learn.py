"""The Compare and Learn pages through Streamlit's AppTest (no browser)."""

import io
import os
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import calibdash as cd
from calibdash.display import plots
from calibdash.lab import studies as lab
from calibdash.lab.demo import load_demo
from calibdash.lab.simulation import dirichlet_simulation

from .conftest import first_visit, go, no_exception, run_once

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "app.py")
COMPARE, LEARN = "calibdash_app/app_pages/compare.py", "calibdash_app/app_pages/learn.py"


@pytest.fixture(scope="module")
def app():
    """One app session for the module: the first visit analyses the demo (shared work)."""
    return first_visit()


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
    # issue 27: the pairs table and chart give the difference of the errors, in points, with its interval
    cols = ["error_difference", "error_difference_low", "error_difference_high", "estimate_a", "estimate_b"]
    np.testing.assert_allclose(shown[cols], 100 * want.error_differences()[cols], rtol=1e-12)
    assert np.isfinite(shown["error_difference_low"]).all() and "difference" not in shown
    assert any(plots.NO_PAIR_INTERVAL in c.value and "percentage points" in c.value for c in at.caption)
    # issue 27: the models table in the chart's unit, percentage points, and the verdict in points too
    models = at.dataframe[0].value
    np.testing.assert_allclose(models[["estimate", "ci_low", "ci_high"]], 100 * want.models[["estimate", "ci_low", "ci_high"]],
                               rtol=1e-12)
    assert "squared_estimate" not in models
    np.testing.assert_allclose(models["accuracy"], 100 * want.models["accuracy"], rtol=1e-12)  # % correct, as the chart
    text = " ".join(m.value for m in at.markdown)
    a, b = 100 * want.models["estimate"]
    assert f"calibration errors of {min(a, b):.2f} and {max(a, b):.2f} percentage points" in text
    # issue 27: why one estimator for every model, and how that relates to each model's Results page
    assert f"every model here is measured with **{want.estimator}**" in text and "Results page" in text


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


def test_compare_draws_a_comparison_once_and_again_for_new_settings(app, monkeypatch):
    # the figures and tables are a function of the comparison (its data and settings): a rerun
    # that changes neither reuses them; another estimator draws its own comparison's
    from calibdash.display import reliability as rl

    made = []
    real = rl.reliability_table
    monkeypatch.setattr(rl, "reliability_table", lambda *a, **k: made.append(1) or real(*a, **k))
    at = go(app, COMPARE)
    at.selectbox(key="view__cmp_estimator").set_value("auto").run()
    no_exception(at)
    before = len(made)
    at.run()
    at = go(at, COMPARE)
    no_exception(at)
    assert len(made) == before and len(at.get("plotly_chart")) == 3
    at.selectbox(key="view__cmp_estimator").set_value("bins").run()
    no_exception(at)
    assert len(made) == before + 2  # the two models' diagrams, once
    res = list(at.session_state["cmp_results"].values())[-1]
    assert res.estimator == "bins"
    shown = at.dataframe[1].value
    np.testing.assert_allclose(shown["error_difference"], 100 * res.error_differences()["error_difference"], rtol=1e-12)
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
    # issue 27: a page change empties the uploaders (as a reload does); the models loaded stay in use
    go(at, "calibdash_app/app_pages/results.py")
    go(at, COMPARE)
    assert any("In use:" in c.value and "calibrated.csv" in c.value and "sharp.csv" in c.value for c in at.caption)
    assert not at.info and len(at.get("plotly_chart")) == 3
    # the user empties the uploader: the models go with the files
    at.file_uploader(key="cmp_upload_predictions").set_value([(("x.csv"), csv_bytes(sim.probs), "text/csv")]).run()
    at.file_uploader(key="cmp_upload_predictions").set_value(None).run()
    no_exception(at)
    assert "cmp_uploads" not in at.session_state and any("at least two" in i.value for i in at.info)
    # a third file with other rows: a plain message, no traceback
    at.file_uploader(key="cmp_upload_predictions").set_value(
        [("calibrated.csv", csv_bytes(sim.probs), "text/csv"), ("short.csv", csv_bytes(sharp[:400], sim.labels[:400]), "text/csv")])
    at.file_uploader(key="cmp_upload_labels").set_value(None)
    at.run()
    no_exception(at)
    assert at.error


# -- Cancel on the pages that run their job without a button (issue 28) ---------------------
def fill_the_pool():
    """Give every worker of the app's pool a long job of another session, so that a page's job
    waits in the queue: its Cancel then meets it there, however fast the machine is."""
    from calibdash_app.session import job_pool

    from .test_jobs import sleepy

    pool = job_pool()
    # again=True: a blocker cancelled by an earlier test is started afresh, not given back cancelled
    return pool, [pool.submit(("blocker", i), sleepy, {"seconds": 600}, owner="another tab", again=True)
                  for i in range(pool.max_jobs)]


def page_jobs(at, kind):
    return [key for key in at.session_state["jobs"] if key[0] == kind]


def click(at, prefix, index=0):
    """Press the ``index``-th button whose key starts with ``prefix`` (a job's Cancel or Run again), one script run."""
    keys = [b.key for b in at.button if b.key and b.key.startswith(prefix)]
    at.button(key=keys[index]).click()
    run_once(at)
    no_exception(at)


def test_a_job_of_another_page_shows_its_progress_on_every_page():
    # Issue 27: a running validation's (or simulation's) progress showed on its own page only.
    at = AppTest.from_file(APP, default_timeout=300).run()
    for seed_key in ("view__lab_seed", "view__lab_f1_seed"):
        at.session_state[seed_key] = 28045  # new jobs (the pool shares finished ones between sessions)
    pool, blockers = fill_the_pool()
    try:
        at.switch_page(LEARN)
        run_once(at)
        no_exception(at)
        assert len(at.session_state["jobs"]) == 2  # queued behind the other tab's jobs
        for page in ("calibdash_app/app_pages/results.py", "calibdash_app/app_pages/data.py", LEARN):
            at.switch_page(page)
            run_once(at)
            no_exception(at)
            texts = [p.proto.text for p in at.get("progress")]
            cancels = [b.key for b in at.button if b.key and b.key.startswith("cancel__")]
            assert len(texts) == 2 and len(cancels) == 2, (page, texts)  # each once
            elsewhere = page != LEARN
            assert all(("(for the Learn page)" in t) == elsewhere for t in texts), texts
        at.switch_page("calibdash_app/app_pages/results.py")
        run_once(at)
        click(at, "cancel__")  # cancelled from another page: gone from every page
        run_once(at)
        assert len(at.session_state["jobs"]) == 1
    finally:
        for blocker in blockers:
            blocker.cancel()
        for key in list(at.session_state["jobs"]):
            pool.cancel(key, owner=at.session_state["token"])


def test_a_cancel_never_starts_a_copy_and_run_again_starts_one():
    at = AppTest.from_file(APP, default_timeout=300).run()  # the first visit's demo analysis done
    # Seeds no other test uses: the pool shares finished jobs between sessions, and these must be new.
    for seed_key in ("view__lab_seed", "view__lab_f1_seed", "view__cmp_seed"):
        at.session_state[seed_key] = 28028
    pool, blockers = fill_the_pool()
    try:
        for page, kind, n_jobs in ((LEARN, "lab_draws", 2), (COMPARE, "compare", 1)):
            at.switch_page(page)
            run_once(at)
            no_exception(at)
            assert len(at.session_state["jobs"]) == n_jobs  # Learn: the estimates and Figure 1
            (key,) = page_jobs(at, kind)
            assert pool.job(key, owner=at.session_state["token"]).state == "queued"
            for _ in range(n_jobs):
                click(at, "cancel__")
            for _ in range(5):  # the page reruns as it would, every ~15 ms
                run_once(at)
                no_exception(at)
            assert not at.session_state["jobs"]  # nothing submitted again
            assert pool.counts()["queued"] == 0  # and nothing waiting in the pool
            assert sum("Cancelled" in e.value for e in at.error) == n_jobs
            click(at, "again__")  # Run again: that job, once
            run_once(at)
            assert page_jobs(at, kind) == [key] and len(at.session_state["jobs"]) == 1
            assert pool.counts()["queued"] == 1
            if kind == "lab_draws":
                click(at, "cancel__")
        # A job whose process dies is not the data's fault: its message says so and offers Run again.
        (key,) = page_jobs(at, "compare")
        job = pool.job(key, owner=at.session_state["token"])
        for blocker in blockers:
            blocker.cancel()
        deadline = time.monotonic() + 120
        while job.worker_pid is None and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(job.worker_pid, signal.SIGKILL)  # its own pid: a fresh worker may not lead its group yet
        assert job.wait(120) and job.state == "failed"
        for _ in range(3):
            run_once(at)
        no_exception(at)
        assert not at.session_state["jobs"] and any("ended unexpectedly" in e.value for e in at.error)
        click(at, "again__")
        at.run()  # until the job is done
        no_exception(at)
        assert not at.error and len(at.get("plotly_chart")) == 3
    finally:
        for blocker in blockers:
            blocker.cancel()
