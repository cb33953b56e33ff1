"""A bounded pool of jobs run in child processes, shared by the app's sessions.

The app's evaluations, comparisons and lab runs take seconds to minutes. Run in the
server's script threads they hold its GIL (so it stops answering, even its health check),
die with the page that started them, and share one joblib executor between sessions. Here a
job is a call ``fn(**kwargs)`` run in a child process of its own:

* a FIFO queue shared by every session, at most ``max_jobs`` jobs at once, each given
  ``cores_per_job`` cores (passed as ``n_jobs`` to functions that take it);
* jobs are keyed by what they compute (data fingerprint and settings): submitting a key that
  is queued, running or done returns that job, with the new owner added;
* the job reports progress ``(done, total, message)`` through a pipe read by a monitor
  thread, and its result (or error) comes back by pickle from our own child;
* cancelling kills the child's whole process group (joblib's workers included);
* the last ``max_finished`` finished jobs are kept, the oldest forgotten first.

Children come from the "forkserver" start method: never a fork of the threaded server, and
each starts from a process that has already imported the package (a few milliseconds,
where "spawn" re-imports NumPy, SciPy and scikit-learn: one to three seconds). A child does
not import the parent's ``__main__`` either: under Streamlit that is the app's script, which
would run in it (see :func:`_preparation_data`).

:class:`SessionStore` keeps a browser tab's state on the server across a reload, under a
random token.
"""

from __future__ import annotations

import atexit
import inspect
import logging
import multiprocessing
import os
import secrets
import signal
import sys
import threading
import time
import traceback
import weakref
from collections import OrderedDict, deque
from multiprocessing import spawn

from calibdash.errors import CalibdashError, ConfigError

__all__ = ["QUEUED", "RUNNING", "DONE", "FAILED", "CANCELLED", "BusyError", "Job", "JobPool", "pool_settings",
           "SessionStore", "new_token"]

LOG = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
FINISHED = (DONE, FAILED, CANCELLED)
# What every child imports once, in the fork server, before any job.
PRELOAD = ("calibdash.evaluation.pipeline", "calibdash.evaluation.compare", "calibdash.lab.studies")
# Progress messages closer together than this are dropped (the last one always goes).
PROGRESS_INTERVAL = 0.1


class BusyError(CalibdashError):
    """The queue is full: the server already has as many jobs waiting as it accepts."""


def available_cores():
    """Cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def pool_settings(environ=None):
    """``(max_jobs, cores_per_job)`` from ``CALIBDASH_MAX_JOBS`` and ``CALIBDASH_JOB_CORES``.

    Defaults: half the cores run jobs (at least one), and the cores are shared out between
    them. Raises :class:`~calibdash.errors.ConfigError` on a value that is not a positive
    whole number.
    """
    environ = os.environ if environ is None else environ
    cores = available_cores()

    def read(name, default):
        text = environ.get(name, "").strip()
        if not text:
            return default
        if not text.isdigit() or int(text) < 1:
            raise ConfigError(f"The environment variable {name} must be a whole number of at least 1, got {text!r}; "
                              "unset it for the default.")
        return int(text)

    max_jobs = read("CALIBDASH_MAX_JOBS", max(1, cores // 2))
    return max_jobs, read("CALIBDASH_JOB_CORES", max(1, cores // max_jobs))


class Job:
    """One call ``fn(**kwargs)`` in the pool: its state, progress, result or error.

    Attributes
    ----------
    key : hashable
        What the job computes; the pool's index.
    label : str
        What to call it in messages.
    state : str
        ``"queued"``, ``"running"``, ``"done"``, ``"failed"`` or ``"cancelled"``.
    progress : tuple
        ``(done, total, message)``, the last the job reported.
    result : object
        ``fn``'s return value once ``state == "done"``.
    error : Exception or None
        Once failed: the :class:`~calibdash.errors.CalibdashError` the job raised (a message
        for the user), or ``None`` when it failed by a bug (see ``bug``).
    bug : str or None
        Once failed by anything else: a one-line description (the traceback is in the log).
    submitted, started, ended : float or None
        ``time.monotonic()`` of each step.
    """

    def __init__(self, key, fn, kwargs, label, pool):
        self.key, self.label = key, label
        self.fn, self.kwargs = fn, dict(kwargs)
        self.state = QUEUED
        self.progress = (0, 0, "Waiting for a free worker...")
        self.result = self.error = self.bug = None
        self.submitted, self.started, self.ended = time.monotonic(), None, None
        self.owners = set()
        self._pool = weakref.ref(pool)
        self._process = None
        self._done = threading.Event()

    @property
    def finished(self):
        """Whether the job is over (done, failed or cancelled)."""
        return self.state in FINISHED

    @property
    def seconds(self):
        """How long it ran (so far), 0 while queued."""
        if self.started is None:
            return 0.0
        return (self.ended or time.monotonic()) - self.started

    def wait(self, timeout=None):
        """Block until the job is over or ``timeout`` seconds passed; returns whether it is over."""
        return self._done.wait(timeout)

    def cancel(self):
        """Stop the job for every owner: drop it from the queue, or kill its process group."""
        pool = self._pool()
        if pool is not None:
            pool.kill(self)

    def __repr__(self):
        return f"<Job {self.label or self.key!r} {self.state}>"


_LAUNCHING = threading.local()
_PREPARATION_DATA = spawn.get_preparation_data


def _preparation_data(name):
    # What multiprocessing sends a new child before the job. It names the parent's __main__,
    # which the child imports first; Streamlit makes the app's script that module, so the
    # child would run the whole app. A job needs only the package: for our children (and
    # only for them: the flag is this thread's, set while the pool starts one) it is left out.
    data = _PREPARATION_DATA(name)
    if getattr(_LAUNCHING, "active", False):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


spawn.get_preparation_data = _preparation_data


def _kill_group(pid):
    # The child leads its own session, so its group id is its pid; a child that has not got
    # that far yet has started nothing, and killing it alone is enough.
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def child_main(conn, fn, kwargs, cores):
    """Entry of a job's child process: run ``fn`` and send its progress and outcome on ``conn``.

    Module-level, so that the fork server finds it by name. ``fn`` gets ``n_jobs=cores`` and
    ``progress=`` only if it takes them.
    """
    os.setsid()  # its own process group: a cancel kills it with every worker it starts
    lock, last = threading.Lock(), [0.0]

    def progress(done, total, message=""):
        now = time.monotonic()
        with lock:  # joblib may call back from another thread
            if now - last[0] >= PROGRESS_INTERVAL or done >= total:
                last[0] = now
                conn.send(("progress", (int(done), int(total), str(message))))

    params = inspect.signature(fn).parameters
    extra = {name: value for name, value in (("n_jobs", cores), ("progress", progress)) if name in params}
    try:
        outcome = ("done", fn(**kwargs, **extra))
    except CalibdashError as e:
        outcome = ("error", e)
    except BaseException as e:  # noqa: BLE001 - a bug: its traceback goes to the server's log
        outcome = ("bug", (f"{type(e).__name__}: {e}", traceback.format_exc()))
    with lock:
        try:
            conn.send(outcome)
        except Exception as e:  # noqa: BLE001 - e.g. a result that cannot be pickled: a bug too
            conn.send(("bug", (f"the outcome could not be sent back ({type(e).__name__}: {e})", traceback.format_exc())))
    conn.close()
    # Not multiprocessing's exit, which would wait for joblib's workers (they count as its
    # children and stop only when this process is gone); the pool kills the group next.
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


class JobPool:
    """A FIFO queue of jobs, ``max_jobs`` of them running at once in child processes.

    Parameters
    ----------
    max_jobs : int, default=1
        Jobs running at once; the others wait in the queue.
    cores_per_job : int, default=1
        Passed as ``n_jobs`` to a job's function (when it takes ``n_jobs``).
    max_queued : int, default=64
        Jobs waiting at most; :meth:`submit` raises :class:`BusyError` beyond.
    max_finished : int, default=32
        Finished jobs kept (with their results), the least recently used forgotten first.
    """

    def __init__(self, *, max_jobs=1, cores_per_job=1, max_queued=64, max_finished=32):
        for name, value in (("max_jobs", max_jobs), ("cores_per_job", cores_per_job), ("max_queued", max_queued),
                            ("max_finished", max_finished)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a whole number of at least 1, got {value!r}.")
        self.max_jobs, self.cores_per_job = max_jobs, cores_per_job
        self.max_queued, self.max_finished = max_queued, max_finished
        self._lock = threading.RLock()
        self._queue = deque()
        self._running = {}  # key -> Job
        self._finished = OrderedDict()  # key -> Job, least recently used first
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(list(PRELOAD))
        # Before multiprocessing's own exit handler, which would wait for the children.
        atexit.register(self.shutdown)

    @classmethod
    def from_environment(cls, environ=None, **kwargs):
        """A pool configured by :func:`pool_settings`."""
        max_jobs, cores = pool_settings(environ)
        return cls(max_jobs=max_jobs, cores_per_job=cores, **kwargs)

    def submit(self, key, fn, kwargs=None, *, owner, label=""):
        """The job computing ``key``: the queued, running or done one, else a new one at the end of the queue.

        ``fn`` must be a module-level function (the child finds it by name) and ``kwargs``
        picklable. ``owner`` is added to the job's owners. A failed or cancelled job is
        replaced by a new one.
        """
        with self._lock:
            job = self._lookup(key)
            if job is None or job.state in (FAILED, CANCELLED):
                if len(self._queue) >= self.max_queued:
                    raise BusyError(f"The server is busy: {len(self._queue)} jobs are already waiting. "
                                    "Try again in a minute.")
                self._finished.pop(key, None)
                job = Job(key, fn, kwargs or {}, label, self)
                self._queue.append(job)
            job.owners.add(owner)
            self._dispatch()
            return job

    def job(self, key, *, owner):
        """The job of ``key`` if ``owner`` is one of its owners, else None (also once forgotten)."""
        with self._lock:
            job = self._lookup(key)
            return job if job is not None and owner in job.owners else None

    def position(self, job):
        """How many queued jobs are ahead of ``job`` (0 when it is not queued)."""
        with self._lock:
            for i, queued in enumerate(self._queue):
                if queued is job:
                    return i
            return 0

    def cancel(self, key, *, owner):
        """``owner`` gives up the job of ``key``; it is stopped once nobody else wants it."""
        with self._lock:
            job = self._lookup(key)
            if job is None or owner not in job.owners:
                return
            job.owners.discard(owner)
            if not job.owners and not job.finished:
                self.kill(job)

    def kill(self, job):
        """Stop ``job`` whoever owns it (:meth:`Job.cancel`)."""
        with self._lock:
            if job.finished:
                return
            if job.state == QUEUED:
                self._queue.remove(job)
                self._finish(job, CANCELLED)
                return
            job.state = CANCELLED  # the monitor thread sees it once the pipe closes
            process = job._process
        _kill_group(process.pid)
        process.kill()

    def shutdown(self):
        """Cancel every queued and running job (at exit, and in tests)."""
        with self._lock:
            jobs = list(self._queue) + list(self._running.values())
        for job in jobs:
            self.kill(job)
        for job in jobs:
            job.wait(10)

    def counts(self):
        """``{"queued": n, "running": n, "finished": n}``."""
        with self._lock:
            return {"queued": len(self._queue), "running": len(self._running), "finished": len(self._finished)}

    # -- inside the lock ---------------------------------------------------------------------
    def _lookup(self, key):
        if key in self._running:
            return self._running[key]
        if key in self._finished:
            self._finished.move_to_end(key)
            return self._finished[key]
        return next((job for job in self._queue if job.key == key), None)

    def _dispatch(self):
        while self._queue and len(self._running) < self.max_jobs:
            job = self._queue.popleft()
            receive, send = self._context.Pipe(duplex=False)
            process = self._context.Process(target=child_main, args=(send, job.fn, job.kwargs, self.cores_per_job),
                                            name=f"calibdash job {job.label}"[:60])
            _LAUNCHING.active = True
            try:
                process.start()
            except Exception as e:  # noqa: BLE001 - e.g. arguments that cannot be pickled: a bug, not the user's
                LOG.exception("calibdash job %r could not start", job.label)
                job.bug = f"the job could not start ({type(e).__name__}: {e})"
                receive.close()
                send.close()
                self._finish(job, FAILED)
                continue
            finally:
                _LAUNCHING.active = False
            send.close()  # the child holds the other end: its exit closes the pipe
            job.state, job.started, job._process = RUNNING, time.monotonic(), process
            job.progress = (0, 0, "Starting...")
            self._running[job.key] = job
            threading.Thread(target=self._monitor, args=(job, receive, process), daemon=True,
                             name=f"calibdash monitor {job.label}"[:60]).start()

    def _finish(self, job, state):
        job.state, job.ended = state, time.monotonic()
        job.fn = job.kwargs = job._process = None  # the data can go
        self._running.pop(job.key, None)
        self._finished[job.key] = job
        while len(self._finished) > self.max_finished:
            self._finished.popitem(last=False)
        job._done.set()

    # -- the monitor thread of a running job --------------------------------------------------
    def _monitor(self, job, conn, process):
        outcome = None
        try:
            while True:
                kind, payload = conn.recv()
                if kind == "progress":
                    job.progress = payload
                else:
                    outcome = (kind, payload)
                    break
        except (EOFError, OSError):
            pass  # the child is gone: killed, or it died
        except Exception:  # noqa: BLE001 - e.g. a result that cannot be unpickled here
            LOG.exception("calibdash job %r: its outcome could not be read", job.label)
            outcome = ("bug", ("its outcome could not be read back", ""))
        finally:
            conn.close()
        process.join(5)
        _kill_group(process.pid)  # anything the child left behind (joblib's workers)
        process.join()
        with self._lock:
            if job.state == CANCELLED:
                state = CANCELLED
            elif outcome is None:
                job.bug = f"its process ended unexpectedly (exit code {process.exitcode}; out of memory?)"
                state = FAILED
            elif outcome[0] == "done":
                job.result, state = outcome[1], DONE
            elif outcome[0] == "error":
                job.error, state = outcome[1], FAILED
            else:
                job.bug, state = outcome[1][0], FAILED
                LOG.error("calibdash job %r failed by a bug:\n%s", job.label, outcome[1][1])
            if state == DONE:
                job.progress = (job.progress[1], job.progress[1], "Done.")
            self._finish(job, state)
            self._dispatch()


def new_token():
    """A random, unguessable token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


class SessionStore:
    """Server-side state of browser tabs, by random token, so that a reload finds it again.

    Bounded (``max_entries``, least recently used forgotten first) and expiring (an entry not
    touched for ``ttl`` seconds is forgotten). Thread-safe.
    """

    def __init__(self, *, max_entries=64, ttl=2 * 3600, clock=time.monotonic):
        self.max_entries, self.ttl, self._clock = max_entries, ttl, clock
        self._entries = OrderedDict()  # token -> (last touched, dict)
        self._lock = threading.Lock()

    def get(self, token):
        """The entry (a dict) of ``token``, or None if unknown or expired; touches it."""
        with self._lock:
            self._expire()
            if not isinstance(token, str) or token not in self._entries:
                return None
            _, entry = self._entries.pop(token)
            self._entries[token] = (self._clock(), entry)
            return entry

    def put(self, token, entry):
        """Keep ``entry`` under ``token``."""
        with self._lock:
            self._entries.pop(token, None)
            self._entries[token] = (self._clock(), entry)
            self._expire()

    def __len__(self):
        with self._lock:
            self._expire()
            return len(self._entries)

    def _expire(self):
        now = self._clock()
        while self._entries:
            token, (touched, _) = next(iter(self._entries.items()))
            if len(self._entries) <= self.max_entries and now - touched <= self.ttl:
                break
            del self._entries[token]
