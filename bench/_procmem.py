"""Peak memory of this process and all its descendants (joblib workers), sampled every
50 ms by a background thread started on import.

Memory is the proportional set size (PSS): pages shared between processes, such as the
data joblib memory-maps into every worker, are divided among them instead of being
counted once per process as the resident set size would."""

from __future__ import annotations

import os
import subprocess
import threading
import time


def tree_pss_kib():
    """Summed PSS of this process and its descendants, in KiB."""
    parent = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parent[int(pid)] = int(fields[1])
            except OSError:
                pass
    tree, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier]
        tree.update(kids)
        frontier = kids
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


_peak = [0]
# A sample is taken over tens of milliseconds; one begun before reset_peak() must not land in
# the new measurement (a 1-job run once reported the peak of the every-core run before it).
_generation = [0]
_lock = threading.Lock()


# Cleared by pause(): a run that is timed must not be sampled (see bench_pipeline's docstring).
_active = threading.Event()
_active.set()


def _sample():
    while True:
        _active.wait()
        generation = _generation[0]
        value = tree_pss_kib()
        with _lock:
            if generation == _generation[0]:
                _peak[0] = max(_peak[0], value)
        time.sleep(0.05)


threading.Thread(target=_sample, daemon=True).start()


def peak_mib():
    """Peak of the summed resident memory since import (or the last :func:`reset_peak`), in MiB."""
    value = tree_pss_kib()
    with _lock:
        _peak[0] = max(_peak[0], value)
        return _peak[0] / 1024


def reset_peak():
    """Start a new measurement, sampling again if :func:`pause` stopped it: the next
    :func:`peak_mib` covers only what runs from now on."""
    value = tree_pss_kib()
    with _lock:
        _generation[0] += 1
        _peak[0] = value
    _active.set()


def pause():
    """Stop sampling (after the sample under way), so that the next runs are timed unslowed."""
    with _lock:
        _generation[0] += 1  # a sample under way is not kept
    _active.clear()
    time.sleep(0.2)  # let a sample under way finish: it can take tens of milliseconds


def run_with_own_peak(cmd):
    """Run ``cmd``; its seconds and its own peak resident memory in MiB (the command's process
    alone, not its workers: the maximum resident set that the kernel reports for it when it
    is reaped)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise subprocess.CalledProcessError(code, cmd)
    return seconds, usage.ru_maxrss / 1024
