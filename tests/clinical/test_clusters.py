"""Multicentre validation (``clusters=``): the cluster bootstrap's whole-data intervals, the
pooled meta-analysis as the validation reports it, and the verdicts that use it (issue 24,
item 3). The meta-analysis itself is checked against metafor in test_meta.py."""

import numpy as np
import pytest
from scipy.special import expit

import calibdash as cd
from calibdash.clinical.logistic import fit_logistic
from calibdash.clinical.validation import analyse_sample, cluster_rows

K, M, MU, SD, TAU = 12, 100, -1.2, 1.2, 0.5
CONTRAST_DRAWS = 40  # draws on which the row bootstrap is run for contrast


def _draw(rng, k=K, m=M, tau=TAU):
    lp = rng.normal(MU, SD, k * m)
    centre = np.repeat([f"h{j:02d}" for j in range(k)], m)
    shift = np.repeat(rng.normal(0, tau, k), m)
    y = (rng.random(k * m) < expit(lp + shift)).astype(int)
    return expit(lp), y, centre


def _truth(tau=TAU, size=400_000, seed=99):
    """The whole-population values of the metrics (patients from a new random centre each)."""
    rng = np.random.default_rng(seed)
    lp = rng.normal(MU, SD, size)
    pi = expit(lp + rng.normal(0, tau, size))  # each patient's true risk, centre effect included
    p = expit(lp)
    oe = pi.mean() / p.mean()
    citl = fit_logistic(np.ones((size, 1)), pi, offset=lp).coef[0]
    slope = fit_logistic(np.column_stack([np.ones(size), lp]), pi).coef[1]
    order = np.argsort(lp)
    w1, w0 = pi[order], 1 - pi[order]
    below = np.cumsum(w0) - w0  # non-event weight strictly below each row (lp continuous: no ties)
    auroc = float(np.sum(w1 * below) / (w1.sum() * w0.sum()))
    brier = float(np.mean(pi * (1 - p) ** 2 + (1 - pi) * p**2))
    return {"O:E": oe, "calibration-in-the-large": citl, "calibration slope": slope, "AUROC": auroc, "Brier": brier}


@pytest.mark.slow
def test_cluster_bootstrap_resamples_centres_and_reports_it():
    p, y, centre = _draw(np.random.default_rng(1), tau=1.0)
    v = cd.validate_risk_model(p, y, clusters=centre, n_resamples=50, calibration_error=False)
    m = v.metrics[v.metrics["group"].isna()].set_index("metric")
    for name in ("O:E", "calibration-in-the-large", "calibration slope", "AUROC", "Brier"):
        assert m.loc[name, "interval"] == "cluster bootstrap", name
        assert m.loc[name, "resamples"] == 50
    assert v.clusters == "group" and v.config["clusters"] == "group"
    assert set(v.pooled["metric"]) == {"O:E", "calibration-in-the-large", "calibration slope", "AUROC"}
    assert (v.pooled["n_clusters"] == K).all()
    assert set(v.centres["cluster"]) == set(centre)
    # every centre is also analysed as a group
    assert len(v.groups) == K
    # under strong centre effects (tau = 1) the row bootstrap's interval is much narrower
    rows = cd.validate_risk_model(p, y, n_resamples=50, calibration_error=False)
    width = lambda r, k: r.metric(k)["ci_high"] - r.metric(k)["ci_low"]  # noqa: E731
    assert width(v, "O:E") > 1.5 * width(rows, "O:E")


def test_groups_and_clusters_together_are_refused():
    p, y, centre = _draw(np.random.default_rng(2), k=3)
    with pytest.raises(cd.ConfigError, match="either groups"):
        cd.validate_risk_model(p, y, groups=centre, clusters=centre, n_resamples=0)


@pytest.mark.slow
def test_few_centres_get_a_note_and_the_verdict_uses_the_pooled_result():
    p, y, centre = _draw(np.random.default_rng(3), k=4, m=300)
    v = cd.validate_risk_model(p, y, clusters=centre, n_resamples=30, calibration_error=False)
    assert any("Only 4 centres" in note for note in v.notes)
    mean = next(i for i in v.verdicts() if i["level"] == "mean calibration")
    assert "pooled over 4 centres (random effects)" in mean["verdict"]
    assert "prediction interval" in mean["verdict"]
    weak = next(i for i in v.verdicts() if i["level"] == "weak calibration")
    assert "pooled over 4 centres" in weak["verdict"]
    disc = next(i for i in v.verdicts() if i["level"] == "discrimination")
    assert disc["verdict"].startswith("Pooled over 4 centres") or "pooled over 4 centres" in disc["verdict"]
    assert all(i["verdict"][0].isupper() for i in v.verdicts())


@pytest.mark.slow
def test_cluster_bootstrap_covers_the_population_values():
    """Coverage of the whole data's intervals (what validate_risk_model(clusters=...) computes
    for the whole data, through analyse_sample) over 200 multicentre draws: 12 centres of 100
    patients, centre effects tau = 0.5 on the logit scale. The row bootstrap on the first 40
    draws is the contrast: it ignores the centres. Measured when written: O:E 0.935,
    calibration-in-the-large 0.94, slope 0.955, AUROC 0.965, Brier 0.975 with the t interval
    (_cluster_t_interval); the plain percentile interval gave 0.915, 0.915, 0.90, 0.915, 0.94;
    the row bootstrap's O:E 0.575."""
    truth = _truth()
    draws = 200
    hits = {k: 0 for k in truth}
    row_hits = 0
    for d in range(draws):
        p, y, centre = _draw(np.random.default_rng(5000 + d))
        a = analyse_sample(p, y.astype(float), n_resamples=100, random_state=d, level=0.95, clusters=cluster_rows(centre))
        for name, value in truth.items():
            _, lo, hi = a.values[name]
            hits[name] += lo <= value <= hi
        if d < CONTRAST_DRAWS:
            r = analyse_sample(p, y.astype(float), n_resamples=100, random_state=d, level=0.95)
            _, lo, hi = r.values["O:E"]
            row_hits += lo <= truth["O:E"] <= hi
    coverage = {k: h / draws for k, h in hits.items()}
    print("cluster bootstrap coverage", coverage, "row bootstrap O:E", row_hits / CONTRAST_DRAWS)
    assert min(coverage.values()) >= 0.9, coverage
    assert row_hits / CONTRAST_DRAWS < 0.8  # the contrast: rows taken as independent under-cover
