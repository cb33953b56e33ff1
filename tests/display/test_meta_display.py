"""The multicentre forest plot (calibdash.display.meta)."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import special

from calibdash.clinical.meta import centre_estimates, pooled_table
from calibdash.display.meta import IDEAL_VALUES, pooled_forest_figure
from calibdash.errors import ConfigError, InputError
from calibdash.text import plot_text
from tests.hostile import HTML, LATEX


def _design(seed=0):
    """Five centres of 150 patients with shifted calibration, one named with HTML and one
    with LaTeX, plus a centre without events (its metrics other than O:E undefined)."""
    rng = np.random.default_rng(seed)
    names = ["Leeds", HTML, "Oslo", LATEX, "Pisa"]
    p, y, c = [], [], []
    for name, shift in zip(names, (-0.5, 0.0, 0.3, 0.6, -0.2)):
        lp = rng.normal(-1.0, 1.0, 150)
        p.append(special.expit(lp))
        y.append((rng.random(150) < special.expit(shift + lp)).astype(int))
        c += [name] * 150
    p.append(np.array([0.05, 0.1, 0.02, 0.08]))
    y.append(np.zeros(4, int))
    c += ["none"] * 4
    centres = centre_estimates(np.concatenate(p), np.concatenate(y), c)
    return centres, pooled_table(centres)


@pytest.fixture(scope="module")
def design():
    return _design()


def _trace(fig, name):
    found = [t for t in fig.data if t.name == name]
    return found[0] if found else None


@pytest.mark.parametrize("metric", ["O:E", "calibration-in-the-large", "calibration slope", "AUROC"])
def test_diamond_prediction_interval_and_one_marker_per_centre(design, metric):
    centres, pooled = design
    fig = pooled_forest_figure(centres, pooled, metric)
    row = pooled.set_index("metric").loc[metric]
    diamond = _trace(fig, "pooled estimate")
    assert diamond.fill == "toself"
    assert (min(diamond.x), max(diamond.x)) == pytest.approx((row["ci_low"], row["ci_high"]))
    assert row["estimate"] in diamond.x
    pi = _trace(fig, "prediction interval")
    assert tuple(pi.x) == pytest.approx((row["pi_low"], row["pi_high"]))
    assert max(pi.y) < min(diamond.y)  # under the diamond
    rows = centres[centres["metric"] == metric]
    finite = rows["estimate"].notna() & ((rows["estimate"] > 0) if metric == "O:E" else True)
    markers = [x for name in ("centre", "left out") if _trace(fig, name) for x in _trace(fig, name).x]
    assert len(markers) == int(finite.sum())
    used = rows["yi"].notna()
    assert len(_trace(fig, "centre").x) == int(used.sum()) == row["n_clusters"]
    assert sorted(_trace(fig, "centre").x) == pytest.approx(sorted(rows.loc[used, "estimate"]))
    # every centre has its row, the undefined ones a "not defined" text
    assert len(fig.layout.yaxis.ticktext) == len(rows) + 2
    assert len(_trace(fig, "not defined").x) == int((~finite).sum())
    ideal = [s for s in fig.layout.shapes if s.line.dash == "dash"]
    assert len(ideal) == 1 and ideal[0].x0 == IDEAL_VALUES[metric]
    assert fig.layout.xaxis.type == ("log" if metric == "O:E" else "linear")


def test_square_sizes_follow_the_weights(design):
    centres, pooled = design
    fig = pooled_forest_figure(centres, pooled, "calibration-in-the-large")
    rows = centres[(centres["metric"] == "calibration-in-the-large") & centres["yi"].notna()]
    w = 1 / (rows["vi"].to_numpy() + pooled.set_index("metric").loc["calibration-in-the-large", "tau2"])
    sizes = np.asarray(_trace(fig, "centre").marker.size)
    order = np.argsort(rows["estimate"].to_numpy())
    assert np.argsort(sizes[order]).tolist() == np.argsort(w[order]).tolist()


def test_centre_names_are_escaped(design):
    centres, pooled = design
    fig = pooled_forest_figure(centres, pooled, "O:E", title=HTML)
    ticks = list(fig.layout.yaxis.ticktext)
    assert plot_text(HTML) in ticks and plot_text(LATEX) in ticks and "Leeds" in ticks
    shown = json.dumps(fig.to_plotly_json(), ensure_ascii=False)
    assert "<img" not in shown and "<a href" not in shown and "$\\\\href" not in shown
    assert fig.layout.title.text == plot_text(HTML)


def test_one_centre_gives_a_point_and_no_prediction_interval():
    rng = np.random.default_rng(1)
    lp = rng.normal(-1, 1, 200)
    y = (rng.random(200) < special.expit(lp)).astype(int)
    centres = centre_estimates(special.expit(lp), y, ["only"] * 200)
    fig = pooled_forest_figure(centres, pooled_table(centres), "calibration slope")
    diamond = _trace(fig, "pooled estimate")
    assert diamond.mode == "markers" and len(diamond.x) == 1
    assert _trace(fig, "prediction interval") is None


def test_bad_requests(design):
    centres, pooled = design
    with pytest.raises(ConfigError, match="Unknown metric"):
        pooled_forest_figure(centres, pooled, "ICI")
    two = pd.concat([centres.assign(**{"class": "a"}), centres.assign(**{"class": "b"})])
    with pytest.raises(InputError, match="one class"):
        pooled_forest_figure(two, pooled, "O:E")
    with pytest.raises(InputError, match="no row"):
        pooled_forest_figure(centres, pooled[pooled["metric"] != "AUROC"], "AUROC")
