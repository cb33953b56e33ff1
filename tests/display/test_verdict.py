"""The plain-language verdict: the tied set, the range when tied estimators disagree, the
h = 0 reference, and the literature's sentences."""

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash.core.uncertainty import REFERENCE
from calibdash.display.reliability import FIFTEEN_BIN_NAMES
from calibdash.display.verdict import verdict
from calibdash.evaluation.advice import GridEdge
from calibdash.lab import demo

BEST_FOLD_RISKS = np.array([1.00, 1.10, 0.90, 1.05, 0.95]) * 1e-3


def fake_result(rows, notion="top-label", reference_gap=5e-4):
    """A result whose summary holds ``rows``; the reference h = 0 has fold risks
    ``reference_gap`` above the best's (tied when the gap is 0 plus noise)."""
    summary = pd.DataFrame(rows)
    summary["hyperparameters"] = "x=1"
    best = summary.loc[summary["val_risk"].idxmin(), "estimator"]
    noise = np.array([1.0, -1.0, 0.5, -0.5, 0.0]) * 1e-4
    folds = pd.DataFrame({"estimator": [best] * 5 + [REFERENCE] * 5, "fold": list(range(5)) * 2,
                          "squared_estimate": 0.0,
                          "val_risk": np.concatenate([BEST_FOLD_RISKS, BEST_FOLD_RISKS + reference_gap + noise])})
    return cd.EvaluationResult(summary=summary, curves=pd.DataFrame(), folds=folds,
                               config={"call": {"notion": notion, "n_folds": 5}, "n_test": 400}, warnings=["w1"])


def row(name, risk, est, low, high, tied):
    return {"estimator": name, "val_risk": risk, "estimate": est, "ci_low": low, "ci_high": high, "tied": tied}


def test_one_clear_best_gives_its_own_interval_and_the_baseline_outside():
    v = verdict(fake_result([row("kde", 0.001, 0.10, 0.095, 0.105, True), row("15-bins", 0.002, 0.05, 0.045, 0.055, False)]))
    assert v.estimator == "kde" and v.excludes_zero and v.tied == ["kde"] and not v.disagree
    assert (v.estimate_pp, v.low_pp, v.high_pp) == pytest.approx((10.0, 9.5, 10.5))
    text = v.markdown()
    assert "about 10.00 percentage points (95% interval 9.50 to 10.50)" in text and "clearly miscalibrated" in text
    assert "outside the interval above" in text and "measurably worse" in text
    assert "the data show miscalibration" in text and v.shows_miscalibration
    assert "w1" in text


def test_tied_estimators_that_disagree_give_a_range_with_an_interval_covering_all():
    v = verdict(fake_result([row("kde", 0.001, 0.06, 0.05, 0.07, True), row("ukkr", 0.00101, 0.13, 0.12, 0.14, True),
                             row("bins", 0.002, 0.09, 0.08, 0.10, False)], "canonical"))
    assert v.disagree and set(v.tied) == {"kde", "ukkr"}
    assert (v.low_pp, v.high_pp) == pytest.approx((5.0, 14.0))
    assert v.range_pp == pytest.approx((6.0, 13.0))
    assert "lies between 6.00 and 13.00 percentage points" in v.headline
    assert "fit the data equally well and disagree" in v.headline
    assert "**kde** and **ukkr**" in v.markdown()


def test_tied_estimators_that_agree_give_one_figure_with_the_union_interval():
    v = verdict(fake_result([row("kde", 0.001, 0.060, 0.050, 0.070, True), row("ukkr", 0.00101, 0.065, 0.055, 0.075, True)]))
    assert not v.disagree
    assert "about 6.00 percentage points (95% interval 5.00 to 7.50)" in v.headline


def test_h_zero_tied_means_the_data_do_not_show_miscalibration():
    v = verdict(fake_result([row("ukkr", 0.001, 0.004, 0.0, 0.009, True)], "canonical", reference_gap=0.0))
    assert not v.excludes_zero and v.low_pp == 0.0 and REFERENCE in v.tied and v.shows_miscalibration is False
    assert "do not show that the model is miscalibrated" in v.headline
    assert "absence of evidence is not proof of calibration" in v.markdown()


@pytest.mark.slow
def test_on_a_real_result():
    res = cd.evaluate(demo.load_demo("digits: naive Bayes"), notion="top-label", estimators=["15-bins", "bins", "temperature"])
    v = verdict(res)
    assert v.estimator == res.best["estimator"]
    assert v.estimate_pp == pytest.approx(100 * res.best["estimate"])
    assert v.excludes_zero and v.shows_miscalibration  # naive Bayes is far from calibrated
    tied = res.summary[res.summary["tied"]]
    assert v.low_pp == pytest.approx(100 * tied["ci_low"].min()) and v.high_pp == pytest.approx(100 * tied["ci_high"].max())


def other(name, quantity, est, p_value=float("nan")):
    return {"estimator": name, "label": name, "quantity": quantity, "estimate": est, "estimate_se": 0.01,
            "ci_low": est - 0.02, "ci_high": est + 0.02,
            "squared_estimate": float("nan"), "squared_estimate_se": float("nan"), "p_value": p_value,
            "details": "", "reference": "", "seconds": 0.0}


@pytest.mark.parametrize("p_value, words", [(0.0004, "rejects 'the model is calibrated' at the 5% level (p < 0.001)"),
                                            (0.31, "does not reject 'the model is calibrated' at the 5% level (p = 0.310)")])
def test_calibration_test_and_the_familiar_ece_are_reported_in_words(p_value, words):
    res = fake_result([row("kde", 0.001, 0.10, 0.095, 0.105, True)])
    res.others = pd.DataFrame([other("ece-15-bins", "L1 calibration error", 0.0581),
                               other("skce", "squared kernel calibration error", 0.002, p_value)])
    text = verdict(res).markdown()
    assert words in text
    assert f"top-label {FIFTEEN_BIN_NAMES['ece']} is 5.81 points" in text and "L1 error" in text


def test_no_literature_rows_no_extra_sentences():
    text = verdict(fake_result([row("kde", 0.001, 0.10, 0.095, 0.105, True)])).markdown()
    assert "kernel calibration test" not in text and FIFTEEN_BIN_NAMES["ece"] not in text


def test_grid_edge_advice_is_in_plain_words_in_the_app_and_as_python_for_python():
    edge = GridEdge("kkkr", "lam", 1e-9, "low", (1e-9, 1e-8, 1e-7), False)
    res = fake_result([row("kkkr", 0.001, 0.10, 0.095, 0.105, True)])
    res.grid_edges, res.warnings = [edge], [edge.text("python"), "another warning"]
    v = verdict(res)
    assert v.warnings == res.warnings  # the Python and command-line wording, kept
    text = v.markdown()
    assert edge.text("app") in text and "another warning" in text
    assert edge.text("python") not in text and "lam =" not in text
