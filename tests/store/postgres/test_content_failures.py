"""A database that cannot answer a read of a pinned workflow or a snapshot (here: a table
locked by another session past `lock_timeout`) is a retryable STORE_UNAVAILABLE for the
agent, never "the workflow is missing, start again" nor an internal error; the same call
succeeds once the database answers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from tests.engine.conftest import engine_over
from tests.engine.helpers import err, ok
from tests.services.postgres import PostgresCluster
from workrail.engine import loaded
from workrail.store.postgres import open_postgres_backend


@contextmanager
def table_locked(url: str, table: str) -> Iterator[None]:
    """Hold an exclusive lock on `table` from another connection."""
    with psycopg.connect(url) as conn, conn.transaction():
        conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        yield


@pytest.mark.parametrize("table", ["workrail_pinned_workflows", "workrail_snapshots"])
def test_a_content_read_the_database_cannot_answer_is_retryable(
    postgres_cluster: PostgresCluster, monkeypatch: pytest.MonkeyPatch, table: str
) -> None:
    url = postgres_cluster.url(postgres_cluster.create_database("blip"))
    first = open_postgres_backend(url).unwrap()
    try:
        started = ok(engine_over(first).start_workflow("probe-flow"))
    finally:
        first.close()
    with psycopg.connect(url, autocommit=True) as conn:
        name = conn.execute("SELECT current_database()").fetchone()
        assert name is not None
        conn.execute(f"ALTER DATABASE \"{name[0]}\" SET lock_timeout = '200ms'")
    # A new process: no content in memory (its own backend and engine, no parsed snapshots).
    monkeypatch.setattr(loaded, "_parsed", loaded._ParsedSnapshots())
    backend = open_postgres_backend(url).unwrap()
    try:
        engine = engine_over(backend)
        with table_locked(url, table):
            failure = err(engine.rehydrate(started["stateToken"])).to_envelope()
        assert failure["code"] == "STORE_UNAVAILABLE", failure
        assert failure["retry"]["kind"] == "retryable_after_ms"
        assert "start_workflow" not in str(failure)  # the run is not lost: keep it
        again = ok(engine.rehydrate(started["stateToken"]))
        assert again["pending"]["stepId"] == "plan"
    finally:
        backend.close()
