"""Figure builders: the right traces, axes and markers."""

import numpy as np
import pytest

import calibdash as cd
from calibdash.display import plots
from calibdash.display import reliability as rl
from calibdash.lab import demo


@pytest.fixture(scope="module")
def sim():
    pred = demo.load_demo("simulation: 3 classes")
    return pred.probs[:1500], pred.labels[:1500]


@pytest.fixture(scope="module")
def top(sim):
    return cd.evaluate(*sim, notion="top-label", estimators=["15-bins", "bins", "kde", "ukkr", "temperature"])


@pytest.fixture(scope="module")
def canonical(sim):
    return cd.evaluate(*sim, notion="canonical", estimators=["kde", "ukkr", "temperature"])


def test_is_log_grid():
    assert plots.is_log_grid([1e-5, 1e-3, 1e-1])
    assert not plots.is_log_grid([5, 10, 100])  # 1.3 decades
    assert not plots.is_log_grid(["fit"])
    assert not plots.is_log_grid([0.0, 1.0, 1000.0])


@pytest.mark.slow
def test_risk_curves(top):
    fig = plots.risk_curves(top)
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["bins", "kde", "ukkr", "temperature"]  # every tunable one: not the fixed 15-bins
    assert fig.layout.xaxis.type == "linear" and fig.layout.xaxis2.type == "log" and fig.layout.xaxis3.type == "log"
    assert list(fig.layout.xaxis4.ticktext) == ["fit"]  # temperature's one value, a category
    chosen = [t for t in fig.data if t.name == "chosen value"]
    assert len(chosen) == 4
    s = top.summary.set_index("estimator")
    assert chosen[1].x[0] == s.loc["kde", "params"]["bandwidth"]
    assert chosen[1].y[0] == pytest.approx(s.loc["kde", "val_risk"])
    base = [t for t in fig.data if t.name == "15-bin risk"]
    assert len(base) == 4 and base[0].y[0] == pytest.approx(s.loc["15-bins", "val_risk"])
    bands = [t for t in fig.data if t.fill == "toself"]
    assert len(bands) == 4
    mean_kde = top.curves[top.curves.estimator == "kde"].groupby("value")["val_risk"].mean()
    line = [t for t in fig.data if t.name == "kde" and t.mode == "lines+markers"][0]
    np.testing.assert_allclose(line.y, mean_kde.sort_index().to_numpy())


@pytest.mark.slow
def test_canonical_curves_have_no_baseline(canonical):
    fig = plots.risk_curves(canonical)
    assert not [t for t in fig.data if t.name == "15-bin risk"]


def test_forest_plot(top):
    fig = plots.forest_plot(top)
    (trace,) = fig.data
    assert len(trace.x) == len(top.summary)
    i = list(trace.y).index(top.best["estimator"])
    assert trace.marker.color[i] == plots.BEST
    np.testing.assert_allclose(sorted(trace.x), sorted(100 * top.summary["estimate"]))


@pytest.mark.slow
def test_reliability_figures(sim, top, canonical):
    P, y = sim
    table = rl.reliability_table(*rl.top_label(P, y), n_bins=10)
    name, G = rl.selected_recalibration(top, P)
    assert name is not None and G.shape == (len(P), 1)
    fig = plots.reliability_figure(table, recal=(P.max(axis=1), G[:, 0], "recal"))
    bars = [t for t in fig.data if t.name == "observed frequency"]
    assert len(bars) == 1 and len(bars[0].x) == (table["count"] > 0).sum()
    assert any(t.name == "recal" for t in fig.data)
    name, G = rl.selected_recalibration(canonical, P)
    assert G.shape == P.shape
    tables = rl.per_class_tables(P, y, [0, 1, 2], n_bins=5)
    fig = plots.per_class_figure(tables, ["a", "b", "c"], {k: (P[:, k], G[:, k]) for k in range(3)})
    assert [a.text for a in fig.layout.annotations] == ["a", "b", "c"]
    fig = plots.ternary_figure(P, G, ["a", "b", "c"], labels=y, max_points=100)
    assert len(fig.data) == 3 and len(fig.data[-1].a) == 100
    with pytest.raises(ValueError, match="three classes"):
        plots.ternary_figure(np.full((4, 4), 0.25))


def test_selected_recalibration_skips_non_plugins(top):
    res = cd.EvaluationResult.from_json(top.to_json())
    assert rl.selected_recalibration(res, np.full((2, 3), 1 / 3)) == (None, None)


def test_selected_recalibration_checks_the_rows_once_and_gives_the_models_map(sim, top, monkeypatch):
    """The map is the fold ensemble's own, to the last bit, with the rows checked once (not
    twice by each of the k fold models); the caller's array stays writeable."""
    from calibdash.core import simplex

    P = sim[0].copy()  # writeable, as a caller's array may be
    name = rl.selected_recalibration(top, P)[0]
    expected = np.clip(top.models[name].recalibration(P), 0.0, 1.0)
    checks = []
    real = simplex.check_probabilities
    monkeypatch.setattr("calibdash.core.notions.check_probabilities", lambda *a, **k: checks.append(1) or real(*a, **k))
    got_name, G = rl.selected_recalibration(top, P)
    assert got_name == name and len(checks) == 1
    np.testing.assert_array_equal(G, expected)
    assert P.flags.writeable
    with pytest.raises(cd.InputError):
        rl.selected_recalibration(top, np.full((2, 3), 0.5))  # rows that are not probabilities, said so
    with pytest.raises(cd.InputError, match="classes"):  # said, not passed over for the next estimator's map
        rl.selected_recalibration(top, np.full((2, 4), 0.25))


def test_robust_range_ignores_a_huge_outlier():
    assert plots._robust_range([1, 1.1, 1.2, 1.3], [1.1, 1.2, 1.3, 1.4]) is None
    low, high = plots._robust_range([1, 1.1, 1.2, 1.3, 90], [1.1, 1.2, 1.3, 1.4, 100])
    assert low < 1 and 1.4 <= high < 2


@pytest.mark.slow
def test_estimates_by_quantity_keeps_scales_apart(top, canonical):
    for res in (top, canonical):
        fig = plots.estimates_by_quantity(res)
        titles = [a.text for a in fig.layout.annotations]
        quantities = ["calibration error (L2)"] + [q for q in res.others["quantity"].unique() if q != "calibration error (L2)"]
        assert len(fig.data) == len(titles) == len(set(quantities))
        for trace, title in zip(fig.data, titles):
            names = list(trace.y)
            if title.startswith("calibration error (L2)"):
                assert {f"{e} (ranked)" for e in res.summary["estimator"]} <= set(names)
                best = names.index(f"{res.best['estimator']} (ranked)")
                assert trace.marker.color[best] == plots.BEST
            for name, x in zip(names, trace.x):
                q = "calibration error (L2)" if name.endswith("(ranked)") else res.others.set_index("estimator").loc[name, "quantity"]
                assert title.startswith(q)
                value = (res.summary.set_index("estimator").loc[name[:-9], "estimate"] if name.endswith("(ranked)")
                         else res.others.set_index("estimator").loc[name, "estimate"])
                scale = 100 if q in ("calibration error (L2)", "L1 calibration error") else 1
                assert x == pytest.approx(scale * value)
    assert "squared kernel calibration error (SKCE's own scale, squared)" in [
        a.text for a in plots.estimates_by_quantity(canonical).layout.annotations]


def test_a_map_of_millions_of_rows_draws_a_thinned_scatter_and_a_line_from_every_row():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.0, 1_000_003)
    table = rl.reliability_table(x, (rng.random(len(x)) < x).astype(float), n_bins=10, n_resamples=0)
    fig = plots.reliability_figure(table, recal=(x, x**1.3, "recal"))
    (points,) = [t for t in fig.data if t.name.startswith("recal;")]
    assert points.name == "recal; 1 in 201 of 1,000,003 rows shown"
    assert len(points.x) <= plots.MAX_MAP_POINTS and np.all(np.diff(points.x) > 0)
    np.testing.assert_allclose(points.y, points.x**1.3)  # the map's own values at the rows drawn
    (line,) = [t for t in fig.data if t.name == "recalibration curve (smoothed)"]
    assert line.x[0] < 0.51 and line.x[-1] > 0.99  # the whole range: every row enters the line
    small = plots.reliability_figure(table, recal=(x[:300], x[:300], "recal"))
    assert len([t for t in small.data if t.name == "recal"][0].x) == 300
