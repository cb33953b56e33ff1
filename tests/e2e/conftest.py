"""One Playwright driver, one chromium and one ``streamlit run`` for every browser test:
Playwright's sync API cannot start a second driver while one is running."""

from pathlib import Path

import pytest

from .browser import launch, new_session, streamlit_server

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # every test in this folder drives chromium (`make test-fast` leaves them out); the hook
    # sees the whole session's items, so it marks only those under tests/e2e
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.browser)


@pytest.fixture
def page(browser, server):
    """A fresh browser session on the app, checked for errors and failed requests at the end."""
    context, w = new_session(browser, server)
    yield w
    w.check()
    context.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    with streamlit_server(tmp_path_factory.mktemp("e2e_cache")) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()
