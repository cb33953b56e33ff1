"""Write tests/pinned/numbers.json: today's numbers on the shared data, pinned by tests/test_pinned.py.

Run from the project root:  PYTHONPATH=. .venv/bin/python tests/pinned/generate.py

What is computed, and with which settings, is in tests/pinned/cases.py (shared with the
test), on OpenBLAS's Haswell kernels and NumPy's AVX-512 loops (``tests/blas_kernels.py``: on a
CPU without AVX-512 it refuses). Regenerate only when a change of
the numbers is intended, and say why in the commit.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import blas_kernels  # noqa: E402
from tests.pinned import cases  # noqa: E402

OUT = Path(__file__).resolve().parent / "numbers.json"


def main():
    reason = cases.data_missing()
    if reason:
        sys.exit(f"Cannot pin the numbers: {reason}.")
    # Written elsewhere, the file would hold another CPU's rounding and fail on the pinned one.
    reason = blas_kernels.pinned_reason()
    if reason:
        sys.exit(f"Cannot pin the numbers: {reason}.")
    t0 = time.perf_counter()
    print(f"computing on OpenBLAS's {blas_kernels.PINNED} kernels, in a child process", flush=True)
    numbers = cases.compute_on_pinned_kernels()
    # Standard JSON (no NaN: cases.plain writes it as null); floats at repr precision.
    text = json.dumps(numbers, indent=1, allow_nan=False)
    # The file must hold what the test will compare: the JSON round trip changes nothing.
    assert json.loads(text) == numbers
    OUT.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes, {len(numbers)} sections) in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
