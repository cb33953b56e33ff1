"""The plain-language verdict."""

import pandas as pd
import pytest

import calibdash as cd
from calibdash import demo
from calibdash.verdict import verdict


def fake_result(rows, notion="top-label"):
    summary = pd.DataFrame(rows)
    summary["hyperparameters"] = "x=1"
    folds = pd.DataFrame({"estimator": "a", "fold": range(5), "squared_estimate": 0.0})
    return cd.EvaluationResult(summary=summary, curves=pd.DataFrame(), folds=folds,
                               config={"call": {"notion": notion}, "n_test": 400}, warnings=["w1"])


def row(name, risk, est, se, risk_se=1e-5):
    return {"estimator": name, "val_risk": risk, "val_risk_se": risk_se, "estimate": est, "estimate_se": se}


def test_clear_miscalibration_and_baseline_outside():
    v = verdict(fake_result([row("kde", 0.001, 0.10, 0.002), row("15-bins", 0.002, 0.05, 0.002)]))
    assert v.estimator == "kde" and v.excludes_zero
    assert v.estimate_pp == pytest.approx(10.0)
    assert v.low_pp == pytest.approx(10 - 1.96 * 0.2) and v.high_pp == pytest.approx(10 + 1.96 * 0.2)
    text = v.markdown()
    assert "10.00 percentage points" in text and "clearly miscalibrated" in text
    assert "outside this interval" in text and "beats the runner-up" in text
    assert "w1" in text


def test_interval_including_zero_says_so():
    v = verdict(fake_result([row("ukkr", 0.001, 0.004, 0.003, risk_se=1e-3), row("kde", 0.0011, 0.005, 0.003, risk_se=1e-3)], "canonical"))
    assert not v.excludes_zero and v.low_pp == 0.0
    assert "indistinguishable from perfectly calibrated" in v.headline
    assert "within the noise" in v.markdown()
    assert "canonical" in v.headline


def test_on_a_real_result():
    res = cd.evaluate(demo.load_demo("digits: naive Bayes"), notion="top-label", estimators=["15-bins", "bins", "temperature"])
    v = verdict(res)
    assert v.estimator == res.best["estimator"]
    assert v.estimate_pp == pytest.approx(100 * res.best["estimate"])
    assert v.excludes_zero  # naive Bayes is far from calibrated


def other(name, quantity, est, p_value=float("nan")):
    return {"estimator": name, "label": name, "quantity": quantity, "estimate": est, "estimate_se": 0.01,
            "squared_estimate": float("nan"), "squared_estimate_se": float("nan"), "p_value": p_value,
            "details": "", "reference": "", "seconds": 0.0}


@pytest.mark.parametrize("p_value, words", [(0.0004, "rejects 'the model is calibrated' at the 5% level (p < 0.001)"),
                                            (0.31, "does not reject 'the model is calibrated' at the 5% level (p = 0.310)")])
def test_calibration_test_and_the_familiar_ece_are_reported_in_words(p_value, words):
    res = fake_result([row("kde", 0.001, 0.10, 0.002)])
    res.others = pd.DataFrame([other("ece-15-bins", "L1 calibration error", 0.0581),
                               other("skce", "squared kernel calibration error", 0.002, p_value)])
    text = verdict(res).markdown()
    assert words in text
    assert "15-bin top-label ECE is 5.81 points" in text and "L1 error" in text


def test_no_literature_rows_no_extra_sentences():
    text = verdict(fake_result([row("kde", 0.001, 0.10, 0.002)])).markdown()
    assert "kernel calibration test" not in text and "15-bin top-label ECE" not in text
