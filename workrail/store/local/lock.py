"""The single-writer lock of a session: an OS file lock on `sessions/<id>/.lock` plus an
in-process lock, because a `FileLock` object does not exclude two threads or coroutines of
the same process. Both are tried once and never waited on: a busy session is a retryable
error value, never a hang.

The OS lock is `flock` (via `filelock`), held by the kernel and released when the process
dies, so a crashed writer can never leave a session locked forever (the reference's
exclusive-create `.lock` file can).

Sharing a data directory with the reference implementation: the reference takes a session
by creating `.lock` exclusively and writing an owner record into it, and treats any
existing `.lock` as held. So we remove `.lock` before releasing our flock (filelock copes
with a peer unlinking the path), and a `.lock` that is not empty is the reference's owner
record: the session is busy. A `.lock` left empty by a crashed WorkRail for Python means
nothing to us (the kernel already dropped its flock).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, TypeVar

from filelock import FileLock, Timeout

from workrail.store.errors import StoreError, io_error
from workrail.store.fsio import ensure_dir
from workrail.store.process_wide import ProcessWide
from workrail.store.spares import Spares, link_spare

_CREATE_ATTEMPTS = 3


class WriterLock:
    """One session's writer lock; `acquire` tries once."""

    def __init__(self, session_dir: Path, guard: threading.Lock) -> None:
        self._session_dir = session_dir
        self._guard = guard
        self._owner: int | None = None
        self._held = False
        # One FileLock per session, reused: building one costs more than the flock itself.
        # Not thread-local, because `_guard` already admits one thread at a time.
        self._file_lock = FileLock(session_dir / ".lock", timeout=0, mode=0o600, thread_local=False)

    def acquire(self) -> StoreError | None:
        me = threading.get_ident()
        if self._owner == me:
            return StoreError("SESSION_LOCK_REENTRANT", "this thread already writes the session")
        if not self._guard.acquire(blocking=False):
            return StoreError("SESSION_LOCKED", "another writer in this process holds the session")
        for attempt in range(_CREATE_ATTEMPTS):
            try:
                ensure_dir(self._session_dir)
                self._name_lock_file()
                self._file_lock.acquire()
                break
            except Timeout:
                self._guard.release()
                return StoreError("SESSION_LOCKED", "another process holds the session")
            except FileNotFoundError as exc:
                # A writer that created nothing removes the empty directory after it lets
                # go of the lock; this one was taken from under us, so make it again.
                if attempt + 1 < _CREATE_ATTEMPTS:
                    continue
                self._guard.release()
                return io_error(exc, "SESSION_STORE_IO_ERROR", "cannot take the session lock")
            except OSError as exc:
                self._guard.release()
                return io_error(exc, "SESSION_STORE_IO_ERROR", "cannot take the session lock")
        if self._foreign_owner():
            self._file_lock.release()
            self._guard.release()
            return StoreError(
                "SESSION_LOCKED", "another WorkRail implementation holds the session (.lock)"
            )
        self._held = True
        self._owner = me
        return None

    def _name_lock_file(self) -> None:
        """Create `.lock` by linking a spare file made ahead of need: as exclusive as the
        create filelock would do, without allocating an inode while the caller waits. An
        existing `.lock` is left alone (filelock opens it and the flock decides)."""
        fd = Spares.shared().take(self._session_dir)
        if fd is None:
            return
        try:
            link_spare(fd, self._session_dir / ".lock")
        except OSError:
            pass  # taken already, or the directory just went: filelock opens or creates it
        finally:
            os.close(fd)

    def _foreign_owner(self) -> bool:
        try:
            return (self._session_dir / ".lock").stat().st_size > 0
        except FileNotFoundError:
            return False

    def release(self) -> None:
        try:
            if self._held:
                # Unlink while still holding the flock, so the path never names a lock
                # that someone else holds.
                (self._session_dir / ".lock").unlink(missing_ok=True)
                self._file_lock.release()
        finally:
            self._held = False
            self._owner = None
            self._guard.release()
            Spares.shared().flush()  # the write is done: make the next one's files now


IDLE_KEPT = 256
"""Locks of sessions no thread is using that the registry keeps for reuse (building a
`FileLock` costs more than the flock itself); beyond that the least recently used go, so a
long-running server does not keep two locks for every session it ever wrote."""

L = TypeVar("L")


class _InUse(Generic[L]):
    """One lock object per key while any thread uses it (so two threads never hold
    different locks for the same session), idle ones kept up to `IDLE_KEPT`."""

    def __init__(self, make: Callable[[str], L]) -> None:
        self._make = make
        self._mutex = threading.Lock()
        self._locks: dict[str, tuple[L, int]] = {}
        self._idle: OrderedDict[str, None] = OrderedDict()

    @contextmanager
    def using(self, key: str) -> Iterator[L]:
        with self._mutex:
            entry = self._locks.get(key)
            lock, users = (self._make(key), 0) if entry is None else entry
            self._locks[key] = (lock, users + 1)
            self._idle.pop(key, None)
        try:
            yield lock
        finally:
            with self._mutex:
                lock, users = self._locks[key]
                if users > 1:
                    self._locks[key] = (lock, users - 1)
                else:
                    self._locks[key] = (lock, 0)
                    self._idle[key] = None
                    while len(self._idle) > IDLE_KEPT:
                        oldest, _ = self._idle.popitem(last=False)
                        del self._locks[oldest]

    def __len__(self) -> int:
        with self._mutex:
            return len(self._locks)


class SessionLockRegistry:
    """Process-wide locks per session directory: a writer lock and a state mutex.

    The state mutex is held briefly around cache updates and reads of the cached index so
    that threads never see it mid-update; writers hold it only while appending. Both are
    kept while in use and for a while after (see `IDLE_KEPT`).
    """

    def __init__(self) -> None:
        self._writers: _InUse[WriterLock] = _InUse(
            lambda key: WriterLock(Path(key), threading.Lock())
        )
        self._states: _InUse[threading.RLock] = _InUse(lambda _key: threading.RLock())

    @classmethod
    def shared(cls) -> SessionLockRegistry:
        return _REGISTRY.get()

    @contextmanager
    def writer(self, session_dir: Path) -> Iterator[WriterLock]:
        """The session's writer lock, the same object for every thread using it now."""
        with self._writers.using(str(session_dir)) as lock:
            yield lock

    @contextmanager
    def state(self, session_dir: Path) -> Iterator[None]:
        with self._states.using(str(session_dir)) as mutex, mutex:
            yield

    @property
    def kept(self) -> tuple[int, int]:
        """How many writer locks and state mutexes the registry holds now."""
        return len(self._writers), len(self._states)


_REGISTRY: ProcessWide[SessionLockRegistry] = ProcessWide(SessionLockRegistry)
