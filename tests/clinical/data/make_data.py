"""Write the small binary risk-model data sets the R reference values are computed on.

Each file has the columns ``p`` (the predicted probability that y = 1, written with 17
significant digits so that R and Python read the same doubles) and ``y`` (0 or 1). The
outcomes are drawn from a known true risk; every set has its own seed of numpy's
``default_rng``, so rerunning ``python tests/clinical/data/make_data.py`` rewrites identical
files. After a change, rerun ``Rscript tests/clinical/reference.R`` and paste its output
into ``tests/clinical/test_r_reference.py``.

calibrated_500.csv (seed 20250101)
    n = 500; logit(p) ~ N(-0.5, 1.2^2); true risk = p (calibrated).
overconfident_1000.csv (seed 20250102)
    n = 1000; logit(p) ~ N(-0.3, 1.6^2); true risk = expit(0.6 logit(p) + 0.2), so the
    calibration slope is well below 1 (the predictions are too extreme). The R script also
    splits it into groups by row (1-500 / 501-1000, and 1-300 / 301-700 / 701-1000) for the
    heterogeneity tests.
underestimated_rare_300.csv (seed 20250103)
    n = 300; logit(p) ~ N(-3.2, 0.9^2); true risk = expit(logit(p) + 0.7): a rare outcome
    (prevalence about 10%) whose risk the model underestimates, so calibration-in-the-large
    is positive and O:E above 1.
ties_400.csv (seed 20250104)
    n = 400; p = expit(N(-0.4, 1.1^2)) rounded to 2 decimals and kept in [0.01, 0.99] (many
    ties); true risk = expit(0.85 logit(p) - 0.15), mildly miscalibrated.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _expit(x):
    return 1.0 / (1.0 + np.exp(-x))


def _logit(p):
    return np.log(p) - np.log1p(-p)


def _draw(seed, n, mean, sd, true_risk, decimals=None):
    rng = np.random.default_rng(seed)
    p = _expit(rng.normal(mean, sd, size=n))
    if decimals is not None:
        p = np.clip(np.round(p, decimals), 10.0**-decimals, 1 - 10.0**-decimals)
    y = (rng.random(n) < true_risk(p)).astype(int)
    assert np.all((p > 0) & (p < 1))
    return p, y


DATASETS = {
    "calibrated_500": lambda: _draw(20250101, 500, -0.5, 1.2, lambda p: p),
    "overconfident_1000": lambda: _draw(20250102, 1000, -0.3, 1.6, lambda p: _expit(0.6 * _logit(p) + 0.2)),
    "underestimated_rare_300": lambda: _draw(20250103, 300, -3.2, 0.9, lambda p: _expit(_logit(p) + 0.7)),
    "ties_400": lambda: _draw(20250104, 400, -0.4, 1.1, lambda p: _expit(0.85 * _logit(p) - 0.15), decimals=2),
}


def write(name, p, y, directory=HERE):
    lines = ["p,y"] + [f"{pi:.17g},{int(yi)}" for pi, yi in zip(p, y)]
    (directory / f"{name}.csv").write_text("\n".join(lines) + "\n")


def main():
    for name, make in DATASETS.items():
        p, y = make()
        write(name, p, y)
        print(f"{name}: n={len(y)}, events={int(y.sum())}, mean p={p.mean():.4f}, distinct p={len(np.unique(p))}")


if __name__ == "__main__":
    main()
