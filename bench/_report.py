"""Shared helpers for the benchmark scripts: machine description, medians, and writing a
named section of BENCHMARKS.md without touching the other scripts' sections."""

from __future__ import annotations

import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "BENCHMARKS.md"
SHARED_DATA = ROOT.parent / "shared" / "data"

HEADER = (
    "# Benchmarks\n\n"
    "Each section is written by the script it names; rerun the script to refresh it.\n"
    "Times are medians over repeated runs on the machine stated in the section.\n"
)


def machine():
    """One line describing this machine, for the record."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy as np

    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"NumPy {np.__version__}, {platform.system()} {platform.release()}"
    )


def median_time(fn, repeats=5, warmup=1):
    """Median wall time of ``fn()`` in seconds over ``repeats`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def write_section(name, body, command=None):
    """Replace (or append) the section ``name`` of BENCHMARKS.md with ``body``."""
    command = command or "python " + " ".join([Path(sys.argv[0]).name] + sys.argv[1:])
    block = (
        f"<!-- begin {name} -->\n## {name}\n\n"
        f"Machine: {machine()}.  \nCommand: `{command}`.\n\n{body.strip()}\n<!-- end {name} -->"
    )
    text = BENCHMARKS.read_text() if BENCHMARKS.exists() else HEADER
    pattern = re.compile(rf"<!-- begin {re.escape(name)} -->.*?<!-- end {re.escape(name)} -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    BENCHMARKS.write_text(text)
