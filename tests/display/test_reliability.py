"""Reliability statistics against brute force."""

import numpy as np
import pytest

from calibdash.display import reliability as rl
from calibdash.errors import ConfigError


def brute_table(conf, correct, edges):
    rows = []
    for b in range(len(edges) - 1):
        lo, hi = edges[b], edges[b + 1]
        inside = [(c, k) for c, k in zip(conf, correct) if (lo < c <= hi) or (b == 0 and c == lo)]
        rows.append((len(inside), np.mean([c for c, _ in inside]) if inside else np.nan,
                     np.mean([k for _, k in inside]) if inside else np.nan))
    return rows


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_table_matches_brute_force(strategy):
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.full(4, 0.5), size=300)
    y = rng.integers(0, 4, size=300)
    conf, correct = rl.top_label(P, y)
    t = rl.reliability_table(conf, correct, n_bins=8, strategy=strategy, n_resamples=0)
    edges = np.concatenate([t["lower"].to_numpy(), [t["upper"].iloc[-1]]])
    for (n, c, a), row in zip(brute_table(conf, correct, edges), t.itertuples()):
        assert row.count == n
        np.testing.assert_allclose([row.confidence, row.accuracy], [c, a], equal_nan=True)
    assert t["count"].sum() == 300
    ece = sum(r.count * abs(r.accuracy - r.confidence) for r in t.itertuples() if r.count) / 300
    assert t.attrs["ece"] == pytest.approx(ece)
    if strategy == "quantile":
        assert t["count"].max() - t["count"].min() <= 2


def test_quantile_bins_merge_ties():
    conf = np.array([1.0] * 90 + list(np.linspace(0.5, 0.9, 10)))
    t = rl.reliability_table(conf, np.ones(100), n_bins=10, strategy="quantile", n_resamples=0)
    assert len(t) < 10 and t["count"].sum() == 100


# Graded targets resample rows: the band equals brute force over the same draws, also when
# they come in blocks of 7 resamples (50 in all).
@pytest.mark.parametrize("block", [None, 7 * 120])
def test_bootstrap_band_brute_force_and_seeded(monkeypatch, block):
    if block:
        import calibdash.metrics.ece as ece_module

        monkeypatch.setattr(ece_module, "BOOT_BLOCK", block)
    rng = np.random.default_rng(2)
    conf = rng.uniform(0.3, 1, size=120)
    correct = rng.integers(0, 3, size=120) / 2.0  # 0, 0.5 or 1
    t = rl.reliability_table(conf, correct, n_bins=4, n_resamples=50, level=0.8, random_state=7)
    # the same resamples one at a time
    edges = rl.bin_edges(conf, 4)
    idx = np.random.default_rng(7).integers(0, 120, size=(50, 120))
    b = rl.assign_bins(conf, edges)
    accs = np.full((50, 4), np.nan)
    for r in range(50):
        for k in range(4):
            sel = idx[r][b[idx[r]] == k]
            if len(sel):
                accs[r, k] = correct[sel].mean()
    for k in range(4):
        if t["count"][k]:
            assert t["band_low"][k] == pytest.approx(np.nanquantile(accs[:, k], 0.1))
            assert t["band_high"][k] == pytest.approx(np.nanquantile(accs[:, k], 0.9))
    t2 = rl.reliability_table(conf, correct, n_bins=4, n_resamples=50, level=0.8, random_state=7)
    assert t.equals(t2)


def test_binary_band_is_the_row_bootstrap_from_cell_counts():
    """0/1 outcomes: the band comes from multinomial counts of the (bin, outcome) cells, which
    have the distribution a resample of the rows gives them; its quantiles match 4,000 explicit
    row resamples within Monte Carlo error (about 0.01 here, bins of 20 to 60 rows)."""
    rng = np.random.default_rng(2)
    conf = rng.uniform(0.3, 1, size=120)
    correct = (rng.uniform(size=120) < conf).astype(float)
    t = rl.reliability_table(conf, correct, n_bins=4, n_resamples=4000, level=0.8, random_state=7)
    assert t.equals(rl.reliability_table(conf, correct, n_bins=4, n_resamples=4000, level=0.8, random_state=7))
    b = rl.assign_bins(conf, rl.bin_edges(conf, 4))
    idx = np.random.default_rng(99).integers(0, 120, size=(4000, 120))
    counts = np.stack([np.bincount(b[i], minlength=4) for i in idx])
    hits = np.stack([np.bincount(b[i], correct[i], minlength=4) for i in idx])
    filled = (t["count"] > 0).to_numpy()
    assert filled.sum() == 3  # the bin below 0.3 holds no row: it has no band
    assert t.loc[~filled, ["band_low", "band_high"]].isna().all(axis=None)
    # a resample that leaves a filled bin empty gives it no accuracy (NaN, skipped by the quantile)
    with np.errstate(invalid="ignore", divide="ignore"):
        accs = hits[:, filled] / counts[:, filled]
    np.testing.assert_allclose(t["band_low"][filled], np.nanquantile(accs, 0.1, axis=0), atol=0.03)
    np.testing.assert_allclose(t["band_high"][filled], np.nanquantile(accs, 0.9, axis=0), atol=0.03)
    assert (t["band_high"] - t["band_low"])[filled].gt(0.05).all()  # a real band, not a point


def test_per_class_and_errors():
    P = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    y = np.array([0, 2, 2])
    tables = rl.per_class_tables(P, y, [0, 2], n_bins=2, n_resamples=0)
    assert set(tables) == {0, 2}
    assert tables[2]["count"].sum() == 3
    assert tables[2].loc[0, "accuracy"] == pytest.approx(2 / 3)  # p_2 = 0.1, 0.1, 0.4 all in [0, 0.5]
    with pytest.raises(ConfigError, match="strategy"):
        rl.bin_edges(P[:, 0], 5, "log")
    with pytest.raises(ValueError, match="n_bins"):
        rl.bin_edges(P[:, 0], 0)



def test_bins_agree_with_the_binning_estimator_even_on_edges():
    """Points exactly on an edge (0.5, 0.75, 1.0: exact in binary) go to the same bin in
    the diagram as in the binning estimator, the upper one (1.0 to the last), and per bin
    confidence - accuracy equals the estimator's fitted gap."""
    import calibdash as cd

    c = np.array([0.5, 0.5, 0.75, 0.75, 1.0, 1.0, 0.6, 0.9, 0.55, 0.8])
    P = np.column_stack([c, 1 - c])
    y = np.array([0, 1, 0, 0, 0, 1, 1, 0, 0, 1])
    t = rl.reliability_table(*rl.top_label(P, y), n_bins=4, n_resamples=0)
    assert t["count"].tolist() == [0, 0, 4, 6]  # [0.5, 0.75) holds 0.5, 0.5, 0.6, 0.55
    est = cd.make_estimator("bins", notion="top-label", n_bins=4).fit(P, y)
    filled = t["count"].to_numpy() > 0
    np.testing.assert_allclose((t["confidence"] - t["accuracy"]).to_numpy()[filled], est.gaps_[0][filled], rtol=1e-12)


@pytest.mark.slow
def test_the_three_15_bin_figures_relate_as_the_help_text_says():
    """FIFTEEN_BIN_HELP's claims, on one result: the diagram's ECE on the holdout rows is the
    literature's 15-bin ECE; on all rows it is the diagram's own figure; the 15-bins estimate is
    a plug-in L2 error (never negative per row: not debiased), and an L2 error of a set of bin
    gaps is at least their L1 error."""
    import calibdash as cd
    from calibdash.lab import demo

    pred = demo.load_demo("digits: random forest")
    res = cd.evaluate(pred, notion="top-label", estimators=["15-bins", "kde"], others=["ece-15-bins"])
    idx = res.holdout_rows
    holdout = rl.reliability_table(*rl.top_label(pred.probs[idx], pred.labels[idx]), n_bins=15, strategy="uniform", n_resamples=0)
    ece = res.others.set_index("estimator").loc["ece-15-bins", "estimate"]
    assert holdout.attrs["ece"] == pytest.approx(ece, rel=1e-12)
    every = rl.reliability_table(*rl.top_label(pred.probs, pred.labels), n_bins=15, strategy="uniform", n_resamples=0)
    assert every.attrs["ece"] != pytest.approx(ece, rel=1e-6)  # all rows: another number, named for that
    assert (res.diagonals["15-bins"] >= 0).all()  # squared plug-in gaps: no debiasing term
    for table in (holdout, every):
        filled = table[table["count"] > 0]
        w, gap = filled["count"] / filled["count"].sum(), filled["accuracy"] - filled["confidence"]
        assert np.sqrt((w * gap ** 2).sum()) >= (w * gap.abs()).sum() == pytest.approx(table.attrs["ece"], rel=1e-9)
    text = rl.FIFTEEN_BIN_HELP
    assert all(name.split(" (")[0] in text for name in ("15-bin L2 estimate", "15-bin ECE", "15-bin ECE of the reliability"))
    assert rl.diagram_ece_name(15, "uniform") == rl.FIFTEEN_BIN_NAMES["diagram"]
    assert rl.diagram_ece_name(10, "quantile") == "binned ECE of this diagram (10 equal-mass bins, L1, all rows)"
    assert rl.diagram_ece_name(10, "uniform", sentence=True).startswith("Binned ECE of this diagram (10 equal-width")
    assert rl.diagram_ece_name(15, "uniform", sentence=True) == "15-bin ECE of this diagram (L1, all rows)"


# The per-bin sums are taken in passes of rows (at 10,000,000 rows one pass over all of them
# held 500 MB of row-length temporaries); each pass continues the running sums, so the table
# has the same bits as one bincount of all rows, and the band the same cells.
@pytest.mark.parametrize("graded", [False, True])
def test_sums_in_passes_equal_one_pass_bit_for_bit(monkeypatch, graded):
    rng = np.random.default_rng(5)
    conf = rng.uniform(0.2, 1, size=1003)
    correct = (rng.random(1003) < conf) * (0.5 if graded else 1.0)
    edges = rl.bin_edges(conf, 7)
    b = rl.assign_bins(conf, edges)
    want_conf, want_correct = np.bincount(b, conf, minlength=7), np.bincount(b, correct, minlength=7)
    whole = rl.reliability_table(conf, correct, n_bins=7, n_resamples=30)
    monkeypatch.setattr(rl, "BIN_SUM_ROWS", 64)
    sums = rl.bin_sums(conf, correct, edges)
    assert np.array_equal(sums.count, np.bincount(b, minlength=7))
    assert np.array_equal(sums.conf_sum, want_conf) and np.array_equal(sums.correct_sum, want_correct)
    if graded:
        assert sums.cells is None
    else:
        assert np.array_equal(sums.cells, np.bincount(2 * b + correct.astype(int), minlength=14))
    passes = rl.reliability_table(conf, correct, n_bins=7, n_resamples=30)
    assert passes.equals(whole) and passes.attrs["ece"] == whole.attrs["ece"]
    # the running sum, not a sum of pass totals: those differ in the last bits here
    totals = sum(np.bincount(b[s : s + 64], conf[s : s + 64], minlength=7) for s in range(0, 1003, 64))
    assert not np.array_equal(totals, want_conf)


def test_top_label_in_passes_is_the_notions_confidence_and_correctness(monkeypatch):
    from calibdash.core import notions

    rng = np.random.default_rng(6)
    P = rng.dirichlet(np.full(3, 0.7), size=500)
    P[:40] = [0.4, 0.4, 0.2]  # ties go to the first class, as in the notions
    y = rng.integers(0, 3, size=500)
    monkeypatch.setattr(rl, "BIN_SUM_ROWS", 64)
    conf, correct = rl.top_label(P, y)
    c, _, k = notions.top_label(P)
    assert np.array_equal(conf, c) and np.array_equal(correct, (k == y).astype(float))
