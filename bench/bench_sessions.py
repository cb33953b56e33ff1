"""Server memory benchmark: a long-lived ``streamlit run`` of the app after 200 runs from 8 sessions.

Issue 28's acceptance asks that the memory of a long-lived server stay under a stated byte bound
after 200 runs from 8 sessions. What the server keeps is bounded by its settings: each session's
results by CALIBDASH_SESSION_MIB (and by count: 24 results, one per notion, so 12 runs of the
default two notions), the session store's memory layer by CALIBDASH_SESSIONS_MEMORY_MIB and 64
entries (calibdash_app/store.py, calibdash_app/runs.py), and the job pool's finished runs (kept
for the sessions to file, and for any other asking for the same run) by CALIBDASH_FINISHED_MIB
(calibdash_app/jobs.py). Those bounds count pickled lengths, not resident memory; this benchmark
measures what the server process actually holds.

One server is started with small bounds (``--defaults``: the app's own) so that they are reached
within the run. Debian's chromium, driven by Playwright, opens 8 browser sessions; each uploads its
own 3,000 x 4 CSV (the paper's Dirichlet simulation, its own random_state) and presses Run on the
Evaluate page 25 times, each with a new seed, so that every run computes and files a new result.
The sessions take turns (session 1 run 1, session 2 run 1, ...), each run waited for, so that all
8 stay open throughout. After every round of 8 runs the resident memory (VmRSS) of the server
process is read, and separately the sum over its descendants (the job pool's fork server, worker
processes and their joblib processes: separate processes, replaced above 2 GiB, shared pages
counted in each). Then the sessions are closed and the server read again after 30 s and after
150 s (past the 2 minutes Streamlit keeps a disconnected session).

The stated bound, for the server process's peak resident memory (VmHWM, so that a peak between
two readings counts): its RSS after the first visits and uploads (the baseline) + sessions x
CALIBDASH_SESSION_MIB + CALIBDASH_SESSIONS_MEMORY_MIB + CALIBDASH_FINISHED_MIB + SLACK_MIB for
Python's and the allocator's overheads (a result both a session and the pool hold is one object,
counted in both terms: the bound is an upper one). The results each session holds at the end (count and pickled bytes) are read
from the server's on-disk session store, which mirrors every session's results as they are filed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs, urlparse

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _report import write_section  # noqa: E402

from calibdash.lab.simulation import dirichlet_simulation  # noqa: E402
from calibdash_app.jobs import FINISHED_MIB  # noqa: E402
from calibdash_app.store import DATABASE, MEMORY_MIB, SESSION_MIB  # noqa: E402
from tests.e2e.browser import free_port, launch, new_session, streamlit_server, upload_data  # noqa: E402

SECTION = "Server memory: 200 runs from 8 sessions"
ROWS, CLASSES = 3000, 4
# Small enough to be reached within the run: one run's results (top-label and canonical) of a
# 3,000 x 4 upload pickle to about 20 MiB, so a session holds 3 runs and drops the oldest from its 4th;
# the memory layer holds about two sessions' entries, the pool's finished runs about six runs.
SMALL_BOUNDS = {"CALIBDASH_SESSION_MIB": 64, "CALIBDASH_SESSIONS_MEMORY_MIB": 128, "CALIBDASH_FINISHED_MIB": 128}
DEFAULT_BOUNDS = {"CALIBDASH_SESSION_MIB": SESSION_MIB, "CALIBDASH_SESSIONS_MEMORY_MIB": MEMORY_MIB,
                  "CALIBDASH_FINISHED_MIB": FINISHED_MIB}
# Python's and glibc's overheads on top of what the bounds count: freed memory the allocator keeps
# (arenas, a raised mmap threshold), objects a pickle does not count, Streamlit's own per-session state.
SLACK_MIB = 150
# Readings of the server after the sessions are closed, in seconds after the close.
SETTLE_SECONDS = (30, 150)
RUN_TIMEOUT_MS = 900_000  # generous: a run takes 7 to 16 s here, longer while other work shares the cores


class Reading(NamedTuple):
    """Resident memory in MiB: the server process, and the sum over its descendants."""

    server: float
    workers: float


class Round(NamedTuple):
    runs: int
    memory: Reading
    median_seconds: float


def _status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def descendants(pid):
    """Process ids of every descendant of ``pid``."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:  # it ended meanwhile
                pass
    found, frontier = [], [pid]
    while frontier:
        frontier = [p for p, pp in parent.items() if pp in frontier]
        found += frontier
    return found


def reading(pid):
    workers = 0
    for child in descendants(pid):
        try:
            workers += _status_kib(child, "VmRSS")
        except (OSError, KeyError):  # it ended meanwhile, or is a zombie
            pass
    return Reading(_status_kib(pid, "VmRSS") / 1024, workers / 1024)


def server_pid(port):
    """The ``streamlit run`` process serving ``port`` (a child of this process)."""
    for pid in descendants(os.getpid()):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in args and str(port).encode() in args:
            return pid
    raise RuntimeError(f"no streamlit process on port {port}")


def write_csv(folder, i):
    sim = dirichlet_simulation(n=ROWS, n_classes=CLASSES, random_state=1000 + i)
    df = pd.DataFrame(sim.probs, columns=[f"p{k}" for k in range(CLASSES)])
    df["label"] = sim.labels
    path = Path(folder) / f"session{i + 1}.csv"
    df.to_csv(path, index=False)
    return path


def run_once(w, seed):
    """Set the seed on the Evaluate page, press Run and wait for its outcome: (seconds, error message or None)."""
    page = w.page
    box = page.locator(".st-key-cfg__seed input")
    box.fill(str(seed))
    box.press("Enter")
    w.wait_idle()
    error = page.locator('[data-testid="stMain"] [data-testid="stAlertContentError"]')
    t0 = time.perf_counter()
    page.locator(".st-key-run button").first.click()
    # The run's progress shows first (or a refusal), then its outcome. The click's rerun also clears
    # the last run's "Finished", whose text names the notions and the seconds only, so it may read the same.
    page.locator('[class*="st-key-job__"]').or_(error).first.wait_for(timeout=RUN_TIMEOUT_MS)
    w.wait_jobs(timeout=RUN_TIMEOUT_MS)
    seconds = time.perf_counter() - t0
    if page.locator('[data-testid="stAlertContentSuccess"]', has_text="Finished").count():
        return seconds, None
    return seconds, (error.first.inner_text() if error.count() else "no outcome shown after the run")


def held_results(state_dir, page_url):
    """(results, pickled MiB) the session of ``page_url`` holds, from the server's on-disk store."""
    token = parse_qs(urlparse(page_url).query)["session"][0]
    db = sqlite3.connect(f"file:{Path(state_dir) / DATABASE}?mode=ro", uri=True)
    try:
        count, size = db.execute("SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM items "
                                 "WHERE token = ? AND item LIKE 'results' || char(31) || '%'", (token,)).fetchone()
    finally:
        db.close()
    return count, size / 1024**2


def problems_of(w):
    """Console errors, page errors and Streamlit exception boxes the session's page showed."""
    boxes = w.page.locator('[data-testid="stException"]')
    return list(w.errors) + (["Streamlit exception: " + boxes.first.inner_text()[:500]] if boxes.count() else [])


def measure(n_sessions, n_runs):
    from playwright.sync_api import sync_playwright

    out = {"rounds": [], "failures": [], "after_close": []}
    with contextlib.ExitStack() as stack:
        p = stack.enter_context(sync_playwright())
        cache = stack.enter_context(tempfile.TemporaryDirectory())
        port = free_port()
        url = stack.enter_context(streamlit_server(cache, port=port))
        pid = server_pid(port)
        out["start"] = reading(pid)
        browser = launch(p)
        sessions = [new_session(browser, url, height=1000) for _ in range(n_sessions)]
        out["visits"] = reading(pid)
        for i, (_, w) in enumerate(sessions):
            upload_data(w, write_csv(cache, i))
            w.goto_page("Evaluate")
        out["baseline"] = reading(pid)
        print(f"server pid {pid}: at start {out['start'].server:.0f} MiB, after the first visits "
              f"{out['visits'].server:.0f} MiB, baseline (after the uploads) {out['baseline'].server:.0f} MiB; "
              f"workers {out['baseline'].workers:.0f} MiB", flush=True)
        for r in range(n_runs):
            seconds = []
            for i, (_, w) in enumerate(sessions):
                s, error = run_once(w, seed=r + 1)
                seconds.append(s)
                if error:
                    out["failures"].append((i + 1, r + 1, error))
                print(f"round {r + 1} session {i + 1}: {s:.1f} s" + (f", ERROR: {error[:200]}" if error else ""),
                      flush=True)
            out["rounds"].append(Round((r + 1) * n_sessions, reading(pid), statistics.median(seconds)))
            last = out["rounds"][-1]
            print(f"after {last.runs} runs: server {last.memory.server:.0f} MiB, workers {last.memory.workers:.0f} MiB",
                  flush=True)
        out["held"] = [held_results(Path(cache) / "state", w.page.url) for _, w in sessions]
        problems = {i + 1: problems_of(w) for i, (_, w) in enumerate(sessions)}
        out["problems"] = {s: ps for s, ps in problems.items() if ps}
        for context, _ in sessions:
            context.close()
        closed = time.monotonic()
        for wait in SETTLE_SECONDS:
            time.sleep(max(0.0, closed + wait - time.monotonic()))
            out["after_close"].append((wait, reading(pid)))
            print(f"{wait} s after closing the sessions: server {out['after_close'][-1][1].server:.0f} MiB", flush=True)
        out["peak"] = _status_kib(pid, "VmHWM") / 1024
        browser.close()
    return out


def report(out, bounds, n_sessions, n_runs, minutes, load_before):
    session_mib, memory_mib = bounds["CALIBDASH_SESSION_MIB"], bounds["CALIBDASH_SESSIONS_MEMORY_MIB"]
    finished_mib = bounds["CALIBDASH_FINISHED_MIB"]
    base, rounds = out["baseline"].server, out["rounds"]
    bound = base + n_sessions * session_mib + memory_mib + finished_mib + SLACK_MIB
    held = out["peak"] < bound
    table = "\n".join(f"| {i + 1} | {r.runs} | {r.memory.server:,.0f} | {r.memory.workers:,.0f} | {r.median_seconds:.1f} |"
                      for i, r in enumerate(rounds))
    closes = "; ".join(f"{wait} s after: server {m.server:,.0f} MiB, workers {m.workers:,.0f} MiB"
                       for wait, m in out["after_close"])
    half = len(rounds) // 2
    growth = ((rounds[-1].memory.server - rounds[half - 1].memory.server) / (rounds[-1].runs - rounds[half - 1].runs)
              if half else float("nan"))
    held_text = ", ".join(f"{count} ({mib:.0f} MiB)" for count, mib in out["held"])
    failures = ("; ".join(f"session {s} run {r}: {e[:200]}" for s, r, e in out["failures"])
                or "none")
    problems = ("; ".join(f"session {s}: " + " | ".join(p[:200] for p in ps) for s, ps in out["problems"].items())
                or "none")
    verdict = (f"**The bound held**: the server's peak RSS, {out['peak']:,.0f} MiB, stayed under the bound of "
               f"{bound:,.0f} MiB." if held else
               f"**The bound did not hold**: the server's peak RSS, {out['peak']:,.0f} MiB, exceeded the bound of "
               f"{bound:,.0f} MiB by {out['peak'] - bound:,.0f} MiB.")
    return f"""
One `streamlit run` of the app with `CALIBDASH_SESSION_MIB={session_mib}`,
`CALIBDASH_SESSIONS_MEMORY_MIB={memory_mib}` and `CALIBDASH_FINISHED_MIB={finished_mib}` (the on-disk
store on, its defaults), driven by Debian's
chromium through Playwright: {n_sessions} browser sessions, each uploads its own {ROWS:,} x {CLASSES} CSV
(`dirichlet_simulation`, its own random_state) and presses Run on the Evaluate page {n_runs} times
with a new seed each time (the default notions, estimators and grids), {n_sessions * n_runs} runs in all. The
sessions take turns, one run at a time, all {n_sessions} open throughout. Resident memory (VmRSS) of the
server process after every round of {n_sessions} runs; *workers*: the summed RSS of its descendants
(the job pool's fork server, workers and their joblib processes; shared pages counted in each).

Server RSS: {out['start'].server:,.0f} MiB at start, {out['visits'].server:,.0f} MiB after the {n_sessions} first
visits (the demo analysis, shared), **baseline {base:,.0f} MiB** after the uploads (workers
{out['baseline'].workers:,.0f} MiB).

| round | runs so far | server RSS (MiB) | workers RSS (MiB) | median s per run |
|---:|---:|---:|---:|---:|
{table}

Growth of the server's RSS over the second half of the rounds: {growth:+.2f} MiB per run. After closing
the sessions: {closes}. Peak server RSS over the whole run (VmHWM): **{out['peak']:,.0f} MiB**.

Bound: baseline + {n_sessions} x CALIBDASH_SESSION_MIB + CALIBDASH_SESSIONS_MEMORY_MIB + CALIBDASH_FINISHED_MIB +
{SLACK_MIB} MiB of slack for Python's and the allocator's overheads = {base:,.0f} + {n_sessions * session_mib:,} +
{memory_mib:,} + {finished_mib:,} + {SLACK_MIB} = **{bound:,.0f} MiB**, for the peak (a result that a session and
the pool's finished runs both hold is one object, counted in both terms). Results each session held at the end (one per notion, two per
run; count and pickled size, from the server's session store): {held_text}. Runs that failed: {failures}.
Errors in the pages: {problems}. The whole benchmark took {minutes:.0f} min; one-minute load average
before it: {load_before:.2f} (above ~0.5 means other work shared the two cores).

{verdict}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=8, help="browser sessions, open together (default 8)")
    parser.add_argument("--runs", type=int, default=25, help="runs per session, each with a new seed (default 25)")
    parser.add_argument("--defaults", action="store_true",
                        help="the app's own bounds instead of the small ones that the run reaches")
    parser.add_argument("--write", action="store_true", help=f'write the section "{SECTION}" of BENCHMARKS.md')
    args = parser.parse_args()

    bounds = DEFAULT_BOUNDS if args.defaults else SMALL_BOUNDS
    os.environ.update({name: str(value) for name, value in bounds.items()})  # the server inherits them
    load_before = os.getloadavg()[0]
    t0 = time.monotonic()
    out = measure(args.sessions, args.runs)
    body = report(out, bounds, args.sessions, args.runs, (time.monotonic() - t0) / 60, load_before)
    print(body)
    if args.write:
        write_section(SECTION, body, command=" ".join([".venv/bin/python bench/bench_sessions.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
