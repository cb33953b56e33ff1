"""Results a page draws again on every rerun, kept in the session per slot: one entry each,
recomputed only when what it depends on changes.

A Streamlit page's script runs again on every interaction. The Reliability page's views are
pure functions of the data (its sha256), the run's result (its key in the session's results)
and the page's settings, but cost seconds on large data (at 2,000,000 rows the top-label view
took 0.6 s, its bootstrap bands and the selected map on the holdout rows), so they are kept
under a key of exactly those; the Compare page's figures and tables likewise, under the
comparison's key (its models' data and its settings). One entry per slot, so that a session holds one view of each
kind, not one per setting it ever tried: uploads can be large.
"""

from __future__ import annotations

import streamlit as st

_STATE = "page_memo"


def memo(slot, key, compute):
    """``compute()``, or the value kept in ``slot`` when it was computed for an equal ``key``
    (a tuple of hashable values that determine it)."""
    kept = st.session_state.setdefault(_STATE, {})
    entry = kept.get(slot)
    if entry is not None and entry[0] == key:
        return entry[1]
    kept.pop(slot, None)  # the old value goes before the new one is made: at most one of each
    value = compute()
    kept[slot] = (key, value)
    return value
