"""Where the dashboard's entry script is, and the ``streamlit run`` command line that serves it.

The dashboard is the package :mod:`calibdash_app`, installed beside calibdash. It is found
as a resource (:mod:`importlib.resources`), never imported: calibdash does not import
Streamlit or the dashboard. ``calibdash app`` (:mod:`calibdash.cli`) serves what
:func:`find_app` finds with :func:`app_command`.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["APP_PORT", "find_app", "app_command"]

#: The port the dashboard is served on by default (Streamlit's).
APP_PORT = 8501


def find_app():
    """The dashboard's entry script, ``calibdash_app/main.py`` (installed beside calibdash), or None.

    Found through :mod:`importlib.resources`, so it is the copy beside this module: the
    checkout's own in a checkout (edits show at once), the one in site-packages after
    ``pip install``. Its page scripts are in ``calibdash_app/app_pages/``.
    """
    from importlib.resources import files

    # calibdash_app's __init__ imports nothing (no streamlit before streamlit replaces this process).
    # A package in a directory gives a real path; a zipped one has no file streamlit could serve.
    try:
        entry = files("calibdash_app") / "main.py"
    except ModuleNotFoundError:  # a copy of calibdash without its dashboard package
        return None
    return entry if isinstance(entry, Path) and entry.is_file() else None


def app_command(app, port=APP_PORT, python=None):
    """The command line that serves ``app`` on 127.0.0.1:``port`` (what ``make run`` runs)."""
    # the settings of the checkout's .streamlit/config.toml, given explicitly: an installed copy
    # is started from elsewhere, where that file is not read
    return [python or sys.executable, "-m", "streamlit", "run", str(app), "--server.headless", "true",
            "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
            "--client.toolbarMode", "viewer", "--runner.postScriptGC", "false"]
