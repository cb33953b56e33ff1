"""The continuous reliability curve on few rows: no estimate where too few predictions are
within reach (never a fake 0), and an automatic bandwidth that scales with n (issue 16)."""

import numpy as np
import pytest

from calibdash.display import reliability as rl
from calibdash.metrics.ece import silverman_bandwidth


def confident(n, seed=0):
    """A confident binary model on ``n`` rows: most confidences within a hair of 1, a few
    spread over [0.5, 0.9]; the prediction is right with probability its confidence."""
    rng = np.random.default_rng(seed)
    c = np.concatenate([1 - rng.exponential(0.004, n - n // 20), rng.uniform(0.5, 0.9, n // 20)])
    c = np.clip(c, 0.5, 1.0)
    right = rng.random(n) < c
    return np.column_stack([c, 1 - c]), np.where(right, 0, 1)


def test_few_rows_leave_gaps_never_a_fake_zero():
    P, y = confident(285)
    for bandwidth in ("silverman", "auto", 0.005):
        curve = rl.continuous_reliability_curve(P, y, n_resamples=50, bandwidth=bandwidth)
        few = curve["rows"] < rl.MIN_EFFECTIVE_ROWS
        assert few.any() and (~few).any()
        assert curve.loc[few, ["accuracy", "lower", "upper"]].isna().all().all()
        assert curve.loc[~few, ["accuracy", "lower", "upper"]].notna().all().all()
        # a lone wrong prediction within reach made the estimate 0; now there is none there
        assert not (curve["accuracy"] == 0).any()
    # with the fixed small bandwidth some point sees a few rows only: that is where the 0s were
    curve = rl.continuous_reliability_curve(P, y, n_resamples=0, bandwidth=0.005)
    assert ((curve["rows"] > 0) & (curve["rows"] < rl.MIN_EFFECTIVE_ROWS)).any()


def test_automatic_bandwidth_floor_scales_with_n():
    low, high = 0.5, 1.0
    for n in (285, 285 * 32):
        P, y = confident(n)
        z = P.max(axis=1)
        floor = (high - low) / np.sqrt(12) * (0.75 * n) ** -0.2 / 3
        assert silverman_bandwidth(z) < floor  # the bulk is within a hair of 1
        assert rl.automatic_bandwidth(z, low, high) == pytest.approx(floor, rel=1e-12)
    # 32 times the rows, half the floor (n^(-1/5))
    assert rl.automatic_bandwidth(confident(285 * 32)[0].max(axis=1), low, high) == pytest.approx(
        rl.automatic_bandwidth(confident(285)[0].max(axis=1), low, high) / 2, rel=1e-12)


def test_automatic_curve_is_readable_on_285_confident_rows():
    P, y = confident(285)
    auto = rl.continuous_reliability_curve(P, y, n_resamples=0)
    paper = rl.continuous_reliability_curve(P, y, n_resamples=0, bandwidth="silverman")
    estimated = auto["accuracy"].notna()
    assert estimated.sum() > 2 * paper["accuracy"].notna().sum()
    assert np.nanmax(np.abs(np.diff(auto["accuracy"].to_numpy()))) < 0.1  # not jagged


@pytest.mark.slow
def test_automatic_is_silverman_where_the_confidences_spread():
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(4), size=5000)
    y = np.array([rng.choice(4, p=p) for p in P])
    auto = rl.continuous_reliability_curve(P, y, n_resamples=20)
    paper = rl.continuous_reliability_curve(P, y, n_resamples=20, bandwidth="silverman")
    assert auto.attrs["bandwidth"] == silverman_bandwidth(P.max(axis=1))
    np.testing.assert_array_equal(auto.to_numpy(), paper.to_numpy())


def test_unknown_bandwidth_word_is_a_clear_error():
    P, y = confident(50)
    with pytest.raises(ValueError, match="'auto', 'silverman' or a positive number"):
        rl.continuous_reliability_curve(P, y, bandwidth="scott")


def test_band_is_the_same_when_resamples_come_in_blocks(monkeypatch):
    import calibdash.metrics.ece as ece_module

    P, y = confident(400, seed=3)
    whole = rl.continuous_reliability_curve(P, y, n_resamples=30, bandwidth=0.05)
    monkeypatch.setattr(ece_module, "BOOT_BLOCK", 400 * 4)  # 4 resamples per block
    blocked = rl.continuous_reliability_curve(P, y, n_resamples=30, bandwidth=0.05)
    assert np.isfinite(whole["lower"]).sum() > 10
    np.testing.assert_allclose(blocked[["lower", "upper"]], whole[["lower", "upper"]], rtol=1e-12, equal_nan=True)
