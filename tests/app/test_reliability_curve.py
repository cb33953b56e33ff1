"""The continuous reliability curve on the Reliability page (AppTest, no browser)."""

import json

import numpy as np
import pytest

from calibdash.display.reliability import MIN_EFFECTIVE_ROWS

from .test_app import at, go, no_exception  # noqa: F401 - ``at`` is the fixture of the first visit

pytestmark = pytest.mark.slow


def test_curve_is_shown_beside_the_binned_diagram(at):  # noqa: F811
    go(at, "calibdash_app/app_pages/reliability.py")
    charts = at.get("plotly_chart")
    assert len(charts) == 2  # top-label: the binned diagram and the continuous curve
    names = [[tr.get("name") for tr in json.loads(c.proto.spec)["data"]] for c in charts]
    assert any("observed frequency" in n for n in names)  # the binned diagram is still there
    curve_traces = [n for n in names if "estimated P(correct | confidence)" in n]
    assert len(curve_traces) == 1 and "bootstrap band" in curve_traces[0] and "density of predictions" in curve_traces[0]
    captions = " ".join(c.value for c in at.caption)
    assert "15-bin ECE of this diagram (L1, all rows)" in captions and "KDE ECE" in captions and "Posocco & Bonnefoy" in captions
    # the curve of the current data set is kept for reruns with the same resample count
    key, curve = at.session_state["page_memo"]["continuous curve"]
    assert key[1:] == (200, "auto")
    seen = curve["rows"] >= MIN_EFFECTIVE_ROWS  # elsewhere no estimate: a gap
    assert seen.any() and np.all(curve.loc[seen, "lower"] <= curve.loc[seen, "accuracy"])
    assert curve.loc[~seen, "accuracy"].isna().all()


def test_no_band_without_resamples_and_other_notions_still_render(at):  # noqa: F811
    go(at, "calibdash_app/app_pages/reliability.py")
    at.number_input(key="rel__boot").set_value(0).run()
    no_exception(at)
    charts = at.get("plotly_chart")
    names = [[tr.get("name") for tr in json.loads(c.proto.spec)["data"]] for c in charts]
    curve_traces = [n for n in names if "estimated P(correct | confidence)" in n]
    assert len(curve_traces) == 1 and "bootstrap band" not in curve_traces[0]
    key, _ = at.session_state["page_memo"]["continuous curve"]
    assert key[1] == 0
    at.select_slider(key="rel__curve_bw").set_value(0.02).run()
    no_exception(at)
    key, curve = at.session_state["page_memo"]["continuous curve"]
    assert key[1:] == (0, 0.02) and curve.attrs["bandwidth"] == 0.02
    assert "bandwidth 0.02" in " ".join(c.value for c in at.caption)
    at.radio(key="view__notion").set_value("canonical").run()
    no_exception(at)
    assert len(at.get("plotly_chart")) == 3  # binned diagram, continuous curve, per-class panels


def test_the_views_are_kept_across_reruns_and_made_again_when_their_settings_change(at, monkeypatch):  # noqa: F811
    # each view is a function of the data, the run's result and the page's settings: an
    # interaction that changes none of them (another widget, the same page again) reuses it
    from calibdash.display import views

    made = []
    for name in ("top_label_view", "per_class_view"):
        real = getattr(views, name)
        monkeypatch.setattr(views, name, lambda *a, _real=real, _name=name, **k: made.append(_name) or _real(*a, **k))
    go(at, "calibdash_app/app_pages/reliability.py")
    at.radio(key="view__notion").set_value("canonical").run()
    no_exception(at)
    assert made.count("per_class_view") == 1
    before = len(made)
    at.select_slider(key="rel__curve_bw").set_value(0.05).run()  # the curve's setting only
    go(at, "calibdash_app/app_pages/reliability.py")
    no_exception(at)
    assert len(made) == before, made[before:]
    at.slider(key="rel__bins").set_value(20).run()  # both views depend on the bins
    no_exception(at)
    assert made[before:] == ["top_label_view", "per_class_view"]
    top, per_class = (at.session_state["page_memo"][slot] for slot in ("top-label", "per-class"))
    assert ("n_bins", 20) in top[0] and ("n_bins", 20) in per_class[0]
    assert len(top[1].table) == 20 and all(len(t) == 20 for t in per_class[1].tables.values())
