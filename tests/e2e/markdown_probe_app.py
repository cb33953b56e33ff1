"""A page that shows every hostile string through calibdash.display.text in the elements the app
uses, for tests/e2e/test_hostile_browser.py to read back from chromium. Not part of the app."""

import plotly.graph_objects as go
import streamlit as st

from calibdash.display.text import code, escape_markdown, markdown, plot_text, user
from calibdash.errors import InputError
from tests.hostile import ALL

st.set_page_config(page_title="markdown probe", layout="wide")
for i, text in enumerate(ALL):
    # each element in its own keyed container, so that the test can read it alone
    with st.container(key=f"escaped_{i}"):
        st.markdown(escape_markdown(text))
    with st.container(key=f"code_{i}"):
        st.markdown(code(text))
    with st.container(key=f"warning_{i}"):
        st.warning(markdown(InputError(f"line 2 of {user(text)}: {user(text)!r} is not a number")))
    with st.container(key=f"caption_{i}"):
        st.caption(f"Data: {code(text)} (3 rows)")
    with st.container(key=f"subheader_{i}"):
        st.subheader(f"In use: {code(text)}", anchor=False)
    with st.container(key=f"label_{i}"):
        st.text_input(code(text), key=f"input_{i}")
    with st.container(key=f"options_{i}"):
        # option lists are plain text in Streamlit: shown as given, not escaped
        st.multiselect("classes", [text, "other"], default=[text], key=f"multi_{i}")
fig = go.Figure()
for text in ALL:
    fig.add_trace(go.Bar(x=[1.0], y=[plot_text(text)], orientation="h", name=plot_text(text),
                         hovertemplate=f"{plot_text(text)}: %{{x}}<extra></extra>"))
fig.update_layout(title=plot_text(ALL[0]), height=60 * len(ALL) + 200, margin=dict(l=800))
st.plotly_chart(fig, key="figure")
with st.container(key="probe_end"):
    st.markdown("end of probe")
