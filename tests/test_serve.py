"""calibdash.serve: where the dashboard's entry script is, and the command line that serves it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from calibdash import cli, serve

ROOT = Path(__file__).resolve().parents[1]


def test_the_streamlit_command_line():
    assert serve.app_command(Path("/somewhere/app.py"), 8600, python="/venv/bin/python") == [
        "/venv/bin/python", "-m", "streamlit", "run", "/somewhere/app.py", "--server.headless", "true",
        "--server.address", "127.0.0.1", "--server.port", "8600", "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "viewer", "--runner.postScriptGC", "false",
    ]
    assert serve.app_command("app.py")[0] == sys.executable
    assert serve.app_command("app.py")[serve.app_command("app.py").index("--server.port") + 1] == "8501"


def test_a_checkout_serves_its_own_app():
    # the entry script of calibdash_app found as a resource (importlib.resources): here the checkout's
    assert serve.find_app() == ROOT / "calibdash_app" / "main.py"


def test_without_the_dashboard_package_there_is_no_app(monkeypatch):
    import importlib.resources

    def missing(name):
        raise ModuleNotFoundError(f"No module named {name!r}")

    monkeypatch.setattr(importlib.resources, "files", missing)
    assert serve.find_app() is None


def test_the_command_line_serves_what_serve_finds():
    # calibdash app uses these (they stay importable from calibdash.cli)
    assert cli.find_app is serve.find_app and cli.app_command is serve.app_command
    assert cli.build_parser().parse_args(["app"]).port == serve.APP_PORT


def listening_addresses(port):
    """The local addresses listening on ``port`` (Linux's /proc/net/tcp and tcp6, in their hex form)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.rsplit(":", 1)
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.add(address)
    return found


@pytest.mark.slow
def test_a_bare_streamlit_run_listens_on_this_machine_only(tmp_path):
    # Issue 28: the project's config set no address, so `streamlit run app.py` listened on every interface.
    import os

    from tests.e2e.browser import free_port, served

    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    env = dict(os.environ, CALIBDASH_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    with served(command, port, cwd=ROOT, env=env, log_path=tmp_path / "streamlit.log"):
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1, nothing else
