"""Sessions in memory: the rows of `MemoryStorage`, read through a validated cache that is
extended with only the new rows, and one all-or-nothing transaction per `write`.

A write holds the session's writer in the storage (another caller, on any backend over
the same storage, gets the retryable SESSION_LOCKED at once), validates each append with
the core's append rules against the cached state, and publishes every row it made when
its function succeeds; a write whose function fails publishes nothing, so an import is
never visible half done. From its first append until then, the writing thread holds the
session's cache lock: other threads of this backend read the session once the outcome is
known.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol, TypeVar

from returns.result import Failure, Result, Success

from workrail.core.append import Admitted
from workrail.core.canonical import canonical_bytes
from workrail.core.events import DomainEvent
from workrail.core.health import Corruption
from workrail.core.ids import is_session_id
from workrail.core.log_reader import CorruptionError
from workrail.store.errors import StoreError
from workrail.store.gc_pause import collector_paused
from workrail.store.log_state import (
    CachedWrite,
    CacheSlot,
    Loaded,
    LogState,
    RowLogStore,
    extend,
    invalid_reference,
    not_healthy,
)
from workrail.store.memory.storage import Clock, MemoryStorage, SessionRows
from workrail.store.ports import (
    LIST_PAGE_MAX,
    AppendTime,
    IdleDelete,
    PrefixLoad,
    SessionLog,
)

T = TypeVar("T")
E = TypeVar("E")

LARGE_LOAD_EVENTS: Final = 512
"""New events validated at once from which a load pauses the garbage collector."""


class Projector(Protocol):
    """Told of each committed write while its writer is still held (the summaries keep
    themselves current this way), and of each deletion. Must not raise."""

    def committed(self, log: SessionLog) -> None: ...

    def deleted(self, session_id: str) -> None: ...


@dataclass
class _Slot(CacheSlot):
    origin: SessionRows | None = None
    """The rows `state` was read from: other rows under the same id (a session deleted
    and written again) start a fresh state."""


@dataclass
class _Pending:
    """One validated append, not yet published."""

    events: Sequence[DomainEvent]
    admitted: Admitted
    at: datetime


class MemorySessionStore(RowLogStore):
    """See the module docstring."""

    def __init__(self, storage: MemoryStorage, clock: Clock) -> None:
        self._storage = storage
        self._clock = clock
        self._slots: dict[str, _Slot] = {}
        self._slots_mutex = threading.Lock()
        self._projector: Projector | None = None

    def observe(self, projector: Projector) -> None:
        self._projector = projector

    def _slot(self, session_id: str) -> _Slot:
        with self._slots_mutex:
            return self._slots.setdefault(session_id, _Slot())

    def _rows(self, session_id: str) -> SessionRows | None:
        with self._storage.mutex:
            return self._storage.sessions.get(session_id)

    def _refresh(self, session_id: str, slot: _Slot) -> LogState | Corruption:
        """Bring the slot up to the committed rows, validating only the new ones (call
        with `slot.lock` held)."""
        state = slot.state if slot.state is not None else LogState()
        with self._storage.mutex:
            rows = self._storage.sessions.get(session_id)
            if rows is None:
                slot.state = None
                return LogState()
            if rows is not slot.origin or len(rows.manifest) < len(state.manifest):
                state = LogState()
            slot.origin = rows
            manifest = rows.manifest[len(state.manifest) :]
            events = {i: rows.events[i] for i in range(len(state.events), rows.event_count)}
        try:
            with collector_paused(len(events) >= LARGE_LOAD_EVENTS):
                extend(state, manifest, events)
        except CorruptionError as exc:
            slot.state = None  # rebuilt (and found damaged again) by the next read
            return exc.corruption
        slot.state = state
        return state

    # --- reads -----------------------------------------------------------------------

    def _fresh(self, session_id: str, slot: CacheSlot) -> Loaded:
        assert isinstance(slot, _Slot)
        return self._refresh(session_id, slot)

    def load_prefix(self, session_id: str) -> Result[PrefixLoad, StoreError]:
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))
        with self._storage.mutex:
            rows = self._storage.sessions.get(session_id)
            manifest = [] if rows is None else list(rows.manifest)
            events = {} if rows is None else dict(rows.events)
        state = LogState()
        reason = extend(state, manifest, events, salvage=True)
        return Success(
            PrefixLoad(tuple(state.events), tuple(state.manifest), reason is None, reason)
        )

    def exists(self, session_id: str) -> Result[bool, StoreError]:
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))
        return Success(self._rows(session_id) is not None)

    def list_ids(
        self, *, after: str | None = None, limit: int = LIST_PAGE_MAX
    ) -> Result[list[str], StoreError]:
        with self._storage.mutex:
            ids = [s for s in self._storage.sessions if after is None or s > after]
        return Success(sorted(ids)[: max(0, min(limit, LIST_PAGE_MAX))])

    def last_activity(self, session_id: str) -> Result[datetime | None, StoreError]:
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))
        rows = self._rows(session_id)
        return Success(None if rows is None else rows.last_activity)

    def append_times(self, session_id: str) -> Result[tuple[AppendTime, ...], StoreError]:
        """When each committed append was written: the clock read as it was made."""
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))
        with self._storage.mutex:
            rows = self._storage.sessions.get(session_id)
            return Success(() if rows is None else tuple(rows.append_times))

    # --- writes ----------------------------------------------------------------------

    def write(
        self, session_id: str, fn: Callable[[_Txn], Result[T, E]]
    ) -> Result[T, E | StoreError]:
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))
        refused = self._storage.take_writer(session_id)
        if refused is not None:
            return Failure(refused)
        try:
            slot = self._slot(session_id)
            with slot.lock:
                base = self._refresh(session_id, slot)
            if isinstance(base, Corruption):
                return Failure(not_healthy(base))
            txn = _Txn(self, session_id, slot, base)
            try:
                result = fn(txn)
                txn.closed = True
                if isinstance(result, Success) and txn.broken is None and txn.pending:
                    self._publish(txn)
                elif txn.broken is not None and isinstance(result, Success):
                    return Failure(txn.broken)
            finally:
                txn.closed = True
                txn.release(kept=txn.published)
            return result
        finally:
            self._storage.release_writer(session_id)

    def _publish(self, txn: _Txn) -> None:
        """Make the write's rows the committed ones, then project and announce them (the
        writer is still held, so no other write of the session comes in between)."""
        with self._storage.mutex:
            rows = self._storage.sessions.setdefault(txn.session_id, SessionRows())
            for pending in txn.pending:
                for event, line in zip(pending.events, pending.admitted.lines, strict=True):
                    rows.events[event.eventIndex] = line
                rows.manifest.extend(canonical_bytes(r.to_json()) for r in pending.admitted.records)
                last = pending.events[-1].eventIndex
                at = max(pending.at, rows.last_activity or pending.at)  # never backwards
                rows.append_times.append(AppendTime(last, at))
                rows.last_activity = at
            rows.event_count = len(txn.state.events)
            rows.version += 1
            txn.rows_slot.origin = rows  # the cache holds exactly these rows now
        txn.published = True
        if self._projector is not None:
            self._projector.committed(txn.state.view(txn.session_id))
        self._storage.announce(txn.session_id)

    def exclusive(
        self, session_id: str, fn: Callable[[SessionRows], Result[T, StoreError]]
    ) -> Result[T | None, StoreError]:
        """Run `fn` on the session's rows holding its writer, for changes beside the log
        (lifecycle record, deletion); None, without calling `fn`, when it does not exist."""
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))
        if self._rows(session_id) is None:
            return Success(None)
        refused = self._storage.take_writer(session_id)
        if refused is not None:
            return Failure(refused)
        try:
            rows = self._rows(session_id)
            return Success(None) if rows is None else fn(rows)
        finally:
            self._storage.release_writer(session_id)

    def _delete(
        self, session_id: str, idle_before: datetime | None
    ) -> Result[IdleDelete, StoreError]:
        def remove(rows: SessionRows) -> Result[IdleDelete, StoreError]:
            last = rows.last_activity
            if idle_before is not None and (last is None or last >= idle_before):
                return Success("active")
            with self._storage.mutex:
                del self._storage.sessions[session_id]
            with self._slots_mutex:
                self._slots.pop(session_id, None)
            if self._projector is not None:
                self._projector.deleted(session_id)
            self._storage.announce(session_id)
            return Success("deleted")

        removed = self.exclusive(session_id, remove)
        if isinstance(removed, Failure):
            return Failure(removed.failure())
        return Success(removed.unwrap() or "absent")


class _Txn(CachedWrite):
    """The write capability handed to a `write` callback; dead once the callback returns.
    What it appends is published only when the callback succeeds."""

    def __init__(self, store: MemorySessionStore, session_id: str, slot: _Slot, state: LogState):
        super().__init__(session_id, slot, state)
        self._store = store
        self.rows_slot = slot  # the slot, with where its state was read from
        self.pending: list[_Pending] = []
        self.published = False

    def _persist(
        self, events: Sequence[DomainEvent], admitted: Admitted, manifest_before: int
    ) -> StoreError | None:
        """Kept aside with the clock's reading, published when the write succeeds."""
        self.pending.append(_Pending(events, admitted, self._store._clock()))
        return None
