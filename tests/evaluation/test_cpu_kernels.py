"""The same selection and verdict whichever matrix kernels the CPU gets.

OpenBLAS picks its kernels by CPU (``Haswell`` on AVX2 machines, AMD's AVX-512 EPYC included;
``SkylakeX`` on Intel's AVX-512 ones), and they round differently. The kernel ridges amplify
that rounding by about 1 / lam: with their grids down to 1e-18, KKKR on the demo "digits:
naive Bayes" selected lam = 1e-8 under one kernel family and 1e-14 under the other, and the
app's verdict went from "clearly miscalibrated" to "indistinguishable from calibrated".
``kernel_ridge.LAM_FLOOR`` keeps lam where the risks reproduce to 1e-6. This test runs the
demo's default top-label evaluation in two processes, each forced onto one kernel family
(``OPENBLAS_CORETYPE``), and asks for the same choices, numbers to 1e-6 and the same verdict.
"""

from __future__ import annotations

import pytest

from tests import blas_kernels

RUN = """
import json
import calibdash as cd
from calibdash.display.verdict import verdict
from calibdash.lab import demo

res = cd.evaluate(demo.load_demo("digits: naive Bayes"), notion="top-label", n_jobs=1)
print(json.dumps({"chosen": {r["estimator"]: r["params"] for _, r in res.summary.iterrows()},
                  "estimate": res.summary["estimate"].tolist(), "ci_low": res.summary["ci_low"].tolist(),
                  "ci_high": res.summary["ci_high"].tolist(), "verdict": verdict(res).markdown()}))
"""


@pytest.mark.slow
def test_the_demos_selection_and_verdict_do_not_depend_on_the_cpus_matrix_kernels():
    families = blas_kernels.families()
    reason = "no kernel families to force" if families is None else (
        blas_kernels.why_not(families[0]) or blas_kernels.why_not(families[1]))
    if reason:
        pytest.skip(reason)
    a, b = (blas_kernels.run_json(RUN, family, timeout=600) for family in families)
    assert a["chosen"] == b["chosen"]
    for key in ("estimate", "ci_low", "ci_high"):
        assert a[key] == pytest.approx(b[key], rel=1e-6, abs=1e-12), key
    assert a["verdict"] == b["verdict"] and "clearly miscalibrated" in a["verdict"]
