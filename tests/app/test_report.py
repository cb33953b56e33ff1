"""The Results page's "Report (HTML)" download, through Streamlit's AppTest (no browser)."""

from pathlib import Path

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from calibdash.evaluation.evaluations import Evaluations

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_results_page_offers_the_html_report_of_the_data_in_use(monkeypatch):
    # Every download is given its bytes (issue 27: a file built when clicked could be deleted
    # before the browser fetched it): the files registered with Streamlit are caught here.
    files = {}
    original = MediaFileManager.add

    def spy(self, path_or_data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        if is_for_static_download:
            files[file_name] = (path_or_data, mimetype)
        return original(self, path_or_data, mimetype, coordinates, file_name=file_name,
                        is_for_static_download=is_for_static_download)

    monkeypatch.setattr(MediaFileManager, "add", spy)
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("calibdash_app/app_pages/results.py").run()
    assert not at.exception, [e.value for e in at.exception]
    buttons = {b.proto.label: b for b in at.get("download_button")}
    assert {"Summary (CSV)", "Risk curves (CSV)", "Full results (JSON)", "Report (HTML)"} <= set(buttons)
    assert buttons["Report (HTML)"].proto.help
    assert not any(b.proto.deferred_file_id for b in buttons.values())  # none built when clicked

    (name, (data, mimetype)), = [(k, v) for k, v in files.items() if k.endswith(".html")]
    assert name.startswith("calibdash_report_") and mimetype == "text/html"
    # the JSON download: every notion shown, in the one result format, reloadable
    (json_name, (json_data, json_type)), = [(k, v) for k, v in files.items() if k.endswith(".json")]
    assert json_name.startswith("results_") and json_type == "application/json"
    loaded = Evaluations.from_json(json_data.decode("utf-8"))
    (model,) = loaded
    assert list(loaded[model]) == list(next(iter(at.session_state["active"].values())))
    html = data.decode("utf-8")
    (sha, keys), = at.session_state["active"].items()  # the demo data's fingerprint and its notions
    assert html.startswith("<!DOCTYPE html>") and sha in html
    for notion in keys:
        assert f'id="{notion}"' in html
    assert html.count("plotly.js v") == 1 and "<script src=" not in html
    files.clear()
    at.run()
    assert files[name][0] is data  # the page's next run is served from the cache, not built again


def test_the_shared_report_cache_never_shows_another_sessions_names():
    # Issue 28: the report cache, shared by the server's sessions, was keyed by the numbers, title
    # and settings, so a session whose file had the same numbers got another's class names.
    import numpy as np
    import pandas as pd

    import calibdash as cd
    from calibdash.lab.simulation import dirichlet_simulation
    from calibdash_app.downloads import report_bytes

    sim = dirichlet_simulation(n=600, n_classes=2, random_state=4)
    preds = [cd.load_predictions(pd.DataFrame({f"p_{a}": sim.probs[:, 0], f"p_{b}": sim.probs[:, 1],
                                               "label": np.array([a, b])[sim.labels]}), name=f"{a}s.csv")
             for a, b in (("cat", "dog"), ("ant", "bee"))]
    assert preds[0].sha256 == preds[1].sha256  # the same numbers: the old key could not tell them apart
    res = {"top-label": cd.evaluate(preds[0], notion="top-label", estimators=["bins"],
                                    grids={"bins": {"n_bins": [5, 10]}}, others=[], random_state=0)}
    first = report_bytes(res, preds[0], title="Calibration report", results_file="results.json").decode()
    second = report_bytes(res, preds[1], title="Calibration report", results_file="results.json").decode()
    assert "cats.csv" in first and "cats.csv" not in second and "ants.csv" in second
    again = report_bytes(res, preds[0], title="Calibration report", results_file="results.json").decode()
    assert again == first  # a hit for the same objects
