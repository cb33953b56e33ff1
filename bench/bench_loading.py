"""Time cd.load_predictions on a 10,000 x 100 problem in three formats and write the
"Loading predictions" section of BENCHMARKS.md.

Each format is compared with the bare library reader of the same file (the baseline), so
the ratio shows what detection, validation, normalisation and hashing cost on top.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import median_time, write_section  # noqa: E402

import calibdash as cd  # noqa: E402

N, D = 10_000, 100
REPEATS, WARMUP = 7, 1


def make_files(folder):
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.full(D, 0.3), size=N)
    y = rng.integers(0, D, size=N)
    frame = pd.DataFrame(P, columns=[f"class_{k}" for k in range(D)]).assign(label=y)
    paths = {"csv": folder / "preds.csv", "npz": folder / "preds.npz", "parquet": folder / "preds.parquet"}
    frame.to_csv(paths["csv"], index=False)
    np.savez(paths["npz"], probs=P, labels=y)
    frame.to_parquet(paths["parquet"])
    return paths


def main():
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_files(Path(tmp))
        baselines = {
            "csv": ("pandas.read_csv", lambda p: pd.read_csv(p, engine="c")),
            "npz": ("numpy.load", lambda p: [a for a in np.load(p, allow_pickle=False).values()]),
            "parquet": ("pandas.read_parquet", lambda p: pd.read_parquet(p)),
        }
        for fmt, path in paths.items():
            loaded = cd.load_predictions(path)
            assert (loaded.n, loaded.d) == (N, D), (loaded.n, loaded.d)
            t = median_time(lambda: cd.load_predictions(path), repeats=REPEATS, warmup=WARMUP)
            base_name, base = baselines[fmt]
            tb = median_time(lambda: base(path), repeats=REPEATS, warmup=WARMUP)
            size = path.stat().st_size / 2**20
            rows.append((fmt, size, t, base_name, tb))
            print(f"{fmt:8s} {size:6.1f} MiB  load_predictions {t:.3f} s  {base_name} {tb:.3f} s")

    body = [
        f"`cd.load_predictions` on {N:,} rows x {D} classes of float64 probabilities plus a",
        f"label column; median of {REPEATS} runs after {WARMUP} warm-up. The baseline is the bare",
        "library reader of the same file; the ratio is what format sniffing, validation,",
        "normalisation, hashing and the read-only copy cost on top of it.",
        "",
        "| format | rows x cols | file size | load_predictions (s) | baseline | baseline (s) | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for fmt, size, t, base_name, tb in rows:
        body.append(
            f"| .{fmt} | {N:,} x {D} (+ labels) | {size:.1f} MiB | {t:.3f} | {base_name} | "
            f"{tb:.3f} | {t / tb:.2f} |"
        )
    write_section("Loading predictions", "\n".join(body), command=".venv/bin/python bench/bench_loading.py")


# The Data page's work on an upload, in a fresh interpreter importing calibdash from ROOT: the
# first inspection (the guesses), the inspection with the guessed columns chosen, the load.
WIDE_N, WIDE_D = 10, 99_999  # 100,000 columns with the labels: the documented width limit
WIDE_CODE = """
import json, sys, time
sys.path.insert(0, ROOT)
import calibdash as cd
t0 = time.perf_counter()
found = cd.inspect_predictions(PATH)
t1 = time.perf_counter()
cd.inspect_predictions(PATH, label_column=found.label_column, prob_columns=list(found.prob_columns))
t2 = time.perf_counter()
pred = cd.load_predictions(PATH, label_column=found.label_column, prob_columns=list(found.prob_columns))
t3 = time.perf_counter()
assert pred.probs.shape == (N, D), pred.probs.shape
print(json.dumps({"inspect": t1 - t0, "inspect_chosen": t2 - t1, "load": t3 - t2, "total": t3 - t0}))
"""


def wide(before=None, repeats=3, before_repeats=1):
    """The 10 x 100,000 CSV through the Data page's calls (issue 28), this tree and ``before``
    (another checkout) alternated; writes the "A table at the width limit" section."""
    import json
    import statistics
    import subprocess

    root = Path(__file__).resolve().parents[1]
    roots = {"after (this tree)": root}
    if before:
        commit = subprocess.run(["git", "-C", str(before), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        roots = {f"before ({commit})": Path(before), **roots}
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        P = rng.dirichlet(np.ones(WIDE_D), WIDE_N)
        frame = pd.DataFrame(P, columns=[f"p{k}" for k in range(WIDE_D)]).assign(label=rng.integers(0, WIDE_D, WIDE_N))
        path = Path(tmp) / "wide.csv"
        frame.to_csv(path, index=False, float_format="%.6g")
        runs = {label: [] for label in roots}
        for i in range(repeats):
            for label, r in roots.items():
                if r != root and i >= before_repeats:  # the old code took minutes a run: once is enough
                    continue
                code = (WIDE_CODE.replace("ROOT", repr(str(r))).replace("PATH", repr(str(path)))
                        .replace("(N, D)", repr((WIDE_N, WIDE_D))))
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                runs[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(label, runs[label][-1], flush=True)
        size = path.stat().st_size / 2**20
    rows = []
    for label, rs in runs.items():
        med = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
        rows.append(f"| {label} | {med['inspect']:.1f} | {med['inspect_chosen']:.1f} | {med['load']:.1f} | "
                    f"{med['total']:.1f} ({', '.join(format(x['total'], '.1f') for x in rs)}) |")
    body = (
        f"A CSV of {WIDE_N} rows x {WIDE_D + 1:,} columns ({WIDE_D:,} probability columns and the labels, the "
        f"documented width limit; {size:.1f} MiB) through the calls the Data page makes on an upload: "
        "`cd.inspect_predictions` (the guesses), again with the guessed columns chosen, then `cd.load_predictions`. "
        f"Each run in a fresh interpreter; median of {repeats} runs" + (f" ({before_repeats} of the code before)" if before else "")
        + ". Issue 28's target: the Data page in under 30 s.\n\n"
        "| code | inspect (s) | inspect, columns chosen (s) | load (s) | total (s), median (runs) |\n"
        "|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "Before, each chosen column name was looked up with a list's `index` and checked against the columns "
        "chosen so far (quadratic: most of the 213 s and 177 s; now one dictionary of the names), every column was "
        "taken one by one with `iloc` to ask whether it held text (a numeric dtype never does, now known from the "
        "dtypes), and the missing-cell check visited the parser's 100,000 one-column blocks one by one. "
        "The page in the browser, and the server's health check meanwhile: the next section."
    )
    write_section("A table at the width limit", body,
                  command=".venv/bin/python bench/bench_loading.py wide" + (f" {before}" if before else ""))


if __name__ == "__main__":
    if sys.argv[1:2] == ["wide"]:
        wide(*sys.argv[2:3])
    else:
        main()
