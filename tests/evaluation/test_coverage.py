"""The verdict's 95% interval is a claim about the world: over fresh draws of simulations
with known truth it covers the true calibration error, for top-label and canonical, on the
paper's simulation and on a class-dependent logit bias (which no estimator is designed for).

About four minutes on two cores; docs/results.md has the full table (three simulations,
n = 1,000 to 20,000, every estimator's coverage, bias and RMSE).
"""

from __future__ import annotations

import pytest

from calibdash.lab import studies as lab

pytestmark = pytest.mark.slow

N = 5000
DRAWS = 100


@pytest.mark.parametrize("kind", ["dirichlet", "logit-bias"])
def test_the_verdict_interval_covers_the_truth_in_at_least_85_percent_of_fresh_draws(kind):
    sc = lab.scenario(kind)
    df = lab.coverage_study(sc, ns=[N], n_draws=DRAWS, notions=("top-label", "canonical"), random_state=13, n_jobs=2)
    table = lab.summarise_coverage(df).set_index(["notion", "estimator"])
    for notion in ("top-label", "canonical"):
        row = table.loc[(notion, lab.VERDICT)]
        assert row["draws"] == DRAWS and row["truth"] == pytest.approx(sc.truth(notion))
        assert row["coverage"] >= 0.85, (kind, notion, table.loc[notion])
