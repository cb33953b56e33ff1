"""What only a browser shows (issue 16): every page's address opens that page (no "Page not found"
dialog), and every download is named after the data, the notion and the seed, the HTML report
naming the JSON download that reruns it."""

import re

import pytest

from .browser import new_session

PAGES = {"": "Results", "/results": "Results", "/data": "Data", "/evaluate": "Evaluate", "/reliability": "Reliability",
         "/validate": "Validate a risk model", "/compare": "Compare models", "/learn": "Learn: a simulation lab with known truth"}
SLUG = "digits__random_forest"  # calibdash's first demo, "digits: random forest", in a file name


@pytest.fixture
def session(browser, server):
    context, w = new_session(browser, server)
    yield w
    context.close()


def test_every_page_script_has_its_address_here():
    # /validate was missing from PAGES for two stops: every page script of calibdash_app/app_pages is listed.
    from calibdash_app.app_pages import PAGES as SCRIPTS

    assert {p.stem for p in SCRIPTS.glob("*.py")} - {"__init__"} == {path.strip("/") for path in PAGES} - {""}


@pytest.mark.parametrize("path", list(PAGES))
def test_every_address_opens_its_page_without_page_not_found(session, server, path):
    pg = session.page
    missing = []
    pg.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    pg.goto(server + path)
    session.wait_idle()
    pg.locator("h1").first.wait_for()
    pg.wait_for_timeout(1000)  # the dialog comes after the page's first run
    assert pg.locator('[role="dialog"]').count() == 0
    assert pg.get_by_text("Page not found").count() == 0
    assert pg.locator("h1").first.inner_text() == PAGES[path]
    address, _, query = pg.url.partition("?")
    assert address.rstrip("/") == server + (path or "/results")  # the root goes on to Results
    assert query.startswith("session=")  # the session's token (calibdash_app.session.remember_session), kept for a reload
    # Streamlit's client probes its health and host config under a deep address first and gets a
    # 404 there; nothing else may be missing, and nothing else may fail.
    assert all(re.fullmatch(re.escape(server + path) + r"/_stcore/(health|host-config)", u) for u in missing), missing
    session.errors = [e for e in session.errors if "status of 404" not in e and "does not seem to exist" not in e]
    session.check()


def download(session, key, tmp_path, timeout=240_000):
    """Click the download button ``key``; the saved file (named as the browser was told)."""
    pg = session.page
    pg.locator(f".st-key-{key} button").first.wait_for(timeout=timeout)
    with pg.expect_download(timeout=timeout) as info:
        pg.locator(f".st-key-{key} button").first.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    session.wait_idle()  # a CSV download reruns the page: its other buttons are redrawn
    return path


def test_downloads_are_named_after_the_data_the_notion_and_the_seed(session, tmp_path):
    pg = session.page
    pg.locator(".st-key-risk_curves .js-plotly-plot").wait_for(timeout=240_000)
    assert download(session, "dl_summary", tmp_path).name == f"summary_{SLUG}_top-label_seed0.csv"
    assert download(session, "dl_curves", tmp_path).name == f"curves_{SLUG}_top-label_seed0.csv"
    results_json = download(session, "dl_json", tmp_path)
    assert results_json.name == f"results_{SLUG}_seed0.json"
    report = download(session, "dl_report", tmp_path)
    assert report.name == f"calibdash_report_{SLUG}_seed0.html"
    # the report's provenance names the JSON download the app offers, not a file it never wrote
    html = report.read_text(encoding="utf-8")
    assert f"rerun {results_json.name} --predictions FILE" in html and "result.json" not in html

    session.goto_page("Compare")
    both = "digits__random_forest_vs_digits__logistic_regression"
    assert download(session, "dl_cmp_models", tmp_path).name == f"compare_models_{both}_top-label_seed0.csv"
    assert download(session, "dl_cmp_pairs", tmp_path).name == f"compare_pairs_{both}_top-label_seed0.csv"
    cmp_report = download(session, "dl_cmp_report", tmp_path)
    assert cmp_report.name == f"calibdash_comparison_{both}_top-label_seed0.html"
    assert "Differences between models" in cmp_report.read_text(encoding="utf-8")

    session.goto_page("Learn")
    lab = download(session, "dl_lab_estimates", tmp_path)
    assert lab.name.startswith("lab_estimates_Dirichlet_simulation") and lab.name.endswith("_top-label_seed0.csv")
    assert download(session, "dl_lab_figure1", tmp_path).name == "figure1_100_data_sets_of_500_rows_seed0.csv"
    session.check()
