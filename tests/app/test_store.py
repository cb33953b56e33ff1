"""calibdash_app.store: the sessions' state kept in memory and on disk, bounded in bytes, moved to a
new token on restore, signed on disk, and found again by a new server (a restart)."""

import logging
import os
import pickle
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from calibdash.errors import ConfigError
from calibdash_app.store import DATABASE, DiskStore, MiB, SessionStore, open_store, store_settings


class Clock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


def entry(seed=0, size=1000):
    """A session's entry as the app keeps it: result dicts with tuple keys, an array, widget values."""
    rng = np.random.default_rng(seed)
    return {"results": {("evaluate", "a"): rng.random(size), ("evaluate", "b"): rng.random(size)},
            "active": {"sha": {"top-label": ("evaluate", "a")}}, "jobs": {}, "data_source": "upload",
            "cfg__seed": seed, "upload": ("patients.csv", rng.random(size))}


def same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            assert list(x) == list(y)  # the dicts' order too: the oldest result is dropped first
            for k in x:
                np.testing.assert_array_equal(x[k], y[k])
        elif isinstance(x, tuple):
            assert x[0] == y[0]
            np.testing.assert_array_equal(x[1], y[1])
        else:
            assert x == y


def rows(folder):
    with sqlite3.connect(folder / DATABASE) as db:
        return db.execute("SELECT token, item, seq FROM items ORDER BY seq").fetchall()


def test_memory_entries_are_bounded_in_number_and_expire():
    clock = Clock()
    store = SessionStore(max_entries=2, ttl=10, clock=clock)
    store.put("a", {"x": 1})
    store.put("b", {"x": 2})
    assert store.get("a") == {"x": 1}  # touched: "b" is now the oldest
    store.put("c", {"x": 3})
    assert store.get("b") is None and store.get("a") is not None and len(store) == 2
    clock.now = 11
    assert store.get("a") is None and store.get("c") is None and len(store) == 0
    assert store.get(None) is None and store.move(None, "x") is None
    store.put("d", {"x": 4})
    assert store.move("d", "e") == {"x": 4}  # taken once: the old token finds nothing
    assert store.get("d") is None and store.move("d", "f") is None and store.get("e") == {"x": 4}


def test_memory_is_bounded_in_bytes_least_recently_used_first():
    # Issue 28: the store was bounded by counts (24 results x 64 sessions), about 5 GB at 3.4 MB a result.
    store = SessionStore(memory_bytes=3 * 80_000 + 10_000)
    for token in "abcd":  # each about 80 kB: two arrays of 5,000 float64
        store.put(token, {"results": {1: np.zeros(5000), 2: np.ones(5000)}})
        assert 80_000 < store.nbytes(token) < 81_000
    assert store.get("a") is None and all(store.get(t) is not None for t in "bcd")
    assert store.nbytes() <= store.memory_bytes
    store.get("b")  # used: "c" is now the least recently used
    store.put("e", {"results": {1: np.zeros(5000)}})
    assert store.get("c") is None and store.get("b") is not None
    # a session alone above the bound is kept (it is in use), the others make room
    store.put("big", {"results": {1: np.zeros(50_000)}})
    assert store.get("big") is not None and len(store) == 1


def test_a_restarted_server_finds_the_session_on_disk_under_a_new_token(tmp_path):
    first = SessionStore(disk=DiskStore(tmp_path))
    kept = entry(seed=1)
    first.put("tok", kept)
    first.close()  # what was put is written first
    # a new server process: nothing in memory, the database on disk
    second = SessionStore(disk=DiskStore(tmp_path))
    assert second.get("tok") is None
    restored = second.move("tok", "new")
    same(restored, kept)
    assert second.move("tok", "other") is None  # an address restores once, after a restart too
    assert {t for t, _, _ in rows(tmp_path)} == {"new"}
    third = SessionStore(disk=DiskStore(tmp_path))
    same(third.move("new", "newer"), kept)


def test_only_new_values_are_written(tmp_path):
    store = SessionStore(disk=DiskStore(tmp_path))
    kept = entry()
    store.put("tok", kept)
    store.flush()
    before = rows(tmp_path)
    store.put("tok", dict(kept, results=dict(kept["results"])))  # a rerun: the same values in a copied dict
    store.flush()
    assert rows(tmp_path) == before
    kept["results"][("evaluate", "c")] = np.arange(3.0)  # a new result: that value alone is written
    del kept["results"][("evaluate", "a")]  # a dropped one is deleted
    store.put("tok", kept)
    store.flush()
    after = rows(tmp_path)
    assert len(after) == len(before) and after[-1][1].startswith("results\x1f('evaluate', 'c')")
    assert max(seq for *_, seq in after) == max(seq for *_, seq in before) + 1
    kept["cfg__seed"] = 7  # a replaced value is written again
    store.put("tok", kept)
    store.flush()
    assert rows(tmp_path)[-1][1] == "cfg__seed"
    same(SessionStore(disk=DiskStore(tmp_path)).move("tok", "t2"), kept)


def test_a_session_written_whole_is_pickled_one_value_at_a_time(tmp_path):
    # A live session whose entry left the memory layer is written whole at its next run: its values
    # go to the database one at a time, so the store never holds all their pickles at once. Python's
    # allocations are traced (SQLite's own are not): one 8 MB value at a time peaks near twice its
    # size (its pickle and the signed blob), all four at once would need five times.
    import tracemalloc

    size = 8 * MiB
    kept = {"results": {k: np.full(size // 8, float(k)) for k in range(4)}}
    store = SessionStore(disk=DiskStore(tmp_path), memory_bytes=1)
    store.put("other", {"x": 1})
    tracemalloc.start()
    try:
        store.put("tok", kept)
        store.flush()  # the writer thread's pickles are traced too
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2.5 * size, peak / size
    assert store.nbytes("tok") > 4 * size  # every value counted
    same(SessionStore(disk=DiskStore(tmp_path)).move("tok", "t2"), kept)


def test_a_value_whose_signature_does_not_match_is_never_unpickled(tmp_path):
    store = SessionStore(disk=DiskStore(tmp_path))
    store.put("tok", {"data_source": "demo", "cfg__seed": 3})
    store.flush()
    marker = tmp_path / "unpickled"

    class Planted:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    forged = pickle.dumps(("cfg__seed", "whole", None, Planted()))
    with sqlite3.connect(tmp_path / DATABASE) as db:  # someone who can write the database but not read the key
        db.execute("UPDATE items SET blob = ? WHERE item = 'cfg__seed'", (bytes(32) + forged,))
    restored = SessionStore(disk=DiskStore(tmp_path)).move("tok", "new")
    assert restored == {"data_source": "demo"} and not marker.exists()


def test_another_versions_sessions_are_not_restored(tmp_path, caplog):
    first = SessionStore(disk=DiskStore(tmp_path, version="1.0"))
    first.put("tok", {"x": 1})
    first.flush()
    assert SessionStore(disk=DiskStore(tmp_path, version="1.0")).move("tok", "t1") == {"x": 1}
    with caplog.at_level(logging.WARNING):
        later = SessionStore(disk=DiskStore(tmp_path, version="2.0"))
    assert later.move("t1", "t2") is None and "written by calibdash 1.0" in caplog.text


def test_the_disk_is_bounded_in_bytes_and_expires(tmp_path):
    clock = Clock(1000.0)
    disk = DiskStore(tmp_path, max_bytes=250_000, ttl=3600, clock=clock)
    store = SessionStore(disk=disk, memory_bytes=1)  # memory keeps only the session in use
    for i, token in enumerate("abcd"):
        clock.now += 60
        store.put(token, {"results": {1: np.full(10_000, float(i))}})  # about 80 kB each
    store.flush()
    assert disk.tokens() == ["b", "c", "d"] and disk.bytes_used() <= 250_000  # "a", least recently used, went
    clock.now += 3500  # "b" was last used 3,620 s ago, "c" 3,560 s, "d" 3,500 s
    assert SessionStore(disk=disk).move("b", "x") is None and disk.tokens() == ["c", "d"]
    clock.now += 101
    assert SessionStore(disk=disk).move("c", "x") is None and disk.tokens() == []  # all older than an hour now
    store.put("e", {"x": 1})
    store.flush()
    clock.now += 10
    fresh = SessionStore(disk=DiskStore(tmp_path, clock=clock, ttl=3600))
    assert fresh.move("e", "f") == {"x": 1}


def test_a_folder_others_can_write_leaves_the_store_in_memory(tmp_path, caplog):
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    with caplog.at_level(logging.WARNING):
        store = open_store({"CALIBDASH_STATE_DIR": str(folder)})
    assert not store.on_disk and "by nobody else" in caplog.text
    assert not (folder / DATABASE).exists()
    private = open_store({"CALIBDASH_STATE_DIR": str(tmp_path / "private")})
    assert private.on_disk and oct((tmp_path / "private").stat().st_mode & 0o777) == oct(0o700)
    assert (tmp_path / "private" / "sessions.key").stat().st_mode & 0o077 == 0
    assert not open_store({"CALIBDASH_STATE_DIR": "off"}).on_disk


def test_store_settings_from_the_environment(tmp_path):
    s = store_settings({"CALIBDASH_STATE_DIR": str(tmp_path), "CALIBDASH_STATE_MIB": "10", "CALIBDASH_STATE_DAYS": "2",
                        "CALIBDASH_SESSIONS_MEMORY_MIB": "5", "CALIBDASH_SESSION_MIB": "3"})
    assert s == {"path": tmp_path, "disk_bytes": 10 * MiB, "disk_ttl": 2 * 86400, "memory_bytes": 5 * MiB,
                 "session_bytes": 3 * MiB}
    assert store_settings({"XDG_STATE_HOME": str(tmp_path)})["path"] == tmp_path / "calibdash"
    with pytest.raises(ConfigError, match="CALIBDASH_STATE_MIB must be a whole number"):
        store_settings({"CALIBDASH_STATE_MIB": "lots"})


def test_memory_sizes_are_pickle_lengths_with_or_without_a_disk(tmp_path):
    value = {"results": {1: np.arange(1000.0), 2: "text" * 100}}
    expected = {k: len(pickle.dumps(("results", "item", k, v), protocol=pickle.HIGHEST_PROTOCOL))
                for k, v in value["results"].items()}
    expected["marker"] = len(pickle.dumps(("results", "dict", None, True), protocol=pickle.HIGHEST_PROTOCOL))
    for store in (SessionStore(), SessionStore(disk=DiskStore(tmp_path))):
        store.put("tok", value)
        assert store.nbytes("tok") == sum(expected.values())


class GatedDisk(DiskStore):
    """A disk whose writes wait for ``gate``: a slow disk, held still."""

    def __init__(self, folder, **kwargs):
        super().__init__(folder, **kwargs)
        self.gate = threading.Event()

    def write(self, *args, **kwargs):
        assert self.gate.wait(30), "the test never opened the gate"
        return super().write(*args, **kwargs)


def test_a_put_does_not_wait_for_the_disk_and_a_restore_waits_for_the_writes_before_it(tmp_path):
    # Signing and writing a CIFAR-100 evaluation's 88 MB took 0.6 s, in the run that filed it: the
    # user's next click waited for it. The disk is now written behind, in order.
    disk = GatedDisk(tmp_path)
    store = SessionStore(disk=disk, memory_bytes=1)  # memory keeps only the session in use
    kept = entry(seed=5)
    store.put("a", kept)  # returns with the write held at the gate
    store.put("b", {"x": 1})  # "a" leaves the memory layer: only the disk has it now
    assert store.get("a") is None and store.nbytes("b") > 0 and disk.tokens() == []
    restored = []
    reload = threading.Thread(target=lambda: restored.append(store.move("a", "c")))
    reload.start()
    reload.join(0.3)
    assert reload.is_alive() and not restored  # the restore waits for the writes put before it
    disk.gate.set()
    reload.join(30)
    same(restored[0], kept)
    store.flush()
    assert disk.tokens() == ["b", "c"]


def test_a_server_that_exits_writes_what_was_put_first(tmp_path):
    # The writer thread is joined at exit: no flush, no close, and the session is on disk all the same.
    script = ("import numpy as np\n"
              "from calibdash_app.store import DiskStore, SessionStore\n"
              f"store = SessionStore(disk=DiskStore({str(tmp_path)!r}))\n"
              "store.put('tok', {'results': {1: np.arange(2_000_000.0)}, 'cfg__seed': 4})\n")
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).resolve().parents[2], timeout=120)
    restored = SessionStore(disk=DiskStore(tmp_path)).move("tok", "new")
    assert restored["cfg__seed"] == 4
    np.testing.assert_array_equal(restored["results"][1], np.arange(2_000_000.0))


class PicklesOnce:
    """A value whose first pickle (its size, measured at the put) works and whose second (the writer's) fails."""

    def __init__(self):
        self.pickled = 0

    def __reduce__(self):
        self.pickled += 1
        if self.pickled > 1:
            raise RuntimeError("changed while it was written")
        return (PicklesOnce, ())


def test_a_value_the_writer_cannot_pickle_is_left_out_and_the_others_are_written(tmp_path, caplog):
    store = SessionStore(disk=DiskStore(tmp_path))
    with caplog.at_level(logging.WARNING):
        store.put("tok", {"cfg__seed": 9, "odd": PicklesOnce(), "data_source": "upload"})
        store.flush()
    assert "'odd' is kept in memory only" in caplog.text
    assert SessionStore(disk=DiskStore(tmp_path)).move("tok", "new") == {"cfg__seed": 9, "data_source": "upload"}
