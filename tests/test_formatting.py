"""Numbers as text (calibdash.formatting): counts as integers, measured values to a few significant digits."""

import numpy as np

from calibdash.formatting import format_count, format_number, format_significant


def test_counts_are_integers_with_thousands_separators():
    # issue 27: the reports wrote "2.52e+03"
    assert format_count(2520) == "2,520" and format_count(np.float64(2520.0)) == "2,520" and format_count(np.int64(7)) == "7"
    assert format_count(float("nan")) == "" and format_count(None) == ""


def test_small_and_large_values_keep_a_sensible_precision():
    # issue 27: the reports wrote "0.0005102"
    assert format_significant(0.00051020) == "0.00051" and format_significant(0.00051020, 2) == "0.00051"
    assert format_significant(0.1234) == "0.123" and format_significant(-0.01234) == "-0.0123"
    assert format_significant(2520.43) == "2,520" and format_significant(12.345) == "12.3" and format_significant(0.5) == "0.5"
    assert format_significant(1.234e-6) == "1.23e-06" and format_significant(1.234e7) == "1.23e+07"
    assert format_significant(0) == "0" and format_significant(-0.0) == "0" and format_significant(float("nan")) == ""
    assert format_significant(np.inf) == "inf"


def test_the_display_and_the_verdicts_share_one_formatter():
    # the known duplicate: calibdash.clinical.verdicts had a copy of calibdash.display.tables.format_number
    from calibdash.clinical import verdicts
    from calibdash.display import tables

    assert tables.format_number is format_number
    assert not hasattr(verdicts, "_format_number")
    assert verdicts.format_metric("O:E", float("nan")) == "" and verdicts.format_metric("O:E", -0.001) == "0.00"
