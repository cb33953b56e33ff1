"""Evaluations: several results in one object and one file format."""

from __future__ import annotations

import json

import pytest

import calibdash as cd
from calibdash.errors import InputError
from calibdash.evaluation.evaluations import Evaluations
from calibdash.lab.simulation import dirichlet_simulation


@pytest.fixture(scope="module")
def results():
    out = {}
    for seed, name in ((0, "a"), (1, "b")):
        sim = dirichlet_simulation(n=600, n_classes=3, random_state=seed)
        out[name] = cd.evaluate_notions(sim.probs, sim.labels, notions=["top-label", "canonical"],
                                        estimators={"top-label": ["bins"], "canonical": ["temperature"]},
                                        others=[], random_state=seed)
    return out


@pytest.mark.slow
def test_several_models_round_trip_exactly(results):
    ev = Evaluations(results, command=["evaluate", "a.npz", "b.npz"])
    text = ev.to_json(indent=1)
    back = Evaluations.from_json(text)
    assert list(back) == ["a", "b"] and list(back["a"]) == ["top-label", "canonical"]
    assert back.command == ["evaluate", "a.npz", "b.npz"] and back.to_json(indent=1) == text
    assert json.loads(text)["format"] == "calibdash.Evaluations"
    assert [(m, n) for m, n, _ in back.results()] == [("a", "top-label"), ("a", "canonical"), ("b", "top-label"),
                                                       ("b", "canonical")]


@pytest.mark.slow
def test_a_single_result_is_the_same_format(results):
    res = results["a"]["canonical"]
    text = res.to_json()
    obj = json.loads(text)
    assert obj["format"] == "calibdash.Evaluations" and list(obj["models"]) == ["model"]
    assert cd.EvaluationResult.from_json(text).to_json() == text
    assert Evaluations.from_json(text)["model"]["canonical"].summary.equals(res.summary)
    assert list(Evaluations.from_json(text, name="wrn")) == ["wrn"]  # the unnamed model gets the caller's name
    named = Evaluations.of(res, name="x").to_json()
    assert list(Evaluations.from_json(named, name="wrn")) == ["x"]  # a named one keeps its name
    with pytest.raises(InputError, match="holds 4 results; read it with"):
        cd.EvaluationResult.from_json(Evaluations(results).to_json())


@pytest.mark.slow
def test_files_of_earlier_versions_are_read(results):
    res = results["b"]["top-label"]
    single = json.dumps({"format": "calibdash.EvaluationResult", "version": 2, **res.to_dict()})
    assert Evaluations.from_json(single, name="old")["old"]["top-label"].to_json() == res.to_json()
    assert cd.EvaluationResult.from_json(single).to_json() == res.to_json()
    run = json.dumps({"format": "calibdash.Run", "version": 1, "command": None,
                      "models": {"m": {n: r.to_dict() for n, r in results["a"].items()}}})
    assert Evaluations.from_json(run)["m"]["canonical"].to_json() == results["a"]["canonical"].to_json()
    with pytest.raises(InputError, match="version 1 is not supported"):
        Evaluations.from_json(json.dumps({"format": "calibdash.EvaluationResult", "version": 1}))


def test_of_reads_every_shape_once(results):
    one = results["a"]
    assert list(Evaluations.of(one["canonical"])) == [None]
    assert list(Evaluations.of(one)[None]) == ["top-label", "canonical"]
    assert list(Evaluations.of(list(one.values()), name="x")) == ["x"]
    assert list(Evaluations.of(results)) == ["a", "b"]
    ev = Evaluations(results)
    assert Evaluations.of(ev) is ev and len(ev) == 2 and "Evaluations({'a'" in repr(ev)


@pytest.mark.parametrize("bad,message", [
    ({}, "results must be an EvaluationResult"),
    (42, "results must be an EvaluationResult"),
    ({"a": []}, r"results\['a'\]: no results given"),
    ({"a": [1]}, "expected EvaluationResult objects, got int"),
])
def test_bad_shapes_say_what_is_expected(bad, message):
    with pytest.raises(InputError, match=message):
        Evaluations.of(bad)


def test_one_models_notions_must_share_its_data_and_be_distinct(results):
    with pytest.raises(InputError, match="computed on different data"):
        Evaluations({"x": [results["a"]["top-label"], results["b"]["canonical"]]})
    with pytest.raises(InputError, match="two results for the 'top-label' notion"):
        Evaluations({"x": [results["a"]["top-label"], results["a"]["top-label"]]})
    with pytest.raises(InputError, match="is for the 'canonical' notion"):
        Evaluations({"x": {"top-label": results["a"]["canonical"]}})


@pytest.mark.parametrize("text,message", [
    ("{not json", "not valid JSON"),
    ('{"hello": 1}', "not a calibdash evaluation result"),
    ('{"format": "calibdash.Evaluations", "version": 1, "models": {"m": {"top-label": {}}}}', "damaged"),
])
def test_bad_files_are_input_errors(text, message):
    with pytest.raises(InputError, match=message):
        Evaluations.from_json(text)
