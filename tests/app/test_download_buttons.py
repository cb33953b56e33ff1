"""Every download button of the app leaves the page alone when clicked (``on_click="ignore"``)
and is given its bytes, not a callable that builds them when clicked (a deferred download).

A download that reruns the page (Streamlit's default) gives the report and JSON buttons new
deferred files, so that a click on one of them just after it found its old file gone: "Deferred
file ... not found" in the server's log, and no download (issue 27: 4 of about 10 tries).
A deferred download's generated file belongs to no session, and any two script runs on the server
between the click and the browser's fetch delete it (calibdash_app/downloads.py says how).
"""

import ast
from pathlib import Path

import calibdash_app

APP = Path(calibdash_app.__file__).resolve().parent


def rerunning_downloads(source):
    """Lines of the ``download_button`` calls in ``source`` that do not pass ``on_click="ignore"``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "download_button":
            on_click = [kw.value for kw in node.keywords if kw.arg == "on_click"]
            if not (on_click and isinstance(on_click[0], ast.Constant) and on_click[0].value == "ignore"):
                lines.append(node.lineno)
    return lines


def test_the_scan_finds_a_download_that_reruns():
    source = '''
st.download_button("A", b"", "a.csv", key="a")
c1.download_button("B", b"", "b.csv", key="b", on_click="ignore")
c2.download_button("C", b"", "c.csv", key="c", on_click="rerun")
'''
    assert rerunning_downloads(source) == [2, 4]


def test_every_download_button_of_the_app_ignores_its_click():
    found = {str(p.relative_to(APP)): lines for p in sorted(APP.rglob("*.py")) if (lines := rerunning_downloads(p.read_text()))}
    assert not found, f'pass on_click="ignore" to these download buttons: {found}'


def deferred_downloads(source):
    """Lines of the ``download_button`` calls in ``source`` whose data is a lambda (built when clicked)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "download_button":
            data = node.args[1:2] + [kw.value for kw in node.keywords if kw.arg == "data"]
            if any(isinstance(d, ast.Lambda) for d in data):
                lines.append(node.lineno)
    return lines


def test_the_scan_finds_a_deferred_download():
    source = '''
st.download_button("A", lambda: b"", "a.csv", on_click="ignore")
st.download_button("B", data, "b.csv", on_click="ignore")
st.download_button("C", data=lambda: b"", file_name="c.csv", on_click="ignore")
'''
    assert deferred_downloads(source) == [2, 4]


def test_every_download_button_of_the_app_has_its_bytes():
    found = {str(p.relative_to(APP)): lines for p in sorted(APP.rglob("*.py")) if (lines := deferred_downloads(p.read_text()))}
    assert not found, f"give these download buttons their bytes (calibdash_app.downloads.built): {found}"
