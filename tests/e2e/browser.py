"""A real ``streamlit run`` of the app and Debian's chromium driven by Playwright.

Shared by the end-to-end tests and ``bench/bench_app.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync"]
OUTPUT = ROOT / "tests" / "output"
STREAMLIT_PROBE = re.compile(r"/[^/?]+/_stcore/(health|host-config)$")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server(NamedTuple):
    """A server :func:`served` started: its address and its process id."""

    url: str
    pid: int


@contextlib.contextmanager
def served(command, port, *, cwd, env, log_path, timeout=60):
    """Run ``command``, a streamlit server on ``port``; yield a :class:`Server` once its health
    check answers "ok" (a RuntimeError with the server's log if it exits or takes longer than
    ``timeout`` seconds); stop it."""
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "a") as log:  # a server restarted on its port adds to its log
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start (exit status {proc.poll()}); its log:\n"
                                   f"{Path(log_path).read_text()[-3000:]}")
            time.sleep(0.3)
        yield Server(url, proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def streamlit_process(cache_dir, timeout=60, script=None, root=ROOT, port=None, env=None):
    """Start ``script`` (the app, default ``root``/app.py) of the checkout ``root`` on ``port`` (default a
    free localhost port), its session store in ``cache_dir``/state and ``env``'s variables set; yield its
    :class:`Server` (address and process id); stop it."""
    port = free_port() if port is None else port
    script = Path(root) / "app.py" if script is None else script
    env = dict(os.environ, CALIBDASH_CACHE_DIR=str(cache_dir), CALIBDASH_STATE_DIR=str(Path(cache_dir) / "state"),
               PYTHONPATH=str(root), **(env or {}))
    command = [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
               "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none"]
    with served(command, port, cwd=root, env=env, log_path=Path(cache_dir) / f"streamlit_{port}.log",
                timeout=timeout) as server:
        yield server


@contextlib.contextmanager
def streamlit_server(cache_dir, **kwargs):
    """:func:`streamlit_process`, yielding the server's address only."""
    with streamlit_process(cache_dir, **kwargs) as server:
        yield server.url


def resident_mib(pid):
    """The resident memory of the process ``pid`` in MiB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"process {pid} reports no VmRSS")


def require_chromium():
    if not Path(CHROMIUM).exists():
        raise RuntimeError(
            f"{CHROMIUM} is missing. Install Debian's chromium: apt-get update && apt-get install -y chromium "
            "(`make test` does this when run as root). Never run `playwright install`."
        )


class Watched:
    """A page whose console errors, page errors and Streamlit exception boxes are collected."""

    def __init__(self, page):
        self.page = page
        self.errors = []
        page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.missing = []  # URLs answered 404
        page.on("response", lambda r: self.missing.append(r.url) if r.status == 404 else None)

    def wait_idle(self, timeout=120_000):
        """Wait until the script run is over (``stApp``'s ``data-test-script-state``).

        A click starts its rerun asynchronously, so first allow it a moment to begin.
        """
        page = self.page
        page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
        try:
            page.wait_for_function(
                "() => document.querySelector('[data-testid=stApp]').getAttribute('data-test-script-state') === 'running'",
                timeout=700,
            )
        except Exception:  # noqa: BLE001 - a fast rerun may finish before we look
            pass
        page.wait_for_function(
            """() => {
                const app = document.querySelector('[data-testid=stApp]');
                const state = app && app.getAttribute('data-test-script-state');
                return state && state !== 'running' && state !== 'initial';
            }""",
            timeout=timeout,
        )
        page.wait_for_timeout(200)

    def check(self):
        boxes = self.page.locator('[data-testid="stException"]')
        problems = list(self.errors)
        # Opened (or reloaded) at a page's address, Streamlit's frontend first probes
        # <address>/_stcore/health and /_stcore/host-config, which answer 404, then the root's:
        # those two console errors are Streamlit's own; any other missing resource is a failure.
        if self.missing and all(STREAMLIT_PROBE.search(u) for u in self.missing):
            problems = [p for p in problems if "status of 404" not in p]
        if boxes.count():
            problems.append("Streamlit exception: " + boxes.first.inner_text()[:2000])
        assert not problems, "\n".join(problems)

    def wait_jobs(self, timeout=240_000):
        """Wait until no job of the session shows its progress (calibdash_app.runs.job_progress), then for the rerun."""
        # The progress is drawn after the page: it is absent while a rerun draws the page.
        for _ in range(3):
            self.page.wait_for_function(
                """() => {
                    const app = document.querySelector('[data-testid=stApp]');
                    const state = app && app.getAttribute('data-test-script-state');
                    return state && state !== 'running' && state !== 'initial'
                        && !document.querySelector('[class*="st-key-job__"]');
                }""", timeout=timeout)
            self.wait_idle(timeout=timeout)
            if not self.page.locator('[class*="st-key-job__"]').count():
                return
        raise AssertionError("the session's jobs never ended")

    def click_page(self, title):
        """Click the sidebar's link to the page ``title`` (without waiting for its run)."""
        self.page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()

    def goto_page(self, title):
        self.click_page(title)
        self.wait_idle()


def new_session(browser, url, height=2000, timeout=240_000):
    """A new browser session on the app's landing page, after the demo analysis that a first
    visit runs. Returns (context, Watched page); the caller closes the context."""
    context = browser.new_context(viewport={"width": 1400, "height": height}, accept_downloads=True)
    w = Watched(context.new_page())
    w.page.goto(url)
    w.wait_idle(timeout=timeout)
    w.wait_jobs(timeout=timeout)
    return context, w


def launch(playwright, headless=True):
    require_chromium()
    return playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=headless)


def upload_data(w, path):
    """On the Data page: choose "Upload my predictions", upload ``path`` and wait until it is in use."""
    page = w.page
    w.goto_page("Data")
    page.locator(".st-key-source").get_by_text("Upload my predictions").click()
    w.wait_idle()
    page.locator(".st-key-upload_predictions input[type=file]").set_input_files(str(path))
    page.get_by_text("In use: " + Path(path).name).wait_for(timeout=60_000)
    w.wait_idle()


def upload_and_run(w, path, timeout=180_000):
    """On the Data page: upload ``path``; on Evaluate: press Run and wait for the result."""
    page = w.page
    upload_data(w, path)
    w.goto_page("Evaluate")
    page.locator(".st-key-run button").first.click()
    page.locator('[data-testid="stAlertContentSuccess"]').wait_for(timeout=timeout)
    w.wait_idle()
