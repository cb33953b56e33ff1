"""Figures on the pages read right (issue 16), through Streamlit's AppTest (no browser)."""

import base64
import json

import numpy as np
import pytest

from .test_compare_learn import LEARN, app, go, no_exception  # noqa: F401 - ``app`` is the module's session fixture

pytestmark = pytest.mark.slow


def values(array):
    """A plotly JSON array: a list, or a typed array {"dtype", "bdata" (base64)}."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    return np.asarray(array)


def test_learn_notion_switch_keeps_the_estimators_and_says_why(app):  # noqa: F811
    at = go(app, LEARN)
    at.slider(key="view__lab_repeats").set_value(2)
    at.multiselect(key="view__lab_ns").set_value([250]).run()
    no_exception(at)
    assert at.multiselect(key="view__lab_estimators").value == ["bins", "kde", "temperature"]
    at.radio(key="view__lab_notion").set_value("canonical").run()
    no_exception(at)
    assert at.multiselect(key="view__lab_estimators").value == ["kde", "temperature"]
    assert any("canonical" in c.value and "bins" in c.value for c in at.caption)
    at.radio(key="view__lab_notion").set_value("top-label").run()
    no_exception(at)
    assert at.multiselect(key="view__lab_estimators").value == ["bins", "kde", "temperature"]  # back, not lost
    assert not any("left out here" in c.value for c in at.caption)
    # a change made under one notion is kept under the other
    at.radio(key="view__lab_notion").set_value("canonical").run()
    at.multiselect(key="view__lab_estimators").set_value(["kde"]).run()
    at.radio(key="view__lab_notion").set_value("top-label").run()
    no_exception(at)
    assert at.multiselect(key="view__lab_estimators").value == ["kde", "bins"]


def test_learn_table_and_chart_share_their_unit(app):  # noqa: F811
    at = go(app, LEARN)
    at.slider(key="view__lab_repeats").set_value(2)
    at.multiselect(key="view__lab_ns").set_value([250, 500]).run()
    no_exception(at)
    table = at.dataframe[0].value
    spec = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    (figure,) = [s for s in spec if "sample size n" in json.dumps(s["layout"])]
    assert "percentage points" in json.dumps(figure["layout"])
    for trace in figure["data"]:
        if trace.get("mode") == "lines+markers":
            rows = table[table["estimator"] == trace["name"]].sort_values("n")
            np.testing.assert_allclose(values(trace["y"]), rows["mean"])  # the same numbers, in points
