"""Test-wide settings: the demo cache goes to a temporary directory, never to ~/.cache."""

import os

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
