"""Today's numbers on the shared CIFAR data, pinned: a restructuring must not change any of them.

``tests/pinned/numbers.json`` was written by ``tests/pinned/generate.py``; both compute the
numbers with ``tests/pinned/cases.py`` (what, and with which settings). Pinned, per section:

* ``loading``: ``cd.load_predictions`` of every shared file (sha256, accuracy, ...);
* ``evaluate/<file>``: ``cd.evaluate`` (CIFAR-10) and ``cd.evaluate_notions`` (CIFAR-100),
  top-label and canonical, default estimators and literature rows, on the first rows:
  summary, others, folds, curves, chosen parameters, reference, tied, warnings, config,
  split, the report's risk curves;
* ``reliability/<file>``: the report's reliability tables, the selected recalibration maps
  and the app's continuous reliability curve;
* ``compare``: ``cd.compare`` of LeNet-5 and WRN-16-4 on the same CIFAR-10 rows;
* ``report/<file>``, ``report/compare``: the tables, verdicts, headings and figure
  captions of ``cd.report`` (without run times and library versions);
* ``nystroem/<file>``: the kernel ridges on the whole CIFAR-100 file (canonical), whose folds
  train on 6,400 rows, on the Nystroem path at its default pivots (the subsamples above do not
  reach it), with the pivots each fold model took.

Floats must agree to ``rtol=1e-9, atol=1e-12``; everything else exactly. Both sides are computed
on OpenBLAS's Haswell kernels (``tests/blas_kernels.py``): another kernel family rounds the
products differently, and the kernel ridges amplify that to about 1e-6 relative
(``tests/evaluation/test_cpu_kernels.py`` holds that bound and the verdict). Where this CPU cannot
run the Haswell kernels (not x86-64 with AVX2, or an OpenBLAS built for one CPU), the numbers are
computed on its own kernels and held to ``blas_kernels.CROSS_CPU_RTOL`` and ``CROSS_CPU_ATOL``; where
NumPy runs other SIMD loops than the pinned numbers' (``blas_kernels.PINNED_SIMD``: a CPU without
AVX-512), they are computed on the Haswell kernels and held to the same tolerances. The calls use
the top-level API ``calibdash`` only; the few functions below it are imported in
``cases.internals()``. ``CALIBDASH_PINNED_NUMBERS`` points the test at another file
(to check that it fails on a changed number).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import blas_kernels
from tests.pinned import cases

NUMBERS = Path(os.environ.get("CALIBDASH_PINNED_NUMBERS") or Path(__file__).resolve().parent / "pinned" / "numbers.json")
REGENERATE = "PYTHONPATH=. .venv/bin/python tests/pinned/generate.py"

_missing = cases.data_missing()
pytestmark = [pytest.mark.skipif(_missing is not None, reason=f"pinned numbers need the shared data: {_missing}"),
              pytest.mark.slow, pytest.mark.shared_data]


@pytest.fixture(scope="module")
def pinned():
    assert NUMBERS.exists(), f"{NUMBERS} is missing: write it with {REGENERATE}"
    return json.loads(NUMBERS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fresh():
    """Today's numbers and the tolerances they are held to: on the pinned matrix kernels, in a
    child process, through JSON as the generator writes it, to 1e-9; where this CPU cannot run
    the pinned arithmetic, to the difference two CPUs make (``blas_kernels``), on the pinned
    kernels where it can run those, else on its own."""
    reason = blas_kernels.why_not(blas_kernels.PINNED)  # asks a child process: once
    if reason is None:
        loops = blas_kernels.simd_reason()
        return SimpleNamespace(numbers=cases.compute_on_pinned_kernels(),
                               rtol=cases.RTOL if loops is None else blas_kernels.CROSS_CPU_RTOL,
                               atol=cases.ATOL if loops is None else blas_kernels.CROSS_CPU_ATOL,
                               kernels=f"OpenBLAS's {blas_kernels.PINNED} kernels" + (f" ({loops})" if loops else ""))
    return SimpleNamespace(numbers=json.loads(json.dumps(cases.compute(), allow_nan=False)),
                           rtol=blas_kernels.CROSS_CPU_RTOL, atol=blas_kernels.CROSS_CPU_ATOL,
                           kernels=f"this CPU's own kernels ({reason})")


def test_sections(pinned):
    assert list(pinned) == list(cases.SECTIONS), (
        f"{NUMBERS} has sections {list(pinned)}, cases.SECTIONS is {list(cases.SECTIONS)}: regenerate with {REGENERATE}")


@pytest.mark.parametrize("section", cases.SECTIONS)
def test_numbers_unchanged(section, pinned, fresh):
    assert section in pinned, f"{NUMBERS} has no section {section!r}: regenerate with {REGENERATE}"
    diffs = cases.differences(pinned[section], fresh.numbers[section], path=section, rtol=fresh.rtol, atol=fresh.atol)
    if diffs:
        pytest.fail(f"{len(diffs)}{'+' if len(diffs) >= 50 else ''} pinned values of {section!r} changed (pinned in "
                    f"{NUMBERS}; computed on {fresh.kernels}, rtol {fresh.rtol:g}, atol {fresh.atol:g}):\n"
                    + "\n".join(diffs[:20]), pytrace=False)
