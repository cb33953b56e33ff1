"""Runs as jobs of the server's pool: submitting them, filing their outcome into the session's
results (the result cache), their progress and Cancel button; the Evaluate page's evaluations,
the Compare page's comparisons and the Learn page's simulations.

Every evaluation, comparison and lab run is a job of one pool per server process
(:mod:`calibdash_app.jobs`: child processes, a shared queue, deduplicated by key). A session keeps
only the keys of the jobs it submitted and asks the pool for them as their owner.
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

import calibdash as cd
from calibdash.deprecation import renamed_parameters
from calibdash.display import text as display
from calibdash_app import jobs
from calibdash_app.data import current_dataset, refusal
from calibdash_app.session import job_pool, session_store
from calibdash_app.settings import config_key, default_configs
from calibdash_app.store import pickled_length

MAX_CACHED_RESULTS = 24  # evaluation results a session keeps, the oldest dropped first
POLL_SECONDS = 1.0  # how often a running job's progress is refreshed
# Each refresh then waits this long for the job to end, so that a result shows within
# milliseconds of its end half the time and within half a second always, at the browser's
# cost of one redraw a second (four a second took a third of a core in chromium: BENCHMARKS.md).
FINISH_WAIT_SECONDS = 0.5
# The session's stores of results and messages, and how many entries each keeps.
RESULT_STORES = {"results": MAX_CACHED_RESULTS, "cmp_results": 8, "lab_results": 16, "val_results": 8, "job_errors": 16,
                 "cancelled": 16, "retryable": 16}


def _bounded(store, key, value):
    # File ``value`` under ``key`` in the session's ``store``: each store keeps its last few entries,
    # and all of them together at most the session store's session_bytes (by their pickles' lengths),
    # the least recently filed or used dropped first (never the one just filed).
    ss = st.session_state
    d = ss[store]
    d[key] = value
    while len(d) > RESULT_STORES[store]:
        d.pop(next(iter(d)))
    sizes = ss.setdefault("result_bytes", {})  # (store, key) -> bytes, least recently used first
    sizes.pop((store, key), None)
    sizes[(store, key)] = pickled_length(value)
    for where in [w for w in sizes if w[1] not in ss[w[0]]]:  # dropped by a count above
        del sizes[where]
    total, limit = sum(sizes.values()), session_store().session_bytes
    for where in list(sizes):
        if total <= limit or where == (store, key):
            break
        ss[where[0]].pop(where[1], None)
        total -= sizes.pop(where)


def _used(store, key):
    # The result ``key`` of ``store`` was used again: the last to be dropped now.
    sizes = st.session_state.setdefault("result_bytes", {})
    if (store, key) in sizes:
        sizes[(store, key)] = sizes.pop((store, key))


# -- the Evaluate page's evaluations, and the result cache ------------------------------
def run_configs(pred, configs, *, label=None, auto=False):
    """Evaluate every config (an :class:`~calibdash.evaluation.config.EvaluationConfig` per
    notion, on one split): from the session's results, else as one job of the server's pool.

    Returns (ok, message), the message as markdown: (True, message) when every result was
    there already, (None, None) once the job is submitted (:func:`job_panel` shows it; its
    outcome becomes ``run_message``), (False, message) when it cannot start. On failure the
    previous result stays active. ``auto``: the first visit's demo analysis.
    """
    ss = st.session_state
    keys = {c.notion: config_key(pred.sha256, c) for c in configs}
    todo = [c for c in configs if keys[c.notion] not in ss["results"]]
    if not todo:
        for k in keys.values():
            _used("results", k)
        ss["active"][pred.sha256] = keys
        return True, f"Loaded from cache: these data and settings were already evaluated ({', '.join(keys)})."
    # One joint run: the notions share the split (evaluate_notions refuses configs that do not)
    # and the pool of workers. The record of an upload is kept in the results as they are made.
    provenance = ss.get("upload_input") if ss.get("upload") is pred else None
    # Only the fold models the reliability views draw from: half the result on CIFAR-100, and so
    # half of what crosses from the worker, is kept in the session and is written to its disk store.
    from calibdash.evaluation.pipeline import KEEP_RECALIBRATION  # cd.evaluate_notions below imports it too

    kwargs = dict(P=pred, configs=list(todo), provenance=provenance, keep_models=KEEP_RECALIBRATION)
    label = pred.source_name if label is None else label
    title = (display.markdown("Analysing the demo set ", display.user(label), " with the default settings (first visit only)")
             if auto else display.markdown("Evaluating ", display.user(label), f" ({', '.join(keys)})"))
    record = {"kind": "evaluate", "slot": ("evaluate", pred.sha256), "title": title, "sha": pred.sha256, "keys": keys,
              "auto": auto}
    # Sessions that ask for the same data and settings share a job, and so its results: the
    # record of the input is part of the job's key, so that no session's file name shows in another's.
    named = None if provenance is None else hashlib.sha256(json.dumps(provenance, sort_keys=True, default=str).encode())
    key = ("evaluate", *(keys[c.notion] for c in todo), *([named.hexdigest()] if named else []))
    # The Run button, or a first visit: either way a failed or cancelled run of the key starts again.
    # Its tasks in the worker's threads, as from Python and the command line (JobPool.submit).
    error = submit_job(key, cd.evaluate_notions, kwargs, record, again=True, threads=True)
    return (False, error) if error else (None, None)


def active_result_keys():
    """{notion: key in the session's results} of the last good run on the current data ({} when none)."""
    _, pred, _ = current_dataset()
    keys = st.session_state["active"].get(pred.sha256, {})
    return {n: k for n, k in keys.items() if k in st.session_state["results"]}


def active_results():
    """{notion: EvaluationResult} of the last good run on the current data ({} when none)."""
    return {n: st.session_state["results"][k] for n, k in active_result_keys().items()}


def ensure_demo_result():
    """Start the default evaluation of a demo set once, so that a first visitor sees results."""
    label, pred, origin = current_dataset()
    ss = st.session_state
    if origin != "demo" or active_results() or pending_evaluation(pred.sha256) or pred.sha256 in ss["declined"]:
        return
    ok, message = run_configs(pred, default_configs(), label=label, auto=True)
    if ok is False:
        ss["notices"].append(("error", message))


# -- jobs: submitted, filed into the session, shown with their progress -----------------
def submit_job(key, fn, kwargs, record, *, again=False, estimate=None, threads=False):
    """Submit ``fn(**kwargs)`` to the pool as this session's job ``key``; returns an error message or None.

    ``record`` says what the job is for: ``kind``, ``slot`` (a newer job in the same slot
    replaces the session's older one) and ``title`` (markdown), and what :func:`collect_jobs`
    needs to file the outcome. ``again``: the user asked for it (a button), so a failed or
    cancelled job of ``key`` starts afresh; else the pool gives its outcome back. ``estimate`` and
    ``threads``: see :meth:`calibdash_app.jobs.JobPool.submit`.
    """
    ss = st.session_state
    for old, rec in list(ss["jobs"].items()):
        if rec["slot"] == record["slot"] and old != key:
            cancel_job(old)
    try:
        job_pool().submit(key, fn, kwargs, owner=ss["token"], label=record["title"][:80], again=again,
                          estimate=estimate, threads=threads)
    except (jobs.BusyError, jobs.TooLongError) as e:
        return display.markdown(e)
    ss["jobs"][key] = record
    return None


def cancel_job(key):
    """This session gives up its job ``key`` (the pool stops it unless another session wants it too)."""
    ss = st.session_state
    job_pool().cancel(key, owner=ss["token"])
    record = ss["jobs"].pop(key, None)
    if record and record["kind"] != "evaluate":  # a page that runs its job on every rerun: not again until asked
        _bounded("cancelled", key, True)
    if record and record["kind"] == "evaluate":
        ss["run_message"] = (record["sha"], None, "Cancelled. Any earlier results of these data stay.")
        if record["auto"]:
            ss["declined"].add(record["sha"])


INTERRUPTED_MESSAGE = ("{what} was interrupted: the server restarted while it ran. Your data and settings are "
                       "kept; start it again.")


def failure_message(job, what, *, interrupted=False, fixes=None):
    """Why ``job`` failed, as markdown: its error for the user (with what to do in the app, ``fixes``
    {option: markdown}, when it names an option: :func:`calibdash_app.data.refusal`), or a bug to
    report; ``interrupted``: the job of a session restored after a restart of the server, which the new
    server does not have."""
    if job is None and interrupted:
        return INTERRUPTED_MESSAGE.format(what=what)
    if job is None or job.state == jobs.CANCELLED:
        return f"{what} was stopped or forgotten by the server (it keeps the last few dozen jobs). Start it again."
    if job.error is not None:
        return refusal(job.error, fixes or {}, f"{what} failed: ")
    return display.markdown(f"{what} failed because of a bug in calibdash, or its process was stopped: ", job.bug,
                            ". The details are in the server's log; if it happens again, please report it.")


def collect_jobs():
    """File the outcome of the session's finished jobs into its results and messages (before every page)."""
    ss = st.session_state
    pool = job_pool()
    for key, record in list(ss["jobs"].items()):
        job = pool.job(key, owner=ss["token"])
        if job is not None and not job.finished:
            continue
        del ss["jobs"][key]
        ok = job is not None and job.state == jobs.DONE
        if record["kind"] != "evaluate":
            if ok:
                _bounded(record["store"], record["result_key"], job.result)
            elif job is None and record.get("interrupted"):  # by a restart: said so, with Run again
                _bounded("job_errors", key, failure_message(None, record.get("what", "The run"), interrupted=True))
                _bounded("retryable", key, True)
            elif job is not None and job.state == jobs.CANCELLED:  # e.g. by the server: not again until asked
                _bounded("cancelled", key, True)
            elif job is not None and job.state == jobs.FAILED:
                _bounded("job_errors", key, failure_message(job, record.get("what", "The run"), fixes=record.get("fixes")))
                if job.error is None:  # not the data's fault (a bug, a killed process): it may go through again
                    _bounded("retryable", key, True)
            continue
        sha = record["sha"]
        if job is None and record.get("interrupted") and record["auto"]:
            continue  # the first visit's analysis, cut short by a restart: ensure_demo_result starts it again
        if ok:
            for notion, res in job.result.items():
                _bounded("results", record["keys"][notion], res)
            ss["active"][sha] = record["keys"]
            message = f"Finished in {job.seconds:.1f} s ({', '.join(record['keys'])})."
        else:
            message = failure_message(job, "The evaluation", interrupted=record.get("interrupted", False))
            if record["auto"]:
                ss["declined"].add(sha)
                ss["notices"].append(("error", message))
        if not (ok and record["auto"]):  # the first visit's analysis was not the user's Run: no "Finished" on Evaluate
            ss["run_message"] = (sha, ok, message)


def pending_evaluation(sha):
    """Whether this session has an evaluation of the data ``sha`` queued or running."""
    return any(r["kind"] == "evaluate" and r["sha"] == sha for r in st.session_state["jobs"].values())


CANCELLED_MESSAGE = "Cancelled. Change a setting, or press **Run again**, to start it again."


def begin_page():
    """Before the page runs: no job's progress drawn yet in this run (see :func:`job_panel`)."""
    st.session_state["panels_drawn"] = set()


def job_result(key, fn, kwargs, *, title, store, page, result_key=None, what="The run", fixes=None, estimate=None):
    """The result of the job ``key`` computing ``fn(**kwargs)``, submitted if new; None while it runs
    (its progress and Cancel button shown here) and when it failed or was cancelled (its message
    shown here, with a "Run again" button when running it again can help). The result is kept
    in the session's ``store`` under ``result_key`` (default ``key``), a failure's message in
    ``job_errors``.

    For pages that run their job on every rerun, without a button of their own: once cancelled
    (or failed), the job is not submitted again until "Run again" is pressed or a setting
    changes (another key); a rerun right after a Cancel click would otherwise start it again
    at once. ``page``: the title of the page that shows the result, said where the job's progress
    shows on the other pages (:func:`job_panel`). A failure's message begins with ``what`` ("The run failed: ...") and ends with
    what to do in the app, ``fixes[option]`` (markdown), when the error names a loader option
    (``InputError.option``). ``estimate``: how long the job would take (see
    :meth:`calibdash_app.jobs.JobPool.submit`), so that a run beyond the server's limit is refused
    before it starts.
    """
    ss = st.session_state
    result_key = key if result_key is None else result_key
    if result_key in ss[store]:
        _used(store, result_key)
        return ss[store][result_key]
    error = ss["job_errors"].get(key) or (CANCELLED_MESSAGE if key in ss["cancelled"] else None)
    if error is None and key not in ss["jobs"]:
        record = {"kind": key[0], "slot": (key[0],), "title": title, "store": store, "result_key": result_key,
                  "what": what, "fixes": dict(fixes or {}), "page": page}
        again = key in ss.setdefault("run_again", set())
        ss["run_again"].discard(key)
        error = submit_job(key, fn, kwargs, record, again=again, estimate=estimate)
    if error is not None:
        st.error(error, icon=":material/error:")
        run_again_button(key, what=what)
        return None
    st.session_state.setdefault("panels_drawn", set()).add(key)
    job_progress(key)
    return None


def run_again_button(key, *, what="The run"):
    """A "Run again" button for the job ``key`` when it was cancelled, or failed for another reason
    than its input (a bug, a killed process): pressed, the job starts afresh."""
    ss = st.session_state
    if key not in ss["cancelled"] and key not in ss["retryable"]:
        return
    if st.button("Run again", key=f"again__{_key_hash(key)}", help=f"Start it again: {what.lower()} from the start."):
        for store in ("cancelled", "retryable", "job_errors"):
            ss[store].pop(key, None)
        ss.setdefault("run_again", set()).add(key)
        st.rerun()


def _key_hash(key):
    # Widget keys from a job's key: short, stable, and free of the key's characters.
    return hashlib.sha256(repr(key).encode()).hexdigest()[:16]


def job_panel(container, page):
    """In ``container``: the session's notices and the progress of its jobs (after the page, on every page):
    its evaluations, and its other jobs (a comparison, a validation, a simulation) unless the page drew
    their progress itself, with the page that will show their result.

    A notice stays until the user opens another page (``page``: the current page's url_path):
    the rerun that files a finished job follows a first visit within a second, too soon to read it.
    The notices of ``notices_once`` (what a reload restored) are shown by one run only.
    """
    ss = st.session_state
    with container:
        shown = ss.setdefault("notices_page", page)
        if shown != page:
            ss["notices"], ss["notices_page"] = [], page
        for kind, message in ss.get("notices_once", []) + ss["notices"]:
            getattr(st, kind)(message)
        drawn = ss.get("panels_drawn", set())
        for key, record in list(ss["jobs"].items()):
            if record["kind"] == "evaluate":
                job_progress(key)
            elif key not in drawn:
                job_progress(key, elsewhere=True)
        # Dropped once this run drew them: a job's progress that found its job over just now
        # reran the app before this line (st.rerun), and that run shows them.
        ss.pop("notices_once", None)


@st.fragment(run_every=POLL_SECONDS)
def job_progress(key, elsewhere=False):
    """Progress bar and Cancel button of the session's job ``key``, refreshed until it is over; then the
    whole app reruns, and :func:`collect_jobs` files the outcome. ``elsewhere``: drawn on another page
    than the one that shows its result (named in the title)."""
    ss = st.session_state
    record = ss["jobs"].get(key)
    job = job_pool().job(key, owner=ss["token"]) if record else None
    if job is None or job.finished:
        st.rerun()
    done, total, message = job.progress
    if job.state == jobs.QUEUED:
        ahead = job_pool().position(job)
        status = f"waiting for a free worker ({ahead} job(s) ahead)" if ahead else "waiting for a free worker"
    else:
        status = f"{message} ({job.seconds:.0f} s)"
    with st.container(border=True, key=f"job__{_key_hash(key)}"):
        title = record["title"] + (f" (for the {record['page']} page)" if elsewhere and record.get("page") else "")
        st.progress(min(max(done / total, 0.0), 1.0) if total else 0.0,
                    text=title + ": " + display.escape_markdown(status))
        if st.button("Cancel", key=f"cancel__{_key_hash(key)}",
                     help="Stop this run. Results computed earlier stay."):
            cancel_job(key)
            st.rerun()
    # Only in the fragment's own refreshes: a page's run draws every job's panel without waiting.
    if _refreshing_fragment() and job.wait(FINISH_WAIT_SECONDS):
        st.rerun()


def _refreshing_fragment():
    ctx = get_script_run_ctx()
    return bool(getattr(ctx, "fragment_ids_this_run", None))


# -- the Compare and Learn pages' runs (calibdash.evaluation.compare, calibdash.lab.studies) --
def comparison_key(models, settings):
    """Cache key of a comparison: the data fingerprints and the settings."""
    return (tuple((name, pred.sha256) for name, pred in models.items()), tuple(sorted(settings.items())))


def run_comparison(models, settings):
    """Compare ``models`` ({name: Predictions}) with ``settings``, as a job of the server's pool.

    Returns the ComparisonResult, or None while the job runs or when it failed (its progress,
    or its message, is then shown where this is called, as :func:`job_result` does); never raises.
    """
    key = comparison_key(models, settings)
    kwargs = dict(models=dict(models), notion=settings["notion"], estimator=settings["estimator"],
                  random_state=settings["seed"])
    return job_result(("compare", key), cd.compare, kwargs, title="Comparing the models", store="cmp_results",
                      page="Compare", result_key=key)


# The Learn page's studies grow a draw at a time: a finished table's rows stay in the session under
# the settings that change every row (scenario, notion, seed; for Figure 1 the rows per data set and
# the seed), and a changed setting computes only the draws it adds: a sample size, more draws, another
# estimator, more data sets. Fewer draws, sizes or estimators need no computation at all.
LAB_AUTO_RUN_UNITS = 100_000  # rows x estimators a view computes without its Run button (defaults: 26,250)


def _kept_rows(prefix):
    # The rows kept under ``prefix`` in the session's lab results, merged into one entry: a table grown
    # a piece at a time would otherwise be split over entries that the store drops one by one.
    ss = st.session_state
    keys = [k for k in list(ss["lab_results"]) if k[:len(prefix)] == prefix]
    if not keys:
        return None
    if len(keys) == 1:
        _used("lab_results", keys[0])
        return ss["lab_results"][keys[0]]
    rows = pd.concat([ss["lab_results"].pop(k) for k in keys], ignore_index=True)
    _bounded("lab_results", (*prefix, "kept"), rows)
    return rows


def _lab_job(prefix, todo, fn, kwargs, *, title, what, units=0, button=None):
    # The job computing the rows ``todo`` of the table ``prefix``: started at once when it is small
    # (or has no ``button``), else once its Run button (``button``: its key and label) is pressed.
    ss = st.session_state
    key = (*prefix, tuple(todo))
    pressed = ss.setdefault("lab_run_pressed", set())
    if button is not None and units > LAB_AUTO_RUN_UNITS and key not in ss["jobs"] and key not in pressed and key not in ss["job_errors"]:
        st.info(f"These settings need {len(todo):,} new {what} ({units:,} rows x estimators to evaluate): "
                "press Run to compute them. Settings already computed show at once.", icon=":material/schedule:")
        if st.button(button[1], key=button[0], type="primary"):
            pressed.add(key)
            st.rerun()
        return None
    return job_result(key, fn, kwargs, title=f"{title} ({len(todo):,} new {what})",
                      store="lab_results", page="Learn")


@renamed_parameters(seed="random_state")
def lab_estimates(kind, params, ns, n_repeats, estimators, notion, random_state):
    """The Learn page's estimates against the truth (:func:`calibdash.lab.studies.estimates_vs_n`):
    ``(rows, summary, truth, label)``, or None while the draws it lacks are computed as a job (or
    wait for their Run button, when they are many), or when that job failed (see :func:`job_result`).
    Only the draws these settings add to what the session has computed are run."""
    from calibdash.lab import studies

    prefix = ("lab_draws", kind, params, notion, random_state)
    have = _kept_rows(prefix)
    todo = studies.missing_draws(have, ns=ns, n_repeats=n_repeats, estimators=estimators)
    sc = studies.scenario(kind, **dict(params))
    if todo:
        units = sum(n * len(ests) for n, _, ests in todo)
        kwargs = dict(scenario=sc, draws=todo, notion=notion, random_state=random_state)
        rows = _lab_job(prefix, todo, studies.estimates_of_draws, kwargs, title="Simulating and estimating", what="draws",
                        units=units, button=("lab_run_estimates", "Run the simulation"))
        if rows is None:
            return None
        have = _kept_rows(prefix)
    rows = studies.select_estimates(have, ns=ns, n_repeats=n_repeats, estimators=estimators)
    return rows, studies.summarise_estimates(rows), float(rows["truth"].iloc[0]), sc.label


@renamed_parameters(seed="random_state")
def lab_figure1(n, n_seeds, random_state):
    """calibdash.lab.studies.figure1 for these settings: its table, or None while the data sets it
    lacks are computed as a job, or when that job failed (see :func:`job_result`). Only the data
    sets these settings add to what the session has computed are run."""
    from calibdash.lab import studies

    prefix = ("lab_figure1", n, random_state)
    have = _kept_rows(prefix)
    done = set() if have is None else set(have["seed"])
    first = next((s for s in range(n_seeds) if s not in done), None)
    if first is not None:
        # No Run button: the largest setting (200 data sets of 2,000 rows) takes about 5 s.
        kwargs = dict(n=n, n_seeds=n_seeds - first, first_seed=first, random_state=random_state)
        rows = _lab_job(prefix, list(range(first, n_seeds)), studies.figure1, kwargs, title="Computing the risks",
                        what="data sets")
        if rows is None:
            return None
        have = _kept_rows(prefix)
    table = have[have["seed"] < n_seeds].drop_duplicates(["seed", "theta"])
    return table.sort_values(["seed", "theta"]).reset_index(drop=True)
