"""PostgreSQL backend, shared by every replica of a team set-up: one transaction per decision.

Each mutating action runs the same pure decision (`decide.py`) as SQLite and Redis inside
one transaction that first takes a transaction-scoped advisory lock on the workflow's
digest, so contenders through any number of replicas are serialised by the database and a
crash or a lost connection leaves the whole decision or none of it. Time is the database's:
the service built over this backend reads `clock_timestamp()` for every request, so the
TTLs of every replica are measured by one clock, never by a replica's own.

The tables are part of the store's numbered migrations (`workrail/store/postgres`), applied
on first use. Nothing is contacted until the first request, so a server starts while the
database is down and answers DEPENDENCY_UNAVAILABLE per call until it is back. Every
checkpoint action compares the caller's fence-key check digest with the one the first
replica recorded, so a replica with another `keys/fence.key` is refused on every action.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Final

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from workrail.fence.backend import BackendUnavailable, FenceKeyMismatch
from workrail.fence.sql_backend import FENCE_KEY_SETTING, FenceSql, SqlConnection, SqlFenceBackend
from workrail.store.postgres.connection import Connection, connect_kwargs, one_line
from workrail.store.postgres.migrations import SchemaTooNew, migrate

POOL_SIZE: Final = 4
POOL_WAIT_SECONDS: Final = 5.0
GATE_LOCK: Final = (0x57524B52, 2)
"""`pg_advisory_xact_lock(int, int)` key ('WRKR', 2) serialising budget checks; the
migrations use ('WRKR', 1)."""
_LOCK_NAMESPACE: Final = b"workrail.fence\x00"
_TABLES: Final = (
    "workrail_fence_checkpoints",
    "workrail_fence_budgets",
    "workrail_fence_replays",
    "workrail_fence_settings",
)
_SQL: Final = FenceSql(
    load="SELECT record FROM workrail_fence_checkpoints WHERE workflow_hash = %s",
    store="INSERT INTO workrail_fence_checkpoints (workflow_hash, record, expires_ms)"
    " VALUES (%s, %s, %s) ON CONFLICT (workflow_hash) DO UPDATE SET"
    " record = EXCLUDED.record, expires_ms = EXCLUDED.expires_ms",
    purge_checkpoints="DELETE FROM workrail_fence_checkpoints WHERE expires_ms <= %s",
    count="SELECT count FROM workrail_fence_budgets WHERE scope = %s AND window_index = %s",
    bump="INSERT INTO workrail_fence_budgets (scope, window_index, count)"
    " VALUES (%s, %s, 1) ON CONFLICT (scope, window_index)"
    " DO UPDATE SET count = workrail_fence_budgets.count + 1",
    purge_budgets="DELETE FROM workrail_fence_budgets WHERE window_index < %s",
    setting="SELECT value FROM workrail_fence_settings WHERE name = %s",
    set_paused="INSERT INTO workrail_fence_settings (name, value) VALUES ('paused', %s)"
    " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
    recall="SELECT reply FROM workrail_fence_replays WHERE key = %s AND expires_ms > %s",
    purge_replays="DELETE FROM workrail_fence_replays WHERE expires_ms <= %s",
    remember="INSERT INTO workrail_fence_replays (key, reply, expires_ms) VALUES (%s, %s, %s)"
    " ON CONFLICT (key) DO NOTHING",
)


def checkpoint_lock_key(workflow_hash: str) -> int:
    """The signed 64-bit advisory lock key of one workflow's checkpoint."""
    digest = hashlib.sha256(_LOCK_NAMESPACE + workflow_hash.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PostgresFenceBackend(SqlFenceBackend):
    """Selected by default when the session store is PostgreSQL (or by
    `WORKRAIL_FENCE_URL=postgresql://…`). `key_check` is the digest of the fence key the
    service digests identities with; actions with a different one are refused."""

    name = "postgresql"
    sql = _SQL

    def __init__(
        self, url: str, *, key_check: str | None = None, pool_size: int = POOL_SIZE
    ) -> None:
        self._url = url
        self._key_check = key_check
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={**connect_kwargs(url), "application_name": "workrail-fence"},
            open=False,
            timeout=POOL_WAIT_SECONDS,
            reconnect_timeout=0,
            name="workrail-fence",
        )
        self._ready = False
        self._opening = threading.Lock()

    # --- connections -----------------------------------------------------------------

    def _prepare(self) -> None:
        """Open the pool and bring the schema up to date, once (first use)."""
        with self._opening:
            if self._ready:
                return
            self._pool.open(wait=False)
            with self._pool.connection() as conn:
                migrated = migrate(conn)
                if isinstance(migrated, SchemaTooNew):
                    raise BackendUnavailable(migrated.message)
                self._agree_on_key(conn)
            self._ready = True

    def _agree_on_key(self, conn: Connection) -> None:
        if self._key_check is None:
            return
        with conn.transaction():
            conn.execute(
                "INSERT INTO workrail_fence_settings (name, value) VALUES (%s, %s)"
                " ON CONFLICT (name) DO NOTHING",
                (FENCE_KEY_SETTING, self._key_check),
            )
        self._check_key(conn)

    def _check_key(self, conn: SqlConnection) -> None:
        if self._key_check is None:
            return
        recorded = self._setting(conn, FENCE_KEY_SETTING)
        if recorded is not None and recorded != self._key_check:
            raise FenceKeyMismatch("the shared PostgreSQL fence records another fence key")

    @contextmanager
    def _db(self) -> Iterator[Connection]:
        """A pooled connection (the schema prepared on first use); every database failure
        is BackendUnavailable."""
        try:
            self._prepare()
            with self._pool.connection() as conn:
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise BackendUnavailable(
                f"PostgreSQL fence did not answer: {one_line(exc, self._url)}"
            ) from exc

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        with self._db() as conn, conn.transaction():
            yield conn

    # --- the port ----------------------------------------------------------------------

    def clock(self) -> datetime:
        """The database's clock: the one time source of every replica."""
        with self._db() as conn:
            row = conn.execute("SELECT clock_timestamp()").fetchone()
        if row is None:
            raise BackendUnavailable("PostgreSQL fence did not tell the time")
        moment: datetime = row[0]
        return moment.astimezone(UTC)

    def _lock_checkpoint(self, conn: SqlConnection, workflow_hash: str) -> None:
        """Serialise every replica's actions on one workflow, and refuse a foreign key."""
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (checkpoint_lock_key(workflow_hash),))
        self._check_key(conn)

    def _lock_budgets(self, conn: SqlConnection) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", GATE_LOCK)

    def stored_bytes(self) -> bytes:
        chunks: list[bytes] = []
        with self._db() as conn:
            for table in _TABLES:
                for row in conn.execute(f"SELECT t::text FROM {table} t ORDER BY 1").fetchall():
                    chunks.append(str(row[0]).encode())
        return b"\n".join(chunks)

    def close(self) -> None:
        self._pool.close()
