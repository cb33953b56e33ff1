"""Advice on a value at the edge of its grid (calibdash.evaluation.advice): one set of facts, worded per reader."""

import pytest

import calibdash as cd
from calibdash.evaluation.advice import GridEdge
from calibdash.evaluation.gridtext import parse_grid_text
from calibdash.evaluation.result import EvaluationResult
from calibdash.lab import demo

FALLING = GridEdge("bins", "n_bins", 5, "low", (5, 10, 20, 40), False)
FLAT = GridEdge("ukkr", "lam", 1e-10, "low", (1e-10, 1e-9, 1e-8, 1.0), True)


def test_the_python_wording_is_the_results_warning():
    assert FALLING.text("python") == ("bins: the selected n_bins = 5 lies at the low edge of its grid (5 to 40) and the risk is "
                                      "still falling there, so a smaller value may fit better: add smaller values of n_bins "
                                      "to the grid of bins.")
    assert FLAT.text("python").startswith("ukkr: the selected lam = 1e-10 lies at the low edge of its grid (1e-10 to 1), but "
                                          "the risk is flat there")


def test_the_app_wording_names_the_parameter_in_words_not_as_python():
    text = FALLING.text("app")
    assert "number of bins" in text and "smallest value tried" in text and "smaller value may fit better" in text
    assert "n_bins" not in text and "=" not in text and "grids" not in text
    assert "nothing to change" in FLAT.text("app") and "ridge lambda" in FLAT.text("app")
    with pytest.raises(ValueError, match="audience"):
        FALLING.text("html")


def test_the_extended_grid_goes_beyond_the_edge_and_parses_back():
    assert FALLING.extended_grid() == [1, 2, 5, 10, 20, 40]  # whole numbers, halving, never below 1
    high = GridEdge("kde", "bandwidth", 0.5, "high", (0.05, 0.2, 0.5), False)
    assert high.extended_grid() == pytest.approx([0.05, 0.2, 0.5, 1.25, 3.125, 7.8125])
    low = GridEdge("kkkr", "lam", 1e-9, "low", (1e-9, 1e-8, 1e-7), False)
    assert low.extended_grid() == pytest.approx([1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7])
    from calibdash.evaluation.gridtext import format_grid

    assert parse_grid_text(format_grid(high.extended_grid()), "bandwidth") == pytest.approx(high.extended_grid())


@pytest.mark.slow
def test_a_result_carries_its_edges_as_facts_and_their_python_wording_as_warnings():
    res = cd.evaluate(demo.load_demo("digits: naive Bayes"), notion="top-label", estimators=["bins", "kde"],
                      grids={"bins": {"n_bins": [5, 10, 20]}})
    assert res.grid_edges and res.warnings == [edge.text("python") for edge in res.grid_edges]
    edge = next(e for e in res.grid_edges if e.estimator == "bins")
    assert (edge.param, edge.value, edge.grid) == ("n_bins", res.summary.set_index("estimator").loc["bins", "params"]["n_bins"],
                                                   (5, 10, 20))
    again = EvaluationResult.from_json(res.to_json())
    assert again.grid_edges == res.grid_edges and again.warnings == res.warnings
    assert GridEdge.from_dict(edge.to_dict()) == edge
