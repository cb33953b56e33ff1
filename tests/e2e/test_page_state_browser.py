"""End to end (issue 27): a setting changed on Learn, Compare or Validate, and the run it started,
are still there after a visit to two other pages; an upload waiting for its positive class and the
Compare page's uploads are still there after a reload; in Debian's chromium against a real ``streamlit run``.

Before, the pages' seeds fell back to 0 and showed the old result: a job's progress is a polling
fragment, and a fragment run just after a page change dropped the values of the widgets it did not
draw (calibdash_app.session.kept).
"""

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash.lab.simulation import dirichlet_simulation

from .browser import new_session

JOB_PANEL = '[class*="st-key-job__"]'


def change_visit_and_return(w, page, key, value):
    """On ``page``: type ``value`` into the number box ``key`` and, while the page's runs go on (its first
    visit's and the one the new value starts), visit two other pages and come back; the runs are then
    waited for."""
    pg = w.page
    w.goto_page(page)
    box = pg.locator(f".st-key-{key} input")
    box.fill(value)
    box.press("Enter")
    pg.locator(JOB_PANEL).first.wait_for(timeout=60_000)  # a run, polled by its fragment, goes on
    pg.wait_for_timeout(2_500)  # the user reads its progress for a moment: its fragment reruns (every second)
    w.goto_page("Results")
    w.goto_page("Data")
    w.goto_page(page)
    assert pg.locator(f".st-key-{key} input").input_value() == value
    w.wait_jobs()
    assert pg.locator(f".st-key-{key} input").input_value() == value


# (page, its seed box, a seed no other test uses, a chart of its result, the download that names the seed)
SEEDED_PAGES = [("Learn", "view__lab_seed", "28042", "lab_estimates", "dl_lab_estimates"),
                ("Compare", "view__cmp_seed", "28043", "cmp_pairs", "dl_cmp_pairs")]


@pytest.mark.parametrize(("page", "key", "seed", "chart", "download"), SEEDED_PAGES, ids=[p[0] for p in SEEDED_PAGES])
def test_a_page_keeps_its_seed_and_run_across_pages(browser, server, page, key, seed, chart, download):
    context, w = new_session(browser, server)
    pg = w.page
    try:
        change_visit_and_return(w, page, key, seed)
        pg.locator(f".st-key-{chart} .js-plotly-plot").wait_for(timeout=60_000)
        with pg.expect_download() as info:  # the result shown is the new seed's: its file says so
            pg.locator(f".st-key-{download} button").first.click()
        assert info.value.suggested_filename.endswith(f"_seed{seed}.csv"), info.value.suggested_filename
        w.check()
    finally:
        context.close()


def test_validate_keeps_its_settings_and_run_across_pages(browser, server):
    context, w = new_session(browser, server)
    pg = w.page
    try:
        w.goto_page("Validate")
        resamples = pg.locator(".st-key-view__val_resamples input")
        resamples.fill("200")
        resamples.press("Enter")
        w.wait_idle()
        change_visit_and_return(w, "Validate", "view__val_seed", "28044")
        assert pg.locator(".st-key-view__val_resamples input").input_value() == "200"
        pg.get_by_text("200 bootstrap resamples", exact=False).first.wait_for(timeout=60_000)
        pg.get_by_text("seed 28044", exact=False).first.wait_for(timeout=10_000)
        w.check()
    finally:
        context.close()


def test_an_upload_waiting_for_its_positive_class_survives_a_reload(browser, server, tmp_path):
    rng = np.random.default_rng(27)
    p = rng.uniform(0.05, 0.6, 300)
    path = tmp_path / "deaths.csv"
    pd.DataFrame({"p_death": p, "outcome": np.where(rng.random(300) < p, "died", "survived")}).to_csv(path, index=False)
    context, w = new_session(browser, server)
    pg = w.page
    try:
        w.goto_page("Data")
        pg.locator(".st-key-source").get_by_text("Upload my predictions").click()
        w.wait_idle()
        pg.locator(".st-key-upload_predictions input[type=file]").set_input_files(str(path))
        positive = pg.locator(".st-key-src__positive")
        positive.wait_for(timeout=60_000)  # two words as outcomes: which one is the event?
        pg.reload()
        w.wait_idle()
        pg.get_by_text("Restored after the reload").wait_for(timeout=30_000)
        pg.get_by_text("Kept from earlier: deaths.csv").wait_for(timeout=30_000)
        positive.wait_for(timeout=30_000)  # still waiting for the choice
        positive.locator("input").click()
        pg.get_by_role("option", name="died", exact=True).click()
        w.wait_idle()
        pg.get_by_text("In use: deaths.csv").wait_for(timeout=60_000)
        w.check()
    finally:
        context.close()


def test_compare_uploads_survive_a_reload(browser, server, tmp_path):
    sim = dirichlet_simulation(n=400, n_classes=3, random_state=27)
    paths = []
    for name, probs in (("calibrated.csv", sim.probs), ("sharp.csv", cd.softmax(2.0 * sim.log_true_probs))):
        df = pd.DataFrame(probs, columns=["p0", "p1", "p2"])
        df["label"] = sim.labels
        df.to_csv(tmp_path / name, index=False)
        paths.append(str(tmp_path / name))
    context, w = new_session(browser, server)
    pg = w.page
    try:
        w.goto_page("Compare")
        pg.locator(".st-key-view__cmp_source").get_by_text("Upload prediction files").click()
        w.wait_idle()
        pg.locator(".st-key-cmp_upload_predictions input[type=file]").set_input_files(paths)
        pg.locator(".st-key-cmp_pairs .js-plotly-plot").wait_for(timeout=120_000)
        pg.reload()
        w.wait_idle()
        pg.get_by_text("Restored after the reload").wait_for(timeout=30_000)
        pg.get_by_text("In use:", exact=False).first.wait_for(timeout=30_000)
        pg.locator(".st-key-cmp_pairs .js-plotly-plot").wait_for(timeout=120_000)
        assert "calibrated.csv" in pg.locator('[data-testid="stMain"]').inner_text()
        w.check()
    finally:
        context.close()
