"""A CSV at the documented width limit through the Data page of a real server (issue 28).

Starts ``streamlit run``, drives Debian's chromium with Playwright: upload a 10 x 100,000 CSV
(99,999 probability columns and the labels, as ``bench_loading.py wide`` writes it) on the Data
page and wait until the page says it is in use (or refuses it). Meanwhile a thread asks the
server's health check every 100 ms and records how long each answer took: the script thread that
parses the file shares the server's process (and its GIL) with the event loop that answers every
session, so a parse that holds the GIL for seconds freezes every tab.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _report import write_section  # noqa: E402
from bench_loading import WIDE_D, WIDE_N  # noqa: E402

from tests.e2e.browser import launch, new_session, streamlit_server  # noqa: E402

REPEATS = 3
HEALTH_EVERY = 0.1


class HealthProbe(threading.Thread):
    """Asks ``url``/_stcore/health every HEALTH_EVERY seconds until stopped; keeps each answer's seconds."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.url, self.seconds, self._halt = url + "/_stcore/health", [], threading.Event()

    def run(self):
        while not self._halt.is_set():
            t = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=30) as r:
                    r.read()
            except OSError:
                pass
            self.seconds.append(time.perf_counter() - t)
            self._halt.wait(HEALTH_EVERY)

    def stop(self):
        self._halt.set()
        self.join()


def one_upload(browser, url, path):
    """(seconds from choosing the file to "In use", the health check's answers meanwhile)."""
    context, w = new_session(browser, url, height=1200)
    probe = HealthProbe(url)
    try:
        page = w.page
        w.goto_page("Data")
        page.locator(".st-key-source").get_by_text("Upload my predictions").click()
        w.wait_idle()
        probe.start()
        t0 = time.perf_counter()
        page.locator(".st-key-upload_predictions input[type=file]").set_input_files(str(path))
        page.get_by_text("In use: " + path.name).wait_for(timeout=600_000)
        w.wait_idle(timeout=600_000)
        seconds = time.perf_counter() - t0
        w.check()
    finally:
        if probe.is_alive():
            probe.stop()
        context.close()
    return seconds, probe.seconds


def main():
    """Usage: bench_wide_app.py [BEFORE], BEFORE a checkout of the code before a change (one run of it)."""
    import os
    import subprocess

    from playwright.sync_api import sync_playwright

    before = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        rng = np.random.default_rng(0)
        probs = rng.dirichlet(np.ones(WIDE_D), WIDE_N)
        frame = pd.DataFrame(probs, columns=[f"p{k}" for k in range(WIDE_D)]).assign(
            label=rng.integers(0, WIDE_D, WIDE_N))
        path = Path(tmp) / "wide.csv"
        frame.to_csv(path, index=False, float_format="%.6g")
        browser = launch(p)
        roots = {"after (this tree)": (ROOT, REPEATS)}
        if before is not None:
            commit = subprocess.run(["git", "-C", str(before), "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
            roots = {f"before ({commit})": (before, 1), **roots}  # the old page took minutes: one run
        rows = []
        for label, (root, repeats) in roots.items():
            cache = Path(tmp) / label.split()[0]
            cache.mkdir()
            with streamlit_server(cache, root=root) as url:
                for i in range(repeats):
                    seconds, health = one_upload(browser, url, path)
                    rows.append(f"| {label} | {i + 1} | {seconds:.1f} | {max(health):.2f} | "
                                f"{statistics.median(health):.3f} | {len(health)} |")
                    print(rows[-1], flush=True)
        browser.close()
        size = path.stat().st_size / 2**20
    table = "\n".join(rows)
    body = f"""
The CSV of `bench_loading.py wide` ({WIDE_N} rows x {WIDE_D + 1:,} columns, {size:.1f} MiB) uploaded on the Data page
of `streamlit run` in Debian's chromium (Playwright), one new session per run, until the page says
"In use". Meanwhile the server's health check (`/_stcore/health`) is asked every {HEALTH_EVERY * 1000:.0f} ms.
Issue 28's targets: the Data page in under 30 s, the health check under 1 s throughout. One-minute load
average before the run: {load:.1f}.

| code | run | upload to "In use" (s) | health check, slowest (s) | health check, median (s) | answers |
|---|---|---|---|---|---|
{table}

The page types the mapping of a table of more than 300 columns (names and `first:last` ranges) instead of
listing 100,000 names in a selectbox and a multiselect with 99,999 chosen, and sums the class balance up in a
sentence instead of 99,999 bars: the browser spent most of the minute before drawing those. The file is still
read in the page's script thread, inside the server's process; the health check's slowest answer is the
measure of what that costs the other sessions.
"""
    write_section("A table at the width limit, in the browser", body,
                  command=" ".join([".venv/bin/python bench/bench_wide_app.py", *sys.argv[1:]]))
    print(body)


if __name__ == "__main__":
    main()
