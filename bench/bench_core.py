"""Benchmark of the compute core on real CIFAR-100 outputs (10,000 x 100).

For each estimator family and notion: fit + risk for one hyperparameter value
(8,000 training rows, 2,000 held out), the whole default grid for the kernel ridge
families, and the fast risk against the explicit double sum (the baseline).

Run from the project root:  .venv/bin/python bench/bench_core.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import SHARED_DATA, median_time, write_section  # noqa: E402

import calibdash as cd  # noqa: E402
from calibdash.core.notions import residuals  # noqa: E402
from calibdash.core.risk import risk_from_features  # noqa: E402
from calibdash.estimators.registry import default_grid  # noqa: E402

ONE_VALUE = {
    "bins": {"n_bins": 15},
    "kde": {"bandwidth": 0.01},
    "ukkr": {"lam": 1e-3},
    "kkkr": {"lam": 1e-5},
    "temperature": {"temperature": "fit"},
    "isotonic": {"y_min": 0.0},
    "logistic": {"C": 1.0},
}
# Boosting fits one tree per class and iteration, and the multinomial logistic map about a
# minute per fit at 100 classes (bench_literature.py): timed on the 1-D top-label problem only.
SLOW_MULTICLASS = {"boosting", "logistic"}


def load(seed=0):
    with np.load(SHARED_DATA / "cifar100_wrn16-4.npz", allow_pickle=False) as f:
        P, y = f["predictions"].astype(np.float64), f["ground_truth"].astype(np.int64)
    idx = np.random.default_rng(seed).permutation(len(y))
    return P[idx[:8000]], y[idx[:8000]], P[idx[8000:]], y[idx[8000:]]


def explicit_double_sum_risk(U, F, G):
    """Baseline: build the n x n matrices and sum over i != j."""
    H = F @ F.T if G is None else F @ G @ F.T
    A = U @ U.T
    D = (A - H) ** 2
    n = U.shape[0]
    return (D.sum() - np.trace(D)) / (n * (n - 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    P_tr, y_tr, P_ev, y_ev = load()

    rows = []
    for notion in ("top-label", "canonical"):
        for fam, cls in cd.FAMILIES.items():
            if notion not in cls.supported_notions or fam not in ONE_VALUE or (notion != "top-label" and fam in SLOW_MULTICLASS):
                continue
            params = ONE_VALUE[fam]

            def one():
                est = cd.make_estimator(fam, notion=notion, **params).fit(P_tr, y_tr)
                return cd.risk(est, P_ev, y_ev)

            t_one = median_time(one, repeats=args.repeats)
            param = cls.path_param
            values = default_grid(fam, notion)[param]

            def whole_grid():
                path = cd.make_estimator(fam, notion=notion).fit_path(P_tr, y_tr, values)
                return path.risks(P_ev, y_ev)

            t_grid = median_time(whole_grid, repeats=args.repeats) if len(values) > 1 else float("nan")
            est = cd.make_estimator(fam, notion=notion, **params).fit(P_tr, y_tr)
            U = residuals(P_ev, y_ev, notion)
            F, G = est.bilinear_form(P_ev)
            t_fast = median_time(lambda: risk_from_features(U, F, G), repeats=args.repeats)
            t_slow = median_time(lambda: explicit_double_sum_risk(U, F, G), repeats=max(3, args.repeats // 2))
            r_fast, r_slow = risk_from_features(U, F, G), explicit_double_sum_risk(U, F, G)
            assert abs(r_fast - r_slow) <= 1e-9 * r_slow, (fam, notion, r_fast, r_slow)
            grid_cell = f"{t_grid:.2f} ({len(values)} values)" if len(values) > 1 else "-"
            rows.append(
                f"| {fam} | {notion} | {params} | {t_one:.2f} | {grid_cell} | {t_fast * 1e3:.3g} | "
                f"{t_slow * 1e3:.0f} | {t_slow / t_fast:.0f}x |"
            )
            print(rows[-1], flush=True)

    body = (
        "CIFAR-100 WRN-16-4 outputs (`../shared/data/cifar100_wrn16-4.npz`), 8,000 training rows and "
        "2,000 held-out rows, float64. *fit + risk*: one hyperparameter value. *default grid*: "
        "`fit_path` over the family's default grid (`calibdash.estimators.registry`) plus every value's risk, sharing "
        "the eigenbasis or kernel product. *risk*: Eq. (20) by the bilinear identity from the "
        "held-out features (F, G); *double sum*: the baseline that builds the n x n matrices from the same features; "
        "the ratio is baseline / ours. "
        f"Median of {args.repeats} runs after one warm-up.\n\n"
        "| estimator | notion | value | fit + risk (s) | default grid (s) | risk (ms) | double sum (ms) | ratio |\n"
        "|---|---|---|---|---|---|---|---|\n" + "\n".join(rows)
    )
    write_section("Compute core", body, command=f".venv/bin/python bench/bench_core.py --repeats {args.repeats}")


if __name__ == "__main__":
    main()
