"""Demo data: offline generation, caching, regeneration of a broken cache."""

import numpy as np
import pytest

import calibdash as cd
from calibdash.lab import demo


@pytest.mark.slow
def test_every_demo_set_is_valid_predictions():
    for name in demo.DEMO_NAMES:
        pred = demo.load_demo(name)
        assert isinstance(pred, cd.Predictions)
        assert pred.kind == "probabilities"
        np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0, atol=1e-12)
        assert name in demo.DESCRIPTIONS
        if name.startswith("digits"):
            assert (pred.n, pred.d) == (1797, 10)
            assert pred.accuracy > 0.8
        else:
            assert pred.n == 5000


@pytest.mark.slow
def test_demo_classifiers_differ_in_calibration():
    # The point of the demo: over-confident naive Bayes, under-confident random forest.
    nb, rf = demo.load_demo("digits: naive Bayes"), demo.load_demo("digits: random forest")
    assert nb.mean_confidence - nb.accuracy > 0.05
    assert rf.accuracy - rf.mean_confidence > 0.05


def test_cache_is_used_and_deterministic(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBDASH_CACHE_DIR", str(tmp_path))
    a = demo.demo_arrays("simulation: 3 classes")
    files = list(tmp_path.glob("*.npz"))
    assert len(files) == 1
    with np.load(files[0], allow_pickle=False) as data:
        np.testing.assert_array_equal(data["probs"], a[0])
    b = demo.demo_arrays("simulation: 3 classes")
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_unreadable_cache_is_regenerated(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBDASH_CACHE_DIR", str(tmp_path))
    ref = demo.demo_arrays("simulation: 3 classes")
    (path,) = tmp_path.glob("*.npz")
    path.write_bytes(b"this is not an npz file")
    again = demo.demo_arrays("simulation: 3 classes")
    np.testing.assert_array_equal(ref[0], again[0])
    with np.load(path, allow_pickle=False) as data:  # rewritten
        assert data["probs"].shape == ref[0].shape


def test_unknown_demo_name():
    with pytest.raises(ValueError, match="Unknown demo set"):
        demo.load_demo("nope")
