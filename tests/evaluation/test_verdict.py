"""The verdict's judgment (calibdash.evaluation.verdict): the tied set, the union interval, and
how h = 0 and the 15-bin baseline stand, in fractions. Its words are tested in
tests/display/test_verdict.py."""

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash.core.uncertainty import REFERENCE
from calibdash.evaluation.verdict import Baseline, judge

COLUMNS = ["estimator", "val_risk", "estimate", "ci_low", "ci_high", "tied"]


def result(rows, reference_gap=5e-4):
    """A result with the summary ``rows``; h = 0's fold risks are ``reference_gap`` above the best's."""
    summary = pd.DataFrame(rows, columns=COLUMNS)
    best = summary.loc[summary["val_risk"].idxmin(), "estimator"]
    risks = np.array([1.00, 1.10, 0.90, 1.05, 0.95]) * 1e-3
    jitter = np.array([1.0, -1.0, 0.5, -0.5, 0.0]) * 1e-4
    folds = pd.DataFrame({"estimator": [best] * 5 + [REFERENCE] * 5, "fold": list(range(5)) * 2, "squared_estimate": 0.0,
                          "val_risk": np.concatenate([risks, risks + reference_gap + jitter])})
    return cd.EvaluationResult(summary=summary, curves=pd.DataFrame(), folds=folds, config={})


def test_the_interval_is_the_union_of_the_tied_estimators_intervals():
    j = judge(result([("kde", 0.001, 0.06, 0.05, 0.07, True), ("ukkr", 0.00101, 0.13, 0.12, 0.14, True),
                      ("bins", 0.002, 0.09, 0.08, 0.30, False)]))
    assert j.estimator == "kde" and j.estimate == 0.06
    assert (j.low, j.high) == (0.05, 0.14)  # bins' wider interval is not part of it: bins is not tied
    assert j.tied_estimators == ("kde", "ukkr") and j.tied == ["kde", "ukkr"] and j.disagree
    assert j.range == (0.06, 0.13) and j.excludes_zero
    assert j.shows_miscalibration and j.reference_z > 2 and j.baseline is None


def test_overlapping_tied_intervals_agree():
    j = judge(result([("kde", 0.001, 0.060, 0.050, 0.070, True), ("ukkr", 0.00101, 0.065, 0.055, 0.075, True)]))
    assert not j.disagree and (j.low, j.high) == (0.050, 0.075)


def test_h_zero_tied_starts_the_interval_at_zero():
    j = judge(result([("ukkr", 0.001, 0.004, 0.001, 0.009, True)], reference_gap=0.0))
    assert j.reference_tied and j.tied == ["ukkr", REFERENCE] and j.low == 0.0 and not j.excludes_zero
    assert j.shows_miscalibration is False and j.reference_z is None


def test_without_reference_risks_nothing_is_said_about_h_zero():
    res = result([("kde", 0.001, 0.10, 0.095, 0.105, True)])
    res.folds = res.folds[res.folds["estimator"] != REFERENCE]
    j = judge(res)
    assert j.shows_miscalibration is None and j.reference_z is None and not j.reference_tied


@pytest.mark.parametrize("interval, tied, standing", [((0.045, 0.055), False, "outside"), ((0.045, 0.096), False, "overlaps"),
                                                      ((0.045, 0.055), True, "tied")])
def test_the_baseline_stands_tied_outside_or_overlapping(interval, tied, standing):
    j = judge(result([("kde", 0.001, 0.10, 0.095, 0.105, True), ("15-bins", 0.002, 0.05, *interval, tied)]))
    assert j.baseline == Baseline(0.05, *interval, standing)


def test_the_words_give_the_judgment_in_points():
    from calibdash.display.verdict import verdict

    res = result([("kde", 0.001, 0.06, 0.05, 0.07, True), ("ukkr", 0.00101, 0.13, 0.12, 0.14, True)])
    res.summary["hyperparameters"] = "x=1"
    res.config = {"call": {"notion": "canonical", "n_folds": 5}, "n_test": 400}
    j, v = judge(res), verdict(res)
    assert (v.estimate_pp, v.low_pp, v.high_pp, v.range_pp) == (100 * j.estimate, 100 * j.low, 100 * j.high,
                                                                (100 * j.range[0], 100 * j.range[1]))
    assert (v.tied, v.disagree, v.excludes_zero, v.shows_miscalibration) == (j.tied, j.disagree, j.excludes_zero,
                                                                              j.shows_miscalibration)
