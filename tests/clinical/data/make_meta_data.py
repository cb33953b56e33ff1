"""Write the small multicentre data sets of the meta-analysis references (test_meta.py).

Each file has the columns ``cluster`` (the centre), ``p`` (the predicted risk, written with
17 significant digits so that R and Python read the same doubles) and ``y`` (0 or 1). In
centre j the true risk is ``expit(a_j + b_j logit(p))``: ``a_j`` shifts the centre's
calibration-in-the-large, ``b_j`` its slope. Every set has its own seed of numpy's
``default_rng``, so rerunning ``python tests/clinical/data/make_meta_data.py`` rewrites
identical files. After a change, rerun ``Rscript tests/clinical/reference_meta.R`` and paste
its output into ``tests/clinical/test_meta.py``.

meta_5_heterogeneous.csv (seed 20250201)
    5 centres A-E of 60, 80, 100, 70 and 90 patients; logit(p) ~ N(-0.8, 1.1^2); shifts
    a = (-0.8, -0.2, 0.3, 0.9, 0.1), slopes b = (0.8, 1.0, 1.2, 0.9, 1.1): clear
    between-centre variance in O:E and calibration-in-the-large.
meta_8_homogeneous.csv (seed 20250202)
    8 centres c1-c8 of 50 patients, calibrated (a = 0, b = 1): REML puts tau^2 at 0 for
    several metrics. Centre c3 also has three risks of exactly 0 or 1 (a patient given
    risk 0 who had the event, one given 0 who did not, one given 1 who had it), which the
    logistic fits leave out.
meta_15_edge_centres.csv (seed 20250203)
    15 centres s01-s15 of 25 to 60 patients, a_j ~ N(0, 0.4^2), b = 1, logit(p) ~
    N(-1, 1); and two centres where metrics are undefined: "x no events" (8 patients with
    low risks and no event: log O:E, the logistic fits and the AUROC are undefined) and "y
    separated" (6 patients whose risks separate events from non-events: AUROC 1, no slope).
meta_2_two_centres.csv (seed 20250204)
    2 centres of 150 patients, a = (-0.4, 0.4), b = 1, logit(p) ~ N(-0.6, 1.2^2): the
    smallest meta-analysis (t with 1 degree of freedom).
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _expit(x):
    return 1.0 / (1.0 + np.exp(-x))


def _centres(rng, names, sizes, shifts, slopes, mean, sd):
    rows = []
    for name, n, a, b in zip(names, sizes, shifts, slopes):
        lp = rng.normal(mean, sd, size=n)
        p = _expit(lp)
        y = (rng.random(n) < _expit(a + b * lp)).astype(int)
        rows += [(name, pi, yi) for pi, yi in zip(p, y)]
    return rows


def heterogeneous():
    rng = np.random.default_rng(20250201)
    return _centres(rng, list("ABCDE"), [60, 80, 100, 70, 90], [-0.8, -0.2, 0.3, 0.9, 0.1], [0.8, 1.0, 1.2, 0.9, 1.1],
                    -0.8, 1.1)


def homogeneous():
    rng = np.random.default_rng(20250202)
    rows = _centres(rng, [f"c{j}" for j in range(1, 9)], [50] * 8, [0.0] * 8, [1.0] * 8, -0.7, 1.0)
    at = max(i for i, r in enumerate(rows) if r[0] == "c3") + 1
    return rows[:at] + [("c3", 0.0, 1), ("c3", 0.0, 0), ("c3", 1.0, 1)] + rows[at:]


def edge_centres():
    rng = np.random.default_rng(20250203)
    sizes = rng.integers(25, 61, size=15)
    shifts = rng.normal(0.0, 0.4, size=15)
    rows = _centres(rng, [f"s{j:02d}" for j in range(1, 16)], sizes, shifts, [1.0] * 15, -1.0, 1.0)
    rows += [("x no events", p, 0) for p in (0.02, 0.03, 0.05, 0.04, 0.08, 0.06, 0.03, 0.1)]
    rows += [("y separated", p, int(p > 0.5)) for p in (0.1, 0.2, 0.3, 0.6, 0.7, 0.8)]
    return rows


def two_centres():
    rng = np.random.default_rng(20250204)
    return _centres(rng, ["north", "south"], [150, 150], [-0.4, 0.4], [1.0, 1.0], -0.6, 1.2)


DATASETS = {
    "meta_5_heterogeneous": heterogeneous,
    "meta_8_homogeneous": homogeneous,
    "meta_15_edge_centres": edge_centres,
    "meta_2_two_centres": two_centres,
}


def write(name, rows, directory=HERE):
    lines = ["cluster,p,y"] + [f"{c},{p:.17g},{int(y)}" for c, p, y in rows]
    (directory / f"{name}.csv").write_text("\n".join(lines) + "\n")


def main():
    for name, make in DATASETS.items():
        rows = make()
        write(name, rows)
        y = np.array([r[2] for r in rows])
        print(f"{name}: n={len(rows)}, centres={len({r[0] for r in rows})}, events={int(y.sum())}")


if __name__ == "__main__":
    main()
