"""Test-wide settings: the demo cache and the app's session store go to temporary directories,
never to ~/.cache or ~/.local/state; the process's ``__main__`` is the same after every test as
before it."""

import os
import sys

import pytest
from hypothesis import settings

# The property tests draw the same examples on every run (derandomize): CI gives the same
# verdict on the same code, and a draw cannot turn it red by luck. HYPOTHESIS_PROFILE=explore
# draws new examples each run (and keeps failures in .hypothesis/) to look for new bugs.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


def _variable_in_tmp(name, path):
    # The environment variable ``name`` set to ``path`` for the session, then as it was.
    old = os.environ.get(name)
    os.environ[name] = str(path)
    yield path
    if old is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = old


@pytest.fixture(scope="session", autouse=True)
def _demo_cache_dir(tmp_path_factory):
    yield from _variable_in_tmp("CALIBDASH_CACHE_DIR", tmp_path_factory.mktemp("calibdash_cache"))


@pytest.fixture(scope="session", autouse=True)
def _session_store_dir(tmp_path_factory):
    yield from _variable_in_tmp("CALIBDASH_STATE_DIR", tmp_path_factory.mktemp("calibdash_state"))


@pytest.fixture(autouse=True)
def _main_module_kept():
    # Streamlit runs an app's script as sys.modules["__main__"] and leaves it there (AppTest
    # too). A process started later by "spawn" (Dask's workers in the cluster tests) would
    # then run the whole app while it starts up.
    main = sys.modules.get("__main__")
    yield
    sys.modules["__main__"] = main
