"""calibdash.core.tails gives scipy.stats' values bit for bit, and a worker process runs the
pipeline's default fold tasks without importing scipy.stats, pandas or scikit-learn."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from calibdash.core import tails

Q = np.concatenate([np.linspace(1e-9, 1 - 1e-9, 20_001), [0.5, 0.975, 0.995, 1e-300, 1 - 1e-16]])
X = np.concatenate([np.linspace(-40, 40, 20_001), [0.0, 1.96, -1e-300, 1e300]])


def test_normal_quantile_and_tail_are_scipy_stats_to_the_last_bit():
    assert np.array_equal(tails.norm_ppf(Q), stats.norm.ppf(Q))
    assert np.array_equal(tails.norm_sf(X), stats.norm.sf(X))


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7.5, 19, 100, 1e6, np.inf])
def test_student_quantile_and_tail_are_scipy_stats_to_the_last_bit(df):
    assert np.array_equal(tails.t_ppf(Q, df), stats.t.ppf(Q, df))
    assert np.array_equal(tails.t_sf(X, df), stats.t.sf(X, df))


WORKER = """
import sys
import numpy as np
import calibdash.evaluation.pipeline as pl
from calibdash.evaluation.config import EvaluationConfig, split_parts

print("scipy.optimize" in sys.modules)

rng = np.random.default_rng(0)
P = rng.dirichlet(np.ones(4), 300)
y = np.array([rng.choice(4, p=p) for p in P])
heavy = lambda: [m for m in ("scipy.stats", "pandas", "sklearn") if m in sys.modules]
print(heavy())
test, parts = split_parts(len(y), 0.2, 5, 0)
for notion in ("top-label", "canonical"):
    config = EvaluationConfig.for_notions(notions=[notion], others=[])[0]
    run = pl._NotionRun(P, y, config, test, parts, True, True)
    for _, k, items in run.fold_tasks:
        pl._run_task((0, k), P, y, notion, items, k, None, None, *parts)
    print(heavy())
for notion in ("top-label", "canonical"):
    for name in EvaluationConfig.for_notions(notions=[notion])[0].others:
        pl._run_other((0, name), name, P, y, test, notion, 0, *parts)
        print(name, heavy())
"""


def test_a_worker_runs_the_default_tasks_without_scipy_stats_pandas_or_sklearn():
    """Every joblib or Dask worker imports calibdash.evaluation.pipeline before its first
    task; scipy.stats, pandas and scikit-learn would cost it about a second, and none of the
    default estimators' fold tasks or the default literature estimators need them (the
    variational estimators' isotonic maps and folds are calibdash.metrics.isotonic's). Nor is
    scipy.optimize imported with the pipeline (0.1 s): the tasks that fit an isotonic map, or
    a temperature Newton's steps could not, import it."""
    out = subprocess.run([sys.executable, "-c", WORKER], capture_output=True, text=True, check=True).stdout
    lines = out.strip().split("\n")
    assert lines[:4] == ["False", "[]", "[]", "[]"], out
    others = [line.rsplit(" ", 1) for line in lines[4:]]
    assert {"variational-top-l2", "variational-brier-temperature", "skce"} <= {name for name, _ in others}, out
    assert all(modules == "[]" for _, modules in others), out
