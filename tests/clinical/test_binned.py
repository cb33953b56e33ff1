"""Above BINNED_LOESS_ROWS rows the bootstrap's and the consistency test's loess fits are made on
binned rows; the bound stated in calibdash/clinical/validation.py's docstring, checked against
the exact method (loess on the resampled rows) on inputs where that one is still feasible."""

import numpy as np
import pytest
from scipy.special import expit

from calibdash.clinical import validation
from calibdash.clinical.validation import THRESHOLDS, analyse_sample

# The stated bounds (module docstring): the interval ends of ICI, E50 and E90 move by at most
# ICI_BOUND, each resample's curve on the grid by at most CURVE_BOUND; measured (calibrated,
# slope 0.7, sine-shaped; 100 resamples) at most 4.7e-4 and 2.4e-3 at 7,000 rows (bins of 3
# rows), 1.6e-3 at 12,000 and 25,000, 3e-4 at 100,000 (bins of 50 rows).
ICI_BOUND = 1e-3
CURVE_BOUND = 5e-3


def _design(kind, n, seed=0):
    rng = np.random.default_rng(seed)
    lp = rng.normal(-0.5, 1.2, n)
    p = expit(lp)
    truth = {"calibrated": p, "slope 0.7": expit(0.2 + 0.7 * lp),
             "sine-shaped": np.clip(p + 0.05 * np.sin(2 * np.pi * p), 0.001, 0.999)}[kind]
    return p, (rng.random(n) < truth).astype(float)


def _analyse(p, y, grid, monkeypatch, *, binned, n_resamples=40):
    with monkeypatch.context() as m:
        if not binned:
            m.setattr(validation, "BINNED_LOESS_ROWS", len(p) + 1)  # the exact method at this size
        return analyse_sample(p, y, n_resamples=n_resamples, random_state=1, level=0.95, curve_grid=grid,
                              thresholds=THRESHOLDS)


@pytest.mark.parametrize("kind, n", [("calibrated", None), ("slope 0.7", None), ("sine-shaped", None),
                                     pytest.param("sine-shaped", 100_000, marks=pytest.mark.slow),
                                     pytest.param("slope 0.7", 100_000, marks=pytest.mark.slow)])
def test_binned_loess_stays_within_the_stated_bound_of_the_exact_method(kind, n, monkeypatch):
    # just above the size (bins of 2-3 rows) and at registry size (bins of 50 rows)
    n = n or validation.BINNED_LOESS_ROWS + 2_000
    p, y = _design(kind, n)
    grid = np.linspace(p.min(), p.max(), validation.CURVE_POINTS)
    resamples = 40 if n < 50_000 else 20
    binned = _analyse(p, y, grid, monkeypatch, binned=True, n_resamples=resamples)
    exact = _analyse(p, y, grid, monkeypatch, binned=False, n_resamples=resamples)
    # the point estimates are the rows' own loess in both
    for name in ("ICI", "E50", "E90", "Emax"):
        assert binned.values[name][0] == exact.values[name][0]
    for name in ("ICI", "E50", "E90"):
        for k in (1, 2):
            assert abs(binned.values[name][k] - exact.values[name][k]) <= ICI_BOUND, (name, k)
    # the band's draws, resample by resample, and NaN at the same grid points
    assert np.array_equal(np.isnan(binned.curve_draws), np.isnan(exact.curve_draws))
    assert np.nanmax(np.abs(binned.curve_draws - exact.curve_draws)) <= CURVE_BOUND
    # what does not involve loess is the same numbers: the same resamples
    assert np.array_equal(binned.nb_draws, exact.nb_draws)
    assert np.array_equal(binned.all_draws, exact.all_draws)
    for name in ("O:E", "Brier", "scaled Brier", "calibration slope", "AUROC"):
        assert binned.values[name] == exact.values[name]
    # the consistency test: the same simulated outcomes, nearly the same null ICIs
    assert abs(binned.pvalues["ICI"] - exact.pvalues["ICI"]) <= 2 / (resamples + 1)


def test_at_or_below_the_size_the_rows_are_fitted(monkeypatch):
    # the exact method is kept up to BINNED_LOESS_ROWS: the pinned numbers of smaller inputs stand
    calls = []
    real = validation.loess_fit

    def spy(x, y, **kwargs):
        calls.append(kwargs.get("weights") is not None)
        return real(x, y, **kwargs)

    monkeypatch.setattr(validation, "loess_fit", spy)
    p, y = _design("slope 0.7", 2_000)
    analyse_sample(p, y, n_resamples=3, random_state=1, level=0.95, thresholds=THRESHOLDS)
    assert len(calls) == 7 and not any(calls)  # the data's curve, 3 resamples, 3 simulations
    monkeypatch.setattr(validation, "BINNED_LOESS_ROWS", 1_999)
    calls.clear()
    analyse_sample(p, y, n_resamples=3, random_state=1, level=0.95, thresholds=THRESHOLDS)
    assert len(calls) == 7 and not calls[0] and all(calls[1:])


@pytest.mark.parametrize("kind, below", [("calibrated", False), ("slope 0.7", True)])
def test_the_consistency_test_stops_once_its_decision_is_settled(kind, below, monkeypatch):
    """At registry size the simulations stop once the p-value is clearly on one side of 1 - level;
    the decision is the full run's, the simulations run are the full run's first ones, and the
    row's note says how many there were and that the p-value is a sequential Monte Carlo one."""
    p, y = _design(kind, validation.BINNED_LOESS_ROWS + 2_000)
    kw = dict(n_resamples=400, random_state=3, level=0.95, thresholds=THRESHOLDS)
    early = analyse_sample(p, y, **kw)
    with monkeypatch.context() as m:
        m.setattr(validation, "CONSISTENCY_CONFIDENCE", 1.0)  # never settled: all 400 simulations
        full = analyse_sample(p, y, **kw)
    assert (early.pvalues["ICI"] < 0.05) == (full.pvalues["ICI"] < 0.05) == below
    note = early.row_notes["ICI"]
    runs = int(note.split("p-value from ")[1].split(" ")[0].replace(",", ""))
    assert runs < 400 and "sequential Monte Carlo" in note and "standard error" in note
    assert full.row_notes["ICI"].startswith("p-value from 400 simulations")
    assert "sequential" not in full.row_notes["ICI"]
    if below:  # no simulated ICI reached the observed one, in the early or the full run
        assert early.pvalues["ICI"] == 1 / (runs + 1) and full.pvalues["ICI"] == 1 / 401


def test_the_sequential_test_does_not_depend_on_the_number_of_workers():
    p, y = _design("slope 0.7", validation.BINNED_LOESS_ROWS + 2_000)
    kw = dict(n_resamples=450, random_state=3, level=0.95, thresholds=THRESHOLDS)
    one, two = analyse_sample(p, y, **kw), analyse_sample(p, y, n_jobs=2, **kw)
    assert one.pvalues["ICI"] == two.pvalues["ICI"] and one.row_notes == two.row_notes
    assert one.values == two.values
