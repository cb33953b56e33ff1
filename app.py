"""calibdash: how miscalibrated is a classifier? Entry point of the Streamlit app."""

import streamlit as st

import ui

st.set_page_config(page_title="calibdash", layout="wide")
ui.init_state()

pages = [
    st.Page("app_pages/data.py", title="Data", url_path="data"),
    st.Page("app_pages/evaluate.py", title="Evaluate", url_path="evaluate"),
    st.Page("app_pages/results.py", title="Results", url_path="results", default=True),
    st.Page("app_pages/reliability.py", title="Reliability", url_path="reliability"),
    st.Page("app_pages/compare.py", title="Compare", url_path="compare"),
    st.Page("app_pages/learn.py", title="Learn", url_path="learn"),
]
page = st.navigation(pages)
# A first visitor lands on a finished analysis of the demo data (cached afterwards).
ui.ensure_demo_result()
page.run()
# After the page, so that it reflects a run started on this very rerun.
ui.sidebar()
