"""Tables as the app shows them (calibdash.display.tables): numbers as text with their sign, missing values blank."""

import numpy as np
import pandas as pd

from calibdash.display.tables import format_number, formatted, text_width


def test_format_number_keeps_the_sign_and_leaves_missing_values_blank():
    assert format_number(-0.00047981234, ".4g") == "-0.0004798"
    assert format_number(0.00078123, ".2g") == "0.00078"
    assert format_number(np.float64(-2.5), ".3f") == "-2.500"
    assert format_number(float("nan"), ".4g") == "" and format_number(None, ".4g") == ""
    assert format_number(float("-inf"), ".4g") == "-inf" and format_number(np.inf, ".4g") == "inf"
    assert format_number("text", ".4g") == "text" and format_number(True, ".4g") == "True"


def test_formatted_turns_every_number_into_text_and_no_cell_reads_none():
    df = pd.DataFrame({"estimator": ["skce", "ece-15-bins"], "estimate": [-0.00047981234, 0.1977],
                       "p_value": [0.71234, np.nan], "details": ["x", None], "tied": [True, False], "n": [3, 4],
                       "other": [1.23456789, np.nan]})
    out = formatted(df, {"estimate": ".4g", "p_value": ".3g"})
    assert list(out["estimate"]) == ["-0.0004798", "0.1977"]
    assert list(out["p_value"]) == ["0.712", ""] and list(out["details"]) == ["x", ""]
    assert list(out["other"]) == ["1.235", ""]  # the default format for float columns not named
    assert list(out["tied"]) == [True, False] and list(out["n"]) == [3, 4]  # checkboxes and counts unchanged
    assert "None" not in out.astype(str).to_numpy() and "nan" not in out.astype(str).to_numpy()
    assert df["estimate"].iloc[0] == -0.00047981234  # the input is not changed


def test_text_width_fits_the_longest_text_or_the_label():
    assert text_width(["-0.0004798", "0.1977"], "estimate") > text_width(["0.1977"], "estimate")
    assert text_width([], "a much longer label") == text_width(["x"], "a much longer label")
