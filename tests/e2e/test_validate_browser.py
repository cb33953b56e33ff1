"""End to end: a clinical table (a probability column, outcomes as words, a site column) uploaded on
the Data page, grouped by site, validated on the Validate page; its report opens offline."""

import contextlib

import numpy as np
import pandas as pd
import pytest

from .browser import OUTPUT, Watched, upload_data

PLOTS_DRAWN = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map(c => [
    c.querySelectorAll('.js-plotly-plot .main-svg').length,
    c.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length,
    [...c.querySelectorAll('.infolayer text, .annotation-text')].map(t => t.textContent).join(' | ')])"""


def clinical_csv(path, n=600, seed=5):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.6, 0.9, n)
    y = rng.random(n) < np.clip(0.05 + 0.9 * p, 0, 1)
    pd.DataFrame({"p_yes": np.round(p, 4), "outcome": np.where(y, "yes", "no"),
                  "site": rng.choice(["north", "south", "east"], n)}).to_csv(path, index=False)
    return path


def shown(locator):
    """The text of a widget with the values of its inputs (a selectbox shows its choice in one)."""
    return locator.inner_text() + " " + " ".join(i.input_value() for i in locator.locator("input").all())


def offline(browser, path):
    """Open ``path`` from disk with every http(s) request refused; (context, page, errors, refused)."""
    context = browser.new_context(viewport={"width": 1300, "height": 1800})
    refused, errors = [], []

    def route(r):
        if r.request.url.startswith(("file://", "data:", "blob:")):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    pg = context.new_page()
    pg.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    pg.goto(path.as_uri(), wait_until="load")
    return context, pg, errors, refused


FIGURES_DRAWN = ("() => [...document.querySelectorAll('figure')].map(f => [f.querySelectorAll("
                 "'.js-plotly-plot .main-svg').length, f.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length])")


@contextlib.contextmanager
def report_offline(page, browser, tmp_path):
    """Download the Validate page's report and open it from disk with the network refused; yields
    (report page, file name, figure count) once every figure is drawn, and checks on exit that
    nothing failed or was fetched."""
    pg = page.page
    with pg.expect_download(timeout=120_000) as info:
        pg.locator(".st-key-dl_val_report button").first.click()
    report = tmp_path / info.value.suggested_filename
    info.value.save_as(report)
    page.wait_idle()
    context, rp, errors, refused = offline(browser, report)
    try:
        expected = int(rp.locator('meta[name="calibdash-figures"]').get_attribute("content"))
        rp.wait_for_function(f"n => ({FIGURES_DRAWN})().filter(([s, t]) => s > 0 && t > 0).length === n",
                             arg=expected, timeout=60_000)
        yield rp, info.value.suggested_filename, expected
    finally:
        context.close()
    assert not errors, errors
    assert not refused, refused


def test_upload_group_validate_and_open_the_report_offline(page, browser, tmp_path):
    pg = page.page
    upload_data(page, clinical_csv(tmp_path / "clinic.csv"))
    # keep the site column: it becomes the grouping column of the subgroups
    pg.locator(".st-key-src__group_columns").click()
    pg.get_by_role("option", name="site").click()
    page.wait_idle()
    pg.keyboard.press("Escape")
    pg.get_by_text("Grouping columns kept:").first.wait_for(timeout=30_000)
    assert "site" in shown(pg.locator(".st-key-group_column"))

    page.goto_page("Validate")
    box = pg.locator(".st-key-view__val_resamples input")
    box.fill("100")
    box.press("Enter")
    page.wait_idle()
    page.wait_jobs()
    assert "site" in shown(pg.locator(".st-key-val_group"))
    verdicts = pg.locator(".st-key-val_verdicts")
    verdicts.wait_for(timeout=60_000)
    for level in ("mean calibration", "weak calibration", "moderate calibration", "discrimination",
                  "clinical usefulness", "sample size"):
        assert level in verdicts.inner_text()
    assert pg.locator('.st-key-val_table [data-testid="stDataFrame"]').count() == 1
    pg.get_by_text("Subgroups by").first.wait_for()
    # the curve (with its histograms), the decision curve and the forest plots are drawn by plotly
    pg.wait_for_function(f"() => ({PLOTS_DRAWN})().filter(([s, t]) => s > 0 && t > 0).length >= 3",
                         timeout=60_000)
    drawn = pg.evaluate(PLOTS_DRAWN)
    titles = " || ".join(t for _, _, t in drawn)
    assert len(drawn) == 3 and all(s > 0 and t > 0 for s, t, _ in drawn), drawn
    for words in ("predicted risk of yes", "threshold probability", "calibration slope", "ICI",
                  "heterogeneity"):
        assert words in titles, (words, titles)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(OUTPUT / "validate_upload.png"), full_page=True)

    with report_offline(page, browser, tmp_path) as (rp, name, expected):
        assert name == "validation_report_clinic_seed0.html" and expected >= 3
        text = rp.locator("body").inner_text().lower()
        for section in ("calibration", "discrimination", "subgroups", "sample size", "net benefit"):
            assert section in text, section
        assert "clinic.csv" in text and "site" in text
        rp.screenshot(path=str(OUTPUT / "validate_report.png"), full_page=False)


def test_the_validate_address_opens_the_demo_validation(browser, server):
    # a first visit straight to /validate: the data in use are the digits demo (ten classes), so the
    # page shows the breast-cancer demo, validated as a job of its own
    context = browser.new_context(viewport={"width": 1400, "height": 2000})
    try:
        w = Watched(context.new_page())
        w.page.goto(server + "/validate")
        w.wait_idle(timeout=240_000)
        w.wait_jobs(timeout=240_000)
        pg = w.page
        assert pg.locator("h1").first.inner_text() == "Validate a risk model"
        pg.get_by_text("This is the demo").first.wait_for(timeout=30_000)
        pg.wait_for_function(f"() => ({PLOTS_DRAWN})().filter(([s, t]) => s > 0 && t > 0).length >= 3",
                             timeout=60_000)
        pg.get_by_text("Subgroups by").first.wait_for()
        assert "site" in shown(pg.locator(".st-key-val_group"))
        assert "1000" in shown(pg.locator(".st-key-view__val_resamples"))  # the default, on a first visit
        w.check()
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.slow
def test_a_point_score_by_centre_with_words_as_outcomes(page, browser, tmp_path):
    # a point score (four distinct risks), outcomes "died"/"survived", five hospitals; the hospital
    # column chosen as centres: pooled table, forest plots of the meta-analysis and verdicts
    from ..app.test_validate import point_score

    pg = page.page
    frame = point_score()
    path = tmp_path / "icu_score.csv"
    frame.to_csv(path, index=False)
    page.goto_page("Data")
    pg.locator(".st-key-source").get_by_text("Upload my predictions").click()
    page.wait_idle()
    pg.locator(".st-key-upload_predictions input[type=file]").set_input_files(str(path))
    page.wait_idle()
    # the risk column does not say which outcome it is the risk of: the page asks
    pg.get_by_text("Which class is positive?").first.wait_for(timeout=30_000)
    pg.locator(".st-key-src__positive").click()
    pg.get_by_role("option", name="died", exact=True).click()
    page.wait_idle()
    pg.get_by_text("In use: icu_score.csv").wait_for(timeout=60_000)
    pg.locator(".st-key-src__group_columns").click()
    pg.get_by_role("option", name="hospital").click()
    page.wait_idle()
    pg.keyboard.press("Escape")
    pg.get_by_text("Grouping columns kept:").first.wait_for(timeout=30_000)
    body = pg.locator("body").inner_text()
    risk, rate = frame["risk"].mean(), (frame["outcome"] == "died").mean()
    assert f"{risk:.1%}" in body and f"{rate:.1%}" in body and "Mean predicted risk" in body, body[:2000]

    page.goto_page("Validate")
    box = pg.locator(".st-key-view__val_resamples input")
    box.fill("100")
    box.press("Enter")
    page.wait_idle()
    pg.locator(".st-key-view__val_role").get_by_text("centres (hospitals)").click()
    page.wait_idle()
    page.wait_jobs()
    assert "hospital" in shown(pg.locator(".st-key-val_group"))
    verdicts = pg.locator(".st-key-val_verdicts")
    verdicts.wait_for(timeout=60_000)
    for level in ("mean calibration", "weak calibration", "discrimination", "clinical usefulness"):
        assert level in verdicts.inner_text()
    assert "County" in pg.locator(".st-key-val_findings").inner_text()  # the centre that is off, named
    # the pooled table and one forest plot of the meta-analysis per metric
    meta = pg.locator(".st-key-val_meta")
    assert meta.locator('[data-testid="stDataFrame"]').count() == 1
    assert "Random-effects meta-analysis" in meta.inner_text()
    assert meta.locator('[data-testid="stPlotlyChart"]').count() == 4  # O:E, CITL, slope, AUROC
    assert pg.locator('.st-key-val_usefulness [data-testid="stDataFrame"]').count() == 1
    pg.wait_for_function(f"() => ({PLOTS_DRAWN})().filter(([s, t]) => s > 0 && t > 0).length >= 7",
                         timeout=60_000)
    assert not pg.locator('[data-testid="stAlertContentError"]').count()
    for name in ("St Mary's", "General", "Royal", "County", "Valley"):
        assert name in " ".join(t for _, _, t in pg.evaluate(PLOTS_DRAWN)) or name in pg.locator("body").inner_text()
    OUTPUT.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(OUTPUT / "validate_centres.png"), full_page=True)

    # the recalibrated risks, named after the data
    with pg.expect_download(timeout=60_000) as info:
        pg.locator(".st-key-dl_val_recalibrated button").first.click()
    assert info.value.suggested_filename == "recalibrated_risks_icu_score.csv"  # the upload named without its suffix
    saved = tmp_path / "recalibrated.csv"
    info.value.save_as(saved)
    page.wait_idle()
    recalibrated = pd.read_csv(saved)
    assert len(recalibrated) == len(frame) and list(recalibrated["hospital"]) == list(frame["hospital"])
    assert {"risk_after_intercept_update", "risk_after_logistic_recalibration"} <= set(recalibrated.columns)

    # the report carries the meta-analysis, offline
    with report_offline(page, browser, tmp_path) as (rp, _, _):
        text = rp.locator("body").inner_text()
        assert "icu_score.csv" in text and "hospital" in text
        # the pooled table: its metrics and the prediction interval of a new centre
        assert "prediction interval" in text.lower() and "random-effects" in text.lower()
        for metric in ("O:E", "calibration-in-the-large", "calibration slope", "AUROC"):
            assert metric in text
        rp.screenshot(path=str(OUTPUT / "validate_centres_report.png"), full_page=False)
