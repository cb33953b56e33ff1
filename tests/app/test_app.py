"""Every page of the Streamlit app through Streamlit's AppTest (no browser)."""

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import calibdash
from calibdash.lab.simulation import dirichlet_simulation

from .conftest import go, no_exception

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = [f"calibdash_app/app_pages/{name}.py" for name in ("data", "evaluate", "results", "reliability")]


@pytest.fixture
def at():
    """The app after its first run: the demo has been analysed already."""
    app = AppTest.from_file(APP, default_timeout=180).run()
    no_exception(app)
    return app


def small_csv(n=800, d=3, seed=3):
    sim = dirichlet_simulation(n=n, n_classes=d, random_state=seed)
    df = pd.DataFrame(sim.probs, columns=[f"p{k}" for k in range(d)])
    df["label"] = sim.labels
    return df.to_csv(index=False).encode()


def upload(at, content, name, labels=None):
    go(at, "calibdash_app/app_pages/data.py")
    at.radio(key="source").set_value("upload").run()
    at.file_uploader(key="upload_predictions").set_value((name, content, "application/octet-stream"))
    if labels is not None:
        at.file_uploader(key="upload_labels").set_value(labels)
    at.run()
    no_exception(at)
    return at


def test_first_visit_shows_a_finished_demo_analysis(at):
    assert at.session_state["data_source"] == "demo"
    results = at.session_state["active"]
    assert len(results) == 1 and set(next(iter(results.values()))) == {"top-label", "canonical"}
    text = " ".join(m.value for m in at.markdown)
    assert "percentage points" in text and "digits: random forest" in text
    assert len(at.get("plotly_chart")) == 3  # risk curves, forest plot, all estimates by quantity
    assert [b.key for b in at.get("download_button")] == ["dl_summary", "dl_curves", "dl_json", "dl_report"]
    assert at.dataframe
    # the literature's estimators, one table per quantity (the calibration errors first), the familiar
    # 15-bin ECE labelled as such
    others = [d.value for d in at.dataframe if "label" in d.value.columns]
    assert [list(t["estimator"]) for t in others[:2]] == [["variational-top-l2"], ["ece-15-bins"]]
    assert others[1]["label"].iloc[0].startswith("15-bin ECE (L1)")
    quantities = [m.value for m in at.markdown if m.value.startswith("**") and ", in " in m.value]
    assert quantities[:2] == ["**calibration error (L2)**, in percentage points", "**L1 calibration error**, in percentage points"]


def test_results_show_intervals_the_tied_set_and_the_h_zero_reference(at):
    go(at, "calibdash_app/app_pages/results.py")
    shown = at.radio(key="view__notion").value
    (res,) = [r for r in at.session_state["results"].values() if r.config["call"]["notion"] == shown]
    (table,) = [d.value for d in at.dataframe if "risk_diff" in d.value.columns]
    # every estimator with its paired comparison and interval, then the reference h = 0
    assert list(table["estimator"]) == list(res.summary.sort_values("val_risk")["estimator"]) + ["h = 0"]
    assert {"ci_low", "ci_high", "tied", "risk_diff", "risk_diff_se"} <= set(table.columns)
    # numbers as text in their stated format, a missing value blank (never a literal "None")
    ref = table.iloc[-1]
    assert ref["estimate"] == "0.00" and ref["tied"] == res.reference["tied"]  # points, like the forest plot
    assert ref["val_risk"] == format(res.reference["val_risk"], ".5g") and ref["ci_low"] == ref["ci_high"] == ""
    best = table.iloc[0]
    assert best["risk_diff"] == "0" and best["tied"]
    assert "None" not in table.astype(str).to_numpy()
    text = " ".join(m.value for m in at.markdown)
    low, high = 100 * res.summary.loc[res.summary["tied"], "ci_low"].min(), 100 * res.summary.loc[res.summary["tied"], "ci_high"].max()
    assert f"95% interval {0.0 if res.reference['tied'] else low:.2f} to {high:.2f}" in text
    assert "h = 0" in text and "paired over the 5 validation folds" in text.lower()
    # the literature's rows carry intervals too
    for others in [d.value for d in at.dataframe if "label" in d.value.columns]:
        low, est, high = (others[c].astype(float) for c in ("ci_low", "estimate", "ci_high"))
        assert (low <= est).all() and (est <= high).all()


def test_every_page_renders_with_help_on_every_control(at):
    for page in PAGES:
        go(at, page)
        for kind in ("radio", "selectbox", "multiselect", "text_input", "text_area", "slider", "number_input", "button"):
            for w in getattr(at, kind):
                assert w.help, f"{page}: {kind} {w.label!r} has no help text"
    go(at, "calibdash_app/app_pages/reliability.py")
    at.radio(key="view__notion").set_value("canonical").run()
    no_exception(at)
    assert len(at.get("plotly_chart")) == 3  # top-label diagram, continuous curve, per-class panels


def test_the_packaged_entry_script_runs_the_same_app():
    # what `calibdash app` serves (calibdash_app/main.py), its pages relative to it: the same navigation
    from calibdash.serve import find_app

    app = AppTest.from_file(str(find_app()), default_timeout=180).run()
    no_exception(app)
    assert [t.value for t in app.title] == ["Results"]  # the root sends a first visit on to Results
    for name, title in (("data", "Data"), ("evaluate", "Evaluate"), ("reliability", "Reliability")):
        go(app, f"app_pages/{name}.py")
        assert [t.value for t in app.title] == [title]


def test_demo_choice_then_results(at):
    go(at, "calibdash_app/app_pages/data.py")
    at.selectbox(key="demo_name").set_value("digits: naive Bayes").run()
    no_exception(at)
    assert any(m.label == "Accuracy" for m in at.metric)
    go(at, "calibdash_app/app_pages/results.py")  # a new demo is analysed automatically
    assert "digits: naive Bayes" in " ".join(c.value for c in at.caption)
    assert "clearly miscalibrated" in " ".join(m.value for m in at.markdown)


def test_valid_upload_is_understood_kept_and_evaluated(at):
    upload(at, small_csv(), "sim3.csv")
    assert not at.error
    assert at.session_state["upload"].n == 800
    assert "In use: `sim3.csv`" in [h.value for h in at.subheader]
    assert {m.label: m.value for m in at.metric}["Classes"] == "3"
    go(at, "calibdash_app/app_pages/results.py")  # an upload is not evaluated until asked
    assert any("No evaluation" in i.value for i in at.info)
    go(at, "calibdash_app/app_pages/evaluate.py")
    at.button(key="run").click().run()
    no_exception(at)
    assert at.success and "Finished" in at.success[0].value
    assert "top-label, canonical" in " ".join(m.value for m in at.sidebar.markdown)  # sidebar drawn after the run
    # each result keeps the fold models of the one estimator whose recalibration the views draw
    for res in at.session_state["results"].values():  # the demo's and the upload's
        assert list(res.models) == res.recalibration_candidates[:1]
    shown = {at.session_state["results"][k].config["call"]["notion"]: at.session_state["results"][k]
             for k in at.session_state["active"][at.session_state["upload"].sha256].values()}
    go(at, "calibdash_app/app_pages/data.py")  # the upload survives page changes
    assert "In use: `sim3.csv`" in [h.value for h in at.subheader]
    go(at, "calibdash_app/app_pages/reliability.py")
    at.radio(key="view__notion").set_value("canonical").run()
    no_exception(at)
    assert len(at.get("plotly_chart")) == 4  # diagram, continuous curve, per-class panels, simplex
    assert f"selected estimator ({shown['canonical'].recalibration_candidates[0]})" in " ".join(c.value for c in at.caption)


@pytest.mark.parametrize(
    "content, name, message",
    [
        (b"\x00\x01garbage", "preds.npy", "preds.npy"),
        (b"a,b\n0.5,x\n", "preds.csv", "preds.csv"),
        (np.eye(3).tobytes(), "preds.parquet", "preds.parquet"),
    ],
)
def test_bad_upload_shows_a_message_not_a_traceback(at, content, name, message):
    upload(at, content, name)
    assert at.error and message in at.error[0].value
    assert at.session_state.get("upload") is None
    label = [h.value for h in at.subheader][-1]
    assert "digits: random forest" in label  # still on the demo


def test_labels_file_mismatch_is_reported(at):
    buf = io.BytesIO()
    np.save(buf, np.array([0, 1, 2]))
    upload(at, small_csv().replace(b",label", b",extra"), "p.csv", labels=("y.npy", buf.getvalue(), "application/octet-stream"))
    assert at.error
    no_exception(at)


def test_grid_edits_take_effect_and_bad_text_is_refused(at):
    go(at, "calibdash_app/app_pages/evaluate.py")
    at.multiselect(key="cfg__notions").set_value(["top-label"]).run()
    at.multiselect(key="cfg__est__top-label").set_value(["15-bins", "bins", "kde"]).run()
    at.text_area(key="cfg__grid__top-label__bins").input("7, 9, 11").run()
    at.text_area(key="cfg__grid__top-label__kde").input("0.01, 0.1").run()
    at.button(key="run").click().run()
    no_exception(at)
    (res,) = [at.session_state["results"][k] for k in next(iter(at.session_state["active"].values())).values()]
    assert res.config["call"]["grids"]["bins"]["n_bins"] == [7, 9, 11]
    assert sorted(res.curves.loc[res.curves.estimator == "kde", "value"].unique()) == [0.01, 0.1]
    assert list(res.summary.estimator) == ["15-bins", "bins", "kde"]
    # invalid text: a readable message, and the last good result stays
    at.text_area(key="cfg__grid__top-label__bins").input("7, many").run()
    at.button(key="run").click().run()
    no_exception(at)
    assert at.error and "'many' is not a number" in at.error[0].value
    go(at, "calibdash_app/app_pages/results.py")
    assert "7, 9, 11" not in " ".join(m.value for m in at.markdown)  # sanity: page renders
    assert len(at.get("plotly_chart")) == 3
    go(at, "calibdash_app/app_pages/evaluate.py")  # settings survive page changes
    assert at.text_area(key="cfg__grid__top-label__bins").value == "7, many"


def boom(*args, **kwargs):
    raise RuntimeError("simulated failure")


def test_cache_hit_on_revisit_and_failed_run_keeps_result(at, monkeypatch):
    go(at, "calibdash_app/app_pages/evaluate.py")
    at.button(key="run").click().run()  # the defaults: already computed on the first visit
    assert "Loaded from cache" in at.success[0].value
    go(at, "calibdash_app/app_pages/results.py")
    go(at, "calibdash_app/app_pages/evaluate.py")
    at.number_input(key="cfg__seed").set_value(1).run()
    # the run is a job in a child process, which finds boom by name in this module
    monkeypatch.setattr(calibdash, "evaluate", boom)
    monkeypatch.setattr(calibdash, "evaluate_notions", boom)
    before = dict(at.session_state["active"])
    at.button(key="run").click().run()
    no_exception(at)
    assert "simulated failure" in at.error[0].value
    assert dict(at.session_state["active"]) == before
    go(at, "calibdash_app/app_pages/results.py")
    assert len(at.get("plotly_chart")) == 3
    # back to seed 0: instant, from the cache, even with evaluate broken
    go(at, "calibdash_app/app_pages/evaluate.py")
    at.number_input(key="cfg__seed").set_value(0).run()
    at.button(key="run").click().run()
    assert "Loaded from cache" in at.success[0].value


def test_the_settings_are_evaluation_configs_with_the_keys_of_the_old_fingerprint():
    from calibdash.evaluation.config import EvaluationConfig, config_fingerprint
    from calibdash_app import settings

    sha = "ab" * 32
    configs = settings.default_configs()
    assert all(isinstance(c, EvaluationConfig) for c in configs) and [c.notion for c in configs] == settings.DEFAULT_NOTIONS
    # the cache keys the app used when its settings were dicts: nothing kept under them goes stale
    assert [settings.config_key(sha, c) for c in configs] == [config_fingerprint(sha, n) for n in settings.DEFAULT_NOTIONS]


def open_address(token):
    """A new browser tab at an address with ``?session=token``."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["session"] = token
    at.run()
    no_exception(at)
    return at


def test_an_address_restores_a_copy_under_a_new_token_so_nobody_can_fixate_a_session():
    # Issue 28: a stranger's link /data?session=T made the victim's upload land in T, where
    # the stranger's reload found it. Now an address restores once, as a copy under a new token.
    from calibdash_app.session import session_store

    stranger = AppTest.from_file(APP, default_timeout=300).run()
    no_exception(stranger)
    planted = stranger.session_state["token"]
    assert stranger.query_params["session"] in (planted, [planted])
    victim = open_address(planted)
    mine = victim.session_state["token"]
    assert mine != planted and victim.query_params["session"] in (mine, [mine])  # the address changed
    assert victim.session_state["active"] == stranger.session_state["active"]  # a copy of what the link showed
    assert victim.session_state["results"] is not stranger.session_state["results"]
    upload(victim, small_csv(), "patients.csv")
    assert victim.session_state["upload"].source_name == "patients.csv"
    assert session_store().get(planted) is None  # the planted token's entry went to the victim's copy
    stranger.run()  # the stranger's own tab goes on under its token; a reload of it gets a copy of that
    reloaded = open_address(planted)
    assert reloaded.session_state.get("upload") is None  # never the victim's file
    assert reloaded.session_state["token"] not in (planted, mine)
    again = open_address(mine)  # the victim's own reload gets the upload back
    assert again.session_state["upload"].source_name == "patients.csv"
    assert any("Restored" in i.value for i in again.info)
    gone = open_address(mine)  # that address was used: it says so
    assert any("restores its session once" in w.value for w in gone.warning)


def restart_the_server(*, pool=False):
    """What a restart leaves: a new session store in memory (over the same database) and, with
    ``pool``, a new job pool that has none of the old one's jobs."""
    from calibdash_app.session import job_pool, session_store

    session_store().close()  # what was put is written first
    session_store.clear()
    if pool:
        old = job_pool()
        job_pool.clear()
        old.shutdown()


def test_a_restarted_server_restores_the_upload_mapping_settings_and_results():
    # Issue 28: after a restart of the server, uploads, results and running jobs were gone.
    at = AppTest.from_file(APP, default_timeout=300).run()
    upload(at, small_csv(seed=28031), "restart.csv")
    at.multiselect(key="src__prob_columns").set_value(["p0", "p1", "p2"]).run()  # the mapping, set by hand
    go(at, "calibdash_app/app_pages/evaluate.py")
    at.number_input(key="cfg__seed").set_value(7).run()
    at.button(key="run").click().run()
    no_exception(at)
    before = {k: at.session_state["results"][k] for k in at.session_state["active"][at.session_state["upload"].sha256].values()}
    token = at.session_state["token"]
    restart_the_server()
    back = open_address(token)
    assert back.session_state["upload"].source_name == "restart.csv"
    assert back.session_state["upload"].sha256 == at.session_state["upload"].sha256
    assert back.session_state["cfg__seed"] == 7 and back.session_state["src__prob_columns"] == ["p0", "p1", "p2"]
    restored = back.session_state["results"]
    for key, res in before.items():  # the finished results, number for number
        pd.testing.assert_frame_equal(restored[key].summary, res.summary)
    assert any("Restored after the reload" in i.value for i in back.info)
    back.run()  # the next run, on the same page, has said it already (issue 27: it never left)
    assert not any("Restored" in i.value for i in back.info)
    go(back, "calibdash_app/app_pages/results.py")  # shown without running anything
    assert not back.session_state["jobs"] and "restart.csv" in " ".join(m.value for m in back.markdown)
    go(back, "calibdash_app/app_pages/data.py")  # the file itself is back: its mapping can still be changed
    assert back.multiselect(key="src__prob_columns").value == ["p0", "p1", "p2"]


def test_a_run_cut_short_by_a_restart_is_said_to_be_interrupted_with_run_again():
    from .conftest import run_once

    at = AppTest.from_file(APP, default_timeout=300).run()  # the first visit's demo analysis done
    # small runs, with seeds no other test uses (the pool shares finished jobs between sessions)
    for key, value in (("view__lab_seed", 28032), ("view__lab_f1_seed", 28032), ("view__lab_ns", [100]),
                       ("view__lab_repeats", 2), ("view__lab_f1_n", 100), ("view__lab_f1_seeds", 5)):
        at.session_state[key] = value
    at.switch_page("calibdash_app/app_pages/learn.py")
    run_once(at)
    no_exception(at)
    assert len(at.session_state["jobs"]) == 2  # the estimates and Figure 1, running
    token = at.session_state["token"]
    restart_the_server(pool=True)
    back = AppTest.from_file(APP, default_timeout=300)
    back.query_params["session"] = token
    back.switch_page("calibdash_app/app_pages/learn.py")
    back.run()
    no_exception(back)
    assert not back.session_state["jobs"] and back.session_state["view__lab_f1_seed"] == 28032
    assert sum("interrupted: the server restarted" in e.value for e in back.error) == 2
    for _ in range(2):
        back.button(key=[b.key for b in back.button if b.key and b.key.startswith("again__")][0]).click().run()
        no_exception(back)
    assert not back.error and len(back.session_state["lab_results"]) == 2


def test_a_sessions_results_are_bounded_in_bytes_least_recently_used_first(at, monkeypatch):
    # Issue 28: a session's results were bounded by counts only (24 results of up to a few MB each).
    from calibdash_app.session import session_store

    ss = at.session_state
    demo = list(ss["results"])  # the first visit's two results
    sizes = dict(ss["result_bytes"])
    assert set(sizes) == {("results", k) for k in demo} and all(n > 10_000 for n in sizes.values())
    # From here every new result counts 1 MB, whichever fold models it keeps (its size varies with the
    # estimator selected), and the session holds 2 MB: the two new results and nothing besides.
    monkeypatch.setattr("calibdash_app.runs.pickled_length", lambda value: 1_000_000)
    monkeypatch.setattr(session_store(), "session_bytes", 2_000_000)
    go(at, "calibdash_app/app_pages/evaluate.py")
    at.number_input(key="cfg__seed").set_value(28035).run()
    at.button(key="run").click().run()
    no_exception(at)
    new = [k for k in ss["results"] if k not in demo]
    assert len(new) == 2 and list(ss["results"]) == new  # the older results made room
    assert sum(ss["result_bytes"].values()) <= session_store().session_bytes
    at.number_input(key="cfg__seed").set_value(0).run()  # the demo's settings again: evaluated again, not lost silently
    at.button(key="run").click().run()
    no_exception(at)
    assert set(ss["results"]) == set(demo) and "Finished" in at.success[0].value


def test_the_sidebar_says_how_far_the_evaluation_is_only_where_it_is_used(at):
    # issue 27: the Validate page's sidebar said "Evaluated: not yet" beside a validation that does not use it
    from calibdash_app.widgets import EVALUATION_PAGES

    def sidebar_text():
        return " ".join(m.value for m in at.sidebar.markdown)

    assert "**Evaluated:** top-label" in sidebar_text()  # Results, the first page
    assert "validate" not in EVALUATION_PAGES
    go(at, "calibdash_app/app_pages/validate.py")
    assert "**Data:**" in sidebar_text() and "Evaluated" not in sidebar_text()
    for page in EVALUATION_PAGES:
        go(at, f"calibdash_app/app_pages/{page}.py")
        assert "**Evaluated:** top-label" in sidebar_text(), page
