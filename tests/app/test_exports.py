"""Issue 17 through Streamlit's AppTest: the Compare page's CSV downloads neutralise file names
that a spreadsheet would run as formulas (calibdash.io.export.csv_text)."""

import io
from pathlib import Path

import pandas as pd
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from calibdash.io.export import FORMULA_PREFIXES

from ..hostile import hostile_csv

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "app.py")
NAMES = ('=HYPERLINK("http://127.0.0.1:9/x","click").csv', "@SUM(A1:A9).csv", "+cmd.csv")


def test_the_compare_page_csv_downloads_neutralise_formula_names(monkeypatch):
    offered = {}
    original = MediaFileManager.add

    def spy(self, path_or_data, mimetype, coordinates, file_name=None, **kwargs):
        offered[file_name] = path_or_data
        return original(self, path_or_data, mimetype, coordinates, file_name=file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add", spy)
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("calibdash_app/app_pages/compare.py").run()
    at.radio(key="view__cmp_source").set_value("upload").run()
    files = [(name, hostile_csv(sharpen=1.0 + i, absent=False), "text/csv") for i, name in enumerate(NAMES)]
    at.file_uploader(key="cmp_upload_predictions").set_value(files)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]

    tables = {}
    for name, data in offered.items():
        if name and name.endswith(".csv") and name.startswith(("compare_models", "compare_pairs")):
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            tables[name.split("_")[1]] = pd.read_csv(io.StringIO(text, newline=""))
    assert set(tables) == {"models", "pairs"}, list(offered)
    assert sorted(tables["models"]["model"]) == sorted("'" + n for n in NAMES)
    for col in ("model_a", "model_b"):
        assert all(v.startswith("'") and v[1:] in NAMES for v in tables["pairs"][col])
    for table in tables.values():
        for col in table.columns:
            assert not any(isinstance(v, str) and v.startswith(FORMULA_PREFIXES) for v in table[col]), col
        # numbers stay numbers
        assert any(pd.api.types.is_float_dtype(t) for t in table.dtypes)


def test_the_evaluate_page_names_the_limit_that_was_hit():
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("calibdash_app/app_pages/evaluate.py").run()
    at.multiselect(key="cfg__notions").set_value(["top-label"]).run()
    at.multiselect(key="cfg__est__top-label").set_value(["bins"]).run()
    at.text_area(key="cfg__grid__top-label__bins").input(", ".join(map(str, range(1, 1502)))).run()
    at.button(key="run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shown = at.error[0].value.replace("\\", "") if at.error else ""  # the markdown source, escaped
    assert "CALIBDASH_MAX_GRID_VALUES" in shown and "1,501 values" in shown, shown
    # more bins than the demo's 1,797 rows: refused before a job starts, not by the job
    at.text_area(key="cfg__grid__top-label__bins").input("5, 5000").run()
    jobs = dict(at.session_state["jobs"])
    at.button(key="run").click().run()
    assert at.error and "more bins than the data's 1,797 rows" in at.error[0].value.replace("\\", "")
    assert dict(at.session_state["jobs"]) == jobs
