"""calibdash.reporting.outputs: which files a run writes and where, written whole, never outside
its folder, and the run file (result.json) written and read back."""

from __future__ import annotations

import os

import pytest

import calibdash as cd
from calibdash.lab.simulation import dirichlet_simulation
from calibdash.reporting.outputs import (
    OUTPUT_FILES,
    load_run,
    model_names,
    plan_outputs,
    run_to_json,
    safe_names,
    within,
    write_comparison_outputs,
    write_model_outputs,
)


@pytest.fixture(scope="module")
def model():
    sim = dirichlet_simulation(n=200, n_classes=3, alpha=0.5, random_state=3)
    pred = cd.Predictions(probs=sim.probs, labels=sim.labels, class_names=("a", "b", "c"),
                          kind="probabilities", source_name="sim.npz")
    res = cd.evaluate(pred, notion="top-label", estimators=["bins"], grids={"bins": {"n_bins": [5, 10]}}, others=[],
                      n_folds=2, random_state=0)
    return pred, {"top-label": res}


def test_model_folders_get_safe_distinct_names():
    names = safe_names(["x", "X", "x-2", "../../etc", "/abs/path", ".hidden", "", "Summary.CSV", "é" * 80, *OUTPUT_FILES])
    assert len({n.casefold() for n in names}) == len(names)
    assert not {n.casefold() for n in names} & {f.casefold() for f in OUTPUT_FILES}
    for name in names:
        assert "/" not in name and not name.startswith(".") and len(name.encode()) <= 100 and name
    assert model_names(["a/m.npz", "b/m.csv.gz", "c/.npz"]) == ["m", "m-2", "npz"]


def test_the_planner_refuses_a_path_outside_out(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "m").symlink_to(elsewhere, target_is_directory=True)  # a model's folder that links out of --out
    with pytest.raises(cd.ConfigError, match="would be written outside --out"):
        plan_outputs(out, ["m", "n"], single=False, inputs=[])
    root = out.resolve()
    with pytest.raises(cd.ConfigError, match="outside --out"):
        within(root, out / "m" / "summary.csv")
    assert within(root, out / "summary.csv") == root / "summary.csv"
    assert not any(elsewhere.iterdir())


def test_the_planner_refuses_to_replace_an_input_or_a_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    data = tmp_path / "data.npz"
    data.write_bytes(b"x")
    os.link(data, out / "report.html")  # the input, under another name, where a file is written
    with pytest.raises(cd.ConfigError, match="would replace the input"):
        plan_outputs(out, ["m"], single=True, inputs=[data])
    (out / "report.html").unlink()
    (out / "summary.csv").mkdir()
    with pytest.raises(cd.ConfigError, match="is a directory, where calibdash writes a file"):
        plan_outputs(out, ["m"], single=True, inputs=[data])
    (out / "summary.csv").rmdir()
    assert plan_outputs(out, ["a", "summary.csv"], single=False, inputs=[data]) == {
        "a": out.resolve() / "a", "summary.csv": out.resolve() / "summary.csv-2"}
    with pytest.raises(cd.ConfigError, match="exists and is not a directory"):
        plan_outputs(data, ["m"], single=True, inputs=[])


def test_a_run_is_written_whole_and_read_back(tmp_path, model):
    pred, results = model
    files = write_model_outputs(tmp_path / "m", "m", results, pred, ["python", "-m", "calibdash"])
    assert [f.name for f in files] == list(OUTPUT_FILES) and all(f.is_file() for f in files)
    run = load_run(tmp_path / "m" / "result.json")
    assert list(run) == ["m"] and run["m"]["top-label"].summary.equals(results["top-label"].summary)
    assert run_to_json({"m": results}, ["python", "-m", "calibdash"]) == (tmp_path / "m" / "result.json").read_text()
    both = write_comparison_outputs(tmp_path, {"a": results, "b": results}, {"a": pred, "b": pred}, None)
    assert [f.name for f in both] == list(OUTPUT_FILES)
    assert set(load_run(tmp_path / "result.json")) == {"a", "b"}
    assert (tmp_path / "summary.csv").read_text().startswith("model,notion,")


def test_a_bad_run_file_is_an_input_error(tmp_path):
    bad = tmp_path / "result.json"
    bad.write_text('{"format": "calibdash.Evaluations"')
    with pytest.raises(cd.InputError, match=r"result.json: .*JSON"):
        load_run(bad)
    with pytest.raises(cd.InputError, match="no such file"):
        load_run(tmp_path / "missing.json")
    with pytest.raises(cd.InputError, match="not a regular file"):
        load_run(tmp_path)
