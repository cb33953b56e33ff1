"""The clinical validation demo: breast cancer, offline, deterministic, with sites."""

import numpy as np
import pytest

import calibdash as cd
from calibdash.lab import demo


@pytest.mark.slow
def test_validation_demo_is_deterministic_with_sites():
    pred = demo.load_validation_demo()
    assert pred.class_names == ("benign", "malignant")
    assert pred.source_name == "demo: breast cancer (scikit-learn)"
    assert list(pred.groups) == [demo.VALIDATION_DEMO_GROUPS] == ["site"]
    assert set(pred.groups["site"]) == {"hospital A", "hospital B", "hospital C"}
    assert pred.n == 569 and int((pred.labels == 1).sum()) == 212  # 212 malignant biopsies
    frame = demo.validation_demo_frame()  # recomputed, not the cached object
    np.testing.assert_array_equal(frame["malignant"].to_numpy(), pred.probs[:, 1])
    assert list(frame["site"]) == list(pred.groups["site"])


@pytest.mark.slow
def test_validation_demo_shows_miscalibration_and_heterogeneity():
    v = cd.validate_risk_model(demo.load_validation_demo(), groups=demo.VALIDATION_DEMO_GROUPS, n_resamples=0,
                               calibration_error=False)
    assert v.classes == ("malignant",)
    assert v.metric("calibration-in-the-large")["ci_high"] < 0  # risks too high on average
    assert 0.85 < v.metric("AUROC")["estimate"] < 0.95
    het = v.heterogeneity.set_index("metric")
    assert het.loc["calibration-in-the-large", "p_value"] < 0.01  # hospital C differs
