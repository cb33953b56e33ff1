"""`python -m calibdash validate`: outputs, refusals (exit 2, one line), multiclass."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibdash.clinical.validation import MAX_GROUPS

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--n-resamples", "30", "--no-calibration-error", "--quiet"]


def _run(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "calibdash", "validate", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _table(n=500, seed=0, sites=("north", "south", "east")):
    rng = np.random.default_rng(seed)
    lp = rng.normal(-0.5, 1.2, n)
    p = 1 / (1 + np.exp(-lp))
    y = np.where(rng.random(n) < p, "died", "survived")
    return pd.DataFrame({"p_died": p, "outcome": y, "hospital": rng.choice(np.array(sites, dtype=object), n)})


def _refused(r, *words):
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibdash: error:"), r.stderr
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in lines[0]


@pytest.mark.slow
def test_writes_metrics_and_report(tmp_path):
    _table().to_csv(tmp_path / "risks.csv", index=False)
    r = _run("risks.csv", "--groups", "hospital", "--out", "out", "--n-resamples", "30", "--no-calibration-error",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("metrics.csv", "report.html", "groups.csv", "decision_curve.csv", "sample_size.csv"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    metrics = pd.read_csv(tmp_path / "out" / "metrics.csv")
    assert set(metrics["class"]) == {"died"}
    assert set(metrics["group"].dropna()) == {"north", "south", "east"}
    assert "mean calibration [" in r.stdout and "sample size [" in r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("case", ["missing", "one group", "too many"])
def test_bad_group_column_is_refused(tmp_path, case):
    table = _table()
    column = "hospital"
    if case == "missing":
        column = "ward"
    elif case == "one group":
        table["hospital"] = "north"
    else:
        table["hospital"] = [f"h{i % (MAX_GROUPS + 1)}" for i in range(len(table))]
    table.to_csv(tmp_path / "risks.csv", index=False)
    r = _run("risks.csv", "--groups", column, "--out", "out", *FAST, cwd=tmp_path)
    words = {"missing": ["--groups ward", "no column named 'ward'"], "one group": ["1 distinct value"],
             "too many": [f"{MAX_GROUPS + 1} distinct values", f"at most {MAX_GROUPS}"]}[case]
    _refused(r, *words)
    assert not (tmp_path / "out" / "metrics.csv").exists()


@pytest.mark.slow
def test_multiclass_one_block_per_class_and_one_column_refused(tmp_path):
    rng = np.random.default_rng(1)
    n = 450
    P = rng.dirichlet([2, 2, 2], n)
    y = np.array(["a", "b", "c"])[[rng.choice(3, p=p) for p in P]]
    site = rng.choice(np.array(["x", "y"], dtype=object), n)
    pd.DataFrame({"p_a": P[:, 0], "p_b": P[:, 1], "p_c": P[:, 2], "label": y, "site": site}).to_csv(
        tmp_path / "multi.csv", index=False)
    r = _run("multi.csv", "--groups", "site", "--out", "out", *FAST, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert set(pd.read_csv(tmp_path / "out" / "metrics.csv")["class"]) == {"a", "b", "c"}
    r = _run("multi.csv", "--groups", "site", "--positive", "b", "--out", "one", *FAST, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert set(pd.read_csv(tmp_path / "one" / "metrics.csv")["class"]) == {"b"}
    pd.DataFrame({"p_a": P[:, 0], "label": y, "site": site}).to_csv(tmp_path / "onecol.csv", index=False)
    _refused(_run("onecol.csv", "--groups", "site", "--out", "bad", *FAST, cwd=tmp_path), "3 different labels")


@pytest.mark.slow
def test_without_groups_the_whole_data_only(tmp_path):
    _table().to_csv(tmp_path / "risks.csv", index=False)
    r = _run("risks.csv", "--out", "out", *FAST, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    metrics = pd.read_csv(tmp_path / "out" / "metrics.csv")
    assert metrics["group"].isna().all() and len(metrics) == 11
    assert pd.read_csv(tmp_path / "out" / "heterogeneity.csv").empty
