"""Sessions that are one's own (issue 28), in chromium against a real server: a report shows its own
session's class and file names, and a session pushed out of the server's bounded store says so."""

import numpy as np
import pandas as pd

from calibdash.lab.simulation import dirichlet_simulation

from .browser import Watched, new_session, streamlit_server, upload_data


def named_csv(tmp_path, name, classes, n=1500, seed=28040):
    """The same numbers under other class names: probability columns and labels named by class."""
    sim = dirichlet_simulation(n=n, n_classes=len(classes), random_state=seed)
    df = pd.DataFrame(sim.probs, columns=list(classes))
    df["label"] = np.asarray(classes)[sim.labels]
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


def evaluate_and_download_report(w, tmp_path):
    pg = w.page
    w.goto_page("Evaluate")
    pg.locator(".st-key-run button").first.click()
    pg.locator('[data-testid="stAlertContentSuccess"]', has_text="Finished").wait_for(timeout=240_000)
    w.wait_idle()
    w.goto_page("Results")
    pg.locator(".st-key-dl_report button").first.wait_for(timeout=120_000)
    with pg.expect_download(timeout=120_000) as info:
        pg.locator(".st-key-dl_report button").first.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return path.read_text(encoding="utf-8")


def test_each_sessions_report_shows_its_own_class_and_file_names(browser, server, tmp_path):
    # The shared report cache was keyed by the numbers, title and settings: a session whose file had
    # the same numbers got the report of another session, with that session's class names.
    first_ctx, first = new_session(browser, server)
    second_ctx, second = new_session(browser, server)
    try:
        upload_data(first, named_csv(tmp_path, "pets.csv", ("cat", "dog", "bird")))
        upload_data(second, named_csv(tmp_path, "insects.csv", ("ant", "bee", "wasp")))
        pets = evaluate_and_download_report(first, tmp_path)
        insects = evaluate_and_download_report(second, tmp_path)
        assert "pets.csv" in pets and "bird" in pets
        assert "insects.csv" in insects and "wasp" in insects
        assert "insects.csv" not in pets and "wasp" not in pets
        assert "pets.csv" not in insects and "bird" not in insects
        first.check()
        second.check()
    finally:
        first_ctx.close()
        second_ctx.close()


def test_a_session_pushed_out_of_the_store_says_so_on_reload(browser, tmp_path):
    # A server whose session store holds 3 MiB in memory and on disk, and two sessions of about 2 MiB
    # (a 20,000-row upload, kept as the file and as read): the second one's upload pushes the first,
    # least recently used, out; the second's reload restores it, the first's says why it cannot.
    cache = tmp_path / "server"
    cache.mkdir()
    with streamlit_server(cache, env={"CALIBDASH_SESSIONS_MEMORY_MIB": "3", "CALIBDASH_STATE_MIB": "3"}) as url:
        first_ctx, first = new_session(browser, url)
        second_ctx, second = new_session(browser, url)
        try:
            upload_data(first, named_csv(tmp_path, "first.csv", ("a", "b", "c", "d"), n=20_000))
            address = first.page.url
            upload_data(second, named_csv(tmp_path, "second.csv", ("a", "b", "c", "d"), n=20_000, seed=28041))
            reloaded = Watched(second_ctx.new_page())  # a reload of the second tab
            reloaded.page.goto(second.page.url)
            reloaded.wait_idle()
            reloaded.page.get_by_text("Restored after the reload").wait_for(timeout=60_000)
            assert "second.csv" in reloaded.page.locator('[data-testid="stSidebar"]').inner_text()
            again = Watched(first_ctx.new_page())  # and of the first
            again.page.goto(address)
            again.wait_idle()
            again.page.get_by_text("names a session the server no longer has").wait_for(timeout=60_000)
            text = again.page.locator('[data-testid="stApp"]').inner_text()
            assert "most recently used" in text and "Upload your data again" in text
            assert "first.csv" not in again.page.locator('[data-testid="stSidebar"]').inner_text()
            again.check()
            reloaded.check()
        finally:
            first_ctx.close()
            second_ctx.close()
