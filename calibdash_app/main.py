"""calibdash: how miscalibrated is a classifier? The dashboard's entry script.

``calibdash app`` serves this file (``streamlit run .../calibdash_app/main.py``); the
checkout's ``app.py``, which ``streamlit run app.py`` and hosting services run, calls :func:`run`.
"""

import streamlit as st

from calibdash_app.app_pages import page_path
from calibdash_app.runs import begin_page, collect_jobs, ensure_demo_result, job_panel
from calibdash_app.session import init_state, keep_session
from calibdash_app.widgets import sidebar


def run():
    """One run of the app: the navigation between the pages, the page chosen, the jobs' progress and the sidebar."""
    st.set_page_config(page_title="calibdash", layout="wide")
    init_state()

    results = st.Page(page_path("results"), title="Results", url_path="results")
    pages = [
        st.Page(page_path("data"), title="Data", url_path="data"),
        st.Page(page_path("evaluate"), title="Evaluate", url_path="evaluate"),
        results,
        st.Page(page_path("reliability"), title="Reliability", url_path="reliability"),
        st.Page(page_path("validate"), title="Validate", url_path="validate"),
        st.Page(page_path("compare"), title="Compare", url_path="compare"),
        st.Page(page_path("learn"), title="Learn", url_path="learn"),
    ]
    # Streamlit serves the default page at the root only and answers its own url_path with "Page not
    # found", so no listed page is the default: a hidden root page sends the visitor on to Results, and
    # /results, /data, ... (the addresses the README gives) all open their page.
    root = st.Page(lambda: st.switch_page(results), title="Results", url_path="start", default=True, visibility="hidden")
    page = st.navigation([root, *pages])
    # Finished jobs first, so that the page shows their results.
    collect_jobs()
    # A first visitor lands on the analysis of the demo data (a job; cached afterwards).
    ensure_demo_result()
    top = st.container()
    begin_page()
    page.run()
    # After the page, so that they reflect a run started on this very rerun.
    job_panel(top, page.url_path)
    sidebar(page.url_path)
    # What this run changed (a job submitted or filed, a setting) is kept now, not at the next run's
    # start: the polling of a job reruns only its fragment, and a restart may come before a full run.
    keep_session()


if __name__ == "__main__":  # as Streamlit runs it; importing it runs nothing
    run()
