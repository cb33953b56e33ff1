"""Numbers as text (calibdash.formatting): counts as integers, measured values to a few significant digits."""

import numpy as np

from calibdash.formatting import format_count, format_number, format_p, format_significant, p_statement


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


def test_p_values_as_medicine_writes_them_and_never_rounded_up_to_alpha():
    from calibdash.clinical import verdicts

    assert [format_p(p) for p in (0.0004, 0.001, 0.01234, 0.5, None, float("nan"))] == ["< 0.001", "0.001", "0.012",
                                                                                          "0.500", "", ""]
    # just below 0.05 a sentence says "rejects at the 5% level": "0.050" would contradict it
    assert format_p(0.0496) == "0.0496" and format_p(0.04996) == "0.04996" and format_p(0.0504) == "0.050"
    assert all(float(format_p(p)) < 0.05 for p in np.linspace(0.0401, 0.049999, 200))
    assert p_statement(0.0002) == "p < 0.001" and p_statement(0.034) == "p = 0.034" and p_statement(None) == ""
    assert verdicts.format_p is format_p  # one function, re-exported for the verdicts' users


def test_the_app_and_the_verdicts_write_p_values_with_the_one_function():
    # issue 27 follow-up: "p < 0.001" was written inline in several places
    import re
    from pathlib import Path

    import calibdash

    root = Path(calibdash.__file__).resolve().parents[1]
    inline = [f"{p.relative_to(root)}:{i}" for folder in ("calibdash", "calibdash_app") for p in sorted((root / folder).rglob("*.py"))
              for i, line in enumerate(p.read_text().splitlines(), 1)
              if re.search(r"""["']p? ?< 0\.001["'] if""", line) and p.name not in ("formatting.py", "skce.py")]
    assert not inline, inline
