"""``calibdash app``: the command line that starts the dashboard, and where it finds the app."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tomllib
from pathlib import Path

import pytest

from calibdash import cli

from .e2e.browser import free_port, served

ROOT = Path(__file__).resolve().parents[1]


def test_the_subcommand_and_its_port_option():
    args = cli.build_parser().parse_args(["app"])
    assert args.func is cli.cmd_app and args.port == 8501
    assert cli.build_parser().parse_args(["app", "--port", "8600"]).port == 8600


def test_the_app_is_in_the_package_not_in_data_files():
    # the wheel installs the app into site-packages beside calibdash, a package of its own so that
    # calibdash never imports Streamlit (tests/test_package.py builds one)
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "data-files" not in setuptools
    assert {"calibdash.*", "calibdash_app", "calibdash_app.*"} <= set(setuptools["packages"]["find"]["include"])
    pages = ROOT / "calibdash_app" / "app_pages"
    assert (pages / "__init__.py").is_file() and (ROOT / "calibdash_app" / "__init__.py").is_file()
    assert not (ROOT / "calibdash" / "app").exists()
    # every page script is a page of the navigation, and no folder named pages/ beside the entry
    # script switches on Streamlit's legacy multipage mode
    main = (ROOT / "calibdash_app" / "main.py").read_text()
    assert {p.stem for p in pages.glob("*.py") if p.name != "__init__.py"} == set(re.findall(r'page_path\("(\w+)"\)', main))
    assert not (ROOT / "calibdash_app" / "pages").exists() and not (ROOT / "pages").exists()
    assert sorted(p.name for p in ROOT.glob("*.py")) == ["app.py"]


def test_without_streamlit_one_line_says_how_to_install_it(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "streamlit" else real(name, *a))
    assert cli.main(["app", "--port", "8600"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "calibdash: error: the app needs streamlit; install the app extra: pip install 'calibdash[app]'\n"


def test_a_bad_port_is_refused(capsys):
    assert cli.main(["app", "--port", "70000"]) == 2
    assert capsys.readouterr().err.startswith("calibdash: error: --port 70000")


@pytest.mark.slow
def test_calibdash_app_serves_the_dashboard(tmp_path):
    port = free_port()
    script = Path(sys.executable).with_name("calibdash")  # the console script of an install
    command = [str(script)] if script.exists() else [sys.executable, "-m", "calibdash"]
    env = dict(os.environ, CALIBDASH_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    with served([*command, "app", "--port", str(port)], port, cwd=tmp_path, env=env, log_path=tmp_path / "app.log") as server:
        assert server.url == f"http://127.0.0.1:{port}"  # served: its health check answered "ok"
