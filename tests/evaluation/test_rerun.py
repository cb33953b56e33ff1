"""calibdash.evaluation.rerun: a recorded run's calls checked, its inputs listed, its data
checked, its numbers recomputed and compared (the command line's ``rerun`` prints the outcome)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import calibdash as cd
from calibdash.evaluation.config import EvaluationConfig
from calibdash.evaluation.pipeline import evaluate_notions
from calibdash.evaluation.rerun import (
    RerunJob,
    check_input,
    compare_results,
    recorded_configs,
    recorded_jobs,
    recorded_paths,
    recorded_paths_message,
    rerun_model,
)
from calibdash.evaluation.result import EvaluationResult
from calibdash.lab.simulation import dirichlet_simulation

RECORD = {"predictions": "/data/m.npz", "labels": None, "kind": "auto", "label_column": None, "prob_columns": None,
          "positive": None, "class_names": ["a", "b", "c"], "groups": None}


def _pred(seed=0, n=200):
    sim = dirichlet_simulation(n=n, n_classes=3, alpha=0.5, random_state=seed)
    return cd.Predictions(probs=sim.probs, labels=sim.labels, class_names=("a", "b", "c"), kind="probabilities",
                          source_name="m.npz")


@pytest.fixture(scope="module")
def run():
    pred = _pred()
    configs = EvaluationConfig.for_notions(["top-label", "canonical"], estimators={"top-label": ["bins"], "canonical": ["kde"]},
                                           grids={"top-label": {"bins": {"n_bins": [5, 10]}},
                                                  "canonical": {"kde": {"bandwidth": [0.1, 0.3]}}},
                                           others=[], n_folds=2, random_state=0)
    results = evaluate_notions(pred, configs=configs, provenance=RECORD)
    return pred, {"m": results}


def _copy(res):
    return EvaluationResult.from_json(res.to_json())


def test_identical_results_have_no_differences(run):
    _, models = run
    res = models["m"]["top-label"]
    assert compare_results(res, _copy(res)) == []


def test_a_changed_number_deep_in_a_result_is_found(run):
    _, models = run
    res = models["m"]["top-label"]
    changed = _copy(res)
    col = changed.curves.columns.get_loc("val_risk")
    changed.curves.iloc[3, col] = changed.curves.iloc[3, col] + 1e-15
    diffs = compare_results(res, changed)
    assert len(diffs) == 1 and diffs[0].startswith("curves [estimator=bins") and " val_risk: recorded " in diffs[0], diffs
    nan = _copy(res)
    nan.summary.iloc[0, nan.summary.columns.get_loc("estimate")] = np.nan
    assert compare_results(nan, _copy(nan)) == []  # NaN equals NaN; a run time never counts
    assert compare_results(res, nan) == [f"summary [estimator={res.summary['estimator'].iloc[0]}] estimate: recorded "
                                         f"{res.summary['estimate'].iloc[0]!r}, now {nan.summary['estimate'].iloc[0]!r}"]
    # another CPU's rounding (1e-14 relative here) is within a tolerance; a changed number is not
    assert compare_results(res, changed, rtol=1e-9) == []
    moved = _copy(res)
    moved.curves.iloc[3, col] = moved.curves.iloc[3, col] * (1 + 1e-8)
    assert len(compare_results(res, moved, rtol=1e-9)) == 1 and compare_results(res, moved, rtol=1e-7) == []
    other = copy.copy(res)
    other.config = dict(res.config, data_sha256="0" * 64)
    assert compare_results(res, other) == ["the data's sha256 differs"]


def test_the_recorded_calls_are_checked_before_any_file_is_read(run):
    _, models = run
    configs = recorded_configs("result.json", models)
    assert set(configs) == {("m", "top-label"), ("m", "canonical")}
    bad = _copy(models["m"]["top-label"])
    bad.config = dict(bad.config, call=dict(bad.config["call"], estimators=["nope"]))
    with pytest.raises(cd.ConfigError, match=r"^result.json: the recorded configuration \(top-label\) cannot be run: "):
        recorded_configs("result.json", {"m": {"top-label": bad}})


def test_the_inputs_are_as_recorded_or_as_replaced(run):
    _, models = run
    jobs = recorded_jobs("r.json", models)
    assert [(j.model, j.notion, j.path, j.labels) for j in jobs] == [("m", "top-label", "/data/m.npz", None),
                                                                      ("m", "canonical", "/data/m.npz", None)]
    assert jobs[0].key == jobs[1].key and jobs[0].load_options()["class_names"] == ["a", "b", "c"]
    assert dict(jobs[0].options)["class_names"] == ("a", "b", "c")  # hashable
    replaced = recorded_jobs("r.json", models, predictions="new.csv", labels="y.npy", kind="logits")
    assert {(j.path, j.labels, dict(j.options)["kind"]) for j in replaced} == {("new.csv", "y.npy", "logits")}
    assert recorded_paths(replaced) == ["new.csv", "y.npy"]
    unrecorded = _copy(models["m"]["top-label"])
    unrecorded.config = {k: v for k, v in unrecorded.config.items() if k != "input"}
    with pytest.raises(cd.ConfigError, match=r"r.json does not record its input file \(model 1, top-label\)"):
        recorded_jobs("r.json", {"m": {"top-label": unrecorded}})


def test_the_recorded_paths_are_listed_as_literals():
    message = recorded_paths_message("r.json", ["a\x1b[2J.npz", "b", "c", "d", "e", "f"])
    assert message.startswith("r.json names the data to read: 'a\\x1b[2J.npz', 'b', 'c', 'd' and 2 more. ")
    assert "--use-recorded-paths" in message and "\x1b" not in message


def test_other_data_are_refused(run):
    pred, models = run
    old = models["m"]["top-label"]
    job = RerunJob("m", "top-label", old, "m.npz", None, ())
    config = recorded_configs("r.json", models)["m", "top-label"]
    check_input(pred, job, config, result="r.json")  # the evaluated data: no refusal
    with pytest.raises(cd.InputError, match=r"^m.npz does not hold the evaluated data: its sha256 is "):
        check_input(_pred(seed=1), job, config, result="r.json")


def test_a_model_is_recomputed_to_the_same_numbers(run):
    pred, models = run
    configs = recorded_configs("r.json", models)
    labels = []
    new = rerun_model(pred, [configs["m", n] for n in models["m"]], provenance=RECORD,
                      progress=lambda notion: labels.append(notion))
    assert labels == [None]  # one split: one pool for both notions
    for notion, old in models["m"].items():
        assert compare_results(old, new[notion]) == []
