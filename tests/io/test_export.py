"""CSV text safe to open in a spreadsheet, and files written whole (calibdash.io.export)."""

import io
import os

import numpy as np
import pandas as pd
import pytest

from calibdash.io.export import FORMULA_PREFIXES, csv_text, neutralise, write_file


def test_text_that_a_spreadsheet_would_run_is_neutralised():
    cells = ['=HYPERLINK("http://127.0.0.1:9/x","click")', "@SUM(A1:A9)", "+1+1", "-2+3", "\tTAB", "\rCR", "plain", ""]
    frame = pd.DataFrame({"model": cells, "n": range(len(cells))})
    back = pd.read_csv(io.StringIO(csv_text(frame)), keep_default_na=False)
    assert list(back["model"]) == ["'" + c if c[:1] in FORMULA_PREFIXES else c for c in cells]
    assert list(back["n"]) == list(range(len(cells)))


def test_numbers_stay_numbers():
    frame = pd.DataFrame({"x": [-0.5, -1e-300, 2.0, np.nan], "k": [-1, 0, 1, 2], "b": [True, False, True, False],
                          "mixed": [-3, "fit", 1.5, None]})
    text = csv_text(frame)
    assert text == frame.to_csv(index=False, lineterminator="\r\n")  # no text here starts with a formula character
    assert neutralise(-0.5) == -0.5 and neutralise("-0.5") == "'-0.5"


def test_column_names_are_neutralised_too_and_may_repeat():
    frame = pd.DataFrame([[1, "=x", 3]], columns=["a", "=b", "a"])
    assert csv_text(frame).splitlines() == ["a,'=b,a", "1,'=x,3"]
    assert csv_text(pd.DataFrame()) == pd.DataFrame().to_csv(index=False, lineterminator="\r\n")


def test_a_line_break_in_a_cell_cannot_start_a_row():
    frame = pd.DataFrame({"model": ["a\r=cmd()", "b\n@SUM(A1)"], "x": [1.0, -2.0]})
    text = csv_text(frame)
    assert text == 'model,x\r\n"a\r=cmd()",1.0\r\n"b\n@SUM(A1)",-2.0\r\n'
    assert pd.read_csv(io.StringIO(text, newline="")).equals(frame)


def test_write_file_replaces_a_link_without_following_it(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep")
    (tmp_path / "out.csv").symlink_to(target)
    write_file(tmp_path / "out.csv", "new")
    assert target.read_text() == "keep" and not (tmp_path / "out.csv").is_symlink()
    assert (tmp_path / "out.csv").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "precious.txt"]


def test_write_file_leaves_nothing_behind_when_it_fails(tmp_path):
    (tmp_path / "report.html").mkdir()  # os.replace cannot put a file there
    with pytest.raises(OSError):
        write_file(tmp_path / "report.html", b"x" * 100_000)
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_write_file_respects_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_file(tmp_path / "a.txt", "a")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
