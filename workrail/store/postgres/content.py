"""Content-addressed tables: execution snapshots and pinned compiled workflows.

Each row holds the JCS bytes of one object under their own sha256, exactly the bytes of
the file backend's CAS file, and is verified against its key on every first read: a row
that is not what its key promises is an error, never a value. Writing is idempotent; a
row whose bytes were damaged is rewritten by the next `put` of the same object, as a
damaged CAS file is replaced on files.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.core.canonical import is_digest
from workrail.core.content import decode_content
from workrail.core.snapshot_state import STATE_KINDS, SnapshotState, snapshot_state
from workrail.store.content_cache import ContentCache, encode
from workrail.store.errors import StoreError, StoreErrorCode
from workrail.store.ports import LIST_PAGE_MAX, StoredRef
from workrail.store.postgres.connection import Connection, Database
from workrail.store.state_memo import StateMemo


class _ContentTable:
    _table = "workrail_snapshots"
    _key = "ref"
    _what = "snapshot ref"
    _error_code: StoreErrorCode = "SNAPSHOT_STORE_CORRUPTION"

    def __init__(self, db: Database) -> None:
        self._db = db
        self._cache = ContentCache()  # bounded by bytes, as on files

    def put(self, value: dict[str, Any]) -> Result[str, StoreError]:
        """Store `value` under sha256(JCS(value)) and return that ref."""
        encoded = encode(value, self._error_code)
        if isinstance(encoded, Failure):
            return Failure(encoded.failure())
        ref, data = encoded.unwrap()

        def insert(conn: Connection) -> None:
            with conn.pipeline(), conn.transaction():
                # No flush to wait for here: content is only ever named by an append, whose
                # synchronous COMMIT comes later on the same server and flushes the WAL up
                # to itself — this row included. A put whose append never commits may be
                # lost in a crash, which is harmless (the retry puts it again).
                conn.execute("SET LOCAL synchronous_commit TO off")
                store(conn)

        facts = self._facts(value)
        names = "".join(f", {column}" for column in facts)
        marks = ", %s" * len(facts)
        updates = "".join(f", {column} = EXCLUDED.{column}" for column in facts)
        refreshed = "".join(f", {column} = %s" for column in facts)

        def store(conn: Connection) -> None:
            # `stored_at` is refreshed for content already there: the collector spares what
            # was stored recently, so a ref about to be pinned is never swept from under it.
            if ref in self._cache:
                row = conn.execute(
                    f"UPDATE {self._table} SET stored_at = now(){refreshed} "
                    f"WHERE {self._key} = %s RETURNING 1",
                    (*facts.values(), ref),
                ).fetchone()
                if row is not None:
                    return
            conn.execute(
                f"INSERT INTO {self._table} ({self._key}, body{names}) VALUES (%s, %s{marks}) "
                f"ON CONFLICT ({self._key}) DO UPDATE SET body = EXCLUDED.body, "
                f"stored_at = now(){updates}",
                (ref, data, *facts.values()),
            )

        stored = self._db.run(insert)
        if isinstance(stored, Failure):
            return stored
        self._cache.put(ref, value, len(data))
        return Success(ref)

    def _facts(self, value: dict[str, Any]) -> dict[str, str | None]:
        """Columns recorded beside the body (derived from it), by name."""
        return {}

    def get(self, ref: str) -> Result[dict[str, Any] | None, StoreError]:
        """The stored object, None when absent, an error when its bytes are not what the
        ref promises."""
        cached = self._cache.get(ref)
        if cached is not None:
            return Success(cached)
        if not is_digest(ref):
            return Failure(StoreError("INVALID_REFERENCE", f"not a {self._what}: {ref[:80]!r}"))

        def select(conn: Connection) -> bytes | None:
            row = conn.execute(
                f"SELECT body FROM {self._table} WHERE {self._key} = %s", (ref,), binary=True
            ).fetchone()
            return None if row is None else bytes(row[0])

        loaded = self._db.run(select)
        if isinstance(loaded, Failure):
            return loaded
        data = loaded.unwrap()
        return Success(None) if data is None else self._decoded(ref, data)

    def _decoded(self, ref: str, data: bytes) -> Result[dict[str, Any] | None, StoreError]:
        """The row's object once its bytes are what `ref` promises (then kept decoded)."""
        return self._cache.verified(ref, data, self._error_code, ref)

    def list_refs(
        self, *, after: str | None = None, limit: int = LIST_PAGE_MAX
    ) -> Result[list[StoredRef], StoreError]:
        size = max(0, min(limit, LIST_PAGE_MAX))

        def page(conn: Connection) -> list[StoredRef]:
            rows = conn.execute(
                f"SELECT {self._key}, stored_at FROM {self._table} WHERE {self._key} > %s "
                f"ORDER BY {self._key} LIMIT %s",
                (after or "", size),
            ).fetchall()
            return [StoredRef(str(r[0]), r[1].astimezone(UTC)) for r in rows]

        return self._db.run(page)

    def delete(self, ref: str, *, stored_before: datetime) -> Result[bool, StoreError]:
        """One conditional DELETE: a concurrent `put` either refreshed `stored_at` first
        (the row no longer matches) or waits on the row and inserts it afresh."""
        if not is_digest(ref):
            return Failure(StoreError("INVALID_REFERENCE", f"not a {self._what}: {ref[:80]!r}"))
        self._cache.forget(ref)
        return self._db.run(
            lambda conn: (
                conn.execute(
                    f"DELETE FROM {self._table} WHERE {self._key} = %s AND stored_at < %s "
                    "RETURNING 1",
                    (ref, stored_before),
                ).fetchone()
                is not None
            )
        )

    def get_on(self, conn: Connection, ref: str) -> Result[dict[str, Any] | None, StoreError]:
        """`get` on a connection already in a transaction (an append's projector)."""
        cached = self._cache.get(ref)
        if cached is not None:
            return Success(cached)
        row = conn.execute(
            f"SELECT body FROM {self._table} WHERE {self._key} = %s", (ref,), binary=True
        ).fetchone()
        if row is None:
            return Success(None)
        return self._decoded(ref, bytes(row[0]))


class PostgresSnapshotStore(_ContentTable):
    """Each row also holds its snapshot's state (`state_kind`, `pending_step`, recorded
    when stored; NULL in rows stored before schema version 3), so a run's DAG is drawn
    with one query that reads no snapshot body."""

    _table = "workrail_snapshots"
    _key = "ref"
    _what = "snapshot ref"
    _error_code = "SNAPSHOT_STORE_CORRUPTION"

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._states = StateMemo()

    def _facts(self, value: dict[str, Any]) -> dict[str, str | None]:
        state = snapshot_state(value)
        return {"state_kind": state.kind, "pending_step": state.pending_step}

    def states(self, refs: Collection[str]) -> Result[dict[str, SnapshotState], StoreError]:
        """The recorded columns (one query, so what another replica deleted is never
        answered); for rows stored before they existed, from memory, else from the
        bodies, read in batches and never written back (reads never write)."""
        wanted = [ref for ref in dict.fromkeys(refs) if is_digest(ref)]
        if not wanted:
            return Success({})

        def select(conn: Connection) -> dict[str, SnapshotState]:
            rows = conn.execute(
                "SELECT ref, state_kind, pending_step FROM workrail_snapshots WHERE ref = ANY(%s)",
                (wanted,),
            ).fetchall()
            known: dict[str, SnapshotState] = {}
            unrecorded = []
            for ref, kind, step in rows:
                if kind in STATE_KINDS:
                    known[str(ref)] = SnapshotState(str(kind), None if step is None else str(step))
                else:
                    unrecorded.append(str(ref))
            remembered = self._states.known(unrecorded)
            known.update(remembered)
            unread = [ref for ref in unrecorded if ref not in remembered]
            read: dict[str, SnapshotState] = {}
            for start in range(0, len(unread), BODY_BATCH):
                for ref, body in conn.execute(
                    "SELECT ref, body FROM workrail_snapshots WHERE ref = ANY(%s)",
                    (unread[start : start + BODY_BATCH],),
                    binary=True,
                ).fetchall():
                    value = decode_content(str(ref), bytes(body))
                    if isinstance(value, Success):
                        read[str(ref)] = snapshot_state(value.unwrap())
            self._states.learn(read)
            known.update(read)
            return known

        return self._db.run(select)

    def delete(self, ref: str, *, stored_before: datetime) -> Result[bool, StoreError]:
        self._states.forget(ref)
        return super().delete(ref, stored_before=stored_before)


BODY_BATCH: Final = 256
"""Snapshot bodies fetched per query when their states were not recorded."""


class PostgresPinnedWorkflowStore(_ContentTable):
    _table = "workrail_pinned_workflows"
    _key = "workflow_hash"
    _what = "workflow hash"
    _error_code = "PINNED_WORKFLOW_IO_ERROR"
