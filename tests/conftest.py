"""Test-wide settings: the demo cache and the app's session store go to temporary directories,
never to ~/.cache or ~/.local/state; the process's ``__main__`` is the same after every test as
before it."""

import os
import sys

import pytest


@pytest.fixture(scope="session", autouse=True)
def _demo_cache_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("calibdash_cache")
    old = os.environ.get("CALIBDASH_CACHE_DIR")
    os.environ["CALIBDASH_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("CALIBDASH_CACHE_DIR", None)
    else:
        os.environ["CALIBDASH_CACHE_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def _session_store_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("calibdash_state")
    old = os.environ.get("CALIBDASH_STATE_DIR")
    os.environ["CALIBDASH_STATE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("CALIBDASH_STATE_DIR", None)
    else:
        os.environ["CALIBDASH_STATE_DIR"] = old


@pytest.fixture(autouse=True)
def _main_module_kept():
    # Streamlit runs an app's script as sys.modules["__main__"] and leaves it there (AppTest
    # too). A process started later by "spawn" (Dask's workers in the cluster tests) would
    # then run the whole app while it starts up.
    main = sys.modules.get("__main__")
    yield
    sys.modules["__main__"] = main
