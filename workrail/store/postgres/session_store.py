"""Sessions in PostgreSQL: strict loads through an in-process cache that is extended with
only the new rows, and one transaction per `write`.

A write is ONE transaction: take the session's transaction-scoped advisory lock (or fail
fast with the retryable SESSION_LOCKED the file store returns), load what other replicas
committed since the cached state, run the caller's function — each `append` is validated
by the core's append rules and inserts its events, manifest records and counters at once —
notify watchers, COMMIT. The commit is the acknowledgement; a transaction that fails or
whose function returns a failure rolls back whole, so several appends in one write (an
import) are all-or-nothing. Primary keys on (session, event index) and (session, manifest
index), a unique (session, dedupe key) and a compare-and-set on the session's counters are
the last line of defence: a second writer that slipped past the lock fails, it never forks.

The cached state of a session is extended in place by its own write — copying it would
make every append cost O(session) — so from its first append until COMMIT or ROLLBACK the
writing thread holds the session's cache lock: other threads of this process read the
session after the outcome is known, never an append that could still roll back (other
processes read the database, which shows them only what committed). A rolled-back write
drops the cached state; the next read rebuilds it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Final, Protocol, TypeVar

import orjson
import psycopg
from psycopg_pool import PoolTimeout
from returns.result import Failure, Result, Success

from workrail.core.append import Admitted
from workrail.core.canonical import canonical_bytes
from workrail.core.events import DomainEvent
from workrail.core.health import Corruption
from workrail.core.ids import is_session_id
from workrail.core.log_reader import CorruptionError
from workrail.core.manifest import ManifestRecord
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
from workrail.store.ports import (
    LIST_PAGE_MAX,
    AppendTime,
    IdleDelete,
    PrefixLoad,
    SessionLog,
)
from workrail.store.postgres.connection import (
    WRITE_BOUNDS,
    Connection,
    Database,
    is_connection_lost,
    store_error,
    unavailable,
)
from workrail.store.postgres.locks import WriterGuard, locked_elsewhere, session_lock_key

T = TypeVar("T")
E = TypeVar("E")

CACHED_SESSIONS: Final = 256
LARGE_LOAD_EVENTS: Final = 512
"""Events fetched at once from which a load pauses the garbage collector (gc_pause)."""
NOTIFY_CHANNEL: Final = "workrail_appends"
"""`pg_notify` channel; the payload is the session id. Delivered at COMMIT only."""


class AppendProjector(Protocol):
    """Runs inside an append's transaction, after its rows are inserted: a read model that
    must never disagree with the log updates its tables here, on the same connection, and
    commits or rolls back with the append. Raise a psycopg error to refuse the append.
    `log` is the session as it stands after this append (validated, read-your-writes)."""

    def __call__(
        self, conn: Connection, session_id: str, events: Sequence[DomainEvent], log: SessionLog
    ) -> None: ...


class _Rollback(Exception):
    """Leave the transaction block, rolling back, with this answer."""

    def __init__(self, result: Result[object, object]) -> None:
        super().__init__("rollback")
        self.result = result


class _CountersMoved(Exception):
    """The session's counters were not where this transaction loaded them."""


class _StaleConnection(Exception):
    """The pooled connection died before the transaction did anything."""


class PostgresSessionStore(RowLogStore):
    """See the module docstring."""

    def __init__(self, db: Database, projectors: Sequence[AppendProjector] = ()) -> None:
        self._db = db
        self._projectors: tuple[AppendProjector, ...] = tuple(projectors)
        self._slots: OrderedDict[str, CacheSlot] = OrderedDict()
        self._slots_mutex = threading.Lock()
        self._guard = WriterGuard()
        # Half the pool may write at once: each writer can then always get the second
        # connection it may need inside its transaction, so writers never starve each other.
        self._write_slots = threading.BoundedSemaphore(max(1, db.size // 2))

    # --- cache -----------------------------------------------------------------------

    def _slot(self, session_id: str) -> CacheSlot:
        with self._slots_mutex:
            slot = self._slots.get(session_id)
            if slot is None:
                slot = self._slots[session_id] = CacheSlot()
                while len(self._slots) > CACHED_SESSIONS:
                    self._slots.popitem(last=False)
            else:
                self._slots.move_to_end(session_id)
            return slot

    def _forget(self, session_id: str) -> None:
        with self._slots_mutex:
            self._slots.pop(session_id, None)

    def _refresh(self, conn: Connection, session_id: str, slot: CacheSlot) -> LogState | Corruption:
        """Bring the slot up to what the database holds, fetching only what is new: one
        small query when nothing changed (call with `slot.lock` held)."""
        state = slot.state if slot.state is not None else LogState()
        row = conn.execute(
            "SELECT event_count, manifest_count FROM workrail_sessions WHERE session_id = %s",
            (session_id,),
        ).fetchone()
        if row is None:
            slot.state = None
            return LogState()
        event_count, manifest_count = int(row[0]), int(row[1])
        if manifest_count == len(state.manifest):
            slot.state = state
            return state
        if manifest_count < len(state.manifest):  # the database went back in time: reload
            state = LogState()
        try:
            with collector_paused(event_count - len(state.events) >= LARGE_LOAD_EVENTS):
                manifest_rows, event_rows = _fetch_rows(
                    conn,
                    session_id,
                    len(state.manifest),
                    manifest_count,
                    len(state.events),
                    event_count,
                )
                if len(manifest_rows) != manifest_count - len(state.manifest):
                    raise CorruptionError(
                        Corruption("missing_attested_segment", "Manifest rows are missing", "tail")
                    )
                extend(state, manifest_rows, event_rows)
        except CorruptionError as exc:
            slot.state = None
            return exc.corruption
        slot.state = state
        return state

    # --- reads -----------------------------------------------------------------------

    def _fresh(self, session_id: str, slot: CacheSlot) -> Loaded:
        """One query when the cache is current."""
        loaded = self._db.run(lambda conn: self._refresh(conn, session_id, slot))
        return loaded.failure() if isinstance(loaded, Failure) else loaded.unwrap()

    def load_prefix(self, session_id: str) -> Result[PrefixLoad, StoreError]:
        """The longest valid prefix, loaded afresh (the cache holds only healthy logs)."""
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))

        def load(conn: Connection) -> PrefixLoad:
            manifest_rows, event_rows = _fetch_rows(conn, session_id, 0, None, 0, None)
            state = LogState()
            reason = extend(state, manifest_rows, event_rows, salvage=True)
            return PrefixLoad(tuple(state.events), tuple(state.manifest), reason is None, reason)

        return self._db.run(load)

    def exists(self, session_id: str) -> Result[bool, StoreError]:
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))
        return self._db.run(
            lambda conn: (
                conn.execute(
                    "SELECT 1 FROM workrail_sessions WHERE session_id = %s", (session_id,)
                ).fetchone()
                is not None
            )
        )

    def list_ids(
        self, *, after: str | None = None, limit: int = LIST_PAGE_MAX
    ) -> Result[list[str], StoreError]:
        """One page, by the primary key's index: never a scan of every session."""
        size = max(0, min(limit, LIST_PAGE_MAX))

        def page(conn: Connection) -> list[str]:
            rows = conn.execute(
                "SELECT session_id FROM workrail_sessions WHERE session_id > %s "
                "ORDER BY session_id LIMIT %s",
                (after or "", size),
            ).fetchall()
            return [str(r[0]) for r in rows]

        return self._db.run(page)

    def last_activity(self, session_id: str) -> Result[datetime | None, StoreError]:
        """When the latest append was written (the database's clock, in its transaction)."""
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))

        def stamp(conn: Connection) -> datetime | None:
            row = conn.execute(
                "SELECT last_activity FROM workrail_sessions WHERE session_id = %s", (session_id,)
            ).fetchone()
            return None if row is None else row[0].astimezone(UTC)

        return self._db.run(stamp)

    def append_times(self, session_id: str) -> Result[tuple[AppendTime, ...], StoreError]:
        """The commit time of each segment_closed record (one per append); records written
        before migration 5, or copied in one transaction by an import or a migration (all
        at the same instant), keep what the database knows."""
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))

        def times(conn: Connection) -> tuple[AppendTime, ...]:
            rows = conn.execute(
                "SELECT body, recorded_at FROM workrail_manifest WHERE session_id = %s "
                "AND kind = 'segment_closed' AND recorded_at IS NOT NULL ORDER BY manifest_index",
                (session_id,),
            ).fetchall()
            found: list[AppendTime] = []
            for body, at in rows:
                last = orjson.loads(bytes(body)).get("lastEventIndex")
                if isinstance(last, int):
                    found.append(AppendTime(last, at.astimezone(UTC)))
            return tuple(found)

        return self._db.run(times)

    # --- writes ----------------------------------------------------------------------

    def write(
        self, session_id: str, fn: Callable[[_Txn], Result[T, E]]
    ) -> Result[T, E | StoreError]:
        """Run `fn` as the session's only writer, in one transaction (module docstring)."""
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))
        with self._guard.hold(session_id) as refused:
            if refused is not None:
                return Failure(refused)
            if not self._write_slots.acquire(timeout=self._db.wait):
                return Failure(
                    StoreError(
                        "STORE_UNAVAILABLE",
                        "This server is busy writing other sessions (every write slot is "
                        "taken); retry shortly.",
                    )
                )
            try:
                return self._write_with_a_slot(session_id, fn)
            finally:
                self._write_slots.release()

    def _write_with_a_slot(
        self, session_id: str, fn: Callable[[_Txn], Result[T, E]]
    ) -> Result[T, E | StoreError]:
        """The transaction, on a connection that is replaced once when found dead."""
        for attempt in (1, 2):
            try:
                with self._db.connection() as conn:
                    return self._transaction(conn, session_id, fn)
            except _StaleConnection as exc:
                if attempt == 2:
                    return Failure(unavailable(exc.__cause__ or exc, self._db.url))
                self._db.discard_broken()
            except PoolTimeout as exc:
                return Failure(unavailable(exc, self._db.url))
            except psycopg.Error as exc:
                # COMMIT (or ROLLBACK) failed: whether it landed is unknown, so forget
                # the cache and let the caller retry (appends are idempotent by key).
                self._forget(session_id)
                return Failure(store_error(exc, self._db.url))
        raise AssertionError("unreachable")

    def add_projector(self, projector: AppendProjector) -> None:
        """A read model that is built after the store (it reads the store itself)."""
        self._projectors = (*self._projectors, projector)

    def exclusive(
        self, session_id: str, fn: Callable[[Connection], Result[T, StoreError]]
    ) -> Result[T | None, StoreError]:
        """Run `fn` in one transaction holding the session's writer lock, for changes
        beside the log (lifecycle record, deletion); None, without calling `fn`, when the
        session does not exist. A busy session is the retryable SESSION_LOCKED."""
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))
        with self._guard.hold(session_id) as refused:
            if refused is not None:
                return Failure(refused)
            try:
                with self._db.connection() as conn:
                    try:
                        with conn.transaction():
                            row = conn.execute(
                                "SELECT pg_try_advisory_xact_lock(%s), " + WRITE_BOUNDS,
                                (session_lock_key(session_id), *self._db.write_bounds),
                            ).fetchone()
                            if row is None or not row[0]:
                                raise _Rollback(Failure(locked_elsewhere()))
                            found = conn.execute(
                                "SELECT 1 FROM workrail_sessions WHERE session_id = %s",
                                (session_id,),
                            ).fetchone()
                            if found is None:
                                return Success(None)
                            result = fn(conn)
                            if isinstance(result, Failure):
                                raise _Rollback(result)
                            return Success(result.unwrap())
                    except _Rollback as stop:
                        return stop.result  # type: ignore[return-value]
            except PoolTimeout as exc:
                return Failure(unavailable(exc, self._db.url))
            except psycopg.Error as exc:
                return Failure(store_error(exc, self._db.url))

    def _delete(
        self, session_id: str, idle_before: datetime | None
    ) -> Result[IdleDelete, StoreError]:
        """Every row of the session, in one transaction holding its writer lock; the last
        activity is read again in it, after the lock is taken (so every append that
        committed before is seen)."""

        def remove(conn: Connection) -> Result[IdleDelete, StoreError]:
            if idle_before is not None:
                row = conn.execute(
                    "SELECT last_activity < %s FROM workrail_sessions WHERE session_id = %s",
                    (idle_before, session_id),
                ).fetchone()
                if row is None or not row[0]:
                    return Success("active")
            for table in ("workrail_events", "workrail_manifest"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = %s", (session_id,))
            conn.execute("DELETE FROM workrail_sessions WHERE session_id = %s", (session_id,))
            conn.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, session_id))
            return Success("deleted")

        removed = self.exclusive(session_id, remove)
        self._forget(session_id)
        if isinstance(removed, Failure):
            return Failure(removed.failure())
        return Success(removed.unwrap() or "absent")

    def _transaction(
        self, conn: Connection, session_id: str, fn: Callable[[_Txn], Result[T, E]]
    ) -> Result[T, E | StoreError]:
        """BEGIN, the lock and the freshness check go out in one round trip (pipeline
        mode); so do each append's inserts; COMMIT is the last."""
        txn: _Txn | None = None
        called = committed = False
        try:
            with conn.pipeline() as pipeline, conn.transaction():
                lock = conn.execute(
                    "SELECT pg_try_advisory_xact_lock(%s), " + WRITE_BOUNDS,
                    (session_lock_key(session_id), *self._db.write_bounds),
                )
                slot = self._slot(session_id)
                with slot.lock:  # runs after the lock statement: sees what committed before it
                    base = self._refresh(conn, session_id, slot)
                row = lock.fetchone()
                if row is None or not row[0]:
                    raise _Rollback(Failure(locked_elsewhere()))
                if isinstance(base, Corruption):
                    raise _Rollback(Failure(not_healthy(base)))
                # End the protocol unit: only a server waiting for its next command counts
                # as idle in the transaction, so only now does WRITE_BOUNDS' timeout free
                # the session from a client that stops answering while `fn` runs.
                pipeline.sync()
                txn = _Txn(self, conn, session_id, slot, base)
                called = True
                try:
                    result = fn(txn)
                finally:
                    txn.closed = True
                if txn.broken is not None:
                    raise _Rollback(Failure(txn.broken))
                if isinstance(result, Failure):
                    raise _Rollback(result)
            committed = True
        except _Rollback as stop:
            return stop.result  # type: ignore[return-value]
        except psycopg.Error as exc:
            if not called and is_connection_lost(exc):
                raise _StaleConnection(str(exc)) from exc
            raise
        finally:
            if txn is not None:
                txn.release(kept=committed)
        return result

    def _append(
        self, txn: _Txn, events: Sequence[DomainEvent], admitted: Admitted, manifest_before: int
    ) -> StoreError | None:
        """Insert an admitted append's rows in the write's transaction."""
        try:
            self._insert(txn, events, admitted.lines, admitted.records, manifest_before, txn.state)
        except (psycopg.IntegrityError, _CountersMoved) as exc:
            self._forget(txn.session_id)
            what = exc.diag.constraint_name if isinstance(exc, psycopg.Error) else None
            return StoreError(
                "SESSION_LOCKED",
                "another writer appended to this session at the same time "
                f"({what or 'session counters'}); retry to see its result",
            )
        except psycopg.Error as exc:
            return store_error(exc, self._db.url)
        return None

    def _insert(
        self,
        txn: _Txn,
        events: Sequence[DomainEvent],
        bodies: Sequence[bytes],
        records: Sequence[ManifestRecord],
        manifest_before: int,
        after: LogState,
    ) -> None:
        """Every row of one append, in one pipelined round trip."""
        conn, session_id = txn.conn, txn.session_id
        with conn.pipeline():
            counters = conn.cursor()
            counters.execute(
                "INSERT INTO workrail_sessions AS s "
                "(session_id, event_count, manifest_count, created_at, last_activity) "
                "VALUES (%s, %s, %s, clock_timestamp(), clock_timestamp()) "
                "ON CONFLICT (session_id) DO UPDATE SET event_count = EXCLUDED.event_count, "
                "manifest_count = EXCLUDED.manifest_count, last_activity = EXCLUDED.last_activity "
                "WHERE s.manifest_count = %s RETURNING 1",
                (session_id, len(after.events), len(after.manifest), manifest_before),
            )
            rows = conn.cursor()
            rows.executemany(
                "INSERT INTO workrail_events (session_id, event_index, dedupe_key, body) "
                "VALUES (%s, %s, %s, %s)",
                [
                    (session_id, e.eventIndex, e.dedupeKey, body)
                    for e, body in zip(events, bodies, strict=True)
                ],
            )
            rows.executemany(
                "INSERT INTO workrail_manifest (session_id, manifest_index, kind, body) "
                "VALUES (%s, %s, %s, %s)",
                [
                    (session_id, r.manifestIndex, r.kind, canonical_bytes(r.to_json()))
                    for r in records
                ],
            )
            rows.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, session_id))
        if counters.fetchone() is None:
            raise _CountersMoved(f"{session_id} changed after it was loaded under the lock")
        for projector in self._projectors:
            projector(conn, session_id, events, after.view(session_id))


class _Txn(CachedWrite):
    """The write capability handed to a `write` callback, on the transaction's
    connection; dead once the callback returns."""

    def __init__(
        self,
        store: PostgresSessionStore,
        conn: Connection,
        session_id: str,
        slot: CacheSlot,
        state: LogState,
    ) -> None:
        super().__init__(session_id, slot, state)
        self._store = store
        self.conn = conn

    def _persist(
        self, events: Sequence[DomainEvent], admitted: Admitted, manifest_before: int
    ) -> StoreError | None:
        return self._store._append(self, events, admitted, manifest_before)


def _fetch_rows(
    conn: Connection,
    session_id: str,
    manifest_from: int,
    manifest_to: int | None,
    events_from: int,
    events_to: int | None,
) -> tuple[list[bytes], dict[int, bytes]]:
    """Manifest bodies in order, and event bodies by index, for the given ranges (None:
    to the end), fetched in one pipelined round trip."""
    high = 2**31 - 1
    with conn.pipeline():
        manifest = conn.cursor(binary=True)
        manifest.execute(
            "SELECT body FROM workrail_manifest WHERE session_id = %s "
            "AND manifest_index >= %s AND manifest_index < %s ORDER BY manifest_index",
            (session_id, manifest_from, high if manifest_to is None else manifest_to),
        )
        events = conn.cursor(binary=True)
        events.execute(
            "SELECT event_index, body FROM workrail_events WHERE session_id = %s "
            "AND event_index >= %s AND event_index < %s ORDER BY event_index",
            (session_id, events_from, high if events_to is None else events_to),
        )
    manifest_rows = [bytes(r[0]) for r in manifest.fetchall()]
    event_rows = {int(r[0]): bytes(r[1]) for r in events.fetchall()}
    return manifest_rows, event_rows
