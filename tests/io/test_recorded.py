"""calibdash.io.recorded: an input as a run records it, and a file a result file names read again
without showing anything of it before its fingerprint is checked."""

from __future__ import annotations

import numpy as np
import pytest

import calibdash as cd
from calibdash.io.recorded import load_input, load_recorded
from calibdash.lab.simulation import dirichlet_simulation
from calibdash.predictions import LOAD_OPTIONS


def _npz(path):
    sim = dirichlet_simulation(n=100, n_classes=3, alpha=0.5, random_state=0)
    np.savez(path, predictions=sim.probs, ground_truth=sim.labels)
    return path


def test_the_record_names_the_file_and_every_option(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _npz(tmp_path / "m.npz")
    pred, record = load_input("m.npz", None, {"kind": None, "class_names": ["x", "y", "z"]})
    assert pred.class_names == ("x", "y", "z")
    assert record == {"predictions": str(tmp_path / "m.npz"), "labels": None, "kind": "auto",
                      **{k: None for k in LOAD_OPTIONS if k not in ("kind", "class_names")}, "class_names": ["x", "y", "z"]}
    again, _ = load_recorded(record["predictions"], None, {"class_names": ["x", "y", "z"]})
    assert again.sha256 == pred.sha256


def test_a_recorded_file_that_cannot_be_read_is_refused_without_quoting_it(tmp_path):
    with pytest.raises(cd.InputError, match=r"^the recorded input '.*missing.npz' cannot be opened \("):
        load_recorded(str(tmp_path / "missing.npz"), None, {})
    with pytest.raises(cd.InputError, match="is not a regular file; give the data with --predictions FILE"):
        load_recorded(str(tmp_path), None, {})
    with pytest.raises(cd.InputError, match=r"^the recorded labels file '.*y.npy' cannot be opened"):
        load_recorded(str(_npz(tmp_path / "m.npz")), str(tmp_path / "y.npy"), {})
    secret = tmp_path / "secret.csv"
    secret.write_text("password,hunter2\n1,2\n")
    with pytest.raises(cd.InputError) as refused:
        load_recorded(str(secret), None, {"kind": "probabilities"})
    assert "cannot be read as the evaluated data" in str(refused.value) and "hunter2" not in str(refused.value)
