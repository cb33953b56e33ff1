"""Issue 27, acceptance: one unit per quantity, said in the header.

Every page is run through AppTest; every table's column headers (their column_config labels)
and every figure's axis and panel titles are scanned. A header or title that names a
calibration-error quantity (a calibration error, ECE, ICI, E50, E90, Emax, a difference of
errors) must say percentage points; a generic estimate column ("estimate", "95% low", "s.e.")
must say its unit, points or a quantity's own declared scale, or stand in a table whose rows
name theirs (a ``unit`` column). Then the numbers: known results appear as 100 times the
API's fractions where the header says points.
"""

import json
import re

import numpy as np
import pytest

from calibdash.clinical.verdicts import METRIC_UNITS, POINTS_METRICS
from calibdash.display.clinical import RECALIBRATION_SCALE
from calibdash.display.units import PERCENTAGE_POINTS, QUANTITY_UNITS

from .conftest import first_visit, go, no_exception
from .test_figures import values

pytestmark = pytest.mark.slow

PAGES = "calibdash_app/app_pages/"

# Names of a calibration-error quantity: its header must say percentage points.
ERROR_WORDS = re.compile(r"calibration error|\berrors?\b of [ab]\b|difference of (calibration )?errors|\bECE\b"
                         r"|\b(ICI|E50|E90|Emax)\b")
# A column of estimates whatever they estimate: its header must say in what.
GENERIC = re.compile(r"^(pooled )?estimate\b|^mean estimate\b|^95% (low|high|CI)\b|^s\.e\.")
POINTS = re.compile(r"\bpoints\b")
# The declared scales of quantities that are not calibration errors in points.
OWN_SCALES = {u for u in QUANTITY_UNITS.values() if u != PERCENTAGE_POINTS} | {RECALIBRATION_SCALE}


def headers(element):
    """{column: the header shown}: the column_config label, else the column's name."""
    config = json.loads(element.proto.columns or "{}")
    return {col: (config.get(col) or {}).get("label") or str(col) for col in element.value.columns}


def own_scale(text):
    return any(f"({u})" in text or f"{u})" in text for u in OWN_SCALES)


def check_tables(at, page):
    """Every table of the page: the unit rule above. Returns [(headers, DataFrame)] in page order."""
    seen = []
    for element in at.dataframe:
        shown, df = headers(element), element.value
        for h in shown.values():
            if ERROR_WORDS.search(h):
                assert POINTS.search(h), f"{page}: the header {h!r} names a calibration error without saying points"
            elif GENERIC.search(h) and "unit" not in df.columns:
                assert POINTS.search(h) or own_scale(h), f"{page}: the header {h!r} does not say its unit"
        if "unit" in df.columns and "metric" in df.columns:
            for _, row in df.iterrows():
                want = PERCENTAGE_POINTS if row["metric"] in POINTS_METRICS else METRIC_UNITS[row["metric"]]
                assert row["unit"] == want, f"{page}: {row['metric']} in {row['unit']!r}"
        seen.append((list(shown.values()), df))
    return seen


def figure_texts(spec):
    layout = spec["layout"]
    texts = [(v.get("title") or {}).get("text") for k, v in layout.items()
             if re.match(r"[xy]axis\d*$", k) and isinstance(v, dict)]
    texts += [a.get("text") for a in layout.get("annotations", [])]
    texts.append((layout.get("title") or {}).get("text"))
    return [t for t in texts if t]


def check_figures(at, page):
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    for spec in specs:
        for text in figure_texts(spec):
            if ERROR_WORDS.search(text):
                assert "percentage points" in text or own_scale(text), f"{page}: the figure's {text!r} gives no unit"
    return specs


def table_with(seen, *names):
    """The first table whose headers include ``names``."""
    return next(df for shown, df in seen if all(n in shown for n in names))


@pytest.fixture(scope="module")
def at():
    return first_visit()


def test_results_page_one_unit_per_quantity(at):
    go(at, PAGES + "results.py")
    for notion in ("top-label", "canonical"):
        at.radio(key="view__notion").set_value(notion).run()
        no_exception(at)
        res = [r for r in at.session_state["results"].values() if r.config["call"]["notion"] == notion][-1]
        seen = check_tables(at, f"Results ({notion})")
        summary = table_with(seen, "calibration error (points)", "95% low (points)")
        best = summary.iloc[0]
        assert best["estimator"] == res.best["estimator"]
        assert (best["estimate"], best["ci_low"], best["ci_high"]) == tuple(
            f"{100 * res.best[c]:.2f}" for c in ("estimate", "ci_low", "ci_high"))
        assert list(summary.columns[:4]) == ["estimator", "estimate", "ci_low", "ci_high"]  # first, pinned
        config = json.loads(next(d for d in at.dataframe if "risk_diff" in d.value.columns).proto.columns)
        assert config["estimator"]["pinned"] and config["estimate"]["pinned"]
        # the paper's 100 sqrt(risk) says it is no estimate of the error (it read like one, issue 27)
        assert "not an error" in headers(next(d for d in at.dataframe if "risk_diff" in d.value.columns))["sqrt_risk_x100"]
        # the literature's tables: each in its quantity's unit, the numbers scaled to it
        literature = [d for d in at.dataframe if "label" in d.value.columns]
        assert len(literature) == res.others["quantity"].nunique()
        others = res.others.set_index("estimator")
        for element in literature:
            df, shown = element.value, headers(element)
            for _, row in df.iterrows():
                q = others.loc[row["estimator"], "quantity"]
                unit = "points" if QUANTITY_UNITS[q] == PERCENTAGE_POINTS else QUANTITY_UNITS[q]
                assert shown["estimate"] == f"estimate ({unit})"
                scale = 100 if unit == "points" else 1  # written out: the display's own scale would hide a slip
                assert float(row["estimate"]) == pytest.approx(scale * others.loc[row["estimator"], "estimate"],
                                                               rel=1e-3, abs=6e-3)
        assert {others.loc[e, "quantity"] for d in literature for e in d.value["estimator"]} >= {
            "calibration error (L2)", "L1 calibration error"}
        # the figures: the forest plot's estimates in points
        specs = check_figures(at, f"Results ({notion})")
        (forest,) = [s for s in specs if "estimated calibration error" in json.dumps(s["layout"])]
        s = res.summary.sort_values("val_risk", ascending=False)
        np.testing.assert_allclose(values(forest["data"][0]["x"]), 100 * s["estimate"], rtol=1e-12)
        # ... and the panels of every estimate by quantity: the ECE in points as its panel title says
        (panels,) = [s for s in specs if "L1 calibration error (percentage points)" in json.dumps(s["layout"])]
        (ece,) = [t for t in panels["data"] if "ece-15-bins" in t["y"]]
        i = list(ece["y"]).index("ece-15-bins")
        assert values(ece["x"])[i] == pytest.approx(100 * others.loc["ece-15-bins", "estimate"], rel=1e-12)


def test_compare_page_one_unit_per_quantity(at):
    go(at, PAGES + "compare.py")
    (res,) = list(at.session_state["cmp_results"].values())[-1:]
    seen = check_tables(at, "Compare")
    models = table_with(seen, "calibration error (points)", "Brier")
    np.testing.assert_allclose(models["estimate"], 100 * res.models["estimate"], rtol=1e-12)
    pairs = table_with(seen, "difference of errors (points)")
    errors = res.error_differences()
    np.testing.assert_allclose(pairs["error_difference"], 100 * errors["error_difference"], rtol=1e-12)
    specs = check_figures(at, "Compare")
    (chart,) = [s for s in specs if "difference of calibration errors" in json.dumps(s["layout"])]
    np.testing.assert_allclose(values(chart["data"][0]["x"]), 100 * errors["error_difference"], rtol=1e-12)
    (chart,) = [s for s in specs if "Brier score" in json.dumps(s["layout"])]
    np.testing.assert_allclose(values(chart["data"][0]["x"]), 100 * res.models["estimate"], rtol=1e-12)


def test_validate_page_one_unit_per_quantity(at):
    go(at, PAGES + "validate.py")
    (v,) = list(at.session_state["val_results"].values())[-1:]
    seen = check_tables(at, "Validate")
    metrics = table_with(seen, "metric", "unit", "estimate").set_index("metric")  # the whole data's
    cls = at.selectbox(key="view__val_class").value
    for name in POINTS_METRICS:
        assert metrics.loc[name, "estimate"] == f"{100 * v.metric(name, cls=cls)['estimate']:.1f}"
    check_figures(at, "Validate")


def test_learn_and_reliability_pages_one_unit_per_quantity(at):
    go(at, PAGES + "reliability.py")
    check_tables(at, "Reliability")
    check_figures(at, "Reliability")
    go(at, PAGES + "learn.py")
    at.slider(key="view__lab_repeats").set_value(2)
    at.multiselect(key="view__lab_ns").set_value([250]).run()
    no_exception(at)
    seen = check_tables(at, "Learn")
    assert table_with(seen, "mean estimate (points)") is not None
    check_figures(at, "Learn")

