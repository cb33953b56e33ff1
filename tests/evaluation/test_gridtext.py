"""Editable grids: text to values and back."""

import pytest

from calibdash.evaluation.config import resolve
from calibdash.evaluation.gridtext import format_grid, parse_grid_text


def test_parse_numbers_and_words():
    assert parse_grid_text("5, 10,20", "n_bins") == [5, 10, 20]
    assert parse_grid_text("1e-3; 0.1 1", "bandwidth") == [1e-3, 0.1, 1.0]
    assert parse_grid_text("fit, 1.5", "temperature") == ["fit", 1.5]
    assert parse_grid_text("10, 10, 5", "n_bins") == [10, 5]  # duplicates dropped, order kept


@pytest.mark.parametrize(
    "text, param, match",
    [
        ("", "lam", "at least one"),
        ("abc", "lam", "'abc' is not a number"),
        ("fit", "lam", "not a number"),
        ("-1", "bandwidth", "positive"),
        ("0", "lam", "positive"),
        ("nan", "lam", "positive"),
        ("2.5", "n_bins", "whole number"),
    ],
)
def test_parse_errors_are_readable(text, param, match):
    with pytest.raises(ValueError, match=match):
        parse_grid_text(text, param)


@pytest.mark.parametrize("notion", ["top-label", "canonical", "classwise"])
def test_default_grids_round_trip_closely(notion):
    names, grids = resolve(notion)
    for name in names:
        for param, values in grids[name].items():
            if param == "strategy":
                continue
            parsed = parse_grid_text(format_grid(values), param)
            if param == "temperature":
                assert parsed == values
            else:
                assert parsed == pytest.approx(values, rel=1e-5)


def test_line_breaks_separate_values_as_in_the_apps_text_areas():
    assert parse_grid_text("1e-3,\n0.01\t0.1\n\n", "bandwidth") == [0.001, 0.01, 0.1]
