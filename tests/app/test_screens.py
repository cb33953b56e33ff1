"""What the tester saw on screen (issue 16), through AppTest: the tables' numbers with their sign
and no literal "None", grid-edge advice in words with a button that prepares the extended grid
on Evaluate, the grid boxes as text areas, and the Compare page's report download."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from calibdash.evaluation.gridtext import format_grid
from calibdash.formatting import format_p

from .conftest import go, no_exception

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def at():
    app = AppTest.from_file(APP, default_timeout=180).run()
    no_exception(app)
    return app


def shown_result(at, notion):
    """The result of ``notion`` the Results page shows: of the latest data analysed."""
    return [r for r in at.session_state["results"].values() if r.config["call"]["notion"] == notion][-1]


def test_literature_and_summary_tables_show_signed_numbers_and_no_none(at):
    go(at, "calibdash_app/app_pages/results.py")
    at.radio(key="view__notion").set_value("canonical").run()
    res = shown_result(at, "canonical")
    # an SKCE below 0, as on nearly calibrated data (the unbiased estimator can go negative)
    skce = res.others.index[res.others["estimator"] == "skce"][0]
    res.others.loc[skce, ["estimate", "estimate_se", "ci_low", "ci_high"]] = [-0.00047981234, 0.00078123, -0.0020111, 0.0010516]
    at.run()
    no_exception(at)
    # one table per quantity, each in its own unit (issue 27): the SKCE on its own scale, with its p-value
    (others,) = [d.value for d in at.dataframe if "skce" in set(d.value.get("estimator", []))]
    row = others[others["estimator"] == "skce"].iloc[0]
    assert (row["estimate"], row["estimate_se"], row["ci_low"], row["ci_high"]) == ("-0.0004798", "0.00078", "-0.002011", "0.001052")
    skce_rows = res.others[res.others["quantity"] == "squared kernel calibration error"]
    assert list(others["p_value"]) == [format_p(p) for p in skce_rows["p_value"]]  # as medicine writes it, as the reports
    # the quantities without a test have no p-value column
    errors = [d.value for d in at.dataframe if set(d.value.get("estimator", [])) & {"ece-15-bins", "variational-brier-temperature"}]
    assert len(errors) == 2 and all("p_value" not in t for t in errors)
    (summary,) = [d.value for d in at.dataframe if "risk_diff" in d.value.columns]
    for table in (others, summary, *errors):
        cells = table.astype(str).to_numpy()
        assert "None" not in cells and "nan" not in cells


def test_grid_edge_advice_in_words_and_its_button_prepares_the_extended_grid(at):
    go(at, "calibdash_app/app_pages/data.py")
    at.selectbox(key="demo_name").set_value("digits: naive Bayes").run()
    go(at, "calibdash_app/app_pages/results.py")
    res = shown_result(at, at.radio(key="view__notion").value)
    (edge,) = [e for e in res.grid_edges if e.estimator == "bins" and not e.flat]
    verdict_text = " ".join(m.value for m in at.markdown)
    assert edge.text("app") in verdict_text and edge.text("python") not in verdict_text and "n_bins =" not in verdict_text
    grid = format_grid(edge.extended_grid())
    button = at.button(key=f"extend__top-label__{edge.estimator}")
    assert button.label == f"Extend the grid of bins to {grid} and run again"
    button.click().run()
    no_exception(at)
    # on Evaluate, the extended grid in its box, ready to run (the run is the user's)
    assert [t.value for t in at.title] == ["Evaluate"]
    assert at.text_area(key="cfg__grid__top-label__bins").value == grid
    assert "top-label" in at.session_state["cfg__notions"] and "bins" in at.session_state["cfg__est__top-label"]
    assert not at.success  # nothing was run


def test_compare_page_offers_its_html_report(at):
    go(at, "calibdash_app/app_pages/compare.py")
    keys = [b.key for b in at.get("download_button")]
    assert keys == ["dl_cmp_models", "dl_cmp_pairs", "dl_cmp_report"]
