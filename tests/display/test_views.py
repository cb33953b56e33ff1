"""The reliability view shared by the Reliability page and the report."""

from __future__ import annotations

import numpy as np
import pytest

import calibdash as cd
from calibdash.display import reliability as rl
from calibdash.display.views import most_frequent_classes, per_class_view, top_label_view
from calibdash.lab.simulation import dirichlet_simulation


@pytest.fixture(scope="module")
def data():
    sim = dirichlet_simulation(n=900, n_classes=3, random_state=4)
    pred = cd.load_predictions(sim.probs, sim.labels)
    results = cd.evaluate_notions(pred, notions=["top-label", "canonical"],
                                  estimators={"top-label": ["15-bins", "bins"], "canonical": ["temperature"]}, others=[])
    return pred, results


def test_top_label_view_draws_the_selected_map_on_the_holdout_rows_only(data):
    pred, results = data
    top = results["top-label"]
    view = top_label_view(pred, top, n_bins=10, n_resamples=50)
    rows = top.holdout_rows
    x, g, label = view.recalibration
    np.testing.assert_array_equal(x, pred.probs[rows].max(axis=1))
    # the fixed 15-bin baseline is never the one drawn (not tuned): "bins" is
    assert label == "recalibrated by bins (holdout rows)" and view.note == ""
    np.testing.assert_allclose(g, np.clip(top.models["bins"].recalibration(pred.probs[rows]), 0, 1)[:, 0])
    same = rl.reliability_table(*rl.top_label(pred.probs, pred.labels), n_bins=10, n_resamples=50)
    assert view.table.equals(same)
    assert top_label_view(pred, None).recalibration is None and top_label_view(pred, None).note == ""


def test_a_result_read_from_json_says_why_there_is_no_curve(data):
    pred, results = data
    loaded = cd.EvaluationResult.from_json(results["top-label"].to_json())
    view = top_label_view(pred, loaded)
    assert view.recalibration is None and "fitted models" in view.note


def test_per_class_view_defaults_to_the_most_frequent_classes(data):
    pred, results = data
    view = per_class_view(pred, results["canonical"], n_bins=8, n_resamples=0)
    assert view.notion == "canonical" and view.classes == [0, 1, 2] and view.estimator == "temperature"
    assert set(view.tables) == {0, 1, 2} and set(view.recalibration) == {0, 1, 2}
    P_rows, G, labels = view.triangle
    assert P_rows.shape == G.shape == (len(results["canonical"].holdout_rows), 3) and len(labels) == len(P_rows)
    chosen = per_class_view(pred, results["canonical"], classes=[2], n_resamples=0)
    assert chosen.classes == [2] and set(chosen.tables) == {2}
    assert per_class_view(pred, results["canonical"], classes=[], n_resamples=0).tables == {}


def test_most_frequent_classes_breaks_ties_towards_the_lower_class():
    labels = np.array([3, 3, 1, 1, 0, 2, 4, 4, 4])
    assert most_frequent_classes(labels, 6, k=3) == [1, 3, 4]  # counts 2, 2, 3; class 0/2 (1 each) left out
    assert most_frequent_classes(labels, 6, k=4) == [0, 1, 3, 4]
    assert most_frequent_classes(np.array([1, 1, 0]), 2) == [0, 1]  # fewer classes than panels
