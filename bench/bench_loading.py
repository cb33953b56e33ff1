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


if __name__ == "__main__":
    main()
