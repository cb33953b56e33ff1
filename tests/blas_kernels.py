"""Running Python code on a chosen family of OpenBLAS's matrix kernels.

OpenBLAS picks its kernels by CPU (``Haswell`` on AVX2 machines, AMD's AVX-512 EPYC included;
``SkylakeX`` on Intel's AVX-512 ones) and they round products differently: the kernel ridges
turn that into differences of about 1e-6 relative (docs/design.md, "The ridge's floor").
``OPENBLAS_CORETYPE`` forces a family when the process starts, so the code runs in a child
process. Used by the pinned numbers (made with :data:`PINNED`, so that they compare the code,
not the CPU) and by ``tests/evaluation/test_cpu_kernels.py`` (the same verdict on two families).

NumPy, too, picks its SIMD loops by CPU (:data:`PINNED_SIMD`): a process cannot take loops its
CPU lacks, so the pinned numbers hold to 1e-9 only where NumPy runs the pinned loops
(:func:`pinned_reason`).

Where no family can be forced (another CPU architecture, or an OpenBLAS built for one CPU), or
NumPy runs other loops, both compare this machine's numbers with the Haswell numbers at
:data:`CROSS_CPU_RTOL` and :data:`CROSS_CPU_ATOL` instead of skipping.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The pinned numbers' kernels: every x86-64 CPU with AVX2 can run them.
PINNED = "Haswell"
# How far two CPUs' numbers may differ, measured on the pinned numbers between the Haswell and
# SkylakeX families (docs/design.md, "The ridge's floor"): up to 1.2e-6 relative where they differ
# by more than 1e-8, and by less than 1e-8 elsewhere (single rows' kernel ridge diagonals near 0).
CROSS_CPU_RTOL, CROSS_CPU_ATOL = 1e-5, 1e-8
# The pinned numbers' NumPy loops. NumPy picks its SIMD loops by CPU as OpenBLAS picks its kernels
# (``X86_V4`` with AVX-512, ``X86_V3`` with AVX2 alone: an AMD EPYC without AVX-512, seen on
# 2026-12-07), and its exp, log and long sums round differently on each, which the kernel ridges
# amplify as they amplify the kernels' rounding (the pinned numbers moved by 1e-9 to 1e-6
# relative there, the demo's estimates of tests/evaluation/test_cpu_kernels.py by up to 6.8e-9).
# Unlike OpenBLAS's kernels, loops the CPU lacks cannot be forced.
PINNED_SIMD = "X86_V4"
_SIMD_LEVELS = ("X86_V4", "X86_V3", "X86_V2")

_ARCH = """
import numpy, scipy.linalg, threadpoolctl  # both libraries load their OpenBLAS
print(sorted({i.get("architecture") for i in threadpoolctl.threadpool_info() if i["internal_api"] == "openblas"}))
"""


def cpu_flags():
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


def families():
    """Two kernel families this CPU runs (Haswell, then SkylakeX with AVX-512, else Sandybridge),
    or None where they cannot be forced (no x86-64 with AVX2)."""
    flags = cpu_flags()
    if platform.machine() not in ("x86_64", "AMD64") or "avx2" not in flags:
        return None
    return (PINNED, "SkylakeX" if "avx512f" in flags else "Sandybridge")


def _env(family):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return env if family is None else dict(env, OPENBLAS_CORETYPE=family)


def why_not(family):
    """None when a child process can run on ``family``'s kernels, else the reason."""
    if families() is None:
        return f"OpenBLAS's {family} kernels need an x86-64 CPU with AVX2"
    proc = subprocess.run([sys.executable, "-c", _ARCH], env=_env(family), cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    got = proc.stdout.strip()
    return None if got == repr([family]) else f"OpenBLAS did not take OPENBLAS_CORETYPE={family} (it runs {got or proc.stderr})"


def simd_level():
    """NumPy's highest x86-64 SIMD level in this process ("X86_V4", "X86_V3", ...), or None on
    another architecture."""
    # The table numpy.show_runtime() prints from; NumPy has no public accessor for it.
    from numpy._core._multiarray_umath import __cpu_features__

    return next((level for level in _SIMD_LEVELS if __cpu_features__.get(level)), None)


def simd_reason():
    """None where NumPy runs the pinned numbers' :data:`PINNED_SIMD` loops, else why not (no child
    process: the loops are this process's)."""
    level = simd_level()
    if level != PINNED_SIMD:
        return (f"NumPy runs its {level} loops on this CPU, the pinned numbers come from its {PINNED_SIMD} loops "
                "(AVX-512), which round exp, log and sums differently and cannot be forced here")
    return None


def pinned_reason():
    """None when a child process computes with the pinned numbers' arithmetic (OpenBLAS's
    :data:`PINNED` kernels and NumPy's :data:`PINNED_SIMD` loops), else the reason it cannot."""
    return why_not(PINNED) or simd_reason()


def run_json(code, family, timeout=1800):
    """Run ``code`` (which prints one JSON document last) in a child on ``family``'s kernels
    (None: the kernels OpenBLAS picks for this CPU)."""
    proc = subprocess.run([sys.executable, "-c", code], env=_env(family), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])
