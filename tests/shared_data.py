"""The real classifier outputs in ../shared/data, read directly with NumPy (no pickle)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load_npz(name):
    """(probabilities as float64, labels as int64) of ``name`` (e.g. "cifar100_wrn16-4")."""
    path = SHARED_DATA / f"{name}.npz"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the tests expect ../shared/data beside the project.")
    with np.load(path, allow_pickle=False) as data:
        return data["predictions"].astype(np.float64), data["ground_truth"].astype(np.int64)
