"""Issue 18 through Streamlit's AppTest: text from a user's file reaches every page as text.

AppTest sees the markdown source of each element: a name must appear in it only inside a
code span (calibdash.display.text.code), and the figures must hold it escaped for plotly. What
chromium renders from that is checked in tests/e2e/test_hostile_browser.py.
"""

import json
import re

import pandas as pd
import pytest

from calibdash.display.text import code, plot_text

from ..hostile import CELL, CLASSES, FILE_NAMES, hostile_csv
from .conftest import first_visit, go, no_exception

pytestmark = pytest.mark.slow

# What any of the hostile strings would start rendering with, were it read as markdown or HTML.
RAW = ["](http", "](hostile", "$\\href", "<img", "<a href", "<b>"]


def outside_code(md):
    """``md`` with its code spans (any fence length) removed."""
    return re.sub(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", "", md, flags=re.S)


def shown_text(at):
    """Every markdown-rendering element's source: main area and sidebar."""
    kinds = ["markdown", "caption", "warning", "error", "info", "success", "subheader", "title"]
    return [e.value for kind in kinds for e in getattr(at, kind)] + [e.value for e in at.sidebar.markdown]


def assert_inert(at):
    for md in shown_text(at):
        rest = outside_code(md)
        assert not any(r in rest for r in RAW), md


def figure_strings(at):
    out = []

    def walk(x):
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for chart in at.get("plotly_chart"):
        walk(json.loads(chart.proto.spec))
    return out


def upload(at, content, name):
    go(at, "calibdash_app/app_pages/data.py")
    at.radio(key="source").set_value("upload").run()
    at.file_uploader(key="upload_predictions").set_value((name, content, "text/csv"))
    at.run()
    no_exception(at)
    return at


@pytest.fixture(scope="module")
def at():
    return first_visit()


def test_names_from_the_file_are_code_on_every_page(at):
    upload(at, hostile_csv(), FILE_NAMES[0])
    assert f"In use: {code(FILE_NAMES[0])}" in [h.value for h in at.subheader]
    (absent,) = [w.value for w in at.warning if "never occurs" in w.value]
    assert code(CLASSES[0]) in absent
    assert code(FILE_NAMES[0]) in " ".join(m.value for m in at.sidebar.markdown)
    assert_inert(at)

    go(at, "calibdash_app/app_pages/evaluate.py")
    assert code(FILE_NAMES[0]) in " ".join(c.value for c in at.caption)
    at.multiselect(key="cfg__notions").set_value(["top-label", "canonical"]).run()
    at.button(key="run").click().run()
    no_exception(at)
    assert at.success and "Finished" in at.success[0].value
    assert_inert(at)

    go(at, "calibdash_app/app_pages/results.py")
    assert code(FILE_NAMES[0]) in " ".join(c.value for c in at.caption)
    assert_inert(at)

    go(at, "calibdash_app/app_pages/reliability.py")
    at.radio(key="view__notion").set_value("canonical").run()
    no_exception(at)
    assert len(at.get("plotly_chart")) == 4  # diagram, continuous curve, per-class panels, simplex
    strings = figure_strings(at)
    for name in CLASSES:
        assert plot_text(name) in strings  # a panel title (and an axis of the simplex)
        # (markdown is nothing to plotly: only HTML, $ and % are escaped)
        assert plot_text(name) == name or not any(name in s for s in strings)
    # the class picker shows the names as its options: plain text there, not markdown
    assert set(at.multiselect(key="rel__classes").options) == set(CLASSES)
    assert_inert(at)


def test_a_cell_quoted_by_the_loader_is_code(at):
    df = pd.DataFrame({"a": ["0.2", "0.5"], "b": ["0.8", CELL], "label": [0, 1]})
    upload(at, df.to_csv(index=False).encode(), FILE_NAMES[1])
    (error,) = [e.value for e in at.error]
    assert error.startswith(f"line 3 of {code(FILE_NAMES[1])}, column '{code('b')}' is {code(repr(CELL))}, not a number")
    assert_inert(at)


def test_model_names_on_the_compare_page_are_code_and_escaped_in_the_figures(at):
    go(at, "calibdash_app/app_pages/compare.py")
    at.radio(key="view__cmp_source").set_value("upload").run()
    files = [(FILE_NAMES[0], hostile_csv(absent=False), "text/csv"),
             (FILE_NAMES[1], hostile_csv(sharpen=3.0, absent=False), "text/csv")]
    at.file_uploader(key="cmp_upload_predictions").set_value(files)
    at.run()
    no_exception(at)
    assert not at.error
    assert len(at.get("plotly_chart")) == 3
    (verdict,) = [m.value for m in at.markdown if "** is better calibrated than **" in m.value]
    assert code(FILE_NAMES[0]) in verdict and code(FILE_NAMES[1]) in verdict
    strings = figure_strings(at)
    for name in FILE_NAMES:
        assert plot_text(name) in strings  # a category of the estimates and a legend entry
        assert plot_text(name) != name and not any(name in s for s in strings)
    assert_inert(at)
    # a file that does not fit: the message names it as code
    files.append((FILE_NAMES[0].replace(".csv", " 2.csv"), hostile_csv(n=900, absent=False), "text/csv"))
    at.file_uploader(key="cmp_upload_predictions").set_value(files)
    at.run()
    no_exception(at)
    assert any(code(repr(files[-1][0])) in e.value for e in at.error)
    assert_inert(at)


def test_a_small_parquet_file_of_huge_labels_is_refused_with_a_short_message(at):
    # Issue 28: 200 labels of 5 MB (a 3 KB file) took the server from 0.9 to 7.3 GB and put a
    # 5 MB message in the page. Refused from the file's dictionary, before the text is expanded.
    import io

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"p": np.linspace(0.01, 0.99, 200), "label": ["a" * 5_000_000] * 200}), buf,
                   compression="zstd")
    assert len(buf.getvalue()) < 4_000
    upload(at, buf.getvalue(), "labels.parquet")
    (error,) = [e.value for e in at.error]
    assert "MAX\\_TEXT\\_CHARACTERS" in error and "10,000" in error, error
    assert len(error) < 1_000
    assert not any("labels.parquet" in h.value for h in at.subheader)  # not in use
