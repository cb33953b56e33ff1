"""calibdash: how miscalibrated is a classifier? Entry point of the Streamlit app."""

import streamlit as st

import ui

st.set_page_config(page_title="calibdash", layout="wide")
ui.init_state()

results = st.Page("app_pages/results.py", title="Results", url_path="results")
pages = [
    st.Page("app_pages/data.py", title="Data", url_path="data"),
    st.Page("app_pages/evaluate.py", title="Evaluate", url_path="evaluate"),
    results,
    st.Page("app_pages/reliability.py", title="Reliability", url_path="reliability"),
    st.Page("app_pages/validate.py", title="Validate", url_path="validate"),
    st.Page("app_pages/compare.py", title="Compare", url_path="compare"),
    st.Page("app_pages/learn.py", title="Learn", url_path="learn"),
]
# Streamlit serves the default page at the root only and answers its own url_path with "Page not
# found", so no listed page is the default: a hidden root page sends the visitor on to Results, and
# /results, /data, ... (the addresses the README gives) all open their page.
root = st.Page(lambda: st.switch_page(results), title="Results", url_path="start", default=True, visibility="hidden")
page = st.navigation([root, *pages])
# Finished jobs first, so that the page shows their results.
ui.collect_jobs()
# A first visitor lands on the analysis of the demo data (a job; cached afterwards).
ui.ensure_demo_result()
top = st.container()
page.run()
# After the page, so that they reflect a run started on this very rerun.
ui.job_panel(top, page.url_path)
ui.sidebar()
