"""calibdash_app.jobs: the pool's queue, deduplication, progress, failures and cancelling (the session
store is tested in test_store.py). Every wait has a timeout, so that a broken pool fails instead of hanging."""

import os
import sys
import time

import pytest

from calibdash.errors import ConfigError, InputError
from calibdash_app.jobs import (
    CANCELLED,
    DONE,
    FAILED,
    QUEUED,
    RUNNING,
    BusyError,
    JobPool,
    JobTimeout,
    TooLongError,
    duration_text,
    fairness_settings,
    memory_settings,
    pool_settings,
    widen_pipe,
)

WAIT = 120


# Job functions: module-level, so that the child process finds them by name.
def add(a, b):
    return a + b


def sleepy(seconds, tag=None):
    time.sleep(seconds)
    return tag


def counting(steps, progress):
    for i in range(steps):
        progress(i + 1, steps, f"step {i + 1}")
        time.sleep(0.3)
    return steps


def uses_cores(n_jobs):
    return n_jobs


def bad_input():
    raise InputError("column 'p0' holds text")


def buggy():
    return {}["missing"]


def dies():
    os._exit(3)


def pipe_capacities():
    """The capacities of the pipes this process holds open (Linux)."""
    import fcntl

    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                found.append(fcntl.fcntl(int(fd), fcntl.F_GETPIPE_SZ))
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return found


def with_grandchild(path):
    """Starts a grandchild that writes its pid to ``path``, then waits for ever."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(path, "w") as f:
        f.write(str(child.pid))
    time.sleep(600)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:  # a zombie is dead too
            return f.read().split(")")[-1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):  # reaped between the two looks: dead
        return False


def joblib_pids(n_tasks):
    """The job's own process id and those of the joblib processes that ran ``n_tasks`` tasks."""
    from joblib import Parallel, delayed

    return os.getpid(), set(Parallel(n_jobs=2)(delayed(os.getpid)() for _ in range(n_tasks)))


def joblib_children(pid):
    """The living joblib (loky) worker processes whose parent is ``pid``."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().split(")")[-1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
        except (OSError, ValueError):
            continue
        if parent == pid and b"LokyProcess" in command and alive(int(entry)):
            found.add(int(entry))
    return found


@pytest.fixture
def pool():
    p = JobPool(max_jobs=1, cores_per_job=1)  # one core: no joblib processes to warm up
    yield p
    p.shutdown()


@pytest.mark.slow
def test_a_job_returns_its_result_and_the_same_key_is_the_same_job(pool):
    job = pool.submit("sum", add, {"a": 2, "b": 3}, owner="s1")
    assert job.wait(WAIT) and job.state == DONE and job.result == 5
    again = pool.submit("sum", add, {"a": 100, "b": 0}, owner="s2")  # same key: the finished job, not a new run
    assert again is job and again.result == 5 and job.owners == {"s1", "s2"}


def test_owners_only_see_their_jobs(pool):
    job = pool.submit("mine", add, {"a": 1, "b": 1}, owner="s1")
    assert pool.job("mine", owner="s1") is job
    assert pool.job("mine", owner="s2") is None
    assert pool.job("unknown", owner="s1") is None


@pytest.mark.slow
def test_the_queue_is_first_in_first_out_and_bounded():
    pool = JobPool(max_jobs=1, max_queued=2)
    try:
        first = pool.submit("first", sleepy, {"seconds": 2}, owner="s")
        second = pool.submit("second", sleepy, {"seconds": 0}, owner="s")
        third = pool.submit("third", sleepy, {"seconds": 0}, owner="s")
        assert first.state == RUNNING and second.state == third.state == QUEUED
        assert pool.position(second) == 0 and pool.position(third) == 1
        assert pool.submit("second", sleepy, {"seconds": 0}, owner="t") is second  # deduplicated while queued
        with pytest.raises(BusyError, match="busy"):
            pool.submit("fourth", sleepy, {"seconds": 0}, owner="s")
        assert third.wait(WAIT) and second.state == DONE
        assert first.ended <= second.started and second.ended <= third.started
    finally:
        pool.shutdown()


@pytest.mark.slow
def test_progress_and_cores_reach_the_job(pool):
    job = pool.submit("count", counting, {"steps": 4}, owner="s")
    seen = set()
    deadline = time.monotonic() + WAIT
    while not job.finished and time.monotonic() < deadline:
        seen.add(job.progress)
        time.sleep(0.05)
    assert job.state == DONE and job.result == 4
    assert (2, 4, "step 2") in seen or (3, 4, "step 3") in seen, seen
    two = JobPool(max_jobs=1, cores_per_job=2)
    try:
        cores = two.submit("cores", uses_cores, {}, owner="s")
        assert cores.wait(WAIT) and cores.result == 2
    finally:
        two.shutdown()


class _Events:
    """What a worker's job sends back (progress, then its outcome), kept in a list."""

    def __init__(self):
        self.sent = []

    def send(self, message):
        self.sent.append(message)


@pytest.mark.slow
def test_an_evaluation_runs_its_tasks_in_threads_and_other_jobs_in_loky_processes(monkeypatch):
    """A job run with threads (an evaluation: cd.evaluate_notions) runs its tasks in threads of the
    worker, as from Python and the command line (no warm loky process, no copy of the data); any other
    job's joblib calls still go to the worker's loky processes."""
    import threading

    import numpy as np

    import calibdash as cd
    from calibdash.evaluation import pipeline
    from calibdash_app import jobs

    seen, real = [], pipeline._fold_task

    def fold_task(*args):
        seen.append((os.getpid(), threading.get_ident()))
        return real(*args)

    monkeypatch.setattr(pipeline, "_fold_task", fold_task)
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(3), size=300)
    y = np.array([rng.choice(3, p=p) for p in P])
    events = _Events()
    jobs._run_job(events, cd.evaluate_notions, {"P": P, "y": y, "notions": ("top-label",), "estimators": ["bins"]}, 2,
                  threads=True)
    kind, (result, _) = events.sent[-1]
    assert kind == "done" and set(result) == {"top-label"}
    assert seen and {pid for pid, _ in seen} == {os.getpid()}  # in this process,
    assert threading.get_ident() not in {t for _, t in seen}  # in the pool's threads
    for threads, in_processes in ((False, True), (True, False)):  # a job of its own with no preference
        events = _Events()
        jobs._run_job(events, joblib_pids, {"n_tasks": 4}, 2, threads=threads)
        kind, ((own, pids), _) = events.sent[-1]
        assert kind == "done" and own == os.getpid() and (os.getpid() not in pids) == in_processes


@pytest.mark.slow
def test_the_pool_takes_the_choice_of_threads_to_the_worker():
    pool = JobPool(max_jobs=1, cores_per_job=2)
    try:
        for threads in (True, False):
            job = pool.submit(("pids", threads), joblib_pids, {"n_tasks": 4}, owner="s", threads=threads)
            assert job.wait(WAIT) and job.state == DONE and job.threads is threads
            own, pids = job.result
            assert (pids == {own}) is threads, (threads, own, pids)
    finally:
        pool.shutdown()


@pytest.mark.slow  # an AppTest of the first visit, as the other app tests that take one
def test_the_app_runs_its_evaluations_with_threads_and_its_other_jobs_without(monkeypatch):
    from calibdash_app import runs

    from .conftest import first_visit, go

    asked, submit = [], runs.submit_job

    def recording(key, fn, kwargs, record, **kw):
        asked.append((fn.__name__, kw.get("threads", False)))
        return submit(key, fn, kwargs, record, **kw)

    monkeypatch.setattr(runs, "submit_job", recording)
    at = first_visit()
    assert ("evaluate_notions", True) in asked  # the first visit's demo analysis
    go(at, "calibdash_app/app_pages/learn.py")
    others = [threads for name, threads in asked if name != "evaluate_notions"]
    assert others and not any(others)  # the Learn page's simulations: loky processes


def test_the_pipes_to_a_worker_are_widened_and_carry_results_larger_than_them(pool):
    import multiprocessing

    probe, other = multiprocessing.Pipe(duplex=False)
    wide = widen_pipe(probe)  # what this machine grants, the same for the pool's pipes
    probe.close(), other.close()
    assert wide >= 1024**2 or wide == int(open("/proc/sys/fs/pipe-max-size").read())
    job = pool.submit("pipes", pipe_capacities, {}, owner="s")
    assert job.wait(WAIT) and job.state == DONE
    assert job.result.count(wide) >= 2  # the worker's ends of its two pipes, jobs in and events out
    big = pool.submit("big", zeros, {"n": 3 * wide // 8 + 5}, owner="s")  # a result of three capacities and more
    assert big.wait(WAIT) and big.state == DONE and big.result.shape == (3 * wide // 8 + 5,) and not big.result.any()


def test_widen_pipe_leaves_a_pipe_as_it_was_where_it_cannot_be_widened(monkeypatch):
    import fcntl
    import multiprocessing

    read, write = multiprocessing.Pipe(duplex=False)
    before = fcntl.fcntl(read.fileno(), fcntl.F_GETPIPE_SZ)
    real = fcntl.fcntl

    def refusing(fd, cmd, arg=0):
        if cmd == fcntl.F_SETPIPE_SZ:
            raise PermissionError("over the limit")
        return real(fd, cmd, arg)

    monkeypatch.setattr(fcntl, "fcntl", refusing)
    assert widen_pipe(read) == before
    monkeypatch.delattr(fcntl, "F_SETPIPE_SZ")
    assert widen_pipe(read) is None
    monkeypatch.setitem(sys.modules, "fcntl", None)  # a platform without the module (Windows): import fails
    assert widen_pipe(read) is None
    write.send_bytes(b"x" * 10)
    assert read.recv_bytes() == b"x" * 10
    read.close(), write.close()


@pytest.mark.slow
def test_workers_stay_warm_between_jobs_and_a_cancelled_one_is_replaced():
    pool = JobPool(max_jobs=1, cores_per_job=2)
    try:
        [worker] = pool.worker_pids()
        deadline = time.monotonic() + WAIT
        while len(joblib_children(worker)) < 2 and time.monotonic() < deadline:  # the warm-up starts them
            time.sleep(0.05)
        warm = joblib_children(worker)
        first = pool.submit("first", joblib_pids, {"n_tasks": 8}, owner="s")
        second = pool.submit("second", joblib_pids, {"n_tasks": 8}, owner="s")
        assert second.wait(WAIT) and first.state == second.state == DONE
        # The same worker ran both, and only the joblib processes it started before any job.
        assert first.result[0] == second.result[0] == worker
        assert len(warm) == 2 and first.result[1] | second.result[1] <= warm
        stuck = pool.submit("stuck", sleepy, {"seconds": 600}, owner="s")
        deadline = time.monotonic() + WAIT
        while stuck.state != RUNNING and time.monotonic() < deadline:
            time.sleep(0.05)
        pool.cancel("stuck", owner="s")
        # Over at once, not when the worker is gone: a rerun asking for it finds it cancelled.
        assert stuck.state == CANCELLED and pool.counts()["running"] == 0
        assert pool.job("stuck", owner="s") is None
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in (worker, *warm)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in (worker, *warm))
        after = pool.submit("after", joblib_pids, {"n_tasks": 8}, owner="s")
        assert after.wait(WAIT) and after.state == DONE
        assert after.result[0] != worker and after.result[0] in pool.worker_pids()
    finally:
        pool.shutdown()


@pytest.mark.slow
def test_workers_beyond_the_warm_ones_start_on_demand_and_leave_when_idle():
    pool = JobPool(max_jobs=2, warm_workers=1, idle_seconds=1)
    try:
        assert len(pool.worker_pids()) == 1
        jobs = [pool.submit(key, sleepy, {"seconds": 1.5, "tag": key}, owner="s") for key in ("a", "b")]
        assert all(job.state == RUNNING for job in jobs) and len(pool.worker_pids()) == 2  # both at once
        assert all(job.wait(WAIT) and job.state == DONE for job in jobs)
        deadline = time.monotonic() + WAIT
        while len(pool.worker_pids()) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(2.5)  # longer than idle_seconds: the warm one stays
        assert len(pool.worker_pids()) == 1
        job = pool.submit("c", add, {"a": 1, "b": 2}, owner="s")
        assert job.wait(WAIT) and job.result == 3
    finally:
        pool.shutdown()
    with pytest.raises(ConfigError, match="warm_workers"):
        JobPool(max_jobs=1, warm_workers=2)


@pytest.mark.slow
def test_a_worker_dead_or_too_big_is_replaced_and_the_next_job_runs():
    pool = JobPool(max_jobs=1, recycle_bytes=1)  # every worker is "too big" after its job
    try:
        first = pool.submit("first", os.getpid, {}, owner="s")
        second = pool.submit("second", os.getpid, {}, owner="s")
        assert second.wait(WAIT) and first.state == second.state == DONE
        assert first.result != second.result  # a fresh worker for the second job
        deadline = time.monotonic() + WAIT
        while not pool.worker_pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        [idle] = pool.worker_pids()
        os.kill(idle, 9)  # killed from outside while idle: not the next job's failure
        while alive(idle):
            time.sleep(0.05)
        third = pool.submit("third", os.getpid, {}, owner="s")
        assert third.wait(WAIT) and third.state == DONE and third.result != idle
    finally:
        pool.shutdown()


@pytest.mark.slow
def test_failures_keep_a_clean_message_or_say_it_is_a_bug(pool, caplog):
    user = pool.submit("bad", bad_input, {}, owner="s")
    assert user.wait(WAIT) and user.state == FAILED
    assert isinstance(user.error, InputError) and user.error.parts == InputError("column 'p0' holds text").parts
    assert user.bug is None
    bug = pool.submit("bug", buggy, {}, owner="s")
    assert bug.wait(WAIT) and bug.state == FAILED and bug.error is None
    assert bug.bug == "KeyError: 'missing'"
    assert "Traceback" in caplog.text and "buggy" in caplog.text  # the traceback is in the server's log
    died = pool.submit("dies", dies, {}, owner="s")
    assert died.wait(WAIT) and died.state == FAILED and "ended unexpectedly" in died.bug
    assert "worker process ended unexpectedly (exit code 3" in caplog.text  # the log has what the message promises
    assert pool.submit("bug", add, {"a": 1, "b": 2}, owner="s") is bug  # the same owner again: its outcome back
    retried = pool.submit("bug", add, {"a": 1, "b": 2}, owner="s", again=True)  # asked for: it runs again
    assert retried is not bug and retried.wait(WAIT) and retried.result == 3
    other = pool.submit("dies", add, {"a": 1, "b": 1}, owner="s2")  # a session that never asked: a fresh run
    assert other is not died and other.wait(WAIT) and other.result == 2


@pytest.mark.slow
def test_cancel_kills_the_process_group(pool, tmp_path):
    path = tmp_path / "grandchild.pid"
    job = pool.submit("stuck", with_grandchild, {"path": str(path)}, owner="s")
    deadline = time.monotonic() + WAIT
    while not (path.exists() and path.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(path.read_text())
    assert alive(grandchild) and job.state == RUNNING
    [child] = pool.worker_pids()  # the worker running it
    pool.cancel("stuck", owner="s")
    assert job.wait(WAIT) and job.state == CANCELLED
    deadline = time.monotonic() + 10
    while (alive(grandchild) or alive(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild) and not alive(child)


@pytest.mark.slow
def test_a_shared_job_stops_only_when_no_owner_wants_it(pool):
    job = pool.submit("shared", sleepy, {"seconds": 1, "tag": "ok"}, owner="s1")
    pool.submit("shared", sleepy, {"seconds": 1, "tag": "ok"}, owner="s2")
    pool.cancel("shared", owner="s1")
    assert job.wait(WAIT) and job.state == DONE and job.result == "ok"
    assert pool.job("shared", owner="s1") is None and pool.job("shared", owner="s2") is job
    queued_behind = pool.submit("long", sleepy, {"seconds": 30}, owner="s1")
    waiting = pool.submit("waiting", sleepy, {"seconds": 0}, owner="s1")
    pool.cancel("waiting", owner="s1")  # a queued job leaves the queue
    assert waiting.state == CANCELLED and pool.counts()["queued"] == 0
    queued_behind.cancel()
    assert queued_behind.wait(WAIT) and queued_behind.state == CANCELLED


@pytest.mark.slow
def test_a_cancel_storm_never_queues_copies(pool):
    # Issue 28: a page that submits its key on every rerun (every ~15 ms) right after its Cancel
    # click queued a copy per rerun. Eight sessions here submit, look up and cancel one key as fast
    # as they can, from threads: a session that already asked for the key gets its cancelled job
    # back, so at most one job is ever live and at most one is made per session.
    import threading

    owners = [f"s{i}" for i in range(8)]
    made, live, errors = {}, [], []
    start = threading.Barrier(len(owners))

    def storm(owner):
        try:
            start.wait(WAIT)
            for i in range(150):
                job = pool.submit("storm", sleepy, {"seconds": 60}, owner=owner)
                made[id(job)] = job  # kept alive, so that no id is reused
                pool.job("storm", owner=owner)  # the page's look at its job, between the clicks
                if i % 2:
                    pool.cancel("storm", owner=owner)
                counts = pool.counts()
                live.append(counts["queued"] + counts["running"])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=storm, args=(owner,)) for owner in owners]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert not errors and not any(t.is_alive() for t in threads)
    assert max(live) <= 1  # never two jobs of one key queued or running
    assert 1 <= len(made) <= len(owners)  # at most one job made per session, however many submits
    counts = pool.counts()
    assert counts["queued"] == counts["running"] == 0  # every session's last click was Cancel
    assert pool.submit("storm", sleepy, {"seconds": 0}, owner="s0").state == CANCELLED  # a rerun: nothing starts
    asked = pool.submit("storm", sleepy, {"seconds": 0, "tag": "again"}, owner="s0", again=True)  # "Run again"
    assert asked.wait(WAIT) and asked.result == "again"


@pytest.mark.slow
def test_finished_jobs_are_forgotten_oldest_first():
    pool = JobPool(max_finished=2)
    try:
        for key in ("a", "b", "c"):
            assert pool.submit(key, add, {"a": 1, "b": 1}, owner="s").wait(WAIT)
        assert pool.job("a", owner="s") is None and pool.job("c", owner="s").result == 2
        assert pool.counts() == {"queued": 0, "running": 0, "finished": 2}
    finally:
        pool.shutdown()


def zeros(n):
    import numpy as np

    return np.zeros(n)


@pytest.mark.slow
def test_finished_jobs_are_bounded_in_bytes_never_the_newest():
    # Issue 28: the pool kept 32 finished jobs whatever their results held (10.7 MB for a default
    # evaluation of 3,000 x 4 with its fitted models: 340 MB held by counts alone).
    pool = JobPool(max_finished=32, max_finished_bytes=2_500_000)
    try:
        for key in ("a", "b", "c"):  # 800 kB each
            assert pool.submit(key, zeros, {"n": 100_000}, owner="s").wait(WAIT)
        assert 800_000 < pool.job("c", owner="s").nbytes < 801_000
        assert pool.counts()["finished"] == 3
        pool.job("a", owner="s")  # used: "b" is now the least recently used
        assert pool.submit("d", zeros, {"n": 100_000}, owner="s").wait(WAIT)
        assert pool.job("b", owner="s") is None and pool.job("a", owner="s") is not None
        big = pool.submit("big", zeros, {"n": 1_000_000}, owner="s")  # 8 MB: alone above the bound, kept
        assert big.wait(WAIT) and pool.job("big", owner="s").result.shape == (1_000_000,)
        assert pool.counts()["finished"] == 1
    finally:
        pool.shutdown()


@pytest.mark.slow
def test_one_session_cannot_hold_more_than_its_share_and_sessions_take_turns():
    # Issue 28: one tab queued six evaluations (65 driving the pool directly) while another
    # waited "5 job(s) ahead" for over a minute.
    pool = JobPool(max_jobs=1, max_per_owner=4)
    try:
        first = pool.submit("a0", sleepy, {"seconds": 1}, owner="A")
        mine = [pool.submit(f"a{i}", sleepy, {"seconds": 0}, owner="A") for i in (1, 2, 3)]
        with pytest.raises(BusyError, match="already have 4 runs"):
            pool.submit("a4", sleepy, {"seconds": 0}, owner="A")
        assert pool.submit("a1", sleepy, {"seconds": 0}, owner="A") is mine[0]  # the same job again: allowed
        other = pool.submit("b0", sleepy, {"seconds": 0}, owner="B")  # queued after A's three
        for job in (first, *mine, other):
            assert job.wait(WAIT) and job.state == DONE
        assert first.started < other.started < mine[0].started  # B's turn came before A's second job
        assert mine[0].started < mine[1].started < mine[2].started  # and A's own jobs kept their order
        pool.submit("a4", sleepy, {"seconds": 0}, owner="A").wait(WAIT)  # its share free again
    finally:
        pool.shutdown()


@pytest.mark.slow
def test_a_job_over_the_time_limit_is_stopped_and_the_next_one_runs():
    pool = JobPool(max_jobs=1, max_seconds=1)
    try:
        slow = pool.submit("slow", sleepy, {"seconds": 60}, owner="s")
        assert slow.wait(30) and slow.state == FAILED and isinstance(slow.error, JobTimeout)
        assert "longer than 1 s" in str(slow.error) and "CALIBDASH_JOB_SECONDS" in str(slow.error)
        assert slow.seconds < 10
        after = pool.submit("after", add, {"a": 1, "b": 2}, owner="s")
        assert after.wait(WAIT) and after.result == 3
    finally:
        pool.shutdown()


def test_a_job_estimated_beyond_the_time_limit_is_refused_before_it_starts():
    # Issue 28: the Validate page allowed 10,000 resamples, about 21 minutes of the only worker at 100,000 rows.
    pool = JobPool(max_jobs=1, max_seconds=60, warm_workers=0)
    try:
        with pytest.raises(TooLongError) as refused:
            pool.submit("long", add, {"a": 1, "b": 2}, owner="s", estimate=(4200, "many resamples", "Use fewer."))
        message = str(refused.value)
        assert message == ("This run would take at least 1 h 10 min on this server (many resamples), longer than the "
                           "60 s it allows a run (CALIBDASH_JOB_SECONDS), so it was not started. Use fewer.")
        assert pool.counts() == {"queued": 0, "running": 0, "finished": 0}
        done = pool.submit("short", add, {"a": 1, "b": 2}, owner="s", estimate=(59, "a few", ""))
        assert done.wait(WAIT) and done.result == 3
        # a finished job is given back whatever its estimate: nothing new would run
        assert pool.submit("short", add, {"a": 1, "b": 2}, owner="t", estimate=(4200, "", "")) is done
    finally:
        pool.shutdown()
    assert [duration_text(s) for s in (40, 89.6, 720, 3600, 4200)] == ["40 s", "90 s", "12 min", "1 h 0 min",
                                                                       "1 h 10 min"]


def test_settings_come_from_the_environment():
    assert fairness_settings({}) == {"max_per_owner": 4, "max_seconds": 3600}
    assert fairness_settings({"CALIBDASH_JOBS_PER_SESSION": "2", "CALIBDASH_JOB_SECONDS": "60"}) == {
        "max_per_owner": 2, "max_seconds": 60}
    with pytest.raises(ConfigError, match="CALIBDASH_JOB_SECONDS"):
        fairness_settings({"CALIBDASH_JOB_SECONDS": "1.5"})
    assert memory_settings({}) == {"max_finished_bytes": 512 * 1024**2}
    assert memory_settings({"CALIBDASH_FINISHED_MIB": "64"}) == {"max_finished_bytes": 64 * 1024**2}
    with pytest.raises(ConfigError, match="CALIBDASH_FINISHED_MIB must be a whole number"):
        memory_settings({"CALIBDASH_FINISHED_MIB": "0.5"})
    pool = JobPool.from_environment({"CALIBDASH_FINISHED_MIB": "3", "CALIBDASH_JOBS_PER_SESSION": "2",
                                     "CALIBDASH_MAX_JOBS": "1"}, warm_workers=0)
    try:
        assert (pool.max_finished_bytes, pool.max_per_owner, pool.max_jobs) == (3 * 1024**2, 2, 1)
    finally:
        pool.shutdown()
    assert pool_settings({"CALIBDASH_MAX_JOBS": "3", "CALIBDASH_JOB_CORES": "2"}) == (3, 2)
    max_jobs, cores = pool_settings({})
    assert max_jobs >= 1 and cores >= 1
    for bad in ("0", "two", "-1", "1.5"):
        with pytest.raises(ConfigError, match="CALIBDASH_MAX_JOBS must be a whole number"):
            pool_settings({"CALIBDASH_MAX_JOBS": bad})
    with pytest.raises(ConfigError, match="max_jobs"):
        JobPool(max_jobs=0)


def test_a_restored_session_adopts_its_jobs(pool):
    job = pool.submit("long", sleepy, {"seconds": 30}, owner="old token")
    assert not pool.adopt("long", owner="stranger", new_owner="thief")  # only an owner's jobs can be adopted
    assert pool.job("long", owner="thief") is None
    assert not pool.adopt("gone", owner="old token", new_owner="new token")  # not the pool's (a restart)
    assert pool.adopt("long", owner="old token", new_owner="new token")
    assert pool.job("long", owner="new token") is job
    pool.cancel("long", owner="old token")  # the old tab is gone: the new one still wants it
    assert not job.finished
    pool.cancel("long", owner="new token")
    assert job.wait(WAIT) and job.state == CANCELLED
