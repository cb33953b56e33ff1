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


# ----------------------------------------------------------------------------- issue 24: centres, thresholds
def _in_process(args, capsys):
    from calibdash.cli import main

    try:
        status = main(["validate", *map(str, args)])
    except SystemExit as e:  # argparse's own errors
        status = e.code
    return status, capsys.readouterr()


class _Stop(BaseException):  # not an Exception: main() reports those as bugs
    pass


def _recorded(tmp_path, monkeypatch, capsys, *flags):
    """The arguments ``validate`` passes to validate_risk_model (which is replaced by a recorder)."""
    import calibdash.clinical.validation as validation

    table = _table()
    table["centre"] = np.where(table.index % 3 == 0, "c1", np.where(table.index % 3 == 1, "c2", "c3"))
    table.to_csv(tmp_path / "risks.csv", index=False)
    seen = {}

    def record(pred, **kwargs):
        seen.update(kwargs, groups_kept=sorted(pred.groups))
        raise _Stop

    monkeypatch.setattr(validation, "validate_risk_model", record)
    with pytest.raises(_Stop):
        _in_process([tmp_path / "risks.csv", "--out", tmp_path / "out", "--quiet", *flags], capsys)
    return seen


def test_validate_passes_clusters_thresholds_and_calibration_error(tmp_path, monkeypatch, capsys):
    seen = _recorded(tmp_path, monkeypatch, capsys)
    assert "clusters" not in seen and "thresholds" not in seen  # the library's defaults
    assert seen["calibration_error"] is False  # off by default for the clinical command
    assert seen["groups"] is None
    seen = _recorded(tmp_path, monkeypatch, capsys, "--groups", "hospital", "--clusters", "centre", "--thresholds", "0.1",
                     "0.4", "--calibration-error")
    assert seen["clusters"] == "centre" and seen["groups"] == "hospital"
    assert seen["thresholds"] == (0.1, 0.4) and seen["calibration_error"] is True
    assert seen["groups_kept"] == ["centre", "hospital"]  # both columns loaded
    seen = _recorded(tmp_path, monkeypatch, capsys, "--clusters", "hospital", "--no-calibration-error")
    assert seen["clusters"] == "hospital" and seen["groups"] is None and seen["calibration_error"] is False
    assert seen["groups_kept"] == ["hospital"]


@pytest.mark.parametrize("values,words", [
    (["0.5", "0.05"], "--thresholds 0.5 0.05: LOW must be below HIGH"),
    (["0.2", "0.2"], "--thresholds 0.2 0.2: LOW must be below HIGH"),
    (["0", "0.5"], "--thresholds 0 0.5: both thresholds are risks and must lie strictly between 0 and 1"),
    (["0.05", "1"], "must lie strictly between 0 and 1"),
    (["5", "50"], "must lie strictly between 0 and 1"),
    (["nan", "0.5"], "must lie strictly between 0 and 1"),
    (["low", "0.5"], "argument --thresholds: invalid float value: 'low'"),
    (["0.05"], "argument --thresholds: expected 2 arguments"),
])
def test_bad_thresholds_are_refused_before_the_file_is_read(tmp_path, capsys, values, words):
    # the file does not exist: the thresholds are checked first
    status, out = _in_process([tmp_path / "missing.csv", "--out", tmp_path / "out", "--thresholds", *values], capsys)
    assert status == 2
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibdash: error:") and words in lines[0], out.err
    assert not (tmp_path / "out").exists()


def test_a_missing_clusters_column_is_named(tmp_path, capsys):
    _table().to_csv(tmp_path / "risks.csv", index=False)
    status, out = _in_process([tmp_path / "risks.csv", "--groups", "hospital", "--clusters", "ward", "--out",
                               tmp_path / "out", *FAST], capsys)
    assert status == 2
    assert out.err.startswith("calibdash: error: --clusters ward:") and "no column named 'ward'" in out.err, out.err
    status, out = _in_process([tmp_path / "risks.csv", "--groups", "ward", "--clusters", "hospital", "--out",
                               tmp_path / "out", *FAST], capsys)
    assert status == 2 and out.err.startswith("calibdash: error: --groups ward:"), out.err


def test_validate_help_explains_the_new_flags():
    from calibdash.cli import build_parser

    text = next(a for a in build_parser()._actions if a.dest == "cmd").choices["validate"].format_help()
    for flag in ("--clusters COLUMN", "--thresholds LOW HIGH", "--calibration-error", "--no-calibration-error"):
        assert flag in text
    assert "--groups for subgroups of patients, --clusters for centres" in " ".join(text.split())


@pytest.mark.slow
def test_clusters_and_thresholds_end_to_end(tmp_path):
    table = _table(n=900)
    table["centre"] = np.array(["c1", "c2", "c3"], dtype=object)[np.arange(len(table)) % 3]
    table.to_csv(tmp_path / "risks.csv", index=False)
    both = _run("risks.csv", "--groups", "hospital", "--clusters", "centre", "--out", "out", *FAST, cwd=tmp_path)
    assert both.returncode == 2 and "either groups= (subgroups of patients) or clusters= (centres)" in both.stderr
    r = _run("risks.csv", "--clusters", "centre", "--thresholds", "0.1", "0.4", "--out", "out", *FAST, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("pooled.csv", "centres.csv", "net_benefit.csv", "recalibration.csv", "grouped.csv"):
        assert (tmp_path / "out" / name).exists(), name
    assert set(pd.read_csv(tmp_path / "out" / "pooled.csv")["n_clusters"]) == {3}
    metrics = pd.read_csv(tmp_path / "out" / "metrics.csv")
    whole = metrics[metrics["group"].isna()]
    assert (whole["interval"].astype(str).str.contains("cluster bootstrap")).any()
