"""A bounded pool of jobs run by long-lived worker processes, shared by the app's sessions.

The app's evaluations, comparisons and lab runs take seconds to minutes. Run in the
server's script threads they hold its GIL (so it stops answering, even its health check),
die with the page that started them, and share one joblib executor between sessions. Here a
job is a call ``fn(**kwargs)`` run by one of ``max_jobs`` long-lived worker processes:

* a FIFO queue shared by every session, at most ``max_jobs`` jobs at once, each given
  ``cores_per_job`` cores (passed as ``n_jobs`` to functions that take it);
* ``warm_workers`` workers start with the pool and stay warm between jobs: their imports done
  and their joblib processes started (a job in a fresh process paid about 6 s of the default
  CIFAR-100 evaluation's 24 s for that; the evaluations now run their tasks in the worker's
  threads, the other jobs' joblib calls in these processes); more start when jobs wait for them, up to
  ``max_jobs``, and exit after ``idle_seconds`` without a job; a worker left above
  ``recycle_bytes`` of memory is replaced;
* jobs are keyed by what they compute (data fingerprint and settings): submitting a key that
  is queued, running or done returns that job, with the new owner added; submitting is
  idempotent per owner and key whatever the job's state: a failed or cancelled job is
  started again only on request (``again=True``, a "Run again" button) or for an owner that
  never asked for it, so that a page rerunning after a Cancel click cannot queue copies;
* the job reports progress ``(done, total, message)`` through a pipe read by its worker's
  driver thread, and its result (or error) comes back by pickle from our own worker;
* cancelling a running job ends it at once and kills its worker's whole process group
  (joblib's workers included); a fresh worker replaces it;
* the last ``max_finished`` finished jobs are kept, and at most ``max_finished_bytes`` of their
  results (by their pickles' lengths, as they came from the worker), the oldest forgotten first.

Workers come from the "forkserver" start method: never a fork of the threaded server, and
each starts from a process that has already imported the package (a few milliseconds,
where "spawn" re-imports NumPy, SciPy and scikit-learn: one to three seconds). A worker does
not import the parent's ``__main__`` either: under Streamlit that is the app's script, which
would run in it (see :func:`_preparation_data`).

The sessions' state that a reload or a restart finds again is kept by :mod:`calibdash_app.store`.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import inspect
import logging
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
import traceback
import weakref
from collections import OrderedDict, deque
from multiprocessing import spawn
from multiprocessing.reduction import ForkingPickler

from calibdash.errors import CalibdashError, ConfigError

__all__ = ["QUEUED", "RUNNING", "DONE", "FAILED", "CANCELLED", "BusyError", "TooLongError", "JobTimeout", "Job", "JobPool",
           "duration_text", "widen_pipe",
           "pool_settings", "fairness_settings", "memory_settings",
           "whole_number_setting"]

LOG = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
FINISHED = (DONE, FAILED, CANCELLED)
# What every worker imports once, in the fork server, before any job.
PRELOAD = ("calibdash.evaluation.pipeline", "calibdash.evaluation.compare", "calibdash.lab.studies")
# Progress messages closer together than this are dropped (the last one always goes).
PROGRESS_INTERVAL = 0.1
# How long a worker's idle joblib processes wait for its next job before they exit.
WARM_SECONDS = 3600
# The capacity asked for the pipes to a worker (Linux's default is 64 KiB; 1 MiB is what an unprivileged
# process may ask, /proc/sys/fs/pipe-max-size). A job's data and result cross a pipe one capacity at a time,
# and each piece costs the server's driver thread a turn of the GIL, which the page scripts and the
# web server share: at 64 KiB the 50 MB result of a CIFAR-100 evaluation takes 800 turns (0.13-0.21 s
# in the pool alone, 0.3-0.45 s in a busy server), at 1 MiB 50 (0.11-0.14 s alone; in the app the
# gain is below the runs' noise: BENCHMARKS.md, "Dashboard").
PIPE_BYTES = 1024**2
# A worker whose resident memory exceeds this after a job is replaced by a fresh one.
RECYCLE_BYTES = 2 * 1024**3
# What the finished jobs kept for the sessions (and for others asking for the same key) may hold,
# in MiB (CALIBDASH_FINISHED_MIB).
FINISHED_MIB = 512
FINISHED_BYTES = FINISHED_MIB * 1024**2
# Workers kept warm while idle (each with its joblib processes: about 0.25 GB a process); the
# others start when jobs wait for them and exit after IDLE_SECONDS without a job, so that a
# server with many cores does not hold dozens of idle processes.
WARM_WORKERS = 2
IDLE_SECONDS = 600
# A session's jobs waiting or running at once (a page's job and a few others: Learn runs two);
# beyond, it waits for one of them, so that one tab cannot fill the queue ahead of the others.
JOBS_PER_SESSION = 4
# The longest a job may run: the default CIFAR-100 evaluation takes about 15 s, 10,000,000 rows
# from the command line about 200 s; an hour of the only worker is a run gone wrong.
JOB_SECONDS = 3600


class JobTimeout(CalibdashError):
    """A job ran longer than the pool's ``max_seconds``; its worker was stopped."""


class BusyError(CalibdashError):
    """The queue is full: the server already has as many jobs waiting as it accepts."""


class TooLongError(CalibdashError):
    """A job whose estimated run time exceeds the pool's ``max_seconds``: refused before it starts."""


def duration_text(seconds):
    """``seconds`` as a reader says it: "40 s", "12 min", "1 h 10 min"."""
    seconds = float(seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


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
    max_jobs = whole_number_setting(environ, "CALIBDASH_MAX_JOBS", max(1, cores // 2))
    return max_jobs, whole_number_setting(environ, "CALIBDASH_JOB_CORES", max(1, cores // max_jobs))


def whole_number_setting(environ, name, default):
    """The environment variable ``name`` of ``environ``: a whole number of at least 1, or ``default`` when
    unset; a :class:`~calibdash.errors.ConfigError` that says how to fix any other value."""
    text = environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"The environment variable {name} must be a whole number of at least 1, got {text!r}; "
                          "unset it for the default.")
    return int(text)


def fairness_settings(environ=None):
    """``{"max_per_owner": n, "max_seconds": s}`` from ``CALIBDASH_JOBS_PER_SESSION`` and
    ``CALIBDASH_JOB_SECONDS`` (defaults :data:`JOBS_PER_SESSION`, :data:`JOB_SECONDS`); a
    :class:`~calibdash.errors.ConfigError` on a value that is not a positive whole number."""
    environ = os.environ if environ is None else environ
    return {"max_per_owner": whole_number_setting(environ, "CALIBDASH_JOBS_PER_SESSION", JOBS_PER_SESSION),
            "max_seconds": whole_number_setting(environ, "CALIBDASH_JOB_SECONDS", JOB_SECONDS)}


def memory_settings(environ=None):
    """``{"max_finished_bytes": b}`` from ``CALIBDASH_FINISHED_MIB`` (default :data:`FINISHED_MIB`): what the
    finished jobs' results kept by the pool may hold, besides what the sessions hold; a
    :class:`~calibdash.errors.ConfigError` on a value that is not a positive whole number."""
    environ = os.environ if environ is None else environ
    return {"max_finished_bytes": whole_number_setting(environ, "CALIBDASH_FINISHED_MIB", FINISHED_MIB) * 1024**2}


class Job:
    """One call ``fn(**kwargs)`` in the pool: its state, progress, result or error.

    Attributes
    ----------
    key : hashable
        What the job computes; the pool's index.
    label : str
        What to call it in messages.
    threads : bool
        Whether its joblib calls prefer the worker's threads (see :meth:`JobPool.submit`).
    state : str
        ``"queued"``, ``"running"``, ``"done"``, ``"failed"`` or ``"cancelled"``.
    progress : tuple
        ``(done, total, message)``, the last the job reported.
    result : object
        ``fn``'s return value once ``state == "done"``.
    nbytes : int
        The length of the outcome's pickle as it came from the worker (0 before).
    error : Exception or None
        Once failed: the :class:`~calibdash.errors.CalibdashError` the job raised (a message
        for the user), or ``None`` when it failed by a bug (see ``bug``).
    bug : str or None
        Once failed by anything else: a one-line description (the traceback is in the log).
    submitted, started, ended : float or None
        ``time.monotonic()`` of each step.
    """

    def __init__(self, key, fn, kwargs, label, pool, *, threads=False):
        self.key, self.label = key, label
        self.fn, self.kwargs, self.threads = fn, dict(kwargs), threads
        self.state = QUEUED
        self.progress = (0, 0, "Waiting for a free worker...")
        self.result = self.error = self.bug = None
        self.nbytes = 0
        self.submitted, self.started, self.ended = time.monotonic(), None, None
        self.owners = set()
        # Every owner that ever asked for this key (through earlier jobs of the key too): their
        # submits return this job even once it failed or was cancelled, unless they ask again.
        self.requested = set()
        self._pool = weakref.ref(pool)
        self._worker = None  # while it runs: the worker running it
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

    @property
    def worker_pid(self):
        """Process id of the worker running the job (it leads the job's process group), None when not running."""
        worker = self._worker
        return None if worker is None else worker.process.pid

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


def _resident_bytes():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # not on Linux: never recycled for memory
        return 0


def widen_pipe(connection, size=PIPE_BYTES):
    """Ask for a capacity of ``size`` bytes for the pipe under ``connection`` (either end: they share
    it); returns the capacity it has, or None where a pipe's capacity cannot be set (not Linux).
    A refusal (a lower system limit) leaves the pipe as it was: only the transfers are slower."""
    try:
        import fcntl
    except ImportError:
        return None
    if not hasattr(fcntl, "F_SETPIPE_SZ"):
        return None
    try:
        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, size)
    except OSError:
        pass
    return fcntl.fcntl(connection.fileno(), fcntl.F_GETPIPE_SZ)


def import_modules(names):
    """Import ``names`` (in a joblib worker, while its pool warms up); returns the process id."""
    for name in names:
        importlib.import_module(name)
    return os.getpid()


def _joblib_config(*, threads=False):
    # A job submitted with threads=True (an evaluation: its time is in NumPy and BLAS, which
    # release the GIL) prefers threads of the worker, as from Python and the command line, and
    # needs no copy of the data (in the warm loky processes the app's run took 1.35 times the
    # Python call; BENCHMARKS.md, "Dashboard"). Every other job runs under one loky configuration,
    # so that the executor the warm-up started is reused (joblib restarts it when its settings
    # change) and its processes wait an hour, not joblib's five minutes, for the next job.
    from joblib import parallel_config

    if threads:
        return parallel_config(prefer="threads")
    return parallel_config(backend="loky", idle_worker_timeout=WARM_SECONDS)


def worker_main(tasks, events, cores):
    """Entry of a worker process: warm up, then run the jobs read from ``tasks`` one after another,
    sending their progress and outcome on ``events``, until ``tasks`` closes.

    Module-level, so that the fork server finds it by name. A job's ``fn`` gets
    ``n_jobs=cores`` and ``progress=`` only if it takes them. The outcome is sent with the
    worker's resident memory, so that the pool can replace a worker that a large job left big.
    """
    os.setsid()  # its own process group: a cancel kills it with every joblib worker it starts
    from joblib import Parallel, delayed

    if cores > 1:  # start the joblib processes now, and import the pipeline in them
        with _joblib_config():
            Parallel(n_jobs=cores)(delayed(import_modules)(PRELOAD) for _ in range(2 * cores))
    while True:
        try:
            fn, kwargs, threads = tasks.recv()
        except (EOFError, OSError):
            break
        _run_job(events, fn, kwargs, cores, threads=threads)
        del fn, kwargs
        gc.collect()  # before the memory is measured, after the next job's
    # Not multiprocessing's exit, which would wait for joblib's workers (they count as its
    # children and stop only when this process is gone); the pool kills the group.
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


def _run_job(events, fn, kwargs, cores, *, threads=False):
    lock, last, over = threading.Lock(), [0.0], [False]

    def progress(done, total, message=""):
        now = time.monotonic()
        with lock:  # joblib may call back from another thread, even after the outcome
            if not over[0] and (now - last[0] >= PROGRESS_INTERVAL or done >= total):
                last[0] = now
                events.send(("progress", (int(done), int(total), str(message))))

    params = inspect.signature(fn).parameters
    extra = {name: value for name, value in (("n_jobs", cores), ("progress", progress)) if name in params}
    try:
        with _joblib_config(threads=threads):
            outcome = ("done", fn(**kwargs, **extra))
    except CalibdashError as e:
        outcome = ("error", e)
    except Exception as e:  # noqa: BLE001 - a bug: its traceback goes to the server's log
        outcome = ("bug", (f"{type(e).__name__}: {e}", traceback.format_exc()))
    with lock:
        over[0] = True
        kind, body = outcome
        del outcome
        try:
            events.send((kind, (body, _resident_bytes())))
        except Exception as e:  # noqa: BLE001 - e.g. a result that cannot be pickled: a bug too
            events.send(("bug", ((f"the outcome could not be sent back ({type(e).__name__}: {e})",
                                  traceback.format_exc()), _resident_bytes())))


class _Worker:
    """A worker process, the pipes to it, the job it runs and the thread that drives it."""

    def __init__(self, process, tasks, events):
        self.process, self.tasks, self.events = process, tasks, events
        self.inbox = queue.SimpleQueue()  # jobs for the driver thread to send; None stops it
        self.job = None
        self.retiring = False  # stopped or stopping: given no new job
        self.replace = False  # retired on purpose (a cancel, or memory): replaced at once to keep the warm ones
        self.thread = None

    def signal(self):
        """Kill the worker with its process group (joblib's workers) without waiting; idempotent."""
        self.inbox.put(None)
        _kill_group(self.process.pid)
        self.process.kill()

    def stop(self):
        """Kill the worker with its process group and reap it; idempotent."""
        self.signal()
        self.process.join(10)


class JobPool:
    """A FIFO queue of jobs, run ``max_jobs`` at a time by long-lived worker processes.

    Parameters
    ----------
    max_jobs : int, default=1
        Worker processes, so jobs running at once; the others wait in the queue.
    cores_per_job : int, default=1
        Passed as ``n_jobs`` to a job's function (when it takes ``n_jobs``); a worker keeps
        that many joblib processes warm.
    max_queued : int, default=64
        Jobs waiting at most; :meth:`submit` raises :class:`BusyError` beyond.
    max_finished : int, default=32
        Finished jobs kept (with their results), the least recently used forgotten first.
    max_finished_bytes : int, default=512 MiB
        What the finished jobs' results may hold (their pickles' lengths): beyond, the least
        recently used are forgotten too, never the newest (its sessions have yet to file it). A
        default evaluation of 3,000 rows x 4 classes returns 10.7 MB (fitted models included).
    recycle_bytes : int, default=2 GiB
        A worker whose resident memory exceeds this after a job is replaced by a fresh one
        (memory a large job leaves fragmented is then given back).
    warm_workers : int, default=min(max_jobs, 2)
        Workers started with the pool and kept while idle; the others start when jobs wait
        and exit after ``idle_seconds`` without one.
    idle_seconds : float, default=600
    max_per_owner : int, default=4
        Jobs one owner (a session) may have waiting or running at once; :meth:`submit` raises
        :class:`BusyError` beyond (joining a job that exists already is always allowed).
        Waiting jobs are started round-robin between owners: the next is the queued job of the
        owner served longest ago, so that one session's many jobs do not hold back another's.
    max_seconds : float or None, default=3600
        A job running longer is stopped (its worker killed and replaced) and fails with
        :class:`JobTimeout`; None for no limit.
    """

    def __init__(self, *, max_jobs=1, cores_per_job=1, max_queued=64, max_finished=32,
                 max_finished_bytes=FINISHED_BYTES, recycle_bytes=RECYCLE_BYTES, warm_workers=None,
                 idle_seconds=IDLE_SECONDS, max_per_owner=JOBS_PER_SESSION, max_seconds=JOB_SECONDS):
        warm_workers = min(max_jobs, WARM_WORKERS) if warm_workers is None else warm_workers
        for name, value in (("max_jobs", max_jobs), ("cores_per_job", cores_per_job), ("max_queued", max_queued),
                            ("max_finished", max_finished), ("max_finished_bytes", max_finished_bytes),
                            ("recycle_bytes", recycle_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a whole number of at least 1, got {value!r}.")
        if isinstance(warm_workers, bool) or not isinstance(warm_workers, int) or not 0 <= warm_workers <= max_jobs:
            raise ConfigError(f"warm_workers must be a whole number from 0 to max_jobs ({max_jobs}), got {warm_workers!r}.")
        if not idle_seconds > 0:
            raise ConfigError(f"idle_seconds must be positive, got {idle_seconds!r}.")
        if isinstance(max_per_owner, bool) or not isinstance(max_per_owner, int) or max_per_owner < 1:
            raise ConfigError(f"max_per_owner must be a whole number of at least 1, got {max_per_owner!r}.")
        if max_seconds is not None and not max_seconds > 0:
            raise ConfigError(f"max_seconds must be positive or None, got {max_seconds!r}.")
        self.max_per_owner, self.max_seconds = max_per_owner, max_seconds
        self._served = {}  # owner -> time.monotonic() its last job started: the round-robin's order
        self.max_jobs, self.cores_per_job = max_jobs, cores_per_job
        self.max_queued, self.max_finished, self.recycle_bytes = max_queued, max_finished, recycle_bytes
        self.max_finished_bytes = max_finished_bytes
        self.warm_workers, self.idle_seconds = warm_workers, idle_seconds
        self._lock = threading.RLock()
        self._queue = deque()
        self._running = {}  # key -> Job
        self._finished = OrderedDict()  # key -> Job, least recently used first
        self._workers = []
        self._closed = False
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(list(PRELOAD))
        # Before multiprocessing's own exit handler, which would wait for the children.
        atexit.register(self.shutdown)
        with self._lock:  # warm now, so that the first job does not wait for a cold start
            try:
                for _ in range(warm_workers):
                    self._start_worker()
            except Exception:  # noqa: BLE001 - e.g. in a process still starting up: the first job starts one
                LOG.exception("calibdash: the warm workers could not start; they start when a job needs them")

    @classmethod
    def from_environment(cls, environ=None, **kwargs):
        """A pool configured by :func:`pool_settings`, :func:`fairness_settings` and :func:`memory_settings`."""
        max_jobs, cores = pool_settings(environ)
        settings = {**fairness_settings(environ), **memory_settings(environ)}
        return cls(max_jobs=max_jobs, cores_per_job=cores, **{**settings, **kwargs})

    def submit(self, key, fn, kwargs=None, *, owner, label="", again=False, estimate=None, threads=False):
        """The job computing ``key``: the queued, running or done one, else a new one at the end of the queue.

        ``fn`` must be a module-level function (the worker finds it by name) and ``kwargs``
        picklable. ``owner`` is added to the job's owners. A failed or cancelled job is
        replaced by a new one only when ``again`` is true or ``owner`` never asked for the
        key: otherwise ``owner`` gets that finished job back, so that however often a page
        submits the key it cancelled, nothing is queued. ``estimate``: ``(seconds, why, fix)``,
        a lower bound of how long the job would take, on what it rests and what to do instead; a new
        job estimated to run longer than ``max_seconds`` is refused with :class:`TooLongError`
        (its message built from them) rather than started and stopped an hour later. ``threads``:
        the job's joblib calls prefer threads of its worker (for work in NumPy and BLAS, which
        release the GIL, such as an evaluation) to the worker's warm loky processes.
        """
        with self._lock:
            job = self._lookup(key)
            if job is None or (job.state in (FAILED, CANCELLED) and (again or owner not in job.requested)):
                if estimate is not None and self.max_seconds is not None and estimate[0] > self.max_seconds:
                    seconds, why, fix = estimate
                    raise TooLongError(
                        f"This run would take at least {duration_text(seconds)} on this server ({why}), longer than the "
                        f"{duration_text(self.max_seconds)} it allows a run (CALIBDASH_JOB_SECONDS), so it was not "
                        f"started. {fix}")
                if len(self._queue) >= self.max_queued:
                    raise BusyError(f"The server is busy: {len(self._queue)} jobs are already waiting. "
                                    "Try again in a minute.")
                mine = sum(owner in j.owners for j in (*self._queue, *self._running.values()))
                if mine >= self.max_per_owner:
                    raise BusyError(f"You already have {mine} runs waiting or running on this server, the most one "
                                    "session may have at once: wait for one to finish, or cancel one.")
                self._finished.pop(key, None)
                old, job = job, Job(key, fn, kwargs or {}, label, self, threads=threads)
                if old is not None:
                    job.requested |= old.requested
                self._queue.append(job)
            job.owners.add(owner)
            job.requested.add(owner)
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

    def adopt(self, key, *, owner, new_owner):
        """``new_owner`` shares ``owner``'s job of ``key`` (a session restored under a new token); returns
        whether the pool has that job (False after a restart of the server, or once it is forgotten)."""
        with self._lock:
            job = self._lookup(key)
            if job is None or owner not in job.owners:
                return False
            job.owners.add(new_owner)
            job.requested.add(new_owner)
            return True

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
        """Stop ``job`` whoever owns it (:meth:`Job.cancel`): it is cancelled at once, and a running
        job's worker is killed with its whole process group and replaced by a fresh one."""
        with self._lock:
            if job.finished:
                return
            if job.state == QUEUED:
                self._queue.remove(job)
                self._finish(job, CANCELLED)
                return
            worker = job._worker
            worker.retiring = worker.replace = True  # its driver thread starts the replacement once it is gone
            self._finish(job, CANCELLED)
        # Not reaped here (up to seconds in the caller's thread, a page's script run): its
        # driver thread sees the pipe close, reaps it and starts the replacement.
        worker.signal()

    def shutdown(self):
        """Cancel every queued and running job and stop the workers (at exit, and in tests)."""
        with self._lock:
            self._closed = True
            jobs = list(self._queue) + list(self._running.values())
            workers = list(self._workers)
        for job in jobs:
            self.kill(job)
        for worker in workers:
            worker.stop()
        for worker in workers:
            worker.thread.join(10)

    def counts(self):
        """``{"queued": n, "running": n, "finished": n}``."""
        with self._lock:
            return {"queued": len(self._queue), "running": len(self._running), "finished": len(self._finished)}

    def worker_pids(self):
        """Process ids of the live workers (each leads a process group with its joblib workers)."""
        with self._lock:
            return [w.process.pid for w in self._workers if not w.retiring]

    # -- inside the lock ---------------------------------------------------------------------
    def _lookup(self, key):
        if key in self._running:
            return self._running[key]
        if key in self._finished:
            self._finished.move_to_end(key)
            return self._finished[key]
        return next((job for job in self._queue if job.key == key), None)

    def _live_workers(self):
        return sum(not w.retiring for w in self._workers)

    def _start_worker(self):
        tasks_out, tasks_in = self._context.Pipe(duplex=False)
        events_in, events_out = self._context.Pipe(duplex=False)
        widen_pipe(tasks_in)
        widen_pipe(events_in)
        process = self._context.Process(target=worker_main, args=(tasks_out, events_out, self.cores_per_job),
                                        name="calibdash worker", daemon=False)
        _LAUNCHING.active = True
        try:
            process.start()
        finally:
            _LAUNCHING.active = False
        tasks_out.close()  # the worker holds these ends: its exit closes the pipes
        events_out.close()
        worker = _Worker(process, tasks_in, events_in)
        self._workers.append(worker)
        worker.thread = threading.Thread(target=self._drive, args=(worker,), daemon=True, name="calibdash worker driver")
        worker.thread.start()
        return worker

    def _dispatch(self):
        if self._closed:
            return
        idle = []
        for worker in self._workers:
            if worker.job is None and not worker.retiring:
                if worker.process.is_alive():
                    idle.append(worker)
                else:  # died while idle (killed from outside): its driver removes it
                    worker.retiring = True  # replaced only when a job needs it: no loop of restarts
                    worker.inbox.put(None)
        while self._queue and len(idle) < len(self._queue) and len(self._workers) < self.max_jobs:
            try:
                idle.append(self._start_worker())
            except Exception as e:  # noqa: BLE001 - e.g. out of processes: the jobs say so instead of waiting
                LOG.exception("calibdash: a worker process could not start")
                while self._queue:
                    job = self._queue.popleft()
                    job.bug = f"no worker process could be started ({type(e).__name__}: {e})"
                    self._finish(job, FAILED)
                return
        while self._queue and idle:
            job, worker = self._next_job(), idle.pop(0)
            for owner in job.owners:
                self._served[owner] = time.monotonic()
            job.state, job.started, job._worker = RUNNING, time.monotonic(), worker
            job.progress = (0, 0, "Starting...")
            worker.job = job
            self._running[job.key] = job
            worker.inbox.put(job)

    def _next_job(self):
        # Round-robin between owners: the queued job of the owner whose last job started longest
        # ago (never: first), first in first out among equals. Owners without a job left are
        # dropped from the record, so that it stays as small as the queue.
        never = float("-inf")
        job = min(self._queue, key=lambda j: min((self._served.get(o, never) for o in j.owners), default=never))
        self._queue.remove(job)
        waiting = {o for j in (*self._queue, *self._running.values()) for o in j.owners}
        self._served = {o: t for o, t in self._served.items() if o in waiting or o in job.owners}
        return job

    def _finish(self, job, state):
        job.state, job.ended = state, time.monotonic()
        job.fn = job.kwargs = job._worker = None  # the data can go
        self._running.pop(job.key, None)
        self._finished[job.key] = job
        held = sum(j.nbytes for j in self._finished.values())
        while len(self._finished) > self.max_finished or (held > self.max_finished_bytes and len(self._finished) > 1):
            held -= self._finished.popitem(last=False)[1].nbytes
        job._done.set()

    # -- a worker's driver thread: sends it jobs, reads their progress and outcome ----------------
    def _drive(self, worker):
        try:
            while True:
                try:
                    job = worker.inbox.get(timeout=self.idle_seconds)
                except queue.Empty:
                    with self._lock:  # a job given meanwhile is in the inbox: read it next
                        if worker.job is None and self._live_workers() > self.warm_workers:
                            worker.retiring = True
                            break
                    continue
                if job is None:
                    break
                outcome, rss = self._run_on(worker, job)
                if outcome is None or outcome[0] == "timeout":
                    worker.stop()  # reaped, so that its exit code can be told
                with self._lock:
                    worker.job = None
                    if not job.finished:  # else cancelled meanwhile, and the worker killed
                        self._settle(job, outcome, worker.process.exitcode)
                    if rss > self.recycle_bytes:
                        worker.retiring = worker.replace = True
                    if outcome is None or worker.retiring:
                        break
                    self._dispatch()
        finally:
            worker.stop()
            worker.tasks.close()
            worker.events.close()
            with self._lock:
                self._workers.remove(worker)
                if worker.job is not None and not worker.job.finished:  # it died before its driver read the job
                    worker.job.bug = "its worker process ended before the job started"
                    self._finish(worker.job, FAILED)
                if not self._closed and worker.replace and self._live_workers() < self.warm_workers:
                    self._start_worker()
                self._dispatch()

    def _run_on(self, worker, job):
        """Send ``job`` to ``worker`` and read until its outcome: ``(outcome, worker's resident bytes)``,
        the outcome None when the worker died (or was killed)."""
        try:
            payload = ForkingPickler.dumps((job.fn, job.kwargs, job.threads))
        except Exception as e:  # noqa: BLE001 - arguments that cannot be pickled: a bug, not the user's
            LOG.exception("calibdash job %r could not start", job.label)
            return ("bug", (f"the job could not start ({type(e).__name__}: {e})", "")), 0
        try:
            worker.tasks.send_bytes(payload)
            del payload
            while True:
                if self.max_seconds is not None:
                    left = job.started + self.max_seconds - time.monotonic()
                    if left <= 0:
                        worker.retiring = worker.replace = True  # its process is stopped by the driver
                        return ("timeout", None), 0
                    if not worker.events.poll(min(left, 1.0)):
                        continue
                data = worker.events.recv_bytes()  # as recv() does, but its length is what the result holds
                kind, body = ForkingPickler.loads(data)
                if kind == "progress":
                    job.progress = body
                else:
                    job.nbytes = len(data)
                    return (kind, body[0]), body[1]
        except (EOFError, OSError):
            return None, 0  # the worker is gone: killed, or it died
        except Exception:  # noqa: BLE001 - e.g. a result that cannot be unpickled here
            LOG.exception("calibdash job %r: its outcome could not be read", job.label)
            worker.retiring = worker.replace = True  # its pipe may hold the rest of a message: start afresh
            return ("bug", ("its outcome could not be read back", "")), 0

    def _settle(self, job, outcome, exitcode):
        if outcome is None:
            job.bug = f"its process ended unexpectedly (exit code {exitcode}; out of memory?)"
            state = FAILED
            LOG.error("calibdash job %r: its worker process ended unexpectedly (exit code %s; killed from outside, "
                      "or out of memory)", job.label, exitcode)
        elif outcome[0] == "timeout":
            job.error = JobTimeout(f"it ran for longer than {self.max_seconds:,.0f} s, the server's limit for one run "
                                   "(CALIBDASH_JOB_SECONDS, set where the server is started), and was stopped. Ask "
                                   "for less work (fewer rows, resamples or grid values), or run it from the command "
                                   "line, which has no such limit.")
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
