"""The sessions' state kept on the server, so that a reload, and a restart, finds a browser tab's
upload, mapping, settings and results again under the random token in its address.

Two layers, each bounded in bytes:

* in memory, the entries of recent sessions (a live session's entry is its own state, shared by
  reference, so that it costs nothing more); least recently used forgotten first beyond
  ``memory_bytes`` or ``max_entries``, and after ``ttl`` seconds without use;
* on disk (optional), an SQLite database that keeps every entry for ``disk_ttl`` seconds and at
  most ``disk_bytes``, the least recently used sessions deleted first. A server that restarts
  finds them there.

An entry is a dict of names to values. Each value is written on its own, and a dict value key by
key, so that a run that files one result writes that result and not the whole session: a value
is written again only when the name holds another object (values are replaced, never changed in
place: the app's state follows that rule). What the store knows of a value's size is the length
of its pickle, which is also what the memory bound counts.

The disk is written behind: a put keeps the entry in memory and hands what is new to one writer
thread, which pickles, signs and writes the values in the order they were put. Signing and
writing the 88 MB of a CIFAR-100 evaluation take 0.6 s, and the run that filed it would otherwise
hold back the user's next click (and the delivery of its own page) for that long. Whatever reads
the disk (a restore, :meth:`SessionStore.flush`, :meth:`SessionStore.close`) waits for the
writes before it; a server that exits finishes them first (the thread is joined at exit).

The database holds pickles written by this server. Each is signed with HMAC-SHA256 under a
random key kept beside the database (the folder is made private to the server's user), and a
value whose signature does not match is never unpickled: nobody who cannot already write the
server's files can make it load something. Entries written by another version of calibdash are
dropped when the database is opened rather than restored into code that may not read them.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import pickle
import secrets
import sqlite3
import stat
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

__all__ = ["SessionStore", "DiskStore", "store_settings", "open_store", "new_token", "pickled_length", "MAX_ENTRIES"]

LOG = logging.getLogger(__name__)

MiB = 1024**2
# Entries kept in memory, and for how long after their last use.
MAX_ENTRIES = 64
MEMORY_SECONDS = 2 * 3600
# What the entries kept in memory may hold at most (their pickles' lengths): 16 sessions of 64 MB.
MEMORY_MIB = 1024
# What one session's results may hold. An evaluation keeps one estimator's fold models (calibdash_app.runs):
# 0.6 MB for the demo's first analysis, 5.9 MB for a default evaluation of CIFAR-100.
SESSION_MIB = 256
# The on-disk store: its size and how long a session is kept after its last use.
DISK_MIB = 4096
DISK_DAYS = 7
# The database's touch time of a session is refreshed at most this often (every run calls put).
TOUCH_SECONDS = 30.0
DATABASE = "sessions.sqlite3"
KEY_FILE = "sessions.key"
SIGNATURE_BYTES = 32


def new_token():
    """A random, unguessable token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def default_state_dir(environ=None):
    """``$XDG_STATE_HOME/calibdash`` (``~/.local/state/calibdash`` when unset)."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "calibdash"


def store_settings(environ=None):
    """The session store's settings from the environment.

    ``CALIBDASH_STATE_DIR`` (the folder of the on-disk store; ``off`` keeps sessions in memory
    only, so a restart loses them), ``CALIBDASH_STATE_MIB`` (its size), ``CALIBDASH_STATE_DAYS``
    (how long it keeps a session after its last use), ``CALIBDASH_SESSIONS_MEMORY_MIB``
    (what the sessions kept in memory may hold) and ``CALIBDASH_SESSION_MIB`` (what one session's
    results may hold, the least recently used dropped first). Raises
    :class:`~calibdash.errors.ConfigError` on a value that is not a positive whole number.
    """
    from calibdash_app.jobs import whole_number_setting

    environ = os.environ if environ is None else environ
    folder = environ.get("CALIBDASH_STATE_DIR", "").strip()
    path = None if folder.lower() == "off" else Path(folder) if folder else default_state_dir(environ)
    return {
        "path": path,
        "disk_bytes": whole_number_setting(environ, "CALIBDASH_STATE_MIB", DISK_MIB) * MiB,
        "disk_ttl": whole_number_setting(environ, "CALIBDASH_STATE_DAYS", DISK_DAYS) * 86400,
        "memory_bytes": whole_number_setting(environ, "CALIBDASH_SESSIONS_MEMORY_MIB", MEMORY_MIB) * MiB,
        "session_bytes": whole_number_setting(environ, "CALIBDASH_SESSION_MIB", SESSION_MIB) * MiB,
    }


def open_store(environ=None):
    """The server's session store, with its on-disk layer unless switched off or unusable.

    A folder that cannot be used (not writable, open to other users) leaves the store in memory
    only, and the server's log says why: the app still works, a restart loses the sessions.
    """
    settings = store_settings(environ)
    disk = None
    if settings["path"] is not None:
        try:
            disk = DiskStore(settings["path"], max_bytes=settings["disk_bytes"], ttl=settings["disk_ttl"])
        except (OSError, sqlite3.Error, PermissionError) as e:
            LOG.warning("calibdash keeps sessions in memory only (a restart loses them): %s", e)
    return SessionStore(memory_bytes=settings["memory_bytes"], session_bytes=settings["session_bytes"], disk=disk)


# The kinds of value an entry's name holds: a value kept whole, a dict (a marker, so that an
# empty dict comes back too), or one key of a dict.
WHOLE, DICT, ITEM = "whole", "dict", "item"


def _items(entry):
    # {item name: (name, kind, key, value)} of an entry: a dict value key by key.
    out = {}
    for name, value in entry.items():
        if isinstance(value, dict):
            out[f"{name}\x1e"] = (name, DICT, None, True)
            for key, v in value.items():
                out[f"{name}\x1f{key!r}"] = (name, ITEM, key, v)
        else:
            out[name] = (name, WHOLE, None, value)
    return out


def _assemble(rows):
    # An entry from (name, kind, key, value) tuples, dict keys in the order written.
    entry = {}
    for name, kind, key, value in rows:
        if kind == WHOLE:
            entry[name] = value
        else:
            d = entry.setdefault(name, {})
            if kind == ITEM:
                d[key] = value
    return entry


class DiskStore:
    """Sessions' values in an SQLite database, signed, bounded in bytes and expiring.

    Not thread-safe by itself: :class:`SessionStore` calls it under its lock.
    """

    def __init__(self, folder, *, max_bytes=DISK_MIB * MiB, ttl=DISK_DAYS * 86400, clock=time.time, version=None):
        folder = Path(folder)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = folder.stat().st_mode
        if mode & (stat.S_IWGRP | stat.S_IWOTH) or not os.access(folder, os.W_OK):
            raise PermissionError(f"the folder {folder} must be writable by this user and by nobody else "
                                  "(chmod 700 it, or set CALIBDASH_STATE_DIR to another folder)")
        self.folder, self.max_bytes, self.ttl, self._clock = folder, max_bytes, ttl, clock
        self._key = self._signing_key(folder / KEY_FILE)
        if version is None:
            import calibdash

            version = calibdash.__version__
        self.path = folder / DATABASE
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(
            "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS sessions (token TEXT PRIMARY KEY, touched REAL NOT NULL);"
            "CREATE TABLE IF NOT EXISTS items (seq INTEGER PRIMARY KEY AUTOINCREMENT, token TEXT NOT NULL,"
            " item TEXT NOT NULL, bytes INTEGER NOT NULL, blob BLOB NOT NULL, UNIQUE (token, item));"
            "CREATE INDEX IF NOT EXISTS items_token ON items (token);")
        row = self._db.execute("SELECT value FROM meta WHERE name = 'version'").fetchone()
        if row is None or row[0] != version:
            if row is not None:
                LOG.warning("calibdash: the kept sessions were written by calibdash %s; version %s does not restore "
                            "them", row[0], version)
            with self._db:
                self._db.execute("BEGIN")
                self._db.execute("DELETE FROM items")
                self._db.execute("DELETE FROM sessions")
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (version,))
        self._touched = {}  # token -> the touch time last written
        self.expire()

    @staticmethod
    def _signing_key(path):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            key = path.read_bytes()
            if len(key) != 32:
                raise PermissionError(f"{path} is not a key this server wrote; delete it to start afresh") from None
            return key
        key = os.urandom(32)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        return key

    def _sign(self, item, data):
        return hmac.new(self._key, item.encode() + b"\0" + data, hashlib.sha256).digest()

    def seal(self, item, value):
        """(blob, bytes) of one value: its signature and pickle."""
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        return self._sign(item, data) + data, len(data)

    def bytes_used(self):
        """What the kept values hold (their pickles' lengths)."""
        return self._db.execute("SELECT COALESCE(SUM(bytes), 0) FROM items").fetchone()[0]

    def now(self):
        """The time by the store's clock (what a session's touch time is measured in)."""
        return self._clock()

    def write(self, token, blobs, gone, *, changed, when=None):
        """Keep ``blobs`` (``(item, blob, bytes)`` tuples, an iterable read once) of ``token`` and delete
        its items ``gone``, the session touched at ``when`` (default: now); then delete the least
        recently used other sessions while the store holds more than ``max_bytes``."""
        now = self._clock() if when is None else when
        if not changed and now - self._touched.get(token, -float("inf")) < TOUCH_SECONDS:
            return
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute("INSERT OR REPLACE INTO sessions VALUES (?, ?)", (token, now))
            for item in gone:
                self._db.execute("DELETE FROM items WHERE token = ? AND item = ?", (token, item))
            for item, blob, size in blobs:
                self._db.execute("DELETE FROM items WHERE token = ? AND item = ?", (token, item))
                self._db.execute("INSERT INTO items (token, item, bytes, blob) VALUES (?, ?, ?, ?)",
                                 (token, item, size, blob))
                del blob  # before the next is made (SQLite has its copy)
        self._touched[token] = now
        if changed:
            self._bound(keep=token)

    def _bound(self, *, keep):
        used = self.bytes_used()
        if used <= self.max_bytes:
            return
        oldest = self._db.execute("SELECT s.token, COALESCE(SUM(i.bytes), 0) FROM sessions s LEFT JOIN items i "
                                  "ON i.token = s.token WHERE s.token != ? GROUP BY s.token ORDER BY s.touched",
                                  (keep,)).fetchall()
        for token, size in oldest:
            if used <= self.max_bytes:
                break
            self.delete(token)
            used -= size

    def delete(self, token):
        """Forget ``token``'s session."""
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM items WHERE token = ?", (token,))
            self._db.execute("DELETE FROM sessions WHERE token = ?", (token,))
        self._touched.pop(token, None)

    def expire(self):
        """Forget the sessions not used for ``ttl`` seconds."""
        cutoff = self._clock() - self.ttl
        for (token,) in self._db.execute("SELECT token FROM sessions WHERE touched < ?", (cutoff,)).fetchall():
            self.delete(token)

    def take(self, token, new_token, *, read=True):
        """Move ``token``'s session to ``new_token``; returns its values as ``{item: (name, kind, key, value,
        bytes)}`` in the order written (``{}`` unless ``read``), or None when there is no such session. A
        value whose signature does not match, or that cannot be read, is left out (and said in the
        server's log)."""
        self.expire()
        if self._db.execute("SELECT 1 FROM sessions WHERE token = ?", (token,)).fetchone() is None:
            return None
        out = {}
        rows = self._db.execute("SELECT item, blob, bytes FROM items WHERE token = ? ORDER BY seq",
                                (token,)).fetchall() if read else ()
        for item, blob, size in rows:
            signature, data = blob[:SIGNATURE_BYTES], blob[SIGNATURE_BYTES:]
            if not hmac.compare_digest(signature, self._sign(item, data)):
                LOG.warning("calibdash: a kept session value failed its signature check and was not read")
                continue
            try:
                out[item] = (*pickle.loads(data), size)
            except Exception:  # noqa: BLE001 - a value this server cannot read back is dropped, not fatal
                LOG.warning("calibdash: a kept session value could not be read back", exc_info=True)
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM items WHERE token = ?", (new_token,))
            self._db.execute("UPDATE items SET token = ? WHERE token = ?", (new_token, token))
            self._db.execute("DELETE FROM sessions WHERE token IN (?, ?)", (token, new_token))
            self._db.execute("INSERT INTO sessions VALUES (?, ?)", (new_token, self._clock()))
        self._touched.pop(token, None)
        self._touched[new_token] = self._clock()
        return out

    def tokens(self):
        """The tokens of the kept sessions."""
        return [t for (t,) in self._db.execute("SELECT token FROM sessions ORDER BY touched")]

    def close(self):
        self._db.close()


class _Kept:
    # One session held in memory: its entry, when it was last used, and what was written of it:
    # {item: (value, bytes)}, the value held to tell a replaced value from the same one.
    __slots__ = ("entry", "touched", "written")

    def __init__(self, entry, touched, written):
        self.entry, self.touched, self.written = entry, touched, written

    @property
    def nbytes(self):
        return sum(size for _, size in self.written.values())


class SessionStore:
    """Server-side state of browser tabs by random token, in memory and (with ``disk``) on disk.

    Thread-safe. ``put`` keeps an entry (a dict); ``move`` takes it for a new token (a reload, or
    a restart with the on-disk store) and the old token no longer finds it.
    """

    MAX_ENTRIES = MAX_ENTRIES

    def __init__(self, *, max_entries=MAX_ENTRIES, ttl=MEMORY_SECONDS, memory_bytes=MEMORY_MIB * MiB,
                 session_bytes=SESSION_MIB * MiB, disk=None, clock=time.monotonic):
        self.max_entries, self.ttl, self.memory_bytes, self.disk = max_entries, ttl, memory_bytes, disk
        # Not the store's to enforce: the app drops a session's least recently used results beyond it.
        self.session_bytes = session_bytes
        self._clock = clock
        self._kept = OrderedDict()  # token -> _Kept, least recently used first
        self._lock = threading.Lock()
        # One thread, so the disk sees the puts and takes in their order; joined at exit, so a
        # server that stops writes what it was given.
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="calibdash-session-writer")

    @property
    def on_disk(self):
        """Whether sessions outlive a restart of the server."""
        return self.disk is not None

    def get(self, token):
        """The entry (a dict) of ``token`` kept in memory, or None; touches it."""
        with self._lock:
            self._expire(keep=None)
            kept = self._kept.get(token) if isinstance(token, str) else None
            if kept is None:
                return None
            kept.touched = self._clock()
            self._kept.move_to_end(token)
            return kept.entry

    def move(self, token, new_token):
        """Take ``token``'s entry (from memory, else from disk) and keep it under ``new_token``; None if unknown."""
        if not isinstance(token, str):
            return None
        with self._lock:
            self._expire(keep=None)
            kept = self._kept.pop(token, None)
            loaded = None
            if self.disk is not None:
                # Under the lock, so that no put comes between; the writer takes it after the writes put before.
                loaded = self._disk_task(self._take, token, new_token, read=kept is None).result()
            if kept is None and loaded is not None:
                written = {item: (row[3], row[4]) for item, row in loaded.items()}
                kept = _Kept(_assemble(row[:4] for row in loaded.values()), None, written)
            if kept is None:
                return None
            kept.touched = self._clock()
            self._kept[new_token] = kept
            self._expire(keep=new_token)
            return kept.entry

    def put(self, token, entry):
        """Keep ``entry`` under ``token``: in memory now, and on disk (behind, in order) the values that are
        new since the last put.

        What is new is found under the store's lock, and each new value's size measured (its pickle's
        length, counted without making the pickle: 10 ms for the largest result), so that a reload
        moving this token meanwhile cannot split its values; the writer thread makes the pickles.
        """
        with self._lock:
            kept = self._kept.pop(token, None)
            written = {} if kept is None else kept.written
            items = _items(entry)
            new = {item: t for item, t in items.items() if item not in written or written[item][0] is not t[3]}
            gone = [item for item in written if item not in items]
            for item in gone:
                del written[item]
            for item, row in new.items():
                written[item] = (row[3], self._length(row))
            self._kept[token] = _Kept(entry, self._clock(), written)
            disk = self.disk  # read once: the writer thread drops it if the database fails
            if disk is not None:
                # A value that could not be pickled (its size is 0) is kept in memory only.
                values = [(item, row) for item, row in new.items() if written[item][1]]
                # Touched when put, not when the writer gets to it.
                self._disk_task(self._write, token, values, gone, changed=bool(new or gone), when=disk.now())
            self._expire(keep=token)

    def flush(self):
        """Wait until what was put is on disk."""
        if self.disk is not None:
            self._disk_task(lambda: None).result()

    def close(self):
        """Write what was put, then close the on-disk store (the store goes on in memory only)."""
        with self._lock:
            self._writer.shutdown(wait=True)
            if self.disk is not None:
                self.disk.close()
                self.disk = None

    def _disk_task(self, fn, *args, **kwargs):
        # ``fn`` in the writer thread, after what was given to it before; a Future of its result.
        try:
            return self._writer.submit(fn, *args, **kwargs)
        except RuntimeError:  # the interpreter is exiting, or the store was closed: done here, in order all the same
            self._writer.shutdown(wait=True)
            done = Future()
            done.set_result(fn(*args, **kwargs))
            return done

    def _length(self, row):
        try:
            return pickled_length(row)
        except Exception:  # noqa: BLE001 - a value that cannot be pickled is kept in memory only
            LOG.warning("calibdash: the session value %r is kept in memory only", row[0], exc_info=True)
            return 0

    def _write(self, token, values, gone, *, changed, when):
        # In the writer thread: ``values`` ((item, row) pairs) pickled, signed and written one at a
        # time, so that a session written whole (its entry had left the memory layer) never holds a
        # second copy of all its results at once.
        disk = self.disk
        if disk is None:
            return

        def sealed():
            for item, row in values:
                try:
                    blob, size = disk.seal(item, row)
                except Exception:  # noqa: BLE001 - as a value that cannot be pickled: kept in memory only
                    LOG.warning("calibdash: the session value %r is kept in memory only", row[0], exc_info=True)
                    continue
                yield item, blob, size
                del blob  # before the next is made (SQLite has its copy)

        try:
            disk.write(token, sealed(), gone, changed=changed, when=when)
        except sqlite3.Error:
            self._lost_disk()

    def _take(self, token, new_token, *, read):
        # In the writer thread, after every write put before it.
        disk = self.disk
        if disk is None:
            return None
        try:
            return disk.take(token, new_token, read=read)
        except sqlite3.Error:
            self._lost_disk()
            return None

    def nbytes(self, token=None):
        """What the entries kept in memory hold (of ``token`` alone if given), by their pickles' lengths."""
        with self._lock:
            if token is not None:
                kept = self._kept.get(token)
                return 0 if kept is None else kept.nbytes
            return sum(k.nbytes for k in self._kept.values())

    def __len__(self):
        with self._lock:
            self._expire(keep=None)
            return len(self._kept)

    def _lost_disk(self):
        # In the writer thread, without the lock (a move holds it while it waits for the writer).
        LOG.warning("calibdash: the on-disk session store failed; sessions are kept in memory only from now on",
                    exc_info=True)
        self.disk = None

    def _expire(self, *, keep):
        # Least recently used first, beyond the count or the bytes, or unused for ttl seconds; never ``keep``
        # (default: the most recently used entry, for the bytes: a session alone above the bound is in use).
        now = self._clock()
        if keep is None and self._kept:
            last = next(reversed(self._kept))
            keep = last if now - self._kept[last].touched <= self.ttl else None
        total = sum(k.nbytes for k in self._kept.values())
        for token in list(self._kept):
            kept = self._kept[token]
            over = len(self._kept) > self.max_entries or total > self.memory_bytes
            if token == keep or not (over or now - kept.touched > self.ttl):
                if not over:
                    break
                continue
            total -= kept.nbytes
            del self._kept[token]


class _Counter:
    # A file that counts what is written to it: a pickle's length without making the pickle.
    def __init__(self):
        self.n = 0

    def write(self, data):
        self.n += memoryview(data).nbytes


def pickled_length(value):
    """The length of ``value``'s pickle (what the store counts of it), without making the pickle."""
    counter = _Counter()
    pickle.Pickler(counter, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return counter.n
