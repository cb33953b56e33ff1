"""A session's state: its defaults, the widget values kept across pages, its token and the
server-side store that a reload restores it from, and the handle of the server's job pool.

Streamlit drops a widget's value when its page is not rendered; the state the pages share
lives in plain session keys (and, through the token, in :class:`calibdash_app.store.SessionStore`,
in memory and on disk, so that a reload or a restart of the server finds it again).
"""

from __future__ import annotations

import streamlit as st

import calibdash as cd
from calibdash.display import text as display
from calibdash.lab import demo
from calibdash_app import jobs, store

# Widgets whose values init_state keeps across page changes (and a reload restores).
KEPT_WIDGETS = ("cfg__", "rel__", "view__", "src__")


def kept(key):
    """The keyword arguments of a widget whose value the session keeps: its ``key`` (a name starting with one
    of :data:`KEPT_WIDGETS`) and ``persist_state="session"``.

    Reassigning a widget's value on every run (init_state) is not enough: a polling fragment
    (a job's progress) that reruns just after a page change, or just after the widget changed, runs
    without the page, and Streamlit then drops the values of the widgets it did not draw (seen in
    chromium: Learn's and Compare's seed fell back to 0 after a visit to two other pages, and
    a seed typed on Learn while a job's progress showed came back as 0). Streamlit keeps a widget
    declared with ``persist_state="session"`` through both.
    """
    if not key.startswith(KEPT_WIDGETS):
        raise ValueError(f"{key!r} is not a kept widget's key (it must start with one of {KEPT_WIDGETS})")
    return {"key": key, "persist_state": "session"}

# The address's query parameter that holds the session's token.
TOKEN_PARAM = "session"
# Dicts the session shares by reference with its entry in the session store, so that the
# entry is always up to date; and the values copied into it on every run.
SHARED_STATE = ("results", "active", "jobs", "cmp_results", "lab_results", "val_results", "job_errors", "cancelled",
                "retryable")
COPIED_STATE = ("data_source", "data_demo", "data_group", "upload", "upload_input", "upload_files", "upload_sig",
                "upload_error", "cmp_uploads", "result_bytes")


def init_state():
    """Defaults for the shared keys, and keep widget values alive when their page is not shown."""
    ss = st.session_state
    start_jobs_state()
    # The data in use, in plain keys that the Data page's widgets write through their
    # callbacks: Streamlit may drop a widget's value when a polling fragment reruns just after
    # a page change (seen in chromium: the upload fell back to the demo), never a plain key.
    ss.setdefault("data_source", "demo")
    ss.setdefault("data_demo", demo.DEFAULT_DEMO)
    # The grouping column of the subgroups (Data and Validate pages, calibdash_app.clinical): a column name,
    # False for no subgroups, None for the first grouping column the data keep.
    ss.setdefault("data_group", None)
    ss.setdefault("results", {})  # cache key -> EvaluationResult
    ss.setdefault("active", {})  # data sha256 -> {notion: cache key} of the last good run
    ss.setdefault("run_message", None)
    # Streamlit forgets a widget's value when a page without it runs; reassigning the
    # value every run keeps the Evaluate and Reliability settings across page changes.
    for key in list(ss.keys()):
        if isinstance(key, str) and key.startswith(KEPT_WIDGETS):
            ss[key] = ss[key]
    remember_session()


# -- the server's pool of jobs, and the store that keeps a session across a reload --------
@st.cache_resource(show_spinner=False)
def job_pool():
    """The server's one pool of jobs (CALIBDASH_MAX_JOBS, CALIBDASH_JOB_CORES), shared by all sessions."""
    return jobs.JobPool.from_environment()


@st.cache_resource(show_spinner=False)
def session_store():
    """Sessions' state by token, so that a reload or a restart finds its upload, results and jobs again
    (CALIBDASH_STATE_DIR, CALIBDASH_STATE_MIB, CALIBDASH_STATE_DAYS, CALIBDASH_SESSIONS_MEMORY_MIB)."""
    return store.open_store()


def start_jobs_state():
    """On a session's first run: its token, and the state a reload left behind under it (from init_state)."""
    ss = st.session_state
    if "token" in ss:
        return
    try:
        job_pool()
        session_store()
    except cd.ConfigError as e:  # a misconfigured server: say so on every page
        st.error(display.markdown(e), icon=":material/error:")
        st.stop()
    ss["notices"] = []
    given = st.query_params.get(TOKEN_PARAM)
    # An address restores once: its state is taken out of the store and goes on under a new
    # token (the address changes). Whoever opens a link to someone else's session gets a copy
    # of it; what they upload next never lands where the link's author can reload it (session
    # fixation), and two tabs opened at one address no longer share their results by accident.
    ss["token"] = store.new_token()
    entry = session_store().move(given, ss["token"]) if given else None
    for key, value in (entry or {}).items():
        ss[key] = dict(value) if key in SHARED_STATE else value
    for key in SHARED_STATE:
        ss.setdefault(key, {})
    if entry is None:
        if given:
            ss["notices"].append(("warning", expired_message()))
    else:
        # Its running jobs go on for the new token; those the pool no longer has (the server
        # restarted meanwhile) are said to be interrupted, with "Run again".
        for key, record in list(ss["jobs"].items()):
            if not job_pool().adopt(key, owner=given, new_owner=ss["token"]):
                ss["jobs"][key] = {**record, "interrupted": True}
        # Shown by one run, the page the reload opens: it stayed on that page through every
        # later action (issue 27), as the notices that wait for a page change do.
        ss["notices_once"] = [("info", restored_message(entry))]
    ss.setdefault("declined", set())  # demo sets whose automatic analysis was cancelled or failed


def expired_message():
    """Why the session of an address could not be restored, as markdown."""
    where = ("on the server's disk for the days its administrator set (CALIBDASH_STATE_DAYS), a restart included"
             if session_store().on_disk else "in the server's memory for two hours after its last use, until it restarts")
    return ("This address names a session the server no longer has, so its upload and results could not be restored. "
            "An address restores its session once (a reload moves it to a new address); a session is kept "
            f"{where}, while it is among the most recently used ones. Upload your data again on the Data page.")


def restored_message(entry):
    """What a reload restored, as markdown."""
    parts = []
    if entry.get("upload") is not None:
        parts += ["the upload ", display.user(entry["upload"].source_name), ", "]
    parts.append(f"{len(entry.get('active', {}))} analysed data set(s)")
    unfinished = entry.get("jobs", {})
    if unfinished:
        parts.append(f" and {len(unfinished)} run(s) that had not finished")
    return display.markdown("Restored after the reload: ", *parts, ".")


def remember_session():
    """Keep the session's state on the server under its token, and the token in the address.

    Streamlit drops the address's query parameters on a page change; setting the token again
    on every run keeps it there, so that a reload brings it back.
    """
    keep_session()
    ss = st.session_state
    if st.query_params.get(TOKEN_PARAM) != ss["token"]:
        st.query_params[TOKEN_PARAM] = ss["token"]


def keep_session():
    """Keep the session's state on the server under its token (the end of a run: without touching the address)."""
    ss = st.session_state
    entry = {key: ss[key] for key in SHARED_STATE}
    entry.update({key: ss[key] for key in COPIED_STATE if key in ss})
    entry.update({key: ss[key] for key in list(ss.keys()) if isinstance(key, str) and key.startswith(KEPT_WIDGETS)})
    session_store().put(ss["token"], entry)
