"""Every download button of the app leaves the page alone when clicked (``on_click="ignore"``).

A download that reruns the page (Streamlit's default) gives the report and JSON buttons new
deferred files, so that a click on one of them just after it found its old file gone: "Deferred
file ... not found" in the server's log, and no download (issue 27: 4 of about 10 tries).
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
