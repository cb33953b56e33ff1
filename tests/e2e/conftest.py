"""One Playwright driver, one chromium and one ``streamlit run`` for every browser test:
Playwright's sync API cannot start a second driver while one is running."""

import pytest

from .browser import launch, streamlit_server


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
