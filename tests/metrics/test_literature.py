"""The literature's estimators inside the pipeline: the same numbers as the library's own
functions on the pipeline's holdout set and fold rows, recorded for reruns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash.evaluation.config import config_fingerprint, make_split
from calibdash.lab.simulation import dirichlet_simulation
from calibdash.metrics.ece import ece_bootstrap
from calibdash.metrics.literature import DEFAULT_OTHERS, OTHER_ESTIMATORS, QUANTITIES, available_others
from calibdash.metrics.recalibrators import OneDimensionalRecalibrator, make_recalibrator
from calibdash.metrics.variational import row_losses

FAST = dict(estimators=["kde"], grids={"kde": {"bandwidth": [0.05, 0.5]}})


def data(n=600, d=4, seed=0):
    sim = dirichlet_simulation(n=n, n_classes=d, alpha=0.5, distortion=0.6, random_state=seed)
    return sim.probs, sim.labels


@pytest.mark.slow
def test_rows_equal_the_library_functions_on_the_same_split():
    P, y = data()
    others = {"top-label": ["ece-15-bins", "ece-mass-convex", "ece-kde", "variational-top-l1", "variational-top-l2",
                            "skce-linear"],
              "canonical": ["ece-15-bins", "skce", "skce-block", "variational-brier-temperature",
                            "variational-brier-isotonic", "variational-log-temperature"]}
    res = cd.evaluate_notions(P, y, notions=["top-label", "canonical"], others=others, random_state=4, **FAST)
    test, folds = make_split(len(y), 0.2, 5, 4)
    Pt, yt = P[test], y[test]
    for notion, r in res.items():
        rows = r.others.set_index("estimator")
        assert list(rows.index) == others[notion]
        assert set(rows["quantity"]) <= set(QUANTITIES)
        for name in [n for n in others[notion] if n.startswith("ece-")]:
            value, se = ece_bootstrap(name, Pt, yt, notion="top-label", n_resamples=200, random_state=4)
            assert rows.loc[name, "estimate"] == value and rows.loc[name, "estimate_se"] == se
        for name in [n for n in others[notion] if n.startswith("skce")]:
            estimator = {"skce": "unbiased", "skce-linear": "linear", "skce-block": "block"}[name]
            est = cd.skce(Pt, yt, estimator=estimator, random_state=4)
            t = cd.calibration_test(Pt, yt, estimator=estimator, random_state=4)
            assert rows.loc[name, "estimate"] == t.estimate.estimate and rows.loc[name, "estimate_se"] == t.estimate.se
            assert rows.loc[name, "estimate"] == pytest.approx(est.estimate, rel=1e-12, abs=1e-15)
            assert rows.loc[name, "estimate_se"] == pytest.approx(est.se, rel=1e-9)
            assert rows.loc[name, "p_value"] == t.p_value and 0 < t.p_value <= 1
    # variational: the maps fitted on each fold's training rows, by hand
    canon = res["canonical"].others.set_index("estimator")
    for name, rec, loss in [("variational-brier-temperature", "temperature", "brier"),
                            ("variational-brier-isotonic", "isotonic", "brier"),
                            ("variational-log-temperature", "temperature", "log")]:
        gaps = np.array([row_losses(Pt, yt, loss) - row_losses(make_recalibrator(rec).fit(P[tr], y[tr]).predict_proba(Pt), yt, loss)
                         for tr, _ in folds])
        value = gaps.mean()
        # holdout rows (s^2 / n of the row means) plus the fold maps' delete-a-fold jackknife
        se = math.sqrt(gaps.mean(axis=0).var(ddof=1) / len(test) + (5 - 1) ** 2 / 5 * gaps.mean(axis=1).var(ddof=1))
        if loss == "brier":
            assert canon.loc[name, "squared_estimate"] == pytest.approx(value, rel=1e-12, abs=1e-15)
            assert canon.loc[name, "squared_estimate_se"] == pytest.approx(se, rel=1e-12)
            assert canon.loc[name, "estimate"] == pytest.approx(math.sqrt(max(value, 0)), rel=1e-12)
        else:
            assert canon.loc[name, "estimate"] == pytest.approx(value, rel=1e-12, abs=1e-15)
    top = res["top-label"].others.set_index("estimator")
    c, k = P.max(axis=1), P.argmax(axis=1)
    t = (k == y).astype(float)
    S = np.column_stack([c, 1 - c])
    g = [OneDimensionalRecalibrator(make_recalibrator("isotonic")).fit(S[tr], t[tr]).predict(S[test]) for tr, _ in folds]
    l1 = np.mean([np.mean(np.sign(gk - c[test]) * (t[test] - c[test])) for gk in g])
    l2 = np.mean([np.mean((c[test] - t[test]) ** 2 - (gk - t[test]) ** 2) for gk in g])
    assert top.loc["variational-top-l1", "estimate"] == pytest.approx(l1, rel=1e-9, abs=1e-14)
    assert top.loc["variational-top-l2", "squared_estimate"] == pytest.approx(l2, rel=1e-9, abs=1e-14)


@pytest.mark.slow
def test_defaults_always_show_the_15_bin_ece_and_are_recorded_for_reruns():
    P, y = data(seed=1)
    for notion in ("top-label", "canonical", "classwise"):
        assert DEFAULT_OTHERS[notion][0] == "ece-15-bins"
        assert set(DEFAULT_OTHERS[notion]) <= set(available_others(notion))
    res = cd.evaluate(P, y, notion="canonical", random_state=2, **FAST)
    assert list(res.others["estimator"]) == list(DEFAULT_OTHERS["canonical"])
    assert res.config["call"]["others"] == list(DEFAULT_OTHERS["canonical"])
    again = cd.evaluate(P, y, **res.config["call"])
    pd.testing.assert_frame_equal(res.others.drop(columns="seconds"), again.others.drop(columns="seconds"), check_exact=True)
    back = cd.EvaluationResult.from_json(res.to_json())
    pd.testing.assert_frame_equal(back.others, res.others, check_exact=True)
    none = cd.evaluate(P, y, notion="canonical", others=[], **FAST)
    assert none.others.empty and list(none.others.columns) == list(res.others.columns)
    assert cd.EvaluationResult.from_json(none.to_json()).others.empty
    sha = "0" * 64
    assert config_fingerprint(sha, "canonical") == config_fingerprint(sha, "canonical", others=list(DEFAULT_OTHERS["canonical"]))
    assert config_fingerprint(sha, "canonical") != config_fingerprint(sha, "canonical", others=[])


@pytest.mark.parametrize(
    "others, message",
    [
        (["ece-20-bins"], "Unknown estimator 'ece-20-bins'; the estimators from the literature are"),
        (["variational-brier-temperature"], "does not support the 'top-label' notion"),
        (["ece-15-bins", "ece-15-bins"], "listed twice"),
    ],
)
def test_bad_choices_are_refused_clearly(others, message):
    P, y = data(n=200, seed=3)
    with pytest.raises(ValueError, match=message):
        cd.evaluate(P, y, notion="top-label", others=others, **FAST)


@pytest.mark.slow
def test_every_registered_estimator_runs_on_each_notion_it_offers():
    P, y = data(n=400, seed=5)
    for notion in ("top-label", "canonical", "classwise"):
        names = available_others(notion)
        res = cd.evaluate(P, y, notion=notion, others=names, **FAST)
        assert list(res.others["estimator"]) == names
        assert np.isfinite(res.others["estimate"]).all() and np.isfinite(res.others["estimate_se"]).all()
        assert (res.others["label"] == [OTHER_ESTIMATORS[n].label for n in names]).all()


def test_skce_switches_to_the_block_estimator_on_large_holdout_sets(monkeypatch):
    from calibdash.metrics import literature

    P, y = data(n=500, seed=6)
    monkeypatch.setattr(literature, "_SKCE_QUADRATIC_MAX_WORK", 100 ** 2 * 4 - 1)  # the holdout is 100 x 4
    row = cd.evaluate(P, y, notion="canonical", others=["skce"], **FAST).others.iloc[0]
    test, _ = make_split(len(y), 0.2, 5, 0)
    est = cd.skce(P[test], y[test], estimator="block")
    assert row["estimate"] == est.estimate and row["details"].startswith("block,") and "n^2 d" in row["details"]


@pytest.mark.parametrize("name", ["variational-top-l2", "variational-top-l1"])
def test_the_variational_top_label_sorts_each_part_once_with_the_same_numbers(name, monkeypatch):
    """The pipeline's folds train on the other folds' parts: their sorted confidences are
    merged (calibdash.core.rows.SortedParts), one merge per fold. Folds of any other shape
    sort as before, and both give the row of the plain per-fold fits."""
    from calibdash.core import rows
    from calibdash.evaluation.config import fold_train_rows, split_parts
    from calibdash.metrics.literature import run_other

    rng = np.random.default_rng(3)
    c = np.round(0.5 + 0.5 * rng.beta(5, 2, 3000), 3)  # ties, as rounded confidences have
    P = np.column_stack([c, 1 - c])
    y = (rng.uniform(0, 1, c.size) >= c ** 1.3).astype(np.int64)
    test, parts = split_parts(len(y), 0.2, 5, 0)
    folds = [(fold_train_rows(parts, k), parts[k]) for k in range(5)]
    merges = []
    real = rows.SortedParts.order_of
    monkeypatch.setattr(rows.SortedParts, "order_of", lambda self, keep: merges.append(1) or real(self, keep))
    merged = run_other(name, P, y, test, folds, "top-label", 0)
    assert len(merges) == 5
    shuffled = [(rng.permutation(train), val) for train, val in folds]  # the same rows, another order
    plain = run_other(name, P, y, test, shuffled, "top-label", 0)
    assert len(merges) == 5
    for key in ("estimate", "estimate_se", "ci_low", "ci_high", "details"):
        assert merged[key] == plain[key], key
