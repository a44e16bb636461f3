"""The local session store: manifest-driven strict loads with an incremental in-process
cache, and the fsync'd append transaction under the single-writer lock.

Crash safety goes beyond the reference (spec 10-storage §4 crash table): a `segment_closed`
record and its pins are written with one `write` and one `fsync`, and a final manifest line
without its newline — an append that was never acknowledged — is treated as absent and cut
off under the lock before the next append. Corruption anywhere else still fails fast and is
never repaired.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypeVar

from returns.result import Failure, Result, Success

from workrail.core.append import (
    PartialOverlap,
    manifest_group,
    plan_problem,
    recorded_events,
    segment_bytes,
)
from workrail.core.canonical import CanonicalJsonError, jsonl_line
from workrail.core.events import DomainEvent
from workrail.core.health import HEALTHY, Corruption, SessionHealth
from workrail.core.log_reader import (
    CorruptionError,
    check_chain,
    missing_pin_error,
    missing_pins,
    parse_manifest_suffix,
    parse_segment,
    pins_of,
)
from workrail.core.manifest import ManifestRecord, SegmentClosed, SnapshotPinned
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.store.errors import StoreError
from workrail.store.fsio import FILE_MODE, ensure_dir, fsync_dir, write_all, write_synced
from workrail.store.local.layout import Layout, UnsafeReference
from workrail.store.local.lock import SessionLockRegistry, WriterLock
from workrail.store.ports import LIST_PAGE_MAX, AppendOutcome, AppendPlan, PrefixLoad, SessionLog

T = TypeVar("T")
E = TypeVar("E")

CACHED_SESSIONS = 256

FaultHook = Callable[[str], None]
"""Called at each named step of the append protocol; tests use it to kill the process."""

TRASH_PREFIX = ".deleted-"
"""A session directory being removed is first renamed to this prefix (never a valid id,
so nothing lists or loads it) and then removed; leftovers of a crash are swept later."""


class CommitObserver(Protocol):
    """Told of every durable change this process makes, while the writer is still held
    (the summary index keeps itself up to date this way). Must not raise."""

    def committed(self, log: SessionLog, last_activity: datetime) -> None: ...

    def deleted(self, session_id: str) -> None: ...


@dataclass
class _Entry:
    """Cached validated state of one session, plus the manifest identity it was read from."""

    ino: int = -1
    dev: int = -1
    size: int = 0
    mtime_ns: int = 0
    consumed: int = 0  # manifest bytes that hold accepted records
    torn: bool = False  # bytes after `consumed` exist: an unacknowledged, interrupted append
    events: list[DomainEvent] = field(default_factory=list)
    manifest: list[ManifestRecord] = field(default_factory=list)
    index: SessionIndex = field(default_factory=SessionIndex)
    pins: set[tuple[int, str, str]] = field(default_factory=set)
    last_segment: SegmentClosed | None = None

    def view(self, session_id: str) -> SessionLog:
        return SessionLog(session_id, self.events, self.manifest, self.index)


class LocalSessionStore:
    """Sessions under `<data>/sessions/<id>/`; see the module docstring for the protocol."""

    def __init__(self, layout: Layout, faults: FaultHook | None = None) -> None:
        self._layout = layout
        self._faults = faults
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._locks = SessionLockRegistry.shared()
        self._observer: CommitObserver | None = None

    def observe(self, observer: CommitObserver) -> None:
        self._observer = observer

    # --- reads ---------------------------------------------------------------------------

    def read(self, session_id: str, fn: Callable[[SessionLog], T]) -> Result[T, StoreError]:
        """Strictly load (from cache when the manifest is unchanged) and call `fn` with the
        view. Never takes the writer lock, so reads and replays work while a writer runs."""
        try:
            session_dir = self._layout.session_dir(session_id)
        except UnsafeReference as exc:
            return Failure(StoreError("INVALID_REFERENCE", str(exc)))
        with self._locks.state(session_dir):
            loaded = self._load(session_id, session_dir)
            if isinstance(loaded, Corruption):
                return Failure(_not_healthy(loaded))
            return Success(fn(loaded.view(session_id)))

    def health(self, session_id: str) -> Result[SessionHealth, StoreError]:
        """`healthy`, or the corruption class with its reason. Never writes."""
        result = self.read(session_id, lambda _log: HEALTHY)
        if isinstance(result, Success):
            return result
        error: StoreError = result.failure()
        if error.health is None:
            return Failure(error)
        return Success(error.health)

    def exists(self, session_id: str) -> Result[bool, StoreError]:
        try:
            session_dir = self._layout.session_dir(session_id)
        except UnsafeReference as exc:
            return Failure(StoreError("INVALID_REFERENCE", str(exc)))
        return Success(os.path.lexists(session_dir))

    def last_activity(self, session_id: str) -> Result[datetime | None, StoreError]:
        """The manifest's mtime: every append ends by writing it."""
        try:
            session_dir = self._layout.session_dir(session_id)
        except UnsafeReference as exc:
            return Failure(StoreError("INVALID_REFERENCE", str(exc)))
        try:
            st = os.stat(session_dir / "manifest.jsonl")
        except FileNotFoundError:
            return Success(None)
        except OSError as exc:
            return Failure(StoreError("SESSION_STORE_IO_ERROR", f"cannot stat manifest: {exc}"))
        return Success(datetime.fromtimestamp(st.st_mtime, UTC))

    def list_ids(
        self, *, after: str | None = None, limit: int = LIST_PAGE_MAX
    ) -> Result[list[str], StoreError]:
        """Session directories that carry a well-formed id, ascending, after `after`."""
        try:
            names = os.listdir(self._layout.sessions_dir)
        except FileNotFoundError:
            return Success([])
        except OSError as exc:
            return Failure(StoreError("SESSION_STORE_IO_ERROR", f"cannot list sessions: {exc}"))
        result = []
        for name in names:
            if after is not None and name <= after:
                continue
            try:
                self._layout.session_dir(name)
            except UnsafeReference:
                continue
            result.append(name)
        result.sort()
        return Success(result[: max(0, min(limit, LIST_PAGE_MAX))])

    def load_prefix(self, session_id: str) -> Result[PrefixLoad, StoreError]:
        """The longest valid prefix of the log, for read-only inspection and export."""
        try:
            session_dir = self._layout.session_dir(session_id)
        except UnsafeReference as exc:
            return Failure(StoreError("INVALID_REFERENCE", str(exc)))
        entry = _Entry()
        try:
            data = (session_dir / "manifest.jsonl").read_bytes()
        except FileNotFoundError:
            return Success(PrefixLoad((), (), True, None))
        except OSError as exc:
            return Failure(StoreError("SESSION_STORE_IO_ERROR", f"cannot read manifest: {exc}"))
        try:
            self._extend(entry, session_dir, data, salvage=True)
            corruption = None
        except _SalvageStop as stop:
            corruption = stop.corruption
        except OSError as exc:
            corruption = Corruption("missing_attested_segment", f"I/O error: {exc}", "tail")
        return Success(
            PrefixLoad(tuple(entry.events), tuple(entry.manifest), corruption is None, corruption)
        )

    def _load(self, session_id: str, session_dir: Path) -> _Entry | Corruption:
        """Bring the cached entry up to date with disk, reading only what is new."""
        manifest_path = session_dir / "manifest.jsonl"
        try:
            st = os.stat(manifest_path)
        except FileNotFoundError:
            self._cache.pop(session_id, None)
            return _Entry()
        entry = self._cache.get(session_id)
        if entry is not None and (st.st_ino, st.st_dev) == (entry.ino, entry.dev):
            if st.st_size == entry.size and st.st_mtime_ns == entry.mtime_ns:
                self._cache.move_to_end(session_id)
                return entry
            if st.st_size < entry.consumed:
                entry = None
        else:
            entry = None
        if entry is None:
            entry = _Entry()
        try:
            with open(manifest_path, "rb") as f:
                f.seek(entry.consumed)
                data = f.read()
                fst = os.fstat(f.fileno())
            self._extend(entry, session_dir, data, salvage=False)
        except CorruptionError as exc:
            self._cache.pop(session_id, None)
            return exc.corruption
        except OSError as exc:
            self._cache.pop(session_id, None)
            return Corruption("missing_attested_segment", f"I/O error: {exc}", "tail")
        entry.ino, entry.dev = fst.st_ino, fst.st_dev
        entry.size, entry.mtime_ns = fst.st_size, fst.st_mtime_ns
        self._remember(session_id, entry)
        return entry

    def _remember(self, session_id: str, entry: _Entry) -> None:
        """Cache a validated session; a long-running server keeps only the most recent."""
        self._cache[session_id] = entry
        self._cache.move_to_end(session_id)
        while len(self._cache) > CACHED_SESSIONS:
            self._cache.popitem(last=False)

    def _extend(self, entry: _Entry, session_dir: Path, data: bytes, *, salvage: bool) -> None:
        """Validate manifest bytes that follow `entry.consumed` and fold them into `entry`.

        On failure `entry` may be partly extended; the caller discards it (strict) or keeps
        the prefix (salvage, which stops at the first bad record).
        """
        try:
            tail = parse_manifest_suffix(data, len(entry.manifest))
        except CorruptionError as exc:
            if salvage:
                raise _SalvageStop(exc.corruption) from exc
            raise
        records, ends = tail.records, tail.line_ends
        segments: dict[int, list[DomainEvent]] = {}
        if not salvage:  # a salvage load stops at the first bad record anyway
            records, ends = self._drop_unacknowledged_group(
                entry, session_dir, records, ends, segments
            )
        entry.torn = tail.torn or len(records) < len(tail.records)
        for position, record in enumerate(records):
            try:
                if isinstance(record, SegmentClosed):
                    check_chain(entry.last_segment, record)
                    if entry.last_segment is None and record.firstEventIndex != 0:
                        raise CorruptionError(
                            Corruption(
                                "non_contiguous_indices",
                                "The first segment must start at event 0",
                                "head",
                            )
                        )
                    events = segments.get(position)
                    if events is None:
                        events = _read_segment(session_dir, record)
                    for event in events:
                        entry.index.apply(event)
                    entry.events.extend(events)
                    entry.last_segment = record
                else:
                    assert isinstance(record, SnapshotPinned)
                    entry.pins |= pins_of([record])
                entry.manifest.append(record)
                entry.consumed += ends[position] - (ends[position - 1] if position else 0)
            except ProjectionError as exc:
                corruption = Corruption("non_contiguous_indices", str(exc), "tail")
                if salvage:
                    raise _SalvageStop(corruption) from exc
                raise CorruptionError(corruption) from exc
            except CorruptionError as exc:
                if salvage:
                    raise _SalvageStop(exc.corruption) from exc
                raise
        if not salvage:
            new_nodes = missing_pins(_recent_events(entry, records), entry.pins)
            if new_nodes:
                raise missing_pin_error(new_nodes[0])

    def _drop_unacknowledged_group(
        self,
        entry: _Entry,
        session_dir: Path,
        records: list[ManifestRecord],
        ends: list[int],
        segments: dict[int, list[DomainEvent]],
    ) -> tuple[list[ManifestRecord], list[int]]:
        """Leave out the file's final group when it is an append that was interrupted.

        We write a `segment_closed` and all its pins with one write, so a final group whose
        nodes are not all pinned was cut short before its fsync and never acknowledged (the
        reference writes the pins separately; a crash between the two leaves the same
        shape, equally unacknowledged). Only the final group can be in that state; its
        segment was made durable before the record was written, so it must read and verify
        — if it does not, that is corruption and it propagates.
        """
        last = max((i for i, r in enumerate(records) if isinstance(r, SegmentClosed)), default=None)
        if last is None:
            return records, ends
        record = records[last]
        assert isinstance(record, SegmentClosed)
        events = _read_segment(session_dir, record)
        segments[last] = events
        if missing_pins(events, entry.pins | pins_of(records)):
            return records[:last], ends[:last]
        return records, ends

    # --- writes --------------------------------------------------------------------------

    def exclusive(
        self, session_id: str, fn: Callable[[Path], Result[T, StoreError]]
    ) -> Result[T | None, StoreError]:
        """Run `fn(session_dir)` holding the session's writer, for changes beside the log
        (lifecycle record, deletion). None, without calling `fn`, when the session has no
        manifest; a directory that held only the lock is removed again."""
        try:
            session_dir = self._layout.session_dir(session_id)
        except UnsafeReference as exc:
            return Failure(StoreError("INVALID_REFERENCE", str(exc)))
        if not (session_dir / "manifest.jsonl").exists():
            return Success(None)
        result: Result[T | None, StoreError]
        with self._writer(session_dir) as acquired:
            if isinstance(acquired, StoreError):
                return Failure(acquired)
            if not (session_dir / "manifest.jsonl").exists():
                result = Success(None)
            else:
                try:
                    result = fn(session_dir)
                except OSError as exc:
                    result = Failure(StoreError("SESSION_STORE_IO_ERROR", str(exc)))
        if not (session_dir / "manifest.jsonl").exists():
            _remove_if_empty(session_dir)
        return result

    def delete(self, session_id: str) -> Result[bool, StoreError]:
        """Rename the directory aside while holding the writer, then remove it."""

        def remove(session_dir: Path) -> Result[Path, StoreError]:
            trash = session_dir.with_name(
                f"{TRASH_PREFIX}{session_id}-{secrets.token_hex(4)}"
            )
            os.rename(session_dir, trash)
            fsync_dir(session_dir.parent)
            with self._locks.state(session_dir):
                self._cache.pop(session_id, None)
            if self._observer is not None:
                self._observer.deleted(session_id)
            return Success(trash)

        outcome = self.exclusive(session_id, remove)
        if isinstance(outcome, Failure):
            return Failure(outcome.failure())
        trash = outcome.unwrap()
        if trash is None:
            return Success(False)
        shutil.rmtree(trash, ignore_errors=True)
        return Success(True)

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
        process holds the session; never waits. The session must load as healthy.
        """
        try:
            session_dir = self._layout.session_dir(session_id)
        except UnsafeReference as exc:
            return Failure(StoreError("INVALID_REFERENCE", str(exc)))
        with self._writer(session_dir) as acquired:
            if isinstance(acquired, StoreError):
                return Failure(acquired)
            with self._locks.state(session_dir):
                loaded = self._load(session_id, session_dir)
                if isinstance(loaded, Corruption):
                    return Failure(_not_healthy(loaded))
                try:
                    if loaded.torn:
                        self._cut_torn_tail(session_id, session_dir, loaded)
                except OSError as exc:
                    return Failure(StoreError("SESSION_STORE_IO_ERROR", str(exc)))
            txn = _Txn(self, session_id, session_dir)
            try:
                return fn(txn)
            finally:
                txn.closed = True

    @contextmanager
    def _writer(self, session_dir: Path) -> Iterator[WriterLock | StoreError]:
        lock = self._locks.writer(session_dir)
        acquired = lock.acquire()
        if isinstance(acquired, StoreError):
            yield acquired
            return
        try:
            yield lock
        finally:
            lock.release()

    def _cut_torn_tail(self, session_id: str, session_dir: Path, entry: _Entry) -> None:
        """Cut off an interrupted, unacknowledged manifest write (we hold the lock)."""
        path = session_dir / "manifest.jsonl"
        fd = os.open(path, os.O_WRONLY)
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
            loaded = self._load(txn.session_id, txn.session_dir)
            if isinstance(loaded, Corruption):
                return Failure(_not_healthy(loaded))
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
            try:
                self._commit(txn.session_id, txn.session_dir, loaded, plan, segment)
            except OSError as exc:
                self._cache.pop(txn.session_id, None)
                return Failure(StoreError("SESSION_STORE_IO_ERROR", str(exc)))
            return Success(AppendOutcome(plan.events, deduplicated=False))

    def _commit(
        self,
        session_id: str,
        session_dir: Path,
        entry: _Entry,
        plan: AppendPlan,
        segment: bytes,
    ) -> None:
        """The durable append protocol (spec 10-storage §4, with the group write)."""
        records = manifest_group(session_id, len(entry.manifest), plan, segment)
        closed = records[0]
        assert isinstance(closed, SegmentClosed)
        rel = closed.segmentRelPath
        events_dir = session_dir / "events"
        ensure_dir(events_dir)
        final = session_dir / rel
        tmp = final.with_name(final.name + ".tmp")  # the spec's name; we hold the lock
        write_synced(tmp, segment)
        self._fault("after_temp_write")
        os.replace(tmp, final)
        fsync_dir(events_dir)
        self._fault("after_rename")

        group = b"".join(jsonl_line(r.to_json()) for r in records)
        manifest_path = session_dir / "manifest.jsonl"
        created = entry.consumed == 0 and not manifest_path.exists()
        fd = os.open(manifest_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
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
        if created:
            fsync_dir(session_dir)
        self._fault("after_manifest")

        for event in plan.events:
            entry.index.apply(event)
        entry.events.extend(plan.events)
        entry.manifest.extend(records)
        entry.pins |= pins_of(records)
        entry.last_segment = closed
        entry.consumed = st.st_size  # our complete group ends the file
        entry.ino, entry.dev, entry.size, entry.mtime_ns = (
            st.st_ino,
            st.st_dev,
            st.st_size,
            st.st_mtime_ns,
        )
        self._remember(session_id, entry)
        if self._observer is not None:
            self._observer.committed(
                entry.view(session_id), datetime.fromtimestamp(st.st_mtime, UTC)
            )

    def _fault(self, step: str) -> None:
        if self._faults is not None:
            self._faults(step)


class _SalvageStop(Exception):
    def __init__(self, corruption: Corruption) -> None:
        super().__init__(corruption.message)
        self.corruption = corruption


class _Txn:
    """The write capability handed to a `write` callback; dead once the callback returns."""

    def __init__(self, store: LocalSessionStore, session_id: str, session_dir: Path) -> None:
        self._store = store
        self.session_id = session_id
        self.session_dir = session_dir
        self.closed = False

    @property
    def log(self) -> SessionLog:
        with self._store._locks.state(self.session_dir):
            loaded = self._store._load(self.session_id, self.session_dir)
        if isinstance(loaded, Corruption):
            raise RuntimeError("session became unhealthy while locked")
        return loaded.view(self.session_id)

    def append(self, plan: AppendPlan) -> Result[AppendOutcome, StoreError]:
        if self.closed:
            message = "write capability used after release"
            return Failure(StoreError("SESSION_STORE_INVARIANT_VIOLATION", message))
        return self._store._append(self, plan)


def _read_segment(session_dir: Path, record: SegmentClosed) -> list[DomainEvent]:
    path = (session_dir / record.segmentRelPath).resolve()
    if session_dir.resolve() not in path.parents:
        raise CorruptionError(
            Corruption("schema_validation_failed", "segmentRelPath escapes the session", "tail")
        )
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise CorruptionError(
            Corruption(
                "missing_attested_segment",
                f"Missing attested segment: {record.segmentRelPath}",
                "tail",
            )
        ) from exc
    return parse_segment(data, record)


def _recent_events(entry: _Entry, records: list[ManifestRecord]) -> list[DomainEvent]:
    """The events introduced by `records` (the tail of `entry.events`)."""
    count = sum(
        r.lastEventIndex - r.firstEventIndex + 1 for r in records if isinstance(r, SegmentClosed)
    )
    return entry.events[len(entry.events) - count :] if count else []


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass


def _not_healthy(corruption: Corruption) -> StoreError:
    health = SessionHealth.of(corruption)
    return StoreError(
        "SESSION_NOT_HEALTHY",
        f"Session corruption detected: {corruption.code}",
        health=health,
    )
