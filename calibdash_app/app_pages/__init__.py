"""The dashboard's page scripts, run by Streamlit (``st.Page``), never imported: each only lays
out widgets. Not in a folder named ``pages/``, which beside the entry script would switch on
Streamlit's legacy multipage mode."""

from pathlib import Path

#: The folder of the page scripts.
PAGES = Path(__file__).resolve().parent


def page_path(name):
    """The absolute path of the page script ``name`` (e.g. "results"), as ``st.Page``,
    ``st.switch_page`` and ``st.page_link`` take it: absolute, so that it holds whichever
    script Streamlit runs (the checkout's ``app.py`` or the installed ``calibdash_app/main.py``)."""
    return str(PAGES / f"{name}.py")
