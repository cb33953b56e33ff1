"""End to end: a clinical table (a probability column, outcomes as words, a site column) uploaded on
the Data page, grouped by site, validated on the Validate page; its report opens offline."""

import numpy as np
import pandas as pd

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

    with pg.expect_download(timeout=120_000) as info:
        pg.locator(".st-key-dl_val_report button").first.click()
    assert info.value.suggested_filename == "validation_report_clinic.csv_seed0.html"
    report = tmp_path / info.value.suggested_filename
    info.value.save_as(report)
    page.wait_idle()

    context, rp, errors, refused = offline(browser, report)
    try:
        expected = int(rp.locator('meta[name="calibdash-figures"]').get_attribute("content"))
        assert expected >= 3
        count_js = ("() => [...document.querySelectorAll('figure')].map(f => [f.querySelectorAll("
                    "'.js-plotly-plot .main-svg').length, f.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length])")
        rp.wait_for_function(f"n => ({count_js})().filter(([s, t]) => s > 0 && t > 0).length === n", arg=expected,
                             timeout=60_000)
        text = rp.locator("body").inner_text().lower()
        for section in ("calibration", "discrimination", "subgroups", "sample size", "net benefit"):
            assert section in text, section
        assert "clinic.csv" in text and "site" in text
        rp.screenshot(path=str(OUTPUT / "validate_report.png"), full_page=False)
    finally:
        context.close()
    assert not errors, errors
    assert not refused, refused


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
