"""Issue 18 in chromium: text from a user's file is shown as text, never as markdown.

Files whose class names, column names, file names and cells hold markdown images and links,
LaTeX ``\\href`` and HTML (tests/hostile.py) are uploaded to a real ``streamlit run``; on
every page no request leaves for another address, no link, image or formula made from the
file is on the page, and the names are shown literally. A probe page first checks that what
calibdash.display.text writes renders, in Streamlit's own renderer, as the exact text.
"""

import re

import pandas as pd
import pytest

from calibdash.display.text import JOINER
from tests.hostile import ALL, CELL, CLASSES, FILE_NAMES, hostile_csv

from .browser import OUTPUT, ROOT, Watched, streamlit_server

PROBE = ROOT / "tests" / "e2e" / "markdown_probe_app.py"

# Every link, image or embedded resource on the page, in HTML and in SVG (plotly), that points
# at the hostile address or at a relative address from a hostile file name; and any formula.
FIND_HOSTILE = r"""() => {
    const hostile = /127\.0\.0\.1:9\b|hostile/i;
    const xlink = 'http://www.w3.org/1999/xlink';
    const bad = [];
    for (const el of document.querySelectorAll('a, img, image, iframe, source, video, audio, object, embed, link')) {
        for (const value of [el.getAttribute('href'), el.getAttribute('src'), el.getAttribute('data'),
                             el.getAttributeNS(xlink, 'href')]) {
            if (value && hostile.test(value)) bad.push(`${el.tagName} ${value}`);
        }
    }
    for (const el of document.querySelectorAll('.katex, .katex-display, math')) bad.push(`formula ${el.textContent}`);
    return bad;
}"""


class Session:
    """A browser context whose every request is recorded, on a page watched for errors."""

    def __init__(self, browser, url):
        self.origin = url.rstrip("/")
        self.requests = []
        self.context = browser.new_context(viewport={"width": 1400, "height": 2000})
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.w = Watched(self.context.new_page())
        self.page = self.w.page

    def assert_inert(self, where):
        page = self.page
        assert page.evaluate(FIND_HOSTILE) == [], where
        # Every request stays on the server (its page, its scripts, its websocket).
        host = self.origin.split("://", 1)[1]
        away = [u for u in self.requests
                if not (u.startswith((self.origin + "/", "data:", "blob:")) or u == self.origin
                        or u.startswith(f"ws://{host}/"))]
        assert away == [], where
        assert not [u for u in self.requests if re.search(r"127\.0\.0\.1:9\b|hostile", u, re.I)], where
        self.w.check()

    def close(self):
        self.context.close()


def test_streamlit_shows_what_calibdash_display_writes_as_the_exact_text(browser, tmp_path):
    with streamlit_server(tmp_path, script=PROBE) as url:
        s = Session(browser, url)
        try:
            s.page.goto(url)
            s.page.locator(".st-key-probe_end").wait_for(timeout=120_000)
            s.w.wait_idle()
            s.page.locator(".st-key-figure .js-plotly-plot").wait_for(timeout=60_000)
            for i, text in enumerate(ALL):
                one_line = text.replace("\n", " ")

                def read(key, selector="", i=i):
                    return s.page.locator(f".st-key-{key}_{i} {selector}".strip()).first.text_content()

                # escaped prose: the text itself, once the invisible joiners are taken out
                assert read("escaped").replace(JOINER, "") == one_line.strip(), text
                # code: the text itself, in a code element
                assert read("code") == one_line, text
                assert s.page.locator(f".st-key-code_{i} code").count() >= 1
                assert read("warning") == f"line 2 of {one_line}: {text!r} is not a number", text
                assert read("caption") == f"Data: {one_line} (3 rows)", text
                assert read("subheader", "h3") == f"In use: {one_line}", text
                assert read("label", "label") == one_line, text
                chips = s.page.locator(f".st-key-options_{i} [data-testid=stMultiSelect] span").all_text_contents()
                assert text in chips, (text, chips)
            # plotly: the category labels (and the legend) read as typed
            ticks = s.page.locator(".st-key-figure .ytick text").all_text_contents()
            assert sorted(ticks) == sorted(t.replace("\n", " ") for t in ALL)
            legend = s.page.locator(".st-key-figure .legendtext").all_text_contents()
            assert ALL[0] in legend
            OUTPUT.mkdir(parents=True, exist_ok=True)
            s.page.screenshot(path=OUTPUT / "hostile_probe.png", full_page=True)
            s.assert_inert("probe page")
        finally:
            s.close()




@pytest.fixture
def hostile_files(tmp_path):
    folder = tmp_path / "uploads"
    folder.mkdir()
    paths = {}
    for key, name, content in [
        ("classes", FILE_NAMES[0], hostile_csv()),
        ("sharp", FILE_NAMES[1], hostile_csv(sharpen=3.0, absent=False)),
        ("calibrated", FILE_NAMES[0].replace(".csv", " v2.csv"), hostile_csv(absent=False)),
        ("cell", "cells " + FILE_NAMES[1],
         pd.DataFrame({"a": ["0.2", "0.5"], "b": ["0.8", CELL], "label": [0, 1]}).to_csv(index=False).encode()),
    ]:
        paths[key] = folder / name
        paths[key].write_bytes(content)
    return paths


def visible(page, text, scope="body"):
    """How many elements in ``scope`` show ``text`` (waiting for the first to be visible)."""
    loc = page.locator(scope).get_by_text(text, exact=False)
    loc.first.wait_for(timeout=30_000)
    return loc.count()


def test_hostile_names_stay_text_on_every_page(browser, server, hostile_files):
    s = Session(browser, server)
    pg, w = s.page, s.w
    OUTPUT.mkdir(parents=True, exist_ok=True)
    try:
        pg.goto(server)
        w.wait_idle(timeout=240_000)
        w.wait_jobs()  # the first visit analyses the demo

        # Data: the upload with hostile class names and file name
        w.goto_page("Data")
        pg.locator(".st-key-source").get_by_text("Upload my predictions").click()
        w.wait_idle()
        pg.locator(".st-key-upload_predictions input[type=file]").set_input_files(str(hostile_files["classes"]))
        pg.get_by_text("In use: " + FILE_NAMES[0]).wait_for(timeout=60_000)
        w.wait_idle()
        # (the alert's text without its icon, whose ligature is text too)
        warning = pg.locator('[data-testid="stAlertContentWarning"] [data-testid="stMarkdownContainer"]',
                             has_text="never occurs").first
        assert warning.text_content().startswith(f"class 0 ('{CLASSES[0]}') never occurs")
        assert visible(pg, FILE_NAMES[0], "[data-testid=stSidebar]")
        pg.screenshot(path=OUTPUT / "hostile_data.png", full_page=True)
        s.assert_inert("Data page")

        # Evaluate: the caption names the file; the run succeeds
        w.goto_page("Evaluate")
        assert visible(pg, "Data: " + FILE_NAMES[0])
        pg.locator(".st-key-run button").first.click()
        pg.locator('[data-testid="stAlertContentSuccess"]').wait_for(timeout=240_000)
        w.wait_idle()
        s.assert_inert("Evaluate page")

        # Results
        w.goto_page("Results")
        pg.locator(".st-key-risk_curves .js-plotly-plot").wait_for(timeout=60_000)
        assert visible(pg, "Data: " + FILE_NAMES[0])
        pg.screenshot(path=OUTPUT / "hostile_results.png", full_page=True)
        s.assert_inert("Results page")

        # Reliability, canonical: a panel per class, the class picker, the simplex's axes
        w.goto_page("Reliability")
        pg.locator(".st-key-view__notion").get_by_text("canonical").click()
        w.wait_idle()
        pg.locator(".st-key-per_class .js-plotly-plot").wait_for(timeout=60_000)
        pg.locator(".st-key-ternary .js-plotly-plot").wait_for(timeout=60_000)
        titles = pg.locator(".st-key-per_class svg text").all_text_contents()
        axes = pg.locator(".st-key-ternary svg text").all_text_contents()
        for name in CLASSES:
            assert name in titles and name in axes, (name, titles, axes)
            assert visible(pg, name, ".st-key-rel__classes")
        pg.screenshot(path=OUTPUT / "hostile_reliability.png", full_page=True)
        s.assert_inert("Reliability page")

        # Data again: a cell the loader quotes in its message
        w.goto_page("Data")
        pg.locator(".st-key-upload_predictions input[type=file]").set_input_files(str(hostile_files["cell"]))
        error = pg.locator('[data-testid="stAlertContentError"] [data-testid="stMarkdownContainer"]').first
        error.wait_for(timeout=30_000)
        w.wait_idle()
        assert error.text_content().startswith(
            f"line 3 of {hostile_files['cell'].name}, column 'b' is {CELL!r}, not a number")
        s.assert_inert("Data page, refused cell")

        # Compare: two hostile file names as model names
        w.goto_page("Compare")
        pg.locator(".st-key-view__cmp_source").get_by_text("Upload prediction files").click()
        w.wait_idle()
        pg.locator(".st-key-cmp_upload_predictions input[type=file]").set_input_files(
            [str(hostile_files["calibrated"]), str(hostile_files["sharp"])])
        for key in ["cmp_estimates", "cmp_pairs", "cmp_reliability"]:
            pg.locator(f".st-key-{key} .js-plotly-plot").wait_for(timeout=240_000)
        w.wait_idle()
        names = [hostile_files["calibrated"].name, hostile_files["sharp"].name]
        verdict = pg.get_by_text("is better calibrated than").first.text_content()
        assert any(verdict.startswith(f"{a} is better calibrated than {b}: calibration errors of ")
                   for a, b in [names, names[::-1]]), verdict
        categories = pg.locator(".st-key-cmp_estimates .ytick text").all_text_contents()
        legend = pg.locator(".st-key-cmp_reliability .legendtext").all_text_contents()
        pairs = pg.locator(".st-key-cmp_pairs .ytick text").all_text_contents()
        for name in names:
            assert name in categories and name in legend, (name, categories, legend)
        assert pairs == [f"{names[0]} - {names[1]}"]
        pg.screenshot(path=OUTPUT / "hostile_compare.png", full_page=True)
        s.assert_inert("Compare page")
    finally:
        s.close()
