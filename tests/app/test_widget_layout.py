"""Widgets laid out so that their contents show: a scan of the app's pages.

A multiselect placed directly in a column keeps its chosen values on one row that scrolls
sideways (Streamlit's default), which clipped Learn's sample sizes (issue 27); ``wrap=True``
lets them wrap onto more rows.
"""

import ast
from pathlib import Path

import calibdash_app

PAGES = Path(calibdash_app.__file__).resolve().parent / "app_pages"


def column_multiselects_without_wrap(source):
    """Lines of the multiselects called on something other than ``st`` (a column) without ``wrap=True``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "multiselect"):
            continue
        on_st = isinstance(node.func.value, ast.Name) and node.func.value.id == "st"
        wraps = any(k.arg == "wrap" and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords)
        if not on_st and not wraps:
            out.append(node.lineno)
    return out


def test_the_scan_finds_a_column_multiselect_without_wrap():
    assert column_multiselects_without_wrap("c1.multiselect('a', [1], key='k')\nst.multiselect('b', [1])\n") == [1]
    assert column_multiselects_without_wrap("c1.multiselect('a', [1], wrap=True)\n") == []


def test_every_multiselect_in_a_column_wraps():
    found = {p.name: column_multiselects_without_wrap(p.read_text()) for p in sorted(PAGES.glob("*.py"))}
    assert sum(1 for p in PAGES.glob("*.py") if ".multiselect(" in p.read_text()) >= 4  # the scan sees the pages
    assert not any(found.values()), {k: v for k, v in found.items() if v}
