"""Generate the tables of docs/results.md: known-truth deviations on the paper's simulation,
paper-style tables (Tables 1-3) for the three files in ../shared/data, the coverage of the
intervals in simulations with known truth, and the reported standard errors against the
spread of the estimates over random splits of the real files.

Each table sits between <!-- begin NAME --> and <!-- end NAME --> markers; the prose
around them is kept, so rerunning refreshes the numbers only.

Run from the project root:  .venv/bin/python bench/results_tables.py [PART ...]
with PART among "tables" (sections 1-2, a few minutes), "splits" (section 5, about 5
minutes) and "coverage" (section 4, about 40 minutes on two cores); no PART runs all.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import calibdash as cd  # noqa: E402
from calibdash.lab.simulation import dirichlet_simulation, simulation_truth  # noqa: E402

RESULTS = ROOT / "docs" / "results.md"
DATA = ROOT.parent / "shared" / "data"
FILES = ("cifar10_lenet5", "cifar10_wrn16-4", "cifar100_wrn16-4")


def fmt(x, se, scale=1.0, digits=2):
    return f"{x * scale:.{digits}f} ± {se * scale:.{digits}f}"


def edge(res, name):
    """The "edge of grid" cell: empty, "flat" (the risk is flat at the edge, so the grid
    need not be extended) or "yes" (still falling there)."""
    words = [w for w in res.warnings if w.startswith(f"{name}: ") and "edge of its grid" in w]
    if not words:
        return ""
    return "flat" if all("the risk is flat there" in w for w in words) else "yes"


def truth_table():
    truth = simulation_truth()
    sim = dirichlet_simulation(n=10_000, random_state=2024)
    lines = [
        "| notion | estimator | chosen | sqrt(risk) x 100 | estimate | truth | deviation | within 3 se or 0.01 | edge of grid |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for notion in ("top-label", "canonical"):
        res = cd.evaluate(sim.probs, sim.labels, notion=notion, random_state=0, n_jobs=2)
        best = res.best["estimator"]
        for _, r in res.summary.iterrows():
            dev = r["estimate"] - truth[notion]
            ok = abs(dev) <= max(3 * r["estimate_se"], 0.01)
            name = f"**{r['estimator']}**" if r["estimator"] == best else r["estimator"]
            lines.append(
                f"| {notion} | {name} | {r['hyperparameters']} | {fmt(r['sqrt_risk_x100'], r['sqrt_risk_x100_se'])} | "
                f"{fmt(r['estimate'], r['estimate_se'], digits=4)} | {truth[notion]:.4f} | {dev:+.4f} | "
                f"{'yes' if ok else 'no'} | {edge(res, r['estimator'])} |"
            )
    return "\n".join(lines)


def file_table(name):
    with np.load(DATA / f"{name}.npz", allow_pickle=False) as f:
        preds = cd.load_predictions(f["predictions"], f["ground_truth"])
    lines = [
        "| notion | estimator | chosen | sqrt(risk) x 100 | estimate x 100 | signed squared estimate x 1e4 | edge of grid |",
        "|---|---|---|---|---|---|---|",
    ]
    for notion in ("top-label", "canonical"):
        res = cd.evaluate(preds, notion=notion, random_state=0, n_jobs=2)
        best = res.best["estimator"]
        for _, r in res.summary.iterrows():
            name = f"**{r['estimator']}**" if r["estimator"] == best else r["estimator"]
            lines.append(
                f"| {notion} | {name} | {r['hyperparameters']} | {fmt(r['sqrt_risk_x100'], r['sqrt_risk_x100_se'], digits=3)} | "
                f"{fmt(r['estimate'], r['estimate_se'], scale=100)} | "
                f"{fmt(r['squared_estimate'], r['squared_estimate_se'], scale=1e4)} | {edge(res, r['estimator'])} |"
            )
    return "\n".join(lines)


# The coverage study: three simulations with known truth, none of which every estimator is
# designed for (a temperature distortion, a class-dependent logit bias, and a piecewise-
# linear map of the log-probabilities that leaves a small error).
COVERAGE_SCENARIOS = (("dirichlet", "the paper's simulation (temperature 0.3)"),
                      ("logit-bias", "class-dependent logit bias"),
                      ("piecewise", "piecewise-linear map of the log-probabilities (small error)"))
COVERAGE_NS = (1000, 5000, 20_000)
COVERAGE_DRAWS = 100


def coverage_table(kind):
    from calibdash.lab import studies as lab

    sc = lab.scenario(kind)
    df = lab.coverage_study(sc, ns=COVERAGE_NS, n_draws=COVERAGE_DRAWS, n_jobs=2)
    table = lab.summarise_coverage(df)
    lines = [
        "| notion | n | estimator | coverage of the truth | mean estimate | bias | RMSE | mean width "
        "| best / showed miscalibration | tied / disagreed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for notion in ("top-label", "canonical"):
        part = table[table["notion"] == notion]
        for n in COVERAGE_NS:
            for _, r in part[part["n"] == n].iterrows():
                name = f"**{r['estimator']}**" if r["estimator"] == lab.VERDICT else r["estimator"]
                lines.append(
                    f"| {notion} | {n:,} | {name} | {100 * r['coverage']:.0f} % | {100 * r['mean']:.2f} | "
                    f"{100 * r['bias']:+.2f} | {100 * r['rmse']:.2f} | {100 * r['width']:.2f} | "
                    f"{100 * r['best']:.0f} % | {100 * r['tied']:.0f} % |"
                )
    truths = ", ".join(f"{notion} {100 * sc.truth(notion):.2f}" for notion in ("top-label", "canonical"))
    return f"{sc.label}; true errors (points): {truths}; {COVERAGE_DRAWS} fresh draws per size.\n\n" + "\n".join(lines)


SPLIT_FILES = ("cifar10_wrn16-4", "cifar100_wrn16-4")
N_SPLITS = 10


def splits_table(name):
    import pandas as pd

    with np.load(DATA / f"{name}.npz", allow_pickle=False) as f:
        preds = cd.load_predictions(f["predictions"], f["ground_truth"])
    rows = []
    for seed in range(N_SPLITS):
        results = cd.evaluate_notions(preds, notions=("top-label", "canonical"), others=[], random_state=seed, n_jobs=2,
                                      keep_models=False)
        for notion, res in results.items():
            rows.append(res.summary.assign(notion=notion, seed=seed))
    df = pd.concat(rows, ignore_index=True)
    df["best"] = df["val_risk"] == df.groupby(["seed", "notion"])["val_risk"].transform("min")
    lines = [
        "| notion | estimator | mean estimate x 100 | sd over splits x 100 | mean reported s.e. x 100 | ratio "
        "| of which holdout rows (squared s.e. share) | best | tied |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (notion, est), part in df.groupby(["notion", "estimator"], sort=False):
        sd, se = part["estimate"].std(), part["estimate_se"].mean()
        share = (part["squared_se_holdout"] ** 2 / part["squared_estimate_se"] ** 2).mean()
        best = int(part["best"].sum())
        lines.append(f"| {notion} | {est} | {100 * part['estimate'].mean():.2f} | {100 * sd:.3f} | {100 * se:.3f} | "
                     f"{se / sd:.2f} | {100 * share:.0f} % | {best}/{N_SPLITS} | {int(part['tied'].sum())}/{N_SPLITS} |")
    return "\n".join(lines)


def write_block(text, name, body):
    block = f"<!-- begin {name} -->\n{body}\n<!-- end {name} -->"
    pattern = re.compile(rf"<!-- begin {re.escape(name)} -->.*?<!-- end {re.escape(name)} -->", re.S)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text)
    return text.rstrip() + f"\n\n### {name}\n\n{block}\n"


def main(parts):
    parts = set(parts or ("tables", "splits", "coverage"))
    unknown = parts - {"tables", "splits", "coverage"}
    if unknown:
        raise SystemExit(f"unknown part(s) {sorted(unknown)}; choose from tables, splits, coverage")
    text = RESULTS.read_text() if RESULTS.exists() else "# Results\n"
    if "tables" in parts:
        text = write_block(text, "simulation", truth_table())
        print("simulation done", flush=True)
        for name in FILES:
            text = write_block(text, name, file_table(name))
            print(name, "done", flush=True)
        RESULTS.write_text(text)
    if "splits" in parts:
        for name in SPLIT_FILES:
            text = write_block(text, f"splits {name}", splits_table(name))
            print("splits", name, "done", flush=True)
            RESULTS.write_text(text)
    if "coverage" in parts:
        for kind, _ in COVERAGE_SCENARIOS:
            text = write_block(text, f"coverage {kind}", coverage_table(kind))
            print("coverage", kind, "done", flush=True)
            RESULTS.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
