"""calibdash.lab: scenarios with exact truths, estimates against n, and the paper's Figure 1."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from calibdash import lab
from calibdash.notions import residuals
from calibdash.simplex import softmax
from calibdash.simulation import dirichlet_simulation, simulation_truth

TUNED = ["bins", "kde", "ukkr", "kkkr", "temperature"]


def test_figure1_is_minimised_at_theta_one():
    """The paper's Figure 1: n = 500, 100 seeds, the mean risk's argmin lies in [0.9, 1.1]
    (and single seeds scatter, which is why the figure averages)."""
    df = lab.figure1(n=500, n_seeds=100, random_state=0)
    assert len(df) == 100 * len(lab.DEFAULT_THETAS)
    s = lab.summarise_figure1(df)
    assert 0.9 <= s.attrs["argmin"] <= 1.1
    per_seed = df.loc[df.groupby("seed")["risk"].idxmin(), "theta"]
    assert per_seed.std() > 0.01
    # the minimum is clear: the mean risk at the grid's ends exceeds it by many standard errors
    low = s.loc[s["theta"].idxmin()]
    best = s.loc[s["mean"].idxmin()]
    assert low["mean"] - best["mean"] > 5 * low["se"]


def test_figure1_risks_against_brute_force():
    df = lab.figure1(n=30, n_seeds=2, thetas=[0.5, 1.0, 1.7], random_state=4)
    for seed in range(2):
        sim = dirichlet_simulation(30, 5, 0.04, 0.3, random_state=np.random.default_rng([4, seed]))
        U = residuals(sim.probs, sim.labels, "canonical")
        for theta in [0.5, 1.0, 1.7]:
            # h_theta as the design note writes it: softmax((10/3) theta log p)
            V = sim.probs - softmax((10 / 3) * theta * np.log(np.maximum(sim.probs, 1e-300)))
            total = 0.0
            for i in range(30):
                for j in range(30):
                    if i != j:
                        total += (U[i] @ U[j] - V[i] @ V[j]) ** 2
            got = df.query("seed == @seed and theta == @theta")["risk"].iloc[0]
            assert got == pytest.approx(total / (30 * 29), rel=1e-6)


@pytest.mark.parametrize("distortion", [1.0, 0.3])
def test_tuned_estimators_within_three_standard_errors_of_the_truth(distortion):
    """Calibrated (distortion 1) and distorted (0.3) Dirichlet simulation, top-label,
    n = 1,000, 10 draws: for every tuned estimator the mean squared estimate lies within
    3 standard errors of the true squared error, the standard error of one estimate
    being its standard deviation over the draws.

    The squared scale is the one the estimators target (their estimate is a mean of
    h(z, z)); the square root adds a bias of the order of se^2 / estimate, which at a true
    error of 0 is itself about 2-4 standard errors (the Learn page shows it).
    """
    sc = lab.scenario("dirichlet", distortion=distortion)
    df = lab.estimates_vs_n(sc, ns=[1000], n_repeats=10, estimators=TUNED, notion="top-label", random_state=1)
    truth = sc.truth("top-label")
    assert (df["truth"] == truth).all()
    for name, part in df.groupby("estimator"):
        sq = part["squared_estimate"]
        assert abs(sq.mean() - truth**2) <= 3 * sq.std(ddof=1), (name, sq.mean(), truth**2, sq.std(ddof=1))


def test_estimates_vs_n_layout_and_seeding():
    sc = lab.scenario("logistic", slope=1.5)
    a = lab.estimates_vs_n(sc, ns=[200, 400], n_repeats=2, estimators=["bins", "temperature"], random_state=3)
    assert list(a.columns) == ["n", "repeat", "estimator", "estimate", "squared_estimate", "val_risk", "truth"]
    assert len(a) == 2 * 2 * 2
    # draw (n, repeat) is seeded by (random_state, n, repeat): other sizes leave it unchanged
    b = lab.estimates_vs_n(sc, ns=[400], n_repeats=2, estimators=["bins", "temperature"], random_state=3)
    pd.testing.assert_frame_equal(a[a["n"] == 400].reset_index(drop=True), b)
    s = lab.summarise_estimates(a)
    row = s.query("n == 200 and estimator == 'bins'").iloc[0]
    part = a.query("n == 200 and estimator == 'bins'")["estimate"]
    assert row["mean"] == pytest.approx(part.mean()) and row["sd"] == pytest.approx(part.std(ddof=1))
    assert row["rmse"] == pytest.approx(np.sqrt(np.mean((part - row["truth"]) ** 2)))


def test_dirichlet_truth_is_the_simulation_truth():
    sc = lab.scenario("dirichlet", distortion=0.5, n_classes=3)
    want = simulation_truth(n_classes=3, alpha=0.04, distortion=0.5, n_mc=lab._N_MC)
    for notion in ["top-label", "canonical", "classwise"]:
        assert sc.truth(notion) == pytest.approx(want[notion], rel=1e-12)
    assert lab.scenario("dirichlet", distortion=1.0).truth("canonical") == 0.0


def test_widmann_truths_in_closed_form():
    """E sum_k g_k^2 = (alpha + 1) / (d alpha + 1) for g ~ Dir(alpha 1) in d classes, so
    M3: CCE^2 = E||g - 1/d||^2 = (alpha+1)/(d alpha+1) - 1/d and
    M2: CCE^2 = E||(g - e_1)/2||^2 = ((alpha+1)/(d alpha+1) - 2/d + 1) / 4."""
    a, d = 0.1, 10
    s2 = (a + 1) / (d * a + 1)
    uniform = lab.scenario("widmann", model="uniform")
    mixed = lab.scenario("widmann", model="mixed")
    assert uniform.truth("canonical") == pytest.approx(np.sqrt(s2 - 1 / d), rel=2e-3)
    assert mixed.truth("canonical") == pytest.approx(np.sqrt((s2 - 2 / d + 1) / 4), rel=2e-3)
    assert mixed.truth("classwise") == mixed.truth("canonical")
    assert lab.scenario("widmann").truth("top-label") == 0.0
    # M2's top-label truth conditions on the confidence: large-sample binned check
    sim = mixed.sample(400_000, 9)
    c = sim.probs.max(axis=1)
    ok = (sim.labels == sim.probs.argmax(axis=1)).astype(float)
    bins = np.minimum((c * 40).astype(int), 39)
    gap = np.bincount(bins, c - ok, 40) / np.maximum(np.bincount(bins, minlength=40), 1)
    binned = np.sqrt(np.sum(np.bincount(bins, minlength=40) / len(c) * gap**2))
    assert binned == pytest.approx(mixed.truth("top-label"), abs=0.01)


def test_logistic_truth_by_quadrature_against_monte_carlo():
    sc = lab.scenario("logistic", slope=2.5, scale=1.5)
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1.5, 2_000_000)
    sq = np.mean((expit(2.5 * x) - expit(x)) ** 2)
    assert sc.truth("top-label") == pytest.approx(np.sqrt(sq), rel=2e-3)
    assert sc.truth("canonical") == pytest.approx(np.sqrt(2 * sq), rel=2e-3)
    assert lab.scenario("logistic", slope=1.0).truth("canonical") == pytest.approx(0.0, abs=1e-12)
    sim = sc.sample(1000, 1)
    np.testing.assert_allclose(sim.probs.sum(axis=1), 1.0)
    # over-confident: the model's probabilities are further from 1/2 than the truth's
    assert np.all(np.abs(sim.probs[:, 1] - 0.5) >= np.abs(sim.true_probs[:, 1] - 0.5) - 1e-15)


def test_sampling_is_reproducible():
    for kind, kw in [("dirichlet", {}), ("widmann", {"model": "mixed"}), ("logistic", {})]:
        sc = lab.scenario(kind, **kw)
        a, b = sc.sample(50, 7), sc.sample(50, 7)
        np.testing.assert_array_equal(a.probs, b.probs)
        np.testing.assert_array_equal(a.labels, b.labels)
        assert a.probs.shape == (50, sc.n_classes)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: lab.scenario("gaussian"), "Unknown scenario"),
        (lambda: lab.scenario("dirichlet", slope=2), "no parameter slope"),
        (lambda: lab.scenario("dirichlet", distortion=-1), "positive"),
        (lambda: lab.scenario("widmann", model="bad"), "model must be one of"),
        (lambda: lab.scenario("dirichlet", n_classes=1), "n_classes"),
        (lambda: lab.estimates_vs_n(lab.scenario(), ns=[5]), "at least 20"),
        (lambda: lab.estimates_vs_n(lab.scenario(), n_repeats=0), "n_repeats"),
        (lambda: lab.estimates_vs_n("dirichlet"), "lab.scenario"),
        (lambda: lab.figure1(thetas=[1.0]), "thetas"),
        (lambda: lab.scenario().truth("ranking"), "notion"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_estimator_used_by_the_lab_is_the_library_one():
    """The lab runs the ordinary pipeline: one draw's estimate equals a direct evaluate."""
    import calibdash as cd

    sc = lab.scenario("logistic")
    df = lab.estimates_vs_n(sc, ns=[300], n_repeats=1, estimators=["temperature"], random_state=2)
    sim = sc.sample(300, np.random.default_rng([2, 300, 0]))
    res = cd.evaluate(sim.probs, sim.labels, notion="top-label", estimators=["temperature"], random_state=0)
    assert df["estimate"].iloc[0] == pytest.approx(res.summary["estimate"].iloc[0], rel=1e-12)


def test_lab_figures_show_the_computed_numbers():
    from calibdash import plots

    df = lab.figure1(n=100, n_seeds=6, thetas=[0.6, 1.0, 1.4], random_state=0)
    fig = plots.figure1_figure(df, max_seed_lines=3)
    s = lab.summarise_figure1(df)
    mean = [t for t in fig.data if t.name and t.name.startswith("mean over 6 seeds")][0]
    np.testing.assert_allclose(mean.y, s["mean"])
    marker = [t for t in fig.data if t.name and t.name.startswith("minimum at theta")][0]
    assert marker.x[0] == s.attrs["argmin"]
    assert sum(t.name == "single seeds" for t in fig.data) == 3

    est = lab.estimates_vs_n(lab.scenario("logistic"), ns=[200, 300], n_repeats=2, estimators=["bins"], random_state=0)
    summary = lab.summarise_estimates(est)
    fig = plots.lab_estimates_figure(summary, est["truth"].iloc[0])
    line = [t for t in fig.data if t.name == "bins"][0]
    np.testing.assert_allclose(line.y, 100 * summary["mean"])
    truth = [t for t in fig.data if t.name == "truth"][0]
    assert truth.y[0] == pytest.approx(100 * lab.scenario("logistic").truth("top-label"))
