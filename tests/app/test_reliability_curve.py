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
    (key,) = at.session_state["continuous_curve_cache"].keys()
    assert key[1:] == (200, "auto")
    curve = at.session_state["continuous_curve_cache"][key]
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
    (key,) = at.session_state["continuous_curve_cache"].keys()
    assert key[1] == 0
    at.select_slider(key="rel__curve_bw").set_value(0.02).run()
    no_exception(at)
    (key,) = at.session_state["continuous_curve_cache"].keys()
    assert key[1:] == (0, 0.02)
    assert at.session_state["continuous_curve_cache"][key].attrs["bandwidth"] == 0.02
    assert "bandwidth 0.02" in " ".join(c.value for c in at.caption)
    at.radio(key="view__notion").set_value("canonical").run()
    no_exception(at)
    assert len(at.get("plotly_chart")) == 3  # binned diagram, continuous curve, per-class panels
