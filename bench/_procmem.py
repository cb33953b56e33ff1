"""Peak resident memory of this process and all its descendants (joblib workers),
sampled every 50 ms by a background thread started on import."""

from __future__ import annotations

import os
import threading
import time


def tree_rss_kib():
    """Summed VmRSS of this process and its descendants, in KiB."""
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
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


_peak = [0]


def _sample():
    while True:
        _peak[0] = max(_peak[0], tree_rss_kib())
        time.sleep(0.05)


threading.Thread(target=_sample, daemon=True).start()


def peak_mib():
    """Peak of the summed resident memory since import, in MiB."""
    _peak[0] = max(_peak[0], tree_rss_kib())
    return _peak[0] / 1024
