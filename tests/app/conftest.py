"""AppTest has no timer for the pages' polling (``st.fragment(run_every=...)``): here every
run of an app (``at.run()``, ``widget.run()``) is repeated, as the polling would, until the
session's jobs are over. A test that looks at a run still in progress calls :func:`run_once`."""

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import ElementTree

_RUN = ElementTree.run  # every run goes through it: AppTest.run and each widget's run
WAIT_SECONDS = 600


def no_exception(at):
    """The app ran without an uncaught exception (the test fails with their messages)."""
    assert not at.exception, [e.value for e in at.exception]


def first_visit():
    """A new session's first run of app.py (the demo analysed), without an uncaught exception."""
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=300).run()
    no_exception(at)
    return at


def go(at, page):
    """Switch the AppTest ``at`` to ``page`` (a path relative to app.py, such as "calibdash_app/app_pages/data.py") and run it."""
    at.switch_page(page).run()
    no_exception(at)
    return at


def pending(at):
    return bool(at.session_state["jobs"]) if "jobs" in at.session_state else False


def run_once(at, **kwargs):
    """One script run of the AppTest ``at``, without waiting for the session's jobs."""
    return _RUN(at._tree, **kwargs)


def run_until_done(tree, **kwargs):
    at = _RUN(tree, **kwargs)
    deadline = time.monotonic() + WAIT_SECONDS
    while pending(at) and not at.exception:
        assert time.monotonic() < deadline, f"jobs still running after {WAIT_SECONDS} s"
        time.sleep(0.2)
        at = _RUN(at._tree, **kwargs)
    return at


@pytest.fixture(scope="session", autouse=True)
def _apps_wait_for_their_jobs():
    ElementTree.run = run_until_done
    yield
    ElementTree.run = _RUN
