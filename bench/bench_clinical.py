"""Benchmark of the clinical validation (``cd.validate_risk_model``).

* The whole validation (calibration hierarchy, loess summaries with their bootstrap and the
  consistency test, decision curve, sample size) at n = 1,000, 10,000 and 100,000 rows with
  1,000 resamples, without the risk-optimised calibration error (timed separately at 1,000).
* Two statistics against their textbook baselines, with the same numbers to 1e-12: DeLong's
  AUROC variance from mid-ranks against the n1 x n0 matrix of pair comparisons, and net benefit
  at the 99 thresholds from one sort against a pass over the rows per threshold.

Run from the project root:  .venv/bin/python bench/bench_clinical.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import median_time, write_section  # noqa: E402

import calibdash as cd  # noqa: E402
from calibdash.clinical import measures  # noqa: E402
from calibdash.clinical.validation import THRESHOLDS  # noqa: E402


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    lp = rng.normal(-0.5, 1.2, n)
    return expit(lp), (rng.random(n) < expit(0.2 + 0.7 * lp)).astype(int)


def eigh_unit(seed=0):
    """Seconds of one exact ``numpy.linalg.eigh`` of a 4000 x 4000 symmetric matrix: the unit
    of issue 26's targets, timed next to the run so that a loaded machine shows in both."""
    a = np.random.default_rng(seed).standard_normal((4000, 4000))
    a = (a + a.T) / 2
    return median_time(lambda: np.linalg.eigh(a), repeats=1, warmup=0)


def pairwise_delong(p, y):
    pos, neg = p[y == 1], p[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return psi.mean(), np.sqrt(v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg))


def loop_net_benefit(p, y, thresholds):
    out = []
    for t in thresholds:
        treat = p >= t
        out.append(np.sum(treat & (y == 1)) / len(p) - np.sum(treat & (y == 0)) / len(p) * t / (1 - t))
    return np.array(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes-only", action="store_true",
                        help="only the 1,000 / 10,000 / 100,000-row runs (printed, BENCHMARKS.md untouched)")
    args = parser.parse_args()
    rows = []
    for n in (1_000, 10_000, 100_000):
        p, y = data(n)
        reps = args.repeats if n < 10_000 else 1
        load = os.getloadavg()[0]
        sec = median_time(lambda: cd.validate_risk_model(p, y, n_resamples=1000, calibration_error=False),
                          repeats=reps, warmup=0 if n >= 10_000 else 1)
        unit = f"{sec / eigh_unit():.1f}" if n == 100_000 else ""
        rows.append(f"| {n:,} | 1,000 | no | {sec:.1f} | {unit} | {load:.1f} |")
        print(rows[-1], flush=True)
    if args.sizes_only:
        return
    p, y = data(1_000)
    sec = median_time(lambda: cd.validate_risk_model(p, y, n_resamples=1000), repeats=args.repeats)
    rows.append(f"| 1,000 | 1,000 | yes (canonical, default estimators) | {sec:.1f} | | {os.getloadavg()[0]:.1f} |")
    print(rows[-1], flush=True)
    designs = []
    rng = np.random.default_rng(3)
    score = rng.choice([0.05, 0.1, 0.2, 0.35], 1_000)
    outcome = (rng.random(1_000) < score).astype(int)
    sec = median_time(lambda: cd.validate_risk_model(score, outcome, n_resamples=1000, calibration_error=False),
                      repeats=args.repeats)
    designs.append(f"| a 4-level point score, 1,000 rows (rate per level instead of loess) | {sec:.1f} |")
    print(designs[-1], flush=True)
    p, y = data(3_000, seed=4)
    centre = np.repeat([f"h{j:02d}" for j in range(12)], 250)
    for how in ("groups", "clusters"):
        sec = median_time(lambda how=how: cd.validate_risk_model(p, y, n_resamples=1000, calibration_error=False,
                                                                 **{how: centre}), repeats=args.repeats)
        designs.append(f"| 3,000 rows in 12 centres as `{how}=` (every centre bootstrapped too"
                       + ("; cluster bootstrap and meta-analysis" if how == "clusters" else "") + f") | {sec:.1f} |")
        print(designs[-1], flush=True)
    base = []
    p, y = data(10_000, seed=1)
    fast = measures.auroc(p, y)
    auc, se = pairwise_delong(p, y)
    assert abs(fast.estimate - auc) < 1e-12 and abs(fast.se - se) < 1e-12
    t_fast = median_time(lambda: measures.auroc(p, y), repeats=args.repeats)
    t_base = median_time(lambda: pairwise_delong(p, y), repeats=args.repeats)
    base.append(f"| DeLong AUROC and variance, n = 10,000 | {t_fast * 1e3:.1f} | {t_base * 1e3:.0f} | {t_base / t_fast:.0f}x |")
    p, y = data(100_000, seed=2)
    assert np.max(np.abs(measures.net_benefit(p, y, THRESHOLDS) - loop_net_benefit(p, y, THRESHOLDS))) < 1e-12
    t_fast = median_time(lambda: measures.net_benefit(p, y, THRESHOLDS), repeats=args.repeats)
    t_base = median_time(lambda: loop_net_benefit(p, y, THRESHOLDS), repeats=args.repeats)
    base.append(f"| net benefit at 99 thresholds, n = 100,000 | {t_fast * 1e3:.1f} | {t_base * 1e3:.0f} | {t_base / t_fast:.0f}x |")
    print(*base, sep="\n", flush=True)
    body = (
        "`cd.validate_risk_model(p, y, n_resamples=1000)` on simulated risks (`lp ~ N(-0.5, 1.2^2)`, outcomes from "
        "`expit(0.2 + 0.7 lp)`): every metric with its interval, the 1,000-resample bootstrap (each resample refits "
        "the loess curve and the net benefit curve) and the ICI's consistency test (another 1,000 loess fits). "
        f"Median of {args.repeats} runs after a warm-up below 10,000 rows (one run at 10,000 and 100,000 rows). "
        "Units: the seconds over one exact 4000 x 4000 `numpy.linalg.eigh` timed right after (issue 26's unit); "
        "load: the 1-minute load average before the run (2 cores, shared).\n\n"
        "| rows | resamples | risk-optimised error | seconds | units | load |\n|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + "\n\nClinical designs, 1,000 resamples, without the risk-optimised error:\n\n"
        "| design | seconds |\n|---|---|\n" + "\n".join(designs)
        + "\n\nAgainst the textbook baselines (same numbers to 1e-12):\n\n"
        "| statistic | calibdash (ms) | baseline (ms) | ratio |\n|---|---|---|---|\n" + "\n".join(base)
    )
    write_section("Clinical validation", body, command=f".venv/bin/python bench/bench_clinical.py --repeats {args.repeats}")


if __name__ == "__main__":
    main()
