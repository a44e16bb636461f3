"""A session's validated state, how manifest records extend it, and what every session
store does the same way over it (`LogStore`: read, health, delete): shared by the files,
PostgreSQL and memory stores, each of which keeps only its own I/O.

The PostgreSQL and memory stores keep the very bytes the file backend writes, one row per
event and per manifest record: each is one canonical JSON line (without its newline). So
validation is the file backend's: the manifest rows joined with newlines are a manifest
suffix, the event rows a `segment_closed` attests joined with newlines are its segment,
checked against the record's sha256 — and anything that does not validate gets the same
health class as on files.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from returns.result import Failure, Result, Success

from workrail.core.append import Admitted, admit
from workrail.core.events import DomainEvent
from workrail.core.health import HEALTHY, Corruption, CorruptionCode, SessionHealth
from workrail.core.ids import is_session_id
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
from workrail.core.summary_accumulator import SummaryAccumulator
from workrail.store.errors import StoreError
from workrail.store.ports import AppendOutcome, AppendPlan, IdleDelete, SessionLog

T = TypeVar("T")


@dataclass
class LogState:
    """The first `len(events)` events of a session, validated, with their manifest."""

    events: list[DomainEvent] = field(default_factory=list)
    manifest: list[ManifestRecord] = field(default_factory=list)
    index: SessionIndex = field(default_factory=SessionIndex)
    summary: SummaryAccumulator = field(default_factory=SummaryAccumulator)
    pins: set[tuple[int, str, str]] = field(default_factory=set)
    last_segment: SegmentClosed | None = None

    def view(self, session_id: str) -> SessionLog:
        return SessionLog(session_id, self.events, self.manifest, self.index, self.summary)

    def add(self, events: Sequence[DomainEvent], records: Sequence[ManifestRecord]) -> None:
        """Fold an append this process validated itself (raises `ProjectionError`)."""
        for event in events:
            self.index.apply(event)
        self.events.extend(events)
        self.manifest.extend(records)
        self.pins |= pins_of(records)
        for record in records:
            if isinstance(record, SegmentClosed):
                self.last_segment = record


def invalid_reference(session_id: str) -> StoreError:
    return StoreError("INVALID_REFERENCE", f"not a session id: {session_id[:60]!r}")


def not_healthy(corruption: Corruption) -> StoreError:
    return StoreError(
        "SESSION_NOT_HEALTHY",
        f"Session corruption detected: {corruption.code}",
        health=SessionHealth.of(corruption),
    )


Loaded = LogState | Corruption | StoreError
"""A session as a store loads it: its validated state, why it is damaged, or why the store
could not be asked."""


class LogStore:
    """What every session store answers the same way from a session's validated state. An
    adapter supplies only its I/O: `_loaded` (bring the cached state up to what is stored,
    reading only what is new) and `_delete`."""

    def _loaded(self, session_id: str) -> AbstractContextManager[Loaded]:
        """The session's state, current with what is stored and held stable (this
        session's readers' lock) until the block ends. Never takes the writer lock."""
        raise NotImplementedError

    def _delete(
        self, session_id: str, idle_before: datetime | None
    ) -> Result[IdleDelete, StoreError]:
        """Remove the session holding its writer (only when idle before `idle_before`,
        judged under the writer, when given)."""
        raise NotImplementedError

    def read(self, session_id: str, fn: Callable[[SessionLog], T]) -> Result[T, StoreError]:
        """Strictly load (from the cache when nothing was stored since) and call `fn` with
        the view, so reads and replays work while a writer runs."""
        with self._loaded(session_id) as loaded:
            if isinstance(loaded, StoreError):
                return Failure(loaded)
            if isinstance(loaded, Corruption):
                return Failure(not_healthy(loaded))
            return Success(fn(loaded.view(session_id)))

    def health(self, session_id: str) -> Result[SessionHealth, StoreError]:
        """`healthy`, or the corruption class with its reason; never writes. Answered from
        the validated state brought up to date by the manifest and the records past it
        (the whole log only when nothing of it is cached yet), building no view."""
        with self._loaded(session_id) as loaded:
            if isinstance(loaded, StoreError):
                return Failure(loaded)
            return Success(HEALTHY if isinstance(loaded, LogState) else SessionHealth.of(loaded))

    def delete(self, session_id: str) -> Result[bool, StoreError]:
        """Remove the session while holding its writer; False when there was nothing."""
        done = self._delete(session_id, None)
        if isinstance(done, Failure):
            return Failure(done.failure())
        return Success(done.unwrap() == "deleted")

    def delete_idle(
        self, session_id: str, *, idle_before: datetime
    ) -> Result[IdleDelete, StoreError]:
        """`delete`, but a session appended to since `idle_before` is kept ("active")."""
        return self._delete(session_id, idle_before)


@dataclass
class CacheSlot:
    """A session's cached state and the lock that orders this process's readers of it."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    state: LogState | None = None


class RowLogStore(LogStore):
    """A store of one row per event and per manifest record (PostgreSQL, memory): each
    session's validated state is kept in a cache slot and extended with the new rows."""

    def _slot(self, session_id: str) -> CacheSlot:
        """The session's slot (made empty on first use)."""
        raise NotImplementedError

    def _fresh(self, session_id: str, slot: CacheSlot) -> Loaded:
        """`slot` brought up to the stored rows (called holding `slot.lock`)."""
        raise NotImplementedError

    @contextmanager
    def _loaded(self, session_id: str) -> Iterator[Loaded]:
        if not is_session_id(session_id):
            yield invalid_reference(session_id)
            return
        slot = self._slot(session_id)
        with slot.lock:
            yield self._fresh(session_id, slot)


class CachedWrite:
    """The write capability over a session's cached state, extended in place by each
    append (copying it would make every append cost O(session)). From its first append
    until `release` the writing thread holds the slot's lock, so other threads read the
    session once the write's outcome is known; a write that was not kept drops the
    cached state, which the next read rebuilds from the stored rows.

    An append is judged by the core's rules (`admit`) and folded into the state here;
    the backend only stores the rows (`_persist`)."""

    def __init__(self, session_id: str, slot: CacheSlot, state: LogState) -> None:
        self.session_id = session_id
        self.slot = slot
        self.state = state
        self._holding = False
        self.broken: StoreError | None = None
        """A failed append: nothing of this write may be kept."""
        self.closed = False

    def take_cache(self) -> None:
        """Before the first append: hold the slot's lock until `release`."""
        if not self._holding:
            self.slot.lock.acquire()
            self._holding = True
            self.slot.state = self.state

    def release(self, kept: bool) -> None:
        if self._holding:
            if not kept and self.slot.state is self.state:
                self.slot.state = None
            self._holding = False
            self.slot.lock.release()

    @property
    def log(self) -> SessionLog:
        """Includes what this write appended (read-your-writes)."""
        return self.state.view(self.session_id)

    def append(self, plan: AppendPlan) -> Result[AppendOutcome, StoreError]:
        if self.closed:
            message = "write capability used after release"
            return Failure(StoreError("SESSION_STORE_INVARIANT_VIOLATION", message))
        if self.broken is not None:
            return Failure(self.broken)
        state = self.state
        manifest_before = len(state.manifest)
        admitted = admit(state.index, state.events, manifest_before, self.session_id, plan)
        if isinstance(admitted, str):
            return Failure(StoreError("SESSION_STORE_INVARIANT_VIOLATION", admitted))
        if isinstance(admitted, tuple):
            return Success(AppendOutcome(admitted, deduplicated=True))
        self.take_cache()
        try:
            state.add(plan.events, admitted.records)
        except ProjectionError as exc:
            self.broken = StoreError("SESSION_STORE_INVARIANT_VIOLATION", str(exc))
            return Failure(self.broken)
        self.broken = self._persist(plan.events, admitted, manifest_before)
        if self.broken is not None:
            return Failure(self.broken)
        return Success(AppendOutcome(plan.events, deduplicated=False))

    def _persist(
        self, events: Sequence[DomainEvent], admitted: Admitted, manifest_before: int
    ) -> StoreError | None:
        """Store one admitted append, already folded into `state` (the backend's own
        part); why it could not be (nothing of this write is kept then)."""
        raise NotImplementedError


def _corrupt(code: CorruptionCode, message: str) -> CorruptionError:
    return CorruptionError(Corruption(code, message, "tail"))


SegmentEvents = Callable[[int, SegmentClosed], Sequence[DomainEvent]]
"""The events of the `segment_closed` at a position of the records being folded, read and
checked against the record (raises `CorruptionError`)."""


def fold(
    state: LogState,
    records: Sequence[ManifestRecord],
    events_of: SegmentEvents,
    *,
    salvage: bool = False,
) -> Corruption | None:
    """Fold manifest records that follow `state.manifest`, with the events they attest,
    into `state`. Strict (the default): raises `CorruptionError`, leaving `state` partly
    extended for the caller to throw away. Salvage: stops at the first bad record, keeps
    the prefix, and returns why it stopped."""
    first_new_event = len(state.events)
    for position, record in enumerate(records):
        try:
            if isinstance(record, SegmentClosed):
                check_chain(state.last_segment, record)
                if state.last_segment is None and record.firstEventIndex != 0:
                    raise CorruptionError(
                        Corruption(
                            "non_contiguous_indices",
                            "The first segment must start at event 0",
                            "head",
                        )
                    )
                events = events_of(position, record)
                for event in events:
                    state.index.apply(event)
                state.events.extend(events)
                state.last_segment = record
            else:
                assert isinstance(record, SnapshotPinned)
                state.pins |= pins_of([record])
            state.manifest.append(record)
        except ProjectionError as exc:
            corruption = Corruption("non_contiguous_indices", str(exc), "tail")
            if salvage:
                return corruption
            raise CorruptionError(corruption) from exc
        except CorruptionError as exc:
            if salvage:
                return exc.corruption
            raise
    if not salvage:
        unpinned = missing_pins(state.events[first_new_event:], state.pins)
        if unpinned:
            raise missing_pin_error(unpinned[0])
    return None


def extend(
    state: LogState,
    manifest_rows: Sequence[bytes],
    event_rows: Mapping[int, bytes],
    *,
    salvage: bool = False,
) -> Corruption | None:
    """`fold` the manifest rows that follow `state.manifest`, each record's events rebuilt
    from the event rows (strict or salvage, as for `fold`)."""
    try:
        tail = parse_manifest_suffix(
            b"".join(row + b"\n" for row in manifest_rows), len(state.manifest)
        )
        if len(tail.records) != len(manifest_rows):
            raise _corrupt("non_contiguous_indices", "A manifest row holds more than one record")
    except CorruptionError as exc:
        if salvage:
            return exc.corruption
        raise
    return fold(
        state,
        tail.records,
        lambda _position, record: parse_segment(_segment(record, event_rows), record),
        salvage=salvage,
    )


def _segment(record: SegmentClosed, event_rows: Mapping[int, bytes]) -> bytes:
    """The segment a `segment_closed` attests, rebuilt from its event rows."""
    lines = []
    for event_index in range(record.firstEventIndex, record.lastEventIndex + 1):
        row = event_rows.get(event_index)
        if row is None:
            raise _corrupt(
                "missing_attested_segment",
                f"Missing attested event {event_index} of {record.segmentRelPath}",
            )
        lines.append(row + b"\n")
    return b"".join(lines)
