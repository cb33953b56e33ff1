"""End to end: the Compare and Learn pages in Debian's chromium against a real ``streamlit run``.

Screenshots go to tests/output/ (not committed).
"""

import time

import numpy as np
import pandas as pd

import calibdash as cd
from calibdash.lab import studies as lab
from calibdash.lab.demo import load_demo

from .browser import OUTPUT, new_session


def download_csv(pg, key, path):
    with pg.expect_download() as info:
        pg.locator(f".st-key-{key} button").first.click()
    info.value.save_as(path)
    return pd.read_csv(path)


def test_compare_page_default_view_and_download(browser, server, tmp_path):
    context, w = new_session(browser, server)
    pg = w.page
    try:
        w.goto_page("Compare")
        for key in ["cmp_estimates", "cmp_pairs", "cmp_reliability"]:
            pg.locator(f".st-key-{key} .js-plotly-plot").wait_for(timeout=240_000)
        w.check()
        OUTPUT.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=OUTPUT / "compare_default.png", full_page=True)
        got = download_csv(pg, "dl_cmp_pairs", tmp_path / "pairs.csv")
        models = download_csv(pg, "dl_cmp_models", tmp_path / "models.csv")
        names = ["digits: random forest", "digits: logistic regression"]
        want = cd.compare({n: load_demo(n) for n in names}, notion="top-label", random_state=0)
        assert list(got["model_a"]) == list(want.pairs["model_a"]) and list(got["model_b"]) == list(want.pairs["model_b"])
        for col in ["difference", "se", "ci_low", "ci_high", "p_value"]:
            np.testing.assert_allclose(got[col], want.pairs[col], rtol=1e-9, atol=1e-300, err_msg=col)
        for col in ["accuracy", "brier", "estimate", "ci_low", "ci_high"]:
            np.testing.assert_allclose(models[col], want.models[col], rtol=1e-9, err_msg=col)
        w.check()
    finally:
        context.close()


def test_learn_page_default_view_and_download(browser, server, tmp_path):
    # The first visit of a session analyses the demo data set (app.py): land first, so
    # that the time below is the Learn page's own.
    context, w = new_session(browser, server)
    pg = w.page
    try:
        t0 = time.perf_counter()
        w.goto_page("Learn")
        pg.locator(".st-key-lab_estimates .js-plotly-plot").wait_for(timeout=120_000)
        pg.locator(".st-key-lab_figure1 .js-plotly-plot").wait_for(timeout=120_000)
        seconds = time.perf_counter() - t0
        print(f"Learn page default view: {seconds:.1f} s")  # the issue asks for under 10 s; not asserted (shared CI)
        w.check()
        OUTPUT.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=OUTPUT / "learn_default.png", full_page=True)
        got = download_csv(pg, "dl_lab_figure1", tmp_path / "figure1.csv")
        want = lab.figure1(n=500, n_seeds=100, random_state=0)
        np.testing.assert_allclose(got["theta"], want["theta"], rtol=1e-12)
        np.testing.assert_allclose(got["risk"], want["risk"], rtol=1e-9)
        est = download_csv(pg, "dl_lab_estimates", tmp_path / "estimates.csv")
        assert sorted(est["n"].unique()) == [250, 500, 1000] and set(est["estimator"]) == {"bins", "kde", "temperature"}
        # change the scenario: the page reruns and still draws both charts
        pg.locator(".st-key-view__lab_notion").get_by_text("canonical").click()
        w.wait_idle()
        pg.locator(".st-key-lab_estimates .js-plotly-plot").wait_for(timeout=120_000)
        w.check()
    finally:
        context.close()


def test_a_cancel_on_learn_never_starts_a_copy(browser, server):
    # Issue 28: one Cancel click on Learn queued 16 copies of its job in 0.23 s (every rerun
    # submitted it again). Now the job stays cancelled, and Run again starts it once.
    context, w = new_session(browser, server)
    pg = w.page
    estimating = pg.locator('[class*="st-key-job__"]', has_text="Simulating and estimating")
    try:
        w.goto_page("Learn")
        w.wait_jobs()  # the page's default runs (new ones when the server forgot them): their panels gone
        seed = pg.locator(".st-key-view__lab_seed input")
        seed.fill("28029")  # a seed no other test uses: a new job, not a finished one of the server
        seed.press("Enter")
        # Not wait_idle: while a job's progress polls every second on a loaded machine, the script is
        # seldom seen idle, and waiting for it outlasted the job (its result was shown, its Cancel gone).
        cancel = estimating.locator("button", has_text="Cancel").first
        cancel.wait_for(timeout=60_000)
        cancel.click()
        # 120 s, not 30: a fresh clone's `make test` beside another run on the same two cores once
        # took longer than 30 s to show it (the file alone passed at once).
        pg.locator('[data-testid="stAlertContentError"]', has_text="Cancelled").wait_for(timeout=120_000)
        for _ in range(30):  # 3 s of the page's own reruns: the job never comes back
            assert not estimating.count()
            pg.wait_for_timeout(100)
        assert pg.locator('[class*="st-key-again__"]').count() == 1  # one button (Streamlit draws it twice inside)
        pg.locator('[class*="st-key-again__"] button:visible', has_text="Run again").first.click()
        estimating.wait_for(timeout=30_000)  # Run again: the job runs once more
        assert estimating.count() == 1
        w.check()
    finally:
        for box in pg.locator('[class*="st-key-cancel__"] button').all():  # leave the server's pool free
            try:
                box.click(timeout=5_000)
                w.wait_idle()
            except Exception:  # noqa: BLE001 - gone meanwhile
                pass
        context.close()
