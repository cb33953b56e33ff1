"""Algorithm 1: the steps against a hand-written transcription, known ground truth,
reproducibility, the result's JSON round trip, progress and errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t

import calibdash as cd
from calibdash.estimators.registry import default_grid
from calibdash.evaluation.config import EvaluationConfig, make_split
from calibdash.lab.simulation import dirichlet_simulation, simulation_truth

SMALL_GRIDS = {
    "bins": {"n_bins": [2, 5, 10]},
    "kde": {"bandwidth": [0.05, 0.2, 1.0]},
    "ukkr": {"lam": [1e-1, 1e-3, 1e-5]},
    "kkkr": {"lam": [1e-2, 1e-4, 1e-6]},
}


def small_data(seed=0, n=600, d=4):
    sim = dirichlet_simulation(n=n, n_classes=d, alpha=0.5, distortion=0.6, random_state=seed)
    return sim.probs, sim.labels


def record_phases(monkeypatch, describe):
    """Record ``describe(jobs)`` of each batch the pipeline gives its pool, and how many pools it
    opens; returns (phases, pools), filled as the pipeline runs."""
    from calibdash.evaluation import pipeline

    phases, pools, real = [], [], pipeline._parallel

    class Recording:
        def __init__(self, n_jobs):
            self.parallel = real(n_jobs)
            pools.append(n_jobs)

        def __enter__(self):
            self.parallel.__enter__()
            return self

        def __exit__(self, *exc):
            return self.parallel.__exit__(*exc)

        def __call__(self, jobs):
            jobs = list(jobs)
            phases.append(describe(jobs))
            return self.parallel(jobs)

    monkeypatch.setattr(pipeline, "_parallel", Recording)
    return phases, pools


def test_steps_match_a_direct_transcription_of_algorithm_1():
    P, y = small_data()
    grid = [2, 5, 10]
    res = cd.evaluate(P, y, notion="top-label", estimators=["bins"], grids={"bins": {"n_bins": grid}},
                      n_folds=4, random_state=3)
    # 1. the seeded split
    test, folds = make_split(len(y), 0.2, 4, 3)
    assert len(test) == 120 and sorted(np.concatenate([test] + [v for _, v in folds]).tolist()) == list(range(600))
    # 2. fold risks for every grid value
    risks = np.array([[cd.risk(cd.make_estimator("bins", notion="top-label", n_bins=b).fit(P[tr], y[tr]), P[va], y[va])
                       for b in grid] for tr, va in folds])
    got = res.curves.pivot(index="fold", columns="value", values="val_risk").to_numpy()
    np.testing.assert_allclose(got, risks, rtol=1e-12)
    # 3. selection by mean validation risk
    best = int(np.argmin(risks.mean(axis=0)))
    row = res.summary.iloc[0]
    assert row["params"]["n_bins"] == grid[best]
    assert row["val_risk"] == pytest.approx(risks[:, best].mean(), rel=1e-12)
    assert row["val_risk_se"] == pytest.approx(risks[:, best].std(ddof=1) / 2, rel=1e-12)
    assert row["sqrt_risk_x100"] == pytest.approx(100 * np.sqrt(risks[:, best]).mean(), rel=1e-12)
    # 4.-5. ensemble of the fold models, estimated on the holdout set
    fold_sq = np.array([cd.make_estimator("bins", notion="top-label", n_bins=grid[best]).fit(P[tr], y[tr]).squared_error(P[test])
                        for tr, _ in folds])
    assert row["squared_estimate"] == pytest.approx(fold_sq.mean(), rel=1e-12)
    assert row["estimate"] == pytest.approx(np.sqrt(fold_sq.mean()), rel=1e-12)
    # standard error: holdout rows (variance of the row means over fold models / n) plus
    # fold fitting (delete-a-fold jackknife, (k - 1)^2 / k times the variance of fold_sq)
    diag = np.array([cd.make_estimator("bins", notion="top-label", n_bins=grid[best]).fit(P[tr], y[tr]).h_diag(P[test])
                     for tr, _ in folds])
    row_means = diag.mean(axis=0)
    var_rows = sum((v - row_means.mean()) ** 2 for v in row_means) / (len(test) - 1) / len(test)
    var_fit = (4 - 1) ** 2 / 4 * sum((v - fold_sq.mean()) ** 2 for v in fold_sq) / 3
    assert row["squared_se_holdout"] == pytest.approx(np.sqrt(var_rows), rel=1e-10)
    assert row["squared_se_fit"] == pytest.approx(np.sqrt(var_fit), rel=1e-10)
    assert row["squared_estimate_se"] == pytest.approx(np.sqrt(var_rows + var_fit), rel=1e-10)
    df = (var_rows + var_fit) ** 2 / (var_rows**2 / (len(test) - 1) + var_fit**2 / 3)
    assert row["se_df"] == pytest.approx(df, rel=1e-10)
    q = student_t.ppf(0.975, df)
    sq, se = fold_sq.mean(), np.sqrt(var_rows + var_fit)
    assert row["ci_low"] == pytest.approx(np.sqrt(max(sq - q * se, 0.0)), rel=1e-10, abs=1e-15)
    assert row["ci_high"] == pytest.approx(np.sqrt(sq + q * se), rel=1e-10)
    assert res.confidence_interval() == pytest.approx((row["ci_low"], row["ci_high"]), rel=1e-12, abs=1e-15)
    assert res.split["test"].tolist() == test.tolist()
    assert [v.tolist() for v in res.split["folds"]] == [v.tolist() for _, v in folds]
    np.testing.assert_allclose(res.diagonals["bins"], diag, rtol=1e-12)
    # the reference h = 0: its fold risks are the mean of <u_i, u_j>^2 over ordered pairs
    for k, (_, va) in enumerate(folds):
        c, t = P[va].max(axis=1), (P[va].argmax(axis=1) == y[va]).astype(float)
        u = c - t
        brute = sum((u[i] * u[j]) ** 2 for i in range(len(va)) for j in range(len(va)) if i != j) / (len(va) * (len(va) - 1))
        got = res.folds[(res.folds["estimator"] == "h = 0") & (res.folds["fold"] == k)]["val_risk"].iloc[0]
        assert got == pytest.approx(brute, rel=1e-10)
    ens = res.models["bins"]
    assert ens.squared_error(P[test]) == pytest.approx(fold_sq.mean(), rel=1e-12)
    assert res.best["estimator"] == "bins"


@pytest.fixture(scope="module")
def truth():
    return simulation_truth()


@pytest.mark.parametrize("notion", ["top-label", "canonical"])
@pytest.mark.slow
def test_best_estimator_recovers_the_known_truth(notion, truth):
    """The paper's simulation, n = 10,000: the estimator with the lowest validation risk
    lies within 3 standard errors (or 0.01) of the true calibration error."""
    sim = dirichlet_simulation(n=10_000, random_state=2024)
    res = cd.evaluate(sim.probs, sim.labels, notion=notion, random_state=0)
    best = res.best
    tolerance = max(3 * best["estimate_se"], 0.01)
    assert abs(best["estimate"] - truth[notion]) <= tolerance, (best["estimator"], best["estimate"], truth[notion])


@pytest.mark.slow
def test_same_seed_same_results_whatever_n_jobs():
    P, y = small_data(seed=1)
    kw = dict(notion="canonical", estimators=["kde", "ukkr", "kkkr", "temperature"],
              grids={k: SMALL_GRIDS[k] for k in ("kde", "ukkr", "kkkr")}, random_state=5)
    a = cd.evaluate(P, y, n_jobs=1, **kw)
    b = cd.evaluate(P, y, n_jobs=2, **kw)
    cols = [c for c in a.summary.columns if c != "seconds"]
    pd.testing.assert_frame_equal(a.summary[cols], b.summary[cols], check_exact=True)
    pd.testing.assert_frame_equal(a.curves, b.curves, check_exact=True)
    pd.testing.assert_frame_equal(a.folds, b.folds, check_exact=True)
    c = cd.evaluate(P, y, n_jobs=1, **kw)
    pd.testing.assert_frame_equal(a.curves, c.curves, check_exact=True)
    d = cd.evaluate(P, y, n_jobs=1, **{**kw, "random_state": 6})
    assert not np.array_equal(a.curves["val_risk"], d.curves["val_risk"])
    # n_jobs=2 runs threads by default; processes (the app's backend) give the same numbers
    import joblib

    with joblib.parallel_config(backend="loky"):
        e = cd.evaluate(P, y, n_jobs=2, **kw)
    pd.testing.assert_frame_equal(a.summary[cols], e.summary[cols], check_exact=True)
    pd.testing.assert_frame_equal(a.curves, e.curves, check_exact=True)
    for name in a.diagonals:
        np.testing.assert_array_equal(a.diagonals[name], e.diagonals[name])


def test_tasks_run_in_threads_under_one_blas_thread_by_default(monkeypatch):
    """Without a joblib backend chosen, the tasks run in threads of this process; the BLAS
    thread count (the process's, not the thread's) is held at one around the whole pool, so
    that a task ending in one thread cannot restore it while another task computes (the
    count changes the rounding of matrix products)."""
    import contextlib
    import os
    import threading

    from threadpoolctl import ThreadpoolController, threadpool_limits

    from calibdash.evaluation import pipeline

    seen, held, at_pool = [], [], []
    real_task, real_parallel, real_limit = pipeline._fold_task, pipeline._parallel, pipeline.one_blas_thread

    def blas_threads():
        return [i["num_threads"] for i in ThreadpoolController().info() if i["user_api"] == "blas"]

    def fold_task(*args):
        seen.append((os.getpid(), threading.get_ident()))
        return real_task(*args)

    @contextlib.contextmanager
    def one_blas_thread():  # records the limits the main thread holds
        main = threading.current_thread() is threading.main_thread()
        with real_limit():
            held.append(main)
            try:
                yield
            finally:
                held.remove(main)

    def parallel(n_jobs):
        at_pool.append((any(held), blas_threads()))
        return real_parallel(n_jobs)

    monkeypatch.setattr(pipeline, "_fold_task", fold_task)
    monkeypatch.setattr(pipeline, "_parallel", parallel)
    monkeypatch.setattr(pipeline, "one_blas_thread", one_blas_thread)
    P, y = small_data(seed=4, n=300)
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        cd.evaluate(P, y, notion="top-label", estimators=["bins", "kde"], n_jobs=2)
        after = blas_threads()
    assert seen and {pid for pid, _ in seen} == {os.getpid()}
    assert threading.get_ident() not in {t for _, t in seen}
    assert [h for h, _ in at_pool] == [True]  # the main thread holds one BLAS thread around the pool
    assert all(n == 1 for _, counts in at_pool for n in counts), at_pool  # (2 before, where BLAS has 2)
    assert after == before  # restored when the pool is done

def test_the_result_module_is_imported_while_the_first_tasks_run(monkeypatch):
    """The main thread imports what assembling the result needs (pandas) once the first phase's
    tasks are dispatched and before it takes any of their results, not after the last one (0.2 s
    at the end of a run in a fresh process)."""
    import threading

    from calibdash.evaluation import pipeline

    started, seen, messages = threading.Event(), [], []
    real_task = pipeline._fold_task

    def fold_task(*args):
        started.set()
        return real_task(*args)

    def import_result_module():
        # a task has started (they were dispatched first): waiting here cannot hang the run
        seen.append((started.wait(30), list(messages)))

    monkeypatch.setattr(pipeline, "_fold_task", fold_task)
    monkeypatch.setattr(pipeline, "import_result_module", import_result_module)
    P, y = small_data(seed=4, n=300)
    cd.evaluate_notions(P, y, notions=("top-label", "canonical"), estimators=["kde"], n_jobs=2,
                        progress=lambda done, total, message: messages.append(message))
    assert seen == [(True, ["starting"])]  # once, with tasks running and no result taken yet
    assert messages[-1] == "done"



@pytest.mark.slow
def test_several_notions_in_one_pool_give_the_numbers_of_separate_runs():
    P, y = small_data(seed=2, n=500)
    est = {"top-label": ["15-bins", "bins", "kde", "ukkr"], "canonical": ["kde", "kkkr", "temperature"]}
    grids = {"top-label": {k: SMALL_GRIDS[k] for k in ("bins", "kde", "ukkr")},
             "canonical": {k: SMALL_GRIDS[k] for k in ("kde", "kkkr")}}
    calls = []
    joint = cd.evaluate_notions(P, y, notions=["top-label", "canonical"], estimators=est, grids=grids, random_state=3,
                                n_jobs=2, progress=lambda done, total, msg: calls.append((done, total, msg)))
    assert list(joint) == ["top-label", "canonical"]
    for notion, res in joint.items():
        alone = cd.evaluate(P, y, notion=notion, estimators=est[notion], grids=grids[notion], random_state=3)
        cols = [c for c in alone.summary.columns if c != "seconds"]
        pd.testing.assert_frame_equal(res.summary[cols], alone.summary[cols], check_exact=True)
        pd.testing.assert_frame_equal(res.curves, alone.curves, check_exact=True)
        pd.testing.assert_frame_equal(res.folds, alone.folds, check_exact=True)
        assert res.config["call"] == alone.config["call"]
        assert res.models.keys() == alone.models.keys()
    assert calls[-1][0] == calls[-1][1] and calls[-1][2] == "done"
    assert any(msg.startswith("canonical, ") for _, _, msg in calls)
    # One estimator list for every notion works too; a list per notion must cover them all.
    both = cd.evaluate_notions(P, y, notions=("top-label", "canonical"), estimators=["kde"],
                               grids={"kde": {"bandwidth": [0.1, 1.0]}})
    assert [list(r.summary["estimator"]) for r in both.values()] == [["kde"], ["kde"]]
    with pytest.raises(ValueError, match="not for 'canonical'"):
        cd.evaluate_notions(P, y, notions=("top-label", "canonical"), estimators={"top-label": ["kde"]})
    with pytest.raises(ValueError, match="listed twice"):
        cd.evaluate_notions(P, y, notions=("canonical", "canonical"))
    with pytest.raises(ValueError, match="evaluate_notions"):
        cd.evaluate(P, y, notion=["canonical"])


def test_configs_give_exactly_the_numbers_of_the_keywords_they_were_built_from():
    P, y = small_data(seed=2, n=400)
    settings = dict(estimators={"top-label": ["bins"], "canonical": ["kde"]},
                    grids={"top-label": {"bins": SMALL_GRIDS["bins"]}, "canonical": {"kde": SMALL_GRIDS["kde"]}},
                    others=[], test_size=0.25, n_folds=3, random_state=4)
    notions = ["top-label", "canonical"]
    old = cd.evaluate_notions(P, y, notions=notions, **settings)
    configs = EvaluationConfig.for_notions(notions, **settings)
    new = cd.evaluate_notions(P, y, configs=configs)
    alone = cd.evaluate(P, y, config=configs[1])
    for notion, res in old.items():
        for other in (new[notion], *([alone] if notion == "canonical" else [])):
            cols = [c for c in res.summary.columns if c != "seconds"]
            pd.testing.assert_frame_equal(other.summary[cols], res.summary[cols], check_exact=True)
            pd.testing.assert_frame_equal(other.curves, res.curves, check_exact=True)
            pd.testing.assert_frame_equal(other.folds, res.folds, check_exact=True)
            assert other.config["call"] == res.config["call"] and other.split["test"].tolist() == res.split["test"].tolist()
    with pytest.raises(ValueError, match="not both: configs were given with test_size"):
        cd.evaluate_notions(P, y, configs=configs, test_size=0.2)
    with pytest.raises(ValueError, match="not both: config was given with notion"):
        cd.evaluate(P, y, config=configs[0], notion="top-label")
    with pytest.raises(ValueError, match="share its split"):
        cd.evaluate_notions(P, y, configs=[configs[0], EvaluationConfig.resolve("canonical", random_state=5)])


def test_provenance_is_kept_at_construction_and_does_not_change_the_fingerprint():
    P, y = small_data(seed=2, n=400)
    config = EvaluationConfig.resolve("top-label", estimators=["bins"], grids={"bins": SMALL_GRIDS["bins"]}, others=[])
    record = {"predictions": "/data/model.csv", "labels": None, "kind": "auto"}
    res = cd.evaluate(P, y, config=config, provenance=record)
    sha = res.config["data_sha256"]
    assert res.config["input"] == dict(record, sha256=sha) and "sha256" not in record  # the caller's dict is not changed
    plain = cd.evaluate(P, y, config=config)
    assert "input" not in plain.config and plain.config["call"] == res.config["call"] == config.to_dict()
    assert config.key(sha) == EvaluationConfig.resolve(**res.config["call"]).key(sha)
    assert cd.EvaluationResult.from_json(res.to_json()).config["input"] == res.config["input"]
    with pytest.raises(ValueError, match="unknown key 'made_by'"):
        cd.evaluate(P, y, config=config, provenance={"made_by": "me"})
    with pytest.raises(ValueError, match="other data"):
        cd.evaluate(P, y, config=config, provenance={"sha256": "ab" * 32})


@pytest.mark.slow
def test_json_round_trip_is_exact():
    P, y = small_data(seed=2)
    res = cd.evaluate(P, y, notion="top-label", grids=dict(SMALL_GRIDS), random_state=1)
    text = res.to_json()
    back = cd.EvaluationResult.from_json(text)
    pd.testing.assert_frame_equal(res.summary, back.summary, check_exact=True)
    pd.testing.assert_frame_equal(res.curves, back.curves, check_exact=True)
    pd.testing.assert_frame_equal(res.folds, back.folds, check_exact=True)
    assert back.config == res.config and back.warnings == res.warnings
    assert back.to_json() == text
    assert back.best["estimator"] == res.best["estimator"]
    with pytest.raises(ValueError, match="not a calibdash"):
        cd.EvaluationResult.from_json('{"hello": 1}')
    with pytest.raises(ValueError, match="not valid JSON"):
        cd.EvaluationResult.from_json("{not json")


@pytest.mark.slow
def test_result_contents_and_config():
    preds = cd.load_predictions(*small_data(seed=3))
    P, y = preds.probs, preds.labels
    res = cd.evaluate(preds, notion="top-label", grids=dict(SMALL_GRIDS), random_state=4)
    assert list(res.summary["estimator"]) == ["15-bins", "bins", "kde", "kkkr", "ukkr"]
    assert res.summary.loc[0, "params"]["n_bins"] == 15  # the fixed baseline is not tuned
    expected_rows = 5 * (1 + 3 + 3 + 3 + 3)
    assert len(res.curves) == expected_rows
    assert set(res.folds["estimator"]) == set(res.summary["estimator"]) | {"h = 0"}
    cfg = res.config
    assert cfg["call"]["notion"] == "top-label" and cfg["call"]["random_state"] == 4
    assert cfg["n"] == 600 and cfg["n_test"] == 120 and sum(cfg["fold_sizes"]) == 480
    assert cfg["data_sha256"] == preds.sha256
    assert {"numpy", "scipy", "scikit-learn", "calibdash"} <= set(cfg["versions"])
    rerun = cd.evaluate(P, y, **cfg["call"])
    # from arrays the pipeline hashes them; from Predictions it reuses the loader's hash
    assert rerun.config["data_sha256"] == cfg["data_sha256"]
    pd.testing.assert_frame_equal(rerun.curves, res.curves, check_exact=True)


def test_partial_grid_override_keeps_other_defaults():
    P, y = small_data(seed=4)
    res = cd.evaluate(P, y, notion="top-label", estimators=["bins", "kde"], grids={"bins": {"n_bins": [3, 6, 9]}})
    grids = res.config["call"]["grids"]
    assert grids["bins"]["n_bins"] == [3, 6, 9] and grids["bins"]["strategy"] == ["uniform"]
    assert grids["kde"] == default_grid("kde", "top-label")


def test_selection_at_the_edge_of_the_grid_is_reported():
    # confidence spread over [1/2, 1] but accuracy 1/2 everywhere: the gap c - 1/2 grows
    # with c, so finer bins are better and the largest grid value wins
    rng = np.random.default_rng(5)
    c = rng.uniform(0.5, 1.0, 3000)
    P = np.column_stack([c, 1 - c])
    y = (rng.random(3000) < 0.5).astype(int)
    res = cd.evaluate(P, y, notion="top-label", estimators=["bins"], grids={"bins": {"n_bins": [1, 2, 3]}})
    row = res.summary.iloc[0]
    assert row["params"]["n_bins"] == 3 and row["at_grid_edge"]
    assert any("n_bins = 3 lies at the high edge" in w and "still falling" in w and "add larger values" in w
               for w in res.warnings)


def test_a_flat_risk_at_the_edge_is_not_a_reason_to_extend_the_grid():
    # correctness independent of the confidence: the best recalibration is the constant
    # accuracy, which the kernel density estimator reaches as the bandwidth grows; at 1e300
    # and 1e301 its kernels are exactly uniform, so the risk is exactly flat at that edge
    rng = np.random.default_rng(6)
    c = rng.uniform(0.5, 1.0, 1500)
    P = np.column_stack([c, 1 - c])
    y = (rng.random(1500) < 0.3).astype(int)
    res = cd.evaluate(P, y, notion="top-label", estimators=["kde"], grids={"kde": {"bandwidth": [1e301, 1e300, 1e-3]}},
                      others=[])
    row = res.summary.iloc[0]
    assert row["params"]["bandwidth"] == 1e301 and row["at_grid_edge"]
    assert any("lies at the high edge" in w and "the risk is flat there: the two largest values" in w
               and "need not be extended" in w for w in res.warnings), res.warnings


def test_progress_is_reported_to_completion():
    P, y = small_data(seed=6)
    calls = []
    cd.evaluate(P, y, notion="canonical", estimators=["kde", "temperature"], grids={"kde": {"bandwidth": [0.1, 1.0]}},
                progress=lambda done, total, msg: calls.append((done, total, msg)))
    dones = [c[0] for c in calls]
    assert dones == sorted(dones) and dones[0] == 0
    assert calls[-1][0] == calls[-1][1] and calls[-1][2] == "done"
    assert len({c[1] for c in calls}) == 1


def test_tasks_that_wait_for_shared_work_run_beside_the_literature_and_the_validated_holdouts(monkeypatch):
    """Three phases when the canonical kernel density waits for its shared normalisers: the
    normalisers with every fold task that does not need them; then the waiting fold tasks
    with the literature's estimators and the holdout tasks of every estimator already
    validated, of the other notion and of this one (so that the workers finish the phase
    together); then the kernel density's holdout tasks. The numbers are those of one notion
    at a time, with one job or two."""
    from calibdash.evaluation import pipeline

    P, y = small_data(seed=13, n=500)
    estimators = {"top-label": ["bins", "kde"], "canonical": ["kde", "temperature"]}
    grids = {"top-label": {"bins": {"n_bins": [5, 10]}, "kde": {"bandwidth": [0.1, 1.0]}},
             "canonical": {"kde": {"bandwidth": [0.1, 1.0]}}}
    kw = dict(notions=("top-label", "canonical"), estimators=estimators, grids=grids,
              others={"top-label": ["ece-15-bins"], "canonical": ["ece-15-bins"]})
    real = pipeline._parallel
    phases, pools = record_phases(monkeypatch, lambda jobs: [
        (fn.__name__, args[0], tuple(n for n, _ in args[4]) if fn.__name__ == "_run_task" else ())
        for fn, args, _ in jobs])
    joint = cd.evaluate_notions(P, y, **kw)
    kinds = [{(name, key[0], key[1]) for name, key, _ in phase} for phase in phases]
    assert len(phases) == 3 and len(pools) == 1  # one pool for every phase
    # the notions are 0 (top-label) and 1 (canonical); the keys are (notion, kind, ...)
    assert ("_run_normalisers", 1, "normalisers") in kinds[0]
    assert ("_run_task", 0, "fold") in kinds[0] and ("_run_reference", 1, "reference") in kinds[0]
    first = {(key[0], items) for name, key, items in phases[0] if name == "_run_task"}
    assert first == {(0, ("bins",)), (0, ("kde",)), (1, ("temperature",))}
    waiting = sorted((key, items) for name, key, items in phases[1] if name == "_run_task")
    assert waiting == [((1, "fold", k), ("kde",)) for k in range(5)]
    assert {("_run_other", 0, "other"), ("_run_other", 1, "other"), ("_run_holdout", 0, "holdout")} <= kinds[1]
    # canonical's holdouts: temperature's (validated in the first phase) in the second, kde's last
    holdouts = [{key[2][:2] for name, key, _ in phase if name == "_run_holdout" and key[0] == 1} for phase in phases]
    assert holdouts[1] == {("holdout", "temperature")}
    assert holdouts[2] == {("diagonals", "kde")} and kinds[2] == {("_run_holdout", 1, "holdout")}
    # the waiting fold tasks come first in their phase, the holdout tasks last
    names = [name for name, _, _ in phases[1]]
    assert names.index("_run_holdout") > max(i for i, n in enumerate(names) if n == "_run_task")
    monkeypatch.setattr(pipeline, "_parallel", real)
    for notion in ("top-label", "canonical"):
        alone = cd.evaluate(P, y, notion=notion, estimators=estimators[notion], grids=grids[notion],
                            others=["ece-15-bins"], n_jobs=2)
        pd.testing.assert_frame_equal(joint[notion].summary.drop(columns="seconds"), alone.summary.drop(columns="seconds"),
                                      check_exact=True)
        pd.testing.assert_frame_equal(joint[notion].folds, alone.folds, check_exact=True)
        pd.testing.assert_frame_equal(joint[notion].others.drop(columns="seconds"), alone.others.drop(columns="seconds"),
                                      check_exact=True)


def test_shared_work_is_split_into_a_multiple_of_the_workers_with_the_same_normalisers():
    """Work split at all goes into a multiple of the workers' tasks (7 -> 8 on two), a few
    seconds each; the normalisers are row-wise, so every split gives the same numbers."""
    from calibdash.estimators.kde import log_beta_table
    from calibdash.evaluation import pipeline

    per_task = pipeline._SHARED_WORK_PER_TASK
    assert [pipeline._n_chunks(k * per_task, 2) for k in (0.5, 1, 2, 3, 7, 20)] == [1, 1, 2, 4, 8, 8]
    assert [pipeline._n_chunks(k * per_task, 1) for k in (0.5, 3, 7, 20)] == [1, 3, 7, 8]
    # the holdout products' chunks: a number of the work's alone, whatever the workers
    holdout = pipeline._HOLDOUT_WORK_PER_TASK
    assert [pipeline._n_chunks(k * holdout, per_task=holdout) for k in (0.5, 2, 3, 20)] == [1, 2, 3, 8]
    P = dirichlet_simulation(n=300, n_classes=50, random_state=5).probs
    bandwidths = default_grid("kde", "canonical")["bandwidth"]
    whole = log_beta_table(P, bandwidths)
    for n in (7, 8):
        parts = np.array_split(np.arange(len(P)), n)
        np.testing.assert_array_equal(np.hstack([log_beta_table(P[rows], bandwidths) for rows in parts]), whole)


def test_long_waiting_tasks_share_their_phase_with_every_fold_task(monkeypatch):
    """When a kernel density fold task is long (here: the threshold at 0), the first phase holds
    only the normalisers and the references, the second every fold task and the literature's
    estimators, the third every holdout task; the numbers are those of the three-phase order."""
    from calibdash.evaluation import pipeline

    P, y = small_data(seed=13, n=500)
    estimators = {"top-label": ["bins", "kde"], "canonical": ["kde", "temperature"]}
    grids = {"top-label": {"bins": {"n_bins": [5, 10]}, "kde": {"bandwidth": [0.1, 1.0]}},
             "canonical": {"kde": {"bandwidth": [0.1, 1.0]}}}
    kw = dict(notions=("top-label", "canonical"), estimators=estimators, grids=grids,
              others={"top-label": ["ece-15-bins"], "canonical": ["ece-15-bins"]}, n_jobs=2)
    three = cd.evaluate_notions(P, y, **kw)
    phases, pools = record_phases(monkeypatch, lambda jobs: {fn.__name__ for fn, _, _ in jobs})
    monkeypatch.setattr(pipeline, "_LONG_WAITING_TASK", 0.0)
    joint = cd.evaluate_notions(P, y, **kw)
    assert phases == [{"_run_normalisers", "_run_reference"}, {"_run_task", "_run_other"}, {"_run_holdout"}]
    assert pools == [2]
    for notion in ("top-label", "canonical"):
        pd.testing.assert_frame_equal(joint[notion].summary.drop(columns="seconds"), three[notion].summary.drop(columns="seconds"),
                                      check_exact=True)
        pd.testing.assert_frame_equal(joint[notion].folds, three[notion].folds, check_exact=True)
        pd.testing.assert_frame_equal(joint[notion].others.drop(columns="seconds"), three[notion].others.drop(columns="seconds"),
                                      check_exact=True)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(estimators=["histogram"]), "Unknown estimator 'histogram'"),
        (dict(notion="canonical", estimators=["bins"]), "does not support the 'canonical' notion"),
        (dict(estimators=["kde"], grids={"bins": {"n_bins": [3]}}), "not among the estimators to run"),
        (dict(estimators=["kde"], grids={"kde": {"bandwith": [0.1]}}), "valid parameters: 'bandwidth'"),
        (dict(estimators=["kde"], grids={"kde": {"bandwidth": []}}), "gives no values"),
        (dict(test_size=1.5), "test_size must lie strictly between 0 and 1"),
        (dict(n_folds=1), "n_folds must be an integer of at least 2"),
    ],
)
def test_bad_configuration_is_refused_clearly(kwargs, message):
    P, y = small_data(seed=7, n=100)
    with pytest.raises(cd.ConfigError, match=message):
        cd.evaluate(P, y, **kwargs)


@pytest.mark.parametrize("notion, seed", [("top-label", 4), ("canonical", 2)])
def test_keeping_the_recalibration_model_keeps_the_map_the_views_show_and_every_number(notion, seed):
    """keep_models="recalibration" keeps one fold ensemble, the one the reliability views draw: the
    tuned plug-in of lowest validation risk. On these data the Kronecker ridge, which has no map, has
    the lowest risk of all, so keeping the best estimator's models would leave the views with none."""
    from calibdash.display.reliability import selected_recalibration

    P, y = small_data(seed=seed, n=600)
    kw = dict(notion=notion, others=[], random_state=2)
    full = cd.evaluate(P, y, **kw)
    lean = cd.evaluate(P, y, keep_models="recalibration", **kw)
    # the premise (by 2e-5 and 3e-7 of the risk, far above rounding across machines): if it fails, choose other seeds
    assert full.best["estimator"] == "kkkr", "the Kronecker ridge is no longer the best on these data"
    risk = full.summary.set_index("estimator")["val_risk"]
    tuned_plug_ins = {"top-label": {"bins", "kde", "ukkr"}, "canonical": {"kde", "ukkr", "temperature"}}[notion]
    assert set(full.recalibration_candidates) == tuned_plug_ins
    assert list(risk[full.recalibration_candidates]) == sorted(risk[list(tuned_plug_ins)])
    assert list(lean.models) == full.recalibration_candidates[:1]
    pd.testing.assert_frame_equal(lean.summary.drop(columns="seconds"), full.summary.drop(columns="seconds"),
                                  check_exact=True)
    pd.testing.assert_frame_equal(lean.curves, full.curves, check_exact=True)
    rows = P[full.holdout_rows]
    (name, G), (lean_name, lean_G) = selected_recalibration(full, rows), selected_recalibration(lean, rows)
    assert lean_name == name == full.recalibration_candidates[0]
    np.testing.assert_array_equal(lean_G, G)


@pytest.mark.parametrize("notion", ["top-label", "canonical", "classwise"])
def test_kept_fold_models_are_compacted_and_give_the_result_s_holdout_diagonals(notion):
    """A result's kept two-step ridge models hold their maps only (RidgeMap, not the bases the risk
    path needed), and still give the holdout diagonals the result was computed from, to rounding.
    The kernel density's kept models stay unfitted references (compacting one does not refit it)."""
    from calibdash.estimators.kernel_ridge import RidgeMap
    from calibdash.evaluation.pipeline import RefitOnUse

    P, y = small_data(seed=3, n=900)
    res = cd.evaluate(P, y, notion=notion, estimators=["ukkr", "kde"], others=[], random_state=1,
                      grids={"ukkr": {"exact_max_n": [100], "n_components": [40]}})
    test = P[res.split["test"]]
    members = res.models["ukkr"].estimators
    assert all(isinstance(b, RidgeMap) for e in members for b in e.bases_)
    got, want = np.array([e.h_diag(test) for e in members]), res.diagonals["ukkr"]
    assert np.max(np.abs(got - want)) <= 1e-11 * np.max(np.abs(want))
    kde = res.models["kde"].estimators
    assert all(isinstance(e, RefitOnUse) and vars(e)["_fitted"] is None for e in kde)


def test_recalibration_candidates_are_the_tuned_plug_ins_by_risk_and_skip_unknown_names():
    from calibdash.evaluation.result import recalibration_candidates

    summary = pd.DataFrame({"estimator": ["kkkr", "retired-name", "kde", "15-bins", "bins"],
                            "val_risk": [0.1, 0.2, 0.4, 0.05, 0.3]})
    assert recalibration_candidates(summary) == ["bins", "kde"]


def test_keep_models_takes_a_bool_or_recalibration():
    P, y = small_data(seed=7, n=100)
    with pytest.raises(cd.ConfigError, match="keep_models must be True, False or 'recalibration', not 'best'"):
        cd.evaluate(P, y, notion="top-label", estimators=["bins"], keep_models="best")
    assert cd.evaluate(P, y, notion="top-label", estimators=["bins"], others=[], keep_models=False).models is None


def test_too_few_rows_is_refused_clearly():
    P, y = small_data(seed=8, n=12)
    with pytest.raises(cd.InputError, match="too few"):
        cd.evaluate(P, y, notion="top-label", estimators=["bins"], n_folds=5)


@pytest.mark.slow
def test_dask_cluster_gives_the_same_numbers():
    import distributed
    import joblib

    P, y = small_data(seed=9)
    kw = dict(notion="top-label", estimators=["bins", "kde", "ukkr"], grids={k: SMALL_GRIDS[k] for k in ("bins", "kde", "ukkr")})
    local = cd.evaluate(P, y, **kw)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with joblib.parallel_config(backend="dask"):
            remote = cd.evaluate(P, y, n_jobs=-1, **kw)
        assert client.scheduler_info()["workers"]
    cols = [c for c in local.summary.columns if c != "seconds"]
    pd.testing.assert_frame_equal(local.summary[cols], remote.summary[cols], check_exact=True)
    pd.testing.assert_frame_equal(local.curves, remote.curves, check_exact=True)


@pytest.mark.parametrize("notion", ["top-label", "canonical"])
def test_no_task_carries_data_inside_a_container(monkeypatch, notion):
    """joblib's Dask backend scatters a task's array arguments to the workers once per call,
    but a list or dict argument goes into every task's graph whole (305 MiB per task at
    10,000,000 rows): every data-sized array (here, more than joblib's 1 kB) must be an
    argument of its own. The tasks' results are unchanged."""
    from calibdash.evaluation import pipeline

    P, y = small_data(seed=12, n=800)
    names = ["bins", "kde", "ukkr"] if notion == "top-label" else ["kde", "ukkr"]
    kw = dict(notion=notion, estimators=names, grids={k: SMALL_GRIDS[k] for k in names})
    direct = cd.evaluate(P, y, **kw)
    nested = []

    def arrays_inside(value, where):
        if isinstance(value, np.ndarray):
            if value.nbytes > 1000:
                nested.append((where, value.shape))
        elif isinstance(value, dict):
            for k, v in value.items():
                arrays_inside(v, f"{where}[{k!r}]")
        elif isinstance(value, (list, tuple)):
            for k, v in enumerate(value):
                arrays_inside(v, f"{where}[{k}]")

    real = pipeline.delayed

    def recording(fn):
        def call(*args, **kwargs):
            for i, a in enumerate(list(args) + list(kwargs.values())):
                if not isinstance(a, np.ndarray):
                    arrays_inside(a, f"{fn.__name__} argument {i}")
            return real(fn)(*args, **kwargs)
        return call

    monkeypatch.setattr(pipeline, "delayed", recording)
    recorded = cd.evaluate(P, y, **kw)
    assert not nested, nested
    pd.testing.assert_frame_equal(recorded.summary.drop(columns="seconds"), direct.summary.drop(columns="seconds"),
                                  check_exact=True)
    pd.testing.assert_frame_equal(recorded.others.drop(columns="seconds"), direct.others.drop(columns="seconds"),
                                  check_exact=True)


def test_kde_fold_models_are_refitted_on_use_and_agree_with_the_holdout_estimate():
    P, y = small_data(seed=10)
    res = cd.evaluate(P, y, notion="canonical", estimators=["kde"], grids={"kde": {"bandwidth": [0.1, 0.5]}})
    ens = res.models["kde"]
    test, _ = make_split(len(y), 0.2, 5, 0)
    assert ens.squared_error(P[test]) == pytest.approx(res.summary.loc[0, "squared_estimate"], rel=1e-12)
    assert ens.recalibration(P[test]).shape == (len(test), P.shape[1])


def test_config_fingerprint_identifies_a_run_however_it_is_spelled():
    from calibdash.estimators.registry import default_grid
    from calibdash.evaluation.config import config_fingerprint

    sha = "ab" * 32
    implicit = config_fingerprint(sha, "top-label", ["kde"])
    explicit = config_fingerprint(sha, "top-label", ["kde"], {"kde": default_grid("kde", "top-label")}, 0.2, 5, 0)
    assert implicit == explicit
    assert config_fingerprint(sha, "top-label", ["kde"], random_state=1) != implicit
    assert config_fingerprint("cd" * 32, "top-label", ["kde"]) != implicit
    assert config_fingerprint(sha, "top-label", ["kde"], {"kde": {"bandwidth": [0.1]}}) != implicit


@pytest.mark.parametrize("notion", ["top-label", "canonical"])
def test_kde_steps_match_fold_by_fold_fits_with_work_shared_across_folds(notion, monkeypatch):
    """The kernel density estimator's normalisers (computed once for the optimisation set)
    and its holdout products (formed once for all fold models) give the numbers of fitting
    every fold model on its own, however the shared work is cut into tasks."""
    from calibdash.evaluation import pipeline

    P, y = small_data(seed=11, n=500)
    grid = [0.05, 0.2, 1.0]
    kw = dict(notion=notion, estimators=["kde"], grids={"kde": {"bandwidth": grid}}, n_folds=4, random_state=2)
    res = cd.evaluate(P, y, **kw)
    test, folds = make_split(len(y), 0.2, 4, 2)
    risks = np.array([[cd.risk(cd.make_estimator("kde", notion=notion, bandwidth=b).fit(P[tr], y[tr]), P[va], y[va])
                       for b in grid] for tr, va in folds])
    got = res.curves.pivot(index="fold", columns="value", values="val_risk").to_numpy()
    np.testing.assert_allclose(got, risks, rtol=1e-12)
    best = grid[int(np.argmin(risks.mean(axis=0)))]
    fold_sq = [cd.make_estimator("kde", notion=notion, bandwidth=best).fit(P[tr], y[tr]).squared_error(P[test])
               for tr, _ in folds]
    np.testing.assert_allclose(res.folds.loc[res.folds["estimator"] == "kde", "squared_estimate"], fold_sq, rtol=1e-12)

    monkeypatch.setattr(pipeline, "_SHARED_WORK_PER_TASK", 1e3)  # many small tasks
    monkeypatch.setattr(pipeline, "_HOLDOUT_WORK_PER_TASK", 1e3)
    config = EvaluationConfig.resolve(notion, estimators=["kde"], grids={"kde": {"bandwidth": grid}}, others=[], random_state=2)
    run = pipeline._NotionRun(P, y, config, test, [va for _, va in folds], True, True)
    assert len(run.normaliser_jobs()) == (8 if notion == "canonical" else 0)
    chunks = []
    real = pipeline._fold_diagonals_task
    monkeypatch.setattr(pipeline, "_fold_diagonals_task", lambda *a: chunks.append(len(a[2])) or real(*a))
    chunked = cd.evaluate(P, y, **kw)
    assert len(chunks) == 8 and sum(chunks) == len(test)
    # each chunk's columns land where its rows are in the holdout order
    assert np.array_equal(chunked.diagonals["kde"], res.diagonals["kde"])
    pd.testing.assert_frame_equal(chunked.summary.drop(columns="seconds"), res.summary.drop(columns="seconds"),
                                  check_exact=True)
    pd.testing.assert_frame_equal(chunked.folds, res.folds, check_exact=True)
    # without the table (the command line's memory saving) the chunks give the same numbers
    lean = cd.evaluate(P, y, keep_diagonals=False, **kw)
    assert lean.diagonals is None
    pd.testing.assert_frame_equal(lean.summary.drop(columns="seconds"), res.summary.drop(columns="seconds"),
                                  check_exact=True)
    pd.testing.assert_frame_equal(lean.folds, res.folds, check_exact=True)


def test_linear_holdout_chunks_share_one_task_and_keep_every_number(monkeypatch):
    """Under the grid route (linear in the rows) the kernel density estimator's holdout chunks
    go to one task that fits the parts once (``blocks``), and every number is what one task per
    chunk gives; otherwise each chunk is a task of its own. (In one process: the patches do not
    reach joblib's workers. tests/estimators/test_kde_grid.py shows that blocks keep the last
    digits that regressing all rows at once can change.)"""
    from calibdash.estimators import kde_grid
    from calibdash.estimators.kde import KDEEstimator
    from calibdash.evaluation import pipeline

    rng = np.random.default_rng(8)
    c = 0.5 + 0.5 * rng.beta(5, 2, 3_000)
    P = np.column_stack([c, 1 - c])
    y = (rng.random(c.size) >= c**1.3).astype(np.int64)
    kw = dict(notion="top-label", estimators=["kde"], grids={"kde": {"bandwidth": [0.003]}}, others=[],
              random_state=4)
    monkeypatch.setattr(kde_grid, "GRID_MIN_PAIRS", 1)
    monkeypatch.setattr(pipeline, "_HOLDOUT_WORK_PER_TASK", 1e3)  # 8 chunks
    calls = []
    real = pipeline._fold_diagonals_task
    monkeypatch.setattr(pipeline, "_fold_diagonals_task", lambda *a: calls.append(list(a[3])) or real(*a))
    grouped = cd.evaluate(P, y, **kw)
    assert len(calls) == 1 and len(calls[0]) == 8 and sum(calls[0]) == 600
    monkeypatch.setattr(KDEEstimator, "fold_diagonals_linear", staticmethod(lambda *a: False))
    calls.clear()
    apart = cd.evaluate(P, y, **kw)
    assert len(calls) == 8 and all(len(c) == 1 for c in calls)
    assert np.array_equal(grouped.diagonals["kde"], apart.diagonals["kde"])
    pd.testing.assert_frame_equal(grouped.summary.drop(columns="seconds"), apart.summary.drop(columns="seconds"),
                                  check_exact=True)
    pd.testing.assert_frame_equal(grouped.folds, apart.folds, check_exact=True)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_results_without_the_diagonals_table_are_the_same_to_the_last_bit(n_jobs):
    """keep_diagonals=False keeps only the means the holdout error needs (HoldoutMeans), in
    whatever order the fold models' values arrive: every number of the result is unchanged."""
    P, y = small_data(seed=5, n=600)
    kw = dict(notion="top-label", estimators=["bins", "kkkr", "ukkr", "kde"], others=[], random_state=3)
    full = cd.evaluate(P, y, **kw)
    lean = cd.evaluate(P, y, keep_diagonals=False, n_jobs=n_jobs, **kw)
    assert lean.diagonals is None and set(full.diagonals) == {"bins", "kkkr", "ukkr", "kde"}
    pd.testing.assert_frame_equal(lean.summary.drop(columns="seconds"), full.summary.drop(columns="seconds"),
                                  check_exact=True)
    pd.testing.assert_frame_equal(lean.folds, full.folds, check_exact=True)
    for name, table in full.diagonals.items():
        err = cd.core.uncertainty.holdout_error(table)
        row = full.summary.set_index("estimator").loc[name]
        assert row["squared_estimate"] == err.estimate and row["squared_estimate_se"] == err.se


def test_inputs_are_checked_once_at_the_entry_not_in_every_task(monkeypatch):
    """The pipeline checks P and y once; its fits and evaluations run on the checked arrays."""
    from calibdash.core import notions, simplex

    calls = []
    real = simplex.check_probabilities
    monkeypatch.setattr(notions, "check_probabilities", lambda P, *a, **k: calls.append(P.shape) or real(P, *a, **k))
    P, y = small_data(seed=11)
    cd.evaluate(P, y, notion="top-label", estimators=["bins", "kde"], others=[])
    assert calls == [P.shape]
    with pytest.raises(cd.InputError, match="sums to"):
        cd.evaluate(P * 2, y, notion="top-label", estimators=["bins"], others=[])
    with notions.validated_inputs():  # inside, validate passes the arrays through ...
        assert notions.validate(P * 2, y)[0] is not None
    with pytest.raises(cd.InputError, match="sums to"):  # ... and only inside
        notions.validate(P * 2, y)


class _Dispatched(Exception):
    """Raised once the pipeline has handed its first batch to the pool (nothing runs)."""


def first_tasks(monkeypatch, P, y, notion):
    """The (kind, estimator) of each task in the first batch the pipeline hands to its pool."""
    order = []

    def describe(jobs):
        # a fold task's key is (notion, "fold", k) and its estimators come fifth; the others' is
        # (notion, kind, name or fold)
        order.extend((args[0][1], args[4][0][0] if args[0][1] == "fold" else args[0][2]) for _, args, _ in jobs)
        raise _Dispatched

    record_phases(monkeypatch, describe)
    with pytest.raises(_Dispatched):
        cd.evaluate_notions(P, y, notions=(notion,), n_jobs=1)
    return order


@pytest.mark.parametrize("n", [10_000, 1_000_000])
def test_the_longest_tasks_start_first_at_every_size(monkeypatch, n):
    """Tasks go to the pool longest first, by rough costs that follow the rows: at 10,000 rows
    the kernel density's fold tasks (its exact route is quadratic in the rows) come first and
    the literature's estimators after the kernel ridges'; at 1,000,000 rows every task is
    linear in the rows and the variational estimator's five isotonic fits and the ECE's
    bootstrap are the longest, so they start first (at 10,000,000 rows, ordered as at 10,000,
    the variational task started after the kernel ridges' and one worker waited 4.8 s for it)."""
    rng = np.random.default_rng(0)
    p = 0.5 + 0.5 * rng.beta(5, 2, n)
    y = (rng.random(n) < p).astype(int)
    P = np.column_stack([1.0 - p, p])
    order = first_tasks(monkeypatch, P, y, "top-label")
    first_kkkr = order.index(("fold", "kkkr"))
    if n == 1_000_000:
        assert order[:2] == [("other", "variational-top-l2"), ("other", "ece-15-bins")]
        assert order[2:7] == [("fold", "kde")] * 5
    else:
        assert order[:5] == [("fold", "kde")] * 5
        assert order.index(("other", "variational-top-l2")) > first_kkkr + 4


def test_a_classwise_fold_task_costs_its_static_cost_once_per_class(monkeypatch):
    """Classwise runs one problem per class: the registry's static cost of a fold (measured on
    one problem) counts once per class, the literature's static costs once. At 100,000 rows and
    10 classes the kernel density's fold tasks (0.6 s x 10) therefore come first; counted once,
    they would come after the ECE's bootstrap (1.5 s per million rows and class: 1.5 s)."""
    rng = np.random.default_rng(1)
    n, k = 100_000, 10
    P = rng.dirichlet(np.ones(k), n)
    y = np.array([rng.choice(k, p=p) for p in P[:2000]] * (n // 2000))
    assert first_tasks(monkeypatch, P, y, "classwise")[:5] == [("fold", "kde")] * 5


def test_task_cost_is_the_larger_of_the_static_and_the_linear_estimate():
    from calibdash.evaluation.pipeline import task_cost

    assert task_cost(0.6, 0.4, 10_000) == 0.6  # the static cost at small n
    assert task_cost(0.6, 0.4, 10_000_000) == pytest.approx(4.0)
    assert task_cost(0.6, 0.0, 10_000_000) == 0.6  # not measured: the static cost alone
    # classwise: the linear estimate per class; the static cost is taken as the caller scaled it
    assert task_cost(1.0, 0.4, 10_000, problems=10) == pytest.approx(1.0)
    assert task_cost(0.1, 0.4, 10_000, problems=10) == pytest.approx(0.1)
    assert task_cost(0.1, 0.4, 1_000_000, problems=10) == pytest.approx(4.0)
