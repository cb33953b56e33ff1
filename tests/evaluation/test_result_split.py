"""The split in a result file: the seeded split by its recipe and fingerprint, any other by its rows."""

from __future__ import annotations

import json

import numpy as np
import pytest

import calibdash as cd
from calibdash.errors import InputError
from calibdash.evaluation import schema
from calibdash.evaluation.config import make_split
from calibdash.lab.simulation import dirichlet_simulation


@pytest.fixture(scope="module")
def res():
    sim = dirichlet_simulation(n=500, n_classes=3, alpha=0.5, distortion=0.6, random_state=4)
    return cd.evaluate(sim.probs, sim.labels, notion="top-label", estimators=["bins"],
                       grids={"bins": {"n_bins": [2, 5]}}, others=[], random_state=7)


def _split_of(text):
    (notions,) = json.loads(text)["models"].values()
    return notions["top-label"]["split"]


def test_the_pipelines_split_is_written_as_its_seed_and_read_back_row_for_row(res):
    text = res.to_json()
    written = _split_of(text)
    assert written["seeded"] == {"n": 500, "test_size": 0.2, "n_folds": 5, "random_state": 7}
    assert "test" not in written and len(json.dumps(written)) < 200  # no row numbers: 10,000,000 rows took 156 MB
    back = cd.EvaluationResult.from_json(text)
    test, folds = make_split(500, 0.2, 5, 7)
    np.testing.assert_array_equal(back.split["test"], res.split["test"])
    np.testing.assert_array_equal(back.split["test"], test)  # in the pipeline's order, not sorted
    for a, b, (_, v) in zip(back.split["folds"], res.split["folds"], folds):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, v)
    assert back.to_json() == text


def test_any_other_split_is_written_as_its_rows(res):
    other = cd.EvaluationResult.from_json(res.to_json())
    other.split = {"test": other.split["test"][::-1].copy(), "folds": other.split["folds"]}
    written = _split_of(other.to_json())
    assert "seeded" not in written and written["test"] == [int(i) for i in res.split["test"][::-1]]
    again = cd.EvaluationResult.from_json(other.to_json())
    np.testing.assert_array_equal(again.split["test"], res.split["test"][::-1])


def test_a_seed_that_rebuilds_other_rows_leaves_the_split_unknown_not_wrong(res):
    obj = json.loads(res.to_json())
    (notions,) = obj["models"].values()
    notions["top-label"]["split"]["sha256"] = "0" * 64  # as if this NumPy permuted differently
    back = cd.EvaluationResult.from_json(json.dumps(obj))
    assert back.split is None
    np.testing.assert_array_equal(back.summary["estimate"], res.summary["estimate"])  # nothing else changes
    with pytest.raises(InputError, match="does not record its split"):
        _ = back.holdout_rows


@pytest.mark.parametrize("change, message", [
    (lambda s: s["seeded"].update(n=schema.SEEDED_SPLIT_ROWS + 1), "number of rows up to"),
    (lambda s: s["seeded"].update(n=True), "number of rows up to"),
    (lambda s: s["seeded"].update(extra=1), "a field other than"),
    (lambda s: s.update(test=[1, 2]), "a field other than"),
    (lambda s: s.pop("sha256"), "has no 'sha256'"),
    (lambda s: s["seeded"].update(test_size="0.2"), "test_size must be a number"),
])
def test_a_damaged_seeded_split_is_refused_by_name(res, change, message):
    obj = json.loads(res.to_json())
    (notions,) = obj["models"].values()
    change(notions["top-label"]["split"])
    with pytest.raises(InputError, match=message):
        cd.EvaluationResult.from_json(json.dumps(obj))
