"""The PostgreSQL backend: every store over one connection pool, opened and migrated once.

Opening connects once directly, so an unreachable server, wrong credentials or a missing
database are one clear line at start rather than a pool retrying in the background, then
applies the migrations and checks the durability setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from returns.result import Failure, Result, Success

from workrail.core.urls import redact_url
from workrail.store.errors import StoreError
from workrail.store.postgres.connection import (
    DEFAULT_POOL_SIZE,
    POOL_WAIT_SECONDS,
    WRITE_IDLE_SECONDS,
    Database,
    connect_failure,
    connect_kwargs,
    one_line,
)
from workrail.store.postgres.content import PostgresPinnedWorkflowStore, PostgresSnapshotStore
from workrail.store.postgres.keyring import PostgresKeyringStore
from workrail.store.postgres.migrations import SchemaTooNew, migrate
from workrail.store.postgres.session_store import AppendProjector, PostgresSessionStore
from workrail.store.postgres.summaries import PostgresLifecycleStore, PostgresSessionQuery
from workrail.store.postgres.watch import PostgresWatch


@dataclass(frozen=True)
class PostgresBackend:
    database: Database
    sessions: PostgresSessionStore
    snapshots: PostgresSnapshotStore
    pinned: PostgresPinnedWorkflowStore
    keyring: PostgresKeyringStore
    watch: PostgresWatch
    lifecycle: PostgresLifecycleStore
    query: PostgresSessionQuery

    @property
    def location(self) -> str:
        return redact_url(self.database.url)

    def close(self) -> None:
        self.watch.close()
        self.database.close()


def open_postgres_backend(
    url: str,
    *,
    pool_size: int = DEFAULT_POOL_SIZE,
    pool_wait: float = POOL_WAIT_SECONDS,
    write_idle: float = WRITE_IDLE_SECONDS,
    projectors: Sequence[AppendProjector] = (),
) -> Result[PostgresBackend, StoreError]:
    """Connect, migrate and return the backend; every failure is one line naming the
    URL without its password. `pool_wait`: how long a call waits for a connection before
    it answers STORE_UNAVAILABLE; `write_idle`: how long a write's transaction may wait on
    its client before the server ends it and frees the session. `projectors` run inside every append's transaction."""
    try:
        with psycopg.connect(url, **connect_kwargs(url)) as conn:
            migrated = migrate(conn)
            row = conn.execute("SELECT current_setting('synchronous_commit')").fetchone()
    except psycopg.OperationalError as exc:
        return Failure(connect_failure(exc, url))
    except psycopg.Error as exc:
        return Failure(
            StoreError(
                "STORE_UNAVAILABLE",
                f"Cannot prepare the WorkRail tables in {redact_url(url)} ({one_line(exc, url)}); "
                "the user needs the right to create tables in its schema.",
            )
        )
    if isinstance(migrated, SchemaTooNew):
        return Failure(StoreError("STORE_UNAVAILABLE", migrated.message))
    if row is not None and row[0] == "off":
        return Failure(
            StoreError(
                "STORE_UNAVAILABLE",
                f"{redact_url(url)} has synchronous_commit = off, so a committed append could "
                "be lost in a crash; set it to on for this database or user "
                "(ALTER ROLE … SET synchronous_commit = on).",
            )
        )
    database = Database(url, pool_size=pool_size, wait=pool_wait, write_idle=write_idle)
    database.open()
    sessions = PostgresSessionStore(database, projectors)
    snapshots = PostgresSnapshotStore(database)
    pinned = PostgresPinnedWorkflowStore(database)
    lifecycle = PostgresLifecycleStore(database, sessions)
    query = PostgresSessionQuery(database, sessions, lifecycle, snapshots, pinned)
    sessions.add_projector(query)  # summaries commit with the append that changes them
    keyring, watch = PostgresKeyringStore(database), PostgresWatch(url)
    backend = PostgresBackend(
        database, sessions, snapshots, pinned, keyring, watch, lifecycle, query
    )
    refreshed = query.refresh_outdated()
    if isinstance(refreshed, Failure):
        backend.close()
        return Failure(refreshed.failure())
    return Success(backend)
