"""End to end (issue 27): every download button of Results, Compare and Validate, clicked in sequence
twenty times with no pause, gives its file every time (in Debian's chromium against a real
``streamlit run``). A download that reran the page made the next click on a report or JSON button
fetch a file the server had already forgotten ("Deferred file ... not found"): no download. And a
file built when clicked (a deferred download) belongs to no session, so that two script runs
anywhere on the server before the browser fetches it delete it: every button is now given its
bytes (calibdash_app/downloads.py)."""

from .browser import new_session

ROUNDS = 20
BUTTONS = {
    "Results": ["dl_summary", "dl_curves", "dl_json", "dl_report"],
    "Compare": ["dl_cmp_models", "dl_cmp_pairs", "dl_cmp_report"],
    "Validate": ["dl_val_metrics", "dl_val_report", "dl_val_recalibrated"],
}
READY = {"Results": ".st-key-risk_curves .js-plotly-plot", "Compare": ".st-key-cmp_pairs .js-plotly-plot",
         "Validate": ".st-key-val_curve .js-plotly-plot"}


def test_every_download_gives_its_file_every_time(browser, server, tmp_path):
    context, w = new_session(browser, server)
    pg = w.page
    try:
        for page, keys in BUTTONS.items():
            w.goto_page(page)
            pg.locator(READY[page]).wait_for(timeout=240_000)
            w.wait_jobs()
            names = {}
            for r in range(ROUNDS):
                for key in keys:
                    # The pointer leaves the last button first, as a hand does. Clicked straight from
                    # the previous button (its help tooltip opening), by mouse or by keyboard, about
                    # one click in 100 gave no download in chromium although the server had the file
                    # and no rerun ran; with the pointer moved off first, none of 200 (left open in the
                    # issue: a browser-side cause not found).
                    pg.mouse.move(1, 1)
                    with pg.expect_download(timeout=60_000) as info:
                        pg.locator(f".st-key-{key} button").first.click()
                    path = tmp_path / f"{page}_{r}_{info.value.suggested_filename}"
                    info.value.save_as(path)
                    assert path.stat().st_size > 0, (page, key, r)
                    names.setdefault(key, set()).add(info.value.suggested_filename)
            assert all(len(n) == 1 for n in names.values()), names  # the same file each time
        w.check()
    finally:
        context.close()
