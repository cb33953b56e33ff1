"""The Learn page computes only what a changed setting adds (issue 27): a test that counts the
draws and data sets every job of the page was given, through Streamlit's AppTest."""

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from calibdash.lab import studies as lab
from calibdash_app import runs

from .conftest import go, no_exception, run_once

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "app.py")
LEARN = "calibdash_app/app_pages/learn.py"


@pytest.fixture
def submitted(monkeypatch):
    """Every job the app submits from here on: [(kind, the draws or data sets it computes)]."""
    out = []
    submit = runs.submit_job

    def recording(key, fn, kwargs, record, **kw):
        if key[0] == "lab_draws":
            out.append(("draws", list(kwargs["draws"])))
        elif key[0] == "lab_figure1":
            out.append(("data sets", list(range(kwargs["first_seed"], kwargs["first_seed"] + kwargs["n_seeds"]))))
        return submit(key, fn, kwargs, record, **kw)

    monkeypatch.setattr(runs, "submit_job", recording)
    return out


def shown_table(at):
    """The estimates' table of the page (percentage points), by n and estimator."""
    (table,) = [d.value for d in at.dataframe if "rmse" in d.value]
    return table.set_index(["n", "estimator"])


def test_a_changed_setting_computes_only_what_it_adds(submitted):
    at = AppTest.from_file(APP, default_timeout=300).run()  # the first visit's demo analysis
    no_exception(at)
    # seeds no other test uses: the pool shares finished jobs between sessions
    at.session_state["view__lab_seed"], at.session_state["view__lab_f1_seed"] = 28046, 28047
    at.session_state["view__lab_ns"], at.session_state["view__lab_repeats"] = [250], 2
    at.session_state["view__lab_f1_seeds"] = 10
    go(at, LEARN)
    ests = ("bins", "kde", "temperature")
    assert submitted == [("draws", [(250, 0, ests), (250, 1, ests)]), ("data sets", list(range(10)))]

    def change(widget, value, want):
        submitted.clear()
        widget.set_value(value).run()
        no_exception(at)
        assert submitted == want, (value, submitted)
        assert len(at.get("plotly_chart")) == 2 and not at.error

    # the seed of one view recomputes only that view
    change(at.number_input(key="view__lab_f1_seed"), 28048, [("data sets", list(range(10)))])
    change(at.number_input(key="view__lab_seed"), 28049, [("draws", [(250, 0, ests), (250, 1, ests)])])
    # a sample size, an estimator, more draws, more data sets: only what they add
    change(at.multiselect(key="view__lab_ns"), [250, 500], [("draws", [(500, 0, ests), (500, 1, ests)])])
    change(at.multiselect(key="view__lab_estimators"), [*ests, "ukkr"],
           [("draws", [(250, 0, ("ukkr",)), (250, 1, ("ukkr",)), (500, 0, ("ukkr",)), (500, 1, ("ukkr",))])])
    change(at.slider(key="view__lab_repeats"), 3, [("draws", [(250, 2, (*ests, "ukkr")), (500, 2, (*ests, "ukkr"))])])
    change(at.slider(key="view__lab_f1_seeds"), 15, [("data sets", list(range(10, 15)))])
    # fewer of anything needs nothing; a setting seen before only what it lacks
    change(at.slider(key="view__lab_repeats"), 2, [])
    change(at.multiselect(key="view__lab_ns"), [500], [])
    change(at.number_input(key="view__lab_f1_seed"), 28047, [("data sets", list(range(10, 15)))])
    change(at.slider(key="view__lab_f1_seeds"), 5, [])
    # what is shown equals a computation from scratch with the settings shown
    sc = lab.scenario("dirichlet")
    want = lab.summarise_estimates(lab.estimates_vs_n(sc, ns=[500], n_repeats=2, estimators=[*ests, "ukkr"],
                                                      random_state=28049))
    got = shown_table(at)
    pd.testing.assert_series_equal(got["mean"], 100 * want.set_index(["n", "estimator"])["mean"], rtol=1e-12,
                                   check_names=False)


def test_an_expensive_view_waits_for_its_run_button(submitted):
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.session_state["view__lab_seed"], at.session_state["view__lab_ns"] = 28050, [5000]
    at.session_state["view__lab_repeats"] = 30  # 30 x 5,000 rows x 3 estimators: over LAB_AUTO_RUN_UNITS
    at.switch_page(LEARN)
    run_once(at)
    no_exception(at)
    assert 30 * 5000 * 3 > runs.LAB_AUTO_RUN_UNITS
    assert [kind for kind, _ in submitted] == ["data sets"]  # Figure 1 only
    assert any("press Run" in i.value and "30 new draws" in i.value for i in at.info)
    at.button(key="lab_run_estimates").click()
    run_once(at)
    run_once(at)
    no_exception(at)
    assert [kind for kind, _ in submitted][-1] == "draws" and len(submitted[-1][1]) == 30
    keys = [b.key for b in at.button if b.key and b.key.startswith("cancel__")]
    at.button(key=keys[0]).click()  # no need to wait for it
    run_once(at)
    for key in list(at.session_state["jobs"]):
        runs.job_pool().cancel(key, owner=at.session_state["token"])
