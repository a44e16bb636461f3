"""The local session store: manifest-driven strict loads with an incremental in-process
cache, and the fsync'd append transaction under the single-writer lock.

Crash safety goes beyond the reference (spec 10-storage §4 crash table): a `segment_closed`
record and its pins are written with one `write` and one `fsync`, and a final manifest line
without its newline — an append that was never acknowledged — is treated as absent and cut
off under the lock before the next append. Corruption anywhere else still fails fast and is
never repaired.

A write that starts on a session with no manifest creates the session, and is all or
nothing: its segments are written as usual (orphans until attested) while its manifest
records go to `manifest.jsonl.tmp`, which is published as `manifest.jsonl` with one
link(2) only when the write's callback succeeds. A writer killed before that leaves no
session, only debris the next write under the same id replaces; so an import (several
appends in one write) is never visible half done.

Loading (strict and salvage) is `session_load`; what every store answers the same way
from the validated state (read, health, delete) is `log_state.LogStore`.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal, Protocol, TypeVar

from returns.result import Failure, Result, Success

from workrail.core.append import (
    PartialOverlap,
    manifest_group,
    plan_problem,
    recorded_events,
    segment_bytes,
)
from workrail.core.canonical import CanonicalJsonError, jsonl_line
from workrail.core.health import Corruption
from workrail.core.ids import is_session_id
from workrail.core.manifest import SegmentClosed
from workrail.store.errors import StoreError, io_error
from workrail.store.fsio import (
    UnsafePath,
    ensure_tree,
    fsync_dir,
    open_regular,
    read_regular,
    write_all,
    write_synced,
)
from workrail.store.local.layout import Layout, UnsafeReference
from workrail.store.local.lock import SessionLockRegistry, WriterLock
from workrail.store.local.session_cache import SessionCache
from workrail.store.local.session_load import (
    MANIFEST,
    STAGED_MANIFEST,
    Entry,
    check_session_dir,
    extend,
    is_session,
    load,
    mtime_ns,
    mtime_of,
    unsafe,
)
from workrail.store.log_state import Loaded, LogStore, not_healthy
from workrail.store.ports import (
    LIST_PAGE_MAX,
    AppendOutcome,
    AppendPlan,
    AppendTime,
    IdleDelete,
    PrefixLoad,
    SessionLog,
)

__all__ = ["MANIFEST", "TRASH_PREFIX", "FaultHook", "LocalSessionStore", "mtime_ns"]

T = TypeVar("T")
E = TypeVar("E")

CACHED_SESSIONS = 64
CACHED_EVENTS = 20_000
"""A long-running server keeps the most recently used sessions loaded, within both bounds
(one session larger than the event bound is still kept)."""

_SEGMENT_NAME_RE: Final = re.compile(r"(\d{8,})-(\d{8,})\.jsonl")

FaultHook = Callable[[str], None]
"""Called at each named step of the append protocol; tests use it to kill the process."""

TRASH_PREFIX = ".deleted-"
"""A session directory being removed is first renamed to this prefix (never a valid id,
so nothing lists or loads it) and then removed; leftovers of a crash are swept later."""


class CommitObserver(Protocol):
    """Told of every durable change this process makes, while the writer and the
    session's state lock are still held (the summary index notes which rows to write
    before its next query). Must be quick, take no lock of the store's, and not raise."""

    def committed(self, log: SessionLog, last_activity: datetime) -> None: ...

    def settle(self) -> None:
        """After a write, its locks released: the moment for work `committed` put off
        (the summary index writes its pending rows once too many wait)."""

    def deleted(self, session_id: str) -> None: ...


class LocalSessionStore(LogStore):
    """Sessions under `<data>/sessions/<id>/`; see the module docstring for the protocol."""

    def __init__(self, layout: Layout, faults: FaultHook | None = None) -> None:
        self._layout = layout
        self._faults = faults
        self._cache: SessionCache[Entry] = SessionCache(CACHED_SESSIONS, CACHED_EVENTS)
        self._locks = SessionLockRegistry.shared()
        self._observer: CommitObserver | None = None

    def observe(self, observer: CommitObserver) -> None:
        self._observer = observer

    # --- reads ---------------------------------------------------------------------------

    def _dir(self, session_id: str) -> Path | StoreError:
        """The session's directory, once its id is known to be a session id."""
        try:
            return self._layout.session_dir(session_id)
        except UnsafeReference as exc:
            return StoreError("INVALID_REFERENCE", str(exc))

    @contextmanager
    def _loaded(self, session_id: str) -> Iterator[Loaded]:
        """From the cache when the manifest is unchanged (one lstat)."""
        session_dir = self._dir(session_id)
        if isinstance(session_dir, StoreError):
            yield session_dir
            return
        with self._locks.state(session_dir):
            yield load(self._cache, session_id, session_dir)

    def exists(self, session_id: str) -> Result[bool, StoreError]:
        """A session exists once its manifest does (even a damaged one): a directory that
        holds only a lock or the debris of an interrupted first write is not a session."""
        session_dir = self._dir(session_id)
        if isinstance(session_dir, StoreError):
            return Failure(session_dir)
        return Success(is_session(session_dir))

    def last_activity(self, session_id: str) -> Result[datetime | None, StoreError]:
        """The manifest's mtime: every append ends by writing it."""
        session_dir = self._dir(session_id)
        if isinstance(session_dir, StoreError):
            return Failure(session_dir)
        try:
            st = os.lstat(session_dir / MANIFEST)
        except (FileNotFoundError, NotADirectoryError):
            return Success(None)
        except OSError as exc:
            return Failure(io_error(exc, "SESSION_STORE_IO_ERROR", "cannot stat manifest"))
        return Success(mtime_of(st))

    def append_times(self, session_id: str) -> Result[tuple[AppendTime, ...], StoreError]:
        """Each committed segment's mtime: an append writes one segment, named by its first
        and last event index. Segments are taken in a chain from index 0, so debris of an
        interrupted append past the end (never referenced by the manifest) is not counted."""
        session_dir = self._dir(session_id)
        if isinstance(session_dir, StoreError):
            return Failure(session_dir)
        events_dir = session_dir / "events"
        try:
            entries = os.listdir(events_dir)
        except (FileNotFoundError, NotADirectoryError):
            return Success(())
        except OSError as exc:
            return Failure(io_error(exc, "SESSION_STORE_IO_ERROR", "cannot list segments"))
        spans: dict[int, tuple[int, str]] = {}
        for name in entries:
            match = _SEGMENT_NAME_RE.fullmatch(name)
            if match is not None:
                spans[int(match.group(1))] = (int(match.group(2)), name)
        times: list[AppendTime] = []
        first = 0
        while first in spans:
            last, name = spans[first]
            try:
                st = os.lstat(events_dir / name)
            except OSError:
                break
            times.append(AppendTime(last, mtime_of(st)))
            first = last + 1
        return Success(tuple(times))

    def list_ids(
        self, *, after: str | None = None, limit: int = LIST_PAGE_MAX
    ) -> Result[list[str], StoreError]:
        """Sessions (directories with a well-formed id and a manifest), ascending, after
        `after`. One listdir, then names are filtered and sorted in memory and only as many
        manifests checked as the page needs (not one per session in the directory)."""
        wanted = max(0, min(limit, LIST_PAGE_MAX))
        try:
            names = os.listdir(self._layout.sessions_dir)
        except FileNotFoundError:
            return Success([])
        except OSError as exc:
            return Failure(io_error(exc, "SESSION_STORE_IO_ERROR", "cannot list sessions"))
        candidates = sorted(
            name for name in names if (after is None or name > after) and is_session_id(name)
        )
        result: list[str] = []
        sessions_dir = self._layout.sessions_dir
        for name in candidates:
            if len(result) >= wanted:
                break
            if is_session(sessions_dir / name):
                result.append(name)
        return Success(result)

    def load_prefix(self, session_id: str) -> Result[PrefixLoad, StoreError]:
        """The longest valid prefix of the log, for read-only inspection and export."""
        session_dir = self._dir(session_id)
        if isinstance(session_dir, StoreError):
            return Failure(session_dir)
        entry = Entry()
        try:
            present = check_session_dir(session_dir)
            data = read_regular(session_dir / MANIFEST) if present else None
        except FileNotFoundError:
            data = None
        except UnsafePath as exc:
            return Success(PrefixLoad((), (), False, unsafe(exc, "head")))
        except OSError as exc:
            return Failure(io_error(exc, "SESSION_STORE_IO_ERROR", "cannot read manifest"))
        if data is None:
            return Success(PrefixLoad((), (), True, None))
        try:
            corruption = extend(entry, session_dir, data, salvage=True)
        except OSError as exc:
            corruption = Corruption("missing_attested_segment", f"I/O error: {exc}", "tail")
        return Success(
            PrefixLoad(tuple(entry.events), tuple(entry.manifest), corruption is None, corruption)
        )

    # --- writes --------------------------------------------------------------------------

    def exclusive(
        self, session_id: str, fn: Callable[[Path], Result[T, StoreError]]
    ) -> Result[T | None, StoreError]:
        """Run `fn(session_dir)` holding the session's writer, for changes beside the log
        (lifecycle record, deletion). None, without calling `fn`, when the session has no
        manifest; a directory that held only the lock is removed again."""
        session_dir = self._dir(session_id)
        if isinstance(session_dir, StoreError):
            return Failure(session_dir)
        try:
            if not check_session_dir(session_dir) or not is_session(session_dir):
                return Success(None)
        except UnsafePath as exc:
            return Failure(not_healthy(unsafe(exc, "head")))
        result: Result[T | None, StoreError]
        with self._writer(session_dir) as acquired:
            if isinstance(acquired, StoreError):
                return Failure(acquired)
            if not is_session(session_dir):
                result = Success(None)
            else:
                try:
                    result = fn(session_dir)
                except OSError as exc:
                    result = Failure(
                        io_error(exc, "SESSION_STORE_IO_ERROR", "session change failed")
                    )
        if not is_session(session_dir):
            _remove_if_empty(session_dir)
        return result

    def _delete(
        self, session_id: str, idle_before: datetime | None
    ) -> Result[IdleDelete, StoreError]:
        """Rename the directory aside while holding the writer, then remove it. The
        manifest's mtime (every append ends by writing it, under the writer) is read again
        once the writer is held: a session written since is kept."""

        def remove(session_dir: Path) -> Result[Path | Literal["active"], StoreError]:
            if idle_before is not None:
                st = os.lstat(session_dir / MANIFEST)
                if datetime.fromtimestamp(st.st_mtime, UTC) >= idle_before:
                    return Success("active")
            trash = session_dir.with_name(f"{TRASH_PREFIX}{session_id}-{secrets.token_hex(4)}")
            os.rename(session_dir, trash)
            fsync_dir(session_dir.parent)
            with self._locks.state(session_dir):
                self._cache.forget(session_id)
            if self._observer is not None:
                self._observer.deleted(session_id)
            return Success(trash)

        outcome = self.exclusive(session_id, remove)
        if isinstance(outcome, Failure):
            return Failure(outcome.failure())
        trash = outcome.unwrap()
        if trash is None:
            return Success("absent")
        if trash == "active":
            return Success("active")
        shutil.rmtree(trash, ignore_errors=True)
        return Success("deleted")

    def sweep_trash(self) -> None:
        """Finish removals a crash interrupted (directories already renamed aside)."""
        try:
            names = os.listdir(self._layout.sessions_dir)
        except OSError:
            return
        for name in names:
            if name.startswith(TRASH_PREFIX):
                shutil.rmtree(self._layout.sessions_dir / name, ignore_errors=True)

    def write(
        self, session_id: str, fn: Callable[[_Txn], Result[T, E]]
    ) -> Result[T, E | StoreError]:
        """Run `fn` as the session's single writer.

        Fails fast with a retryable `SESSION_LOCKED` when another thread, coroutine or
        process holds the session; never waits. The session must load as healthy. On a
        session with no manifest the whole write is published at once, or not at all.
        """
        session_dir = self._dir(session_id)
        if isinstance(session_dir, StoreError):
            return Failure(session_dir)
        try:
            ensure_tree(self._layout.root, session_dir)
        except UnsafePath as exc:
            return Failure(not_healthy(unsafe(exc, "head")))
        except OSError as exc:
            return Failure(io_error(exc, "SESSION_STORE_IO_ERROR", "cannot create the session"))
        txn: _Txn | None = None
        with self._writer(session_dir) as acquired:
            if isinstance(acquired, StoreError):
                return Failure(acquired)
            with self._locks.state(session_dir):
                loaded = load(self._cache, session_id, session_dir)
                if isinstance(loaded, Corruption):
                    return Failure(not_healthy(loaded))
                try:
                    if loaded.torn:
                        self._cut_torn_tail(session_id, session_dir, loaded)
                except OSError as exc:
                    return Failure(io_error(exc, "SESSION_STORE_IO_ERROR", "cannot repair"))
                creating = not os.path.lexists(session_dir / MANIFEST)
            txn = _Txn(self, session_id, session_dir, Entry() if creating else None, loaded)
            try:
                result: Result[T, E | StoreError] = fn(txn)
                if txn.staged is not None and isinstance(result, Success) and txn.staged.manifest:
                    published = self._publish(txn)
                    if published is not None:
                        result = Failure(published)
            finally:
                txn.closed = True
                if txn.staged is not None and not txn.published:
                    self._discard(txn)
        if txn.staged is not None and not txn.published:
            # Nothing was created: leave no empty directory that looks like a session.
            _remove_if_empty(session_dir)
        if self._observer is not None:
            self._observer.settle()
        return result

    @contextmanager
    def _writer(self, session_dir: Path) -> Iterator[WriterLock | StoreError]:
        with self._locks.writer(session_dir) as lock:
            acquired = lock.acquire()
            if isinstance(acquired, StoreError):
                yield acquired
                return
            try:
                yield lock
            finally:
                lock.release()

    def _cut_torn_tail(self, session_id: str, session_dir: Path, entry: Entry) -> None:
        """Cut off an interrupted, unacknowledged manifest write (we hold the lock)."""
        path = session_dir / MANIFEST
        fd = open_regular(path, os.O_WRONLY)
        try:
            if os.fstat(fd).st_size != entry.size:
                raise OSError("manifest changed while locked; refusing to cut its tail")
            os.ftruncate(fd, entry.consumed)
            os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        entry.torn = False
        entry.size, entry.mtime_ns = st.st_size, st.st_mtime_ns

    def _append(self, txn: _Txn, plan: AppendPlan) -> Result[AppendOutcome, StoreError]:
        with self._locks.state(txn.session_dir):
            if txn.staged is not None:
                loaded: Entry | Corruption = txn.staged
            else:
                loaded = load(self._cache, txn.session_id, txn.session_dir)
            if isinstance(loaded, Corruption):
                return Failure(not_healthy(loaded))
            try:
                existing = recorded_events(loaded.index.dedupe, loaded.events, plan)
            except PartialOverlap as exc:
                return Failure(StoreError("SESSION_STORE_INVARIANT_VIOLATION", str(exc)))
            if existing is not None:
                return Success(AppendOutcome(existing, deduplicated=True))
            problem = plan_problem(loaded.index, len(loaded.events), txn.session_id, plan)
            if problem is not None:
                return Failure(StoreError("SESSION_STORE_INVARIANT_VIOLATION", problem))
            try:
                segment = segment_bytes(plan)
            except CanonicalJsonError as exc:
                return Failure(StoreError("SESSION_STORE_INVARIANT_VIOLATION", str(exc)))
            txn.validated = loaded
            try:
                self._commit(txn, loaded, plan, segment)
            except OSError as exc:
                self._cache.forget(txn.session_id)
                if txn.staged is not None:
                    txn.broken = True
                return Failure(io_error(exc, "SESSION_STORE_IO_ERROR", "append failed"))
            return Success(AppendOutcome(plan.events, deduplicated=False))

    def _commit(self, txn: _Txn, entry: Entry, plan: AppendPlan, segment: bytes) -> None:
        """The durable append protocol (spec 10-storage §4, with the group write). While a
        session is being created its records go to the staged manifest instead."""
        if txn.broken:
            raise OSError("an earlier append of this write failed; nothing more is written")
        records = manifest_group(txn.session_id, len(entry.manifest), plan, segment)
        closed = records[0]
        assert isinstance(closed, SegmentClosed)
        self._write_segment(txn, closed.segmentRelPath, segment)
        st = self._write_group(txn, entry, b"".join(jsonl_line(r.to_json()) for r in records))
        entry.add(plan.events, records)
        entry.consumed = st.st_size  # our complete group ends the file
        entry.identify(st)
        if txn.staged is None:
            self._cache.remember(txn.session_id, entry)
            self._tell_committed(txn.session_id, entry, st)

    def _write_segment(self, txn: _Txn, rel: str, segment: bytes) -> None:
        """The segment, durable under its final name before any record attests it."""
        events_dir = txn.session_dir / "events"
        ensure_tree(self._layout.root, events_dir)
        final = txn.session_dir / rel
        tmp = final.with_name(final.name + ".tmp")  # the spec's name; we hold the lock
        write_synced(tmp, segment)
        self._fault("after_temp_write")
        os.replace(tmp, final)
        if txn.staged is not None:
            txn.segments.append(final)
        fsync_dir(events_dir)
        self._fault("after_rename")

    def _write_group(self, txn: _Txn, entry: Entry, group: bytes) -> os.stat_result:
        """The `segment_closed` record and its pins, with one write and one fsync (split
        in two around a fault point when faults are injected); the manifest's stat after."""
        staged = txn.staged is not None
        if staged:
            manifest_path = txn.session_dir / STAGED_MANIFEST
            if not entry.manifest:
                # Created holding its first group: one fsync (an empty file fsync'd first
                # was one more, for a file never published empty). Debris of an earlier,
                # interrupted creation is replaced, never appended to; the file is named
                # only once whole, so the nearest a kill comes to a partial manifest here
                # is a complete staged one that was never published.
                st = write_synced(manifest_path, group)
                self._fault("manifest_partial")
                return st
        else:
            manifest_path = txn.session_dir / MANIFEST
        # Never created here: a new session's staged manifest was made by this write's
        # first group (above) and is published by `_publish`; a published one that
        # vanished is an I/O failure.
        fd = open_regular(manifest_path, os.O_WRONLY | os.O_APPEND)
        try:
            if self._faults is None:
                write_all(fd, group)
            else:
                half = len(group) // 2
                write_all(fd, group[:half])
                os.fsync(fd)
                self._fault("manifest_partial")
                write_all(fd, group[half:])
            os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if not staged:
            self._fault("after_manifest")
        return st

    def _publish(self, txn: _Txn) -> StoreError | None:
        """Make a created session visible: link the complete staged manifest to its name
        (link(2) refuses to replace anything), then drop the staged name.

        Once the link exists the session is published, whatever fails next: its segments
        are never discarded then (the manifest names them), the failure is only reported."""
        entry = txn.staged
        assert entry is not None
        staged = txn.session_dir / STAGED_MANIFEST
        final = txn.session_dir / MANIFEST
        try:
            os.link(staged, final)
        except OSError as exc:
            return io_error(exc, "SESSION_STORE_IO_ERROR", "cannot publish the new session")
        txn.published = True
        try:
            self._fault("after_link")
            os.unlink(staged)
            fsync_dir(txn.session_dir)
            st = os.lstat(final)
        except OSError as exc:
            self._cache.forget(txn.session_id)
            return io_error(
                exc, "SESSION_STORE_IO_ERROR", "the new session was written but not confirmed"
            )
        self._fault("after_manifest")
        with self._locks.state(txn.session_dir):
            entry.identify(st)
            self._cache.remember(txn.session_id, entry)
            self._tell_committed(txn.session_id, entry, st)
        return None

    def _tell_committed(self, session_id: str, entry: Entry, st: os.stat_result) -> None:
        if self._observer is not None:
            self._observer.committed(entry.view(session_id), mtime_of(st))

    def _discard(self, txn: _Txn) -> None:
        """Remove what an unpublished creation wrote (best effort: it is debris either way,
        never read, and replaced by the next write under this id)."""
        for path in (txn.session_dir / STAGED_MANIFEST, *txn.segments):
            with suppress(OSError):
                os.unlink(path)
        _remove_if_empty(txn.session_dir / "events")

    def _fault(self, step: str) -> None:
        if self._faults is not None:
            self._faults(step)


class _Txn:
    """The write capability handed to a `write` callback; dead once the callback returns.

    `staged` is the state of a session being created (not yet visible to anyone else)."""

    def __init__(
        self,
        store: LocalSessionStore,
        session_id: str,
        session_dir: Path,
        staged: Entry | None,
        validated: Entry,
    ) -> None:
        self._store = store
        self.session_id = session_id
        self.session_dir = session_dir
        self.staged = staged
        self.validated = validated  # the state last loaded healthy under this writer
        self.segments: list[Path] = []
        self.published = False
        self.broken = False
        self.closed = False

    @property
    def log(self) -> SessionLog:
        if self.staged is not None:
            return self.staged.view(self.session_id)
        with self._store._locks.state(self.session_dir):
            loaded = load(self._store._cache, self.session_id, self.session_dir)
        if isinstance(loaded, Corruption):
            # Damaged from outside while we hold the writer: show the state last validated
            # (a property cannot return an error value); the next append reports the damage.
            return self.validated.view(self.session_id)
        self.validated = loaded
        return loaded.view(self.session_id)

    def append(self, plan: AppendPlan) -> Result[AppendOutcome, StoreError]:
        if self.closed:
            message = "write capability used after release"
            return Failure(StoreError("SESSION_STORE_INVARIANT_VIOLATION", message))
        return self._store._append(self, plan)


def _remove_if_empty(directory: Path) -> None:
    with suppress(OSError):
        os.rmdir(directory)
