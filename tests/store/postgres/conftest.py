"""Fixtures for the PostgreSQL backend: one database for a module's tests (they keep apart
by random session ids), and backends opened on it and closed after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import psycopg
import pytest

from tests.services.postgres import PostgresCluster
from workrail.store.postgres import PostgresBackend, open_postgres_backend
from workrail.store.postgres.locks import session_lock_key

OpenBackend = Callable[[], PostgresBackend]


@pytest.fixture(scope="module")
def module_db_url(postgres_cluster: PostgresCluster) -> str:
    return postgres_cluster.url(postgres_cluster.create_database("contract"))


@pytest.fixture
def open_backend(module_db_url: str) -> Iterator[OpenBackend]:
    """Opens a new backend (own pool, no cache) on the module's database each call."""
    opened: list[PostgresBackend] = []

    def open_one() -> PostgresBackend:
        backend = open_postgres_backend(module_db_url).unwrap()
        opened.append(backend)
        return backend

    yield open_one
    for backend in opened:
        backend.close()


@pytest.fixture
def pg_backend(open_backend: OpenBackend) -> PostgresBackend:
    return open_backend()


def flip_a_byte_of_the_latest_event(url: str, session_id: str) -> None:
    """Corrupt the bytes of the session's latest event row, as a bad disk would."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE workrail_events SET body = set_byte(body, length(body) / 2, "
            "get_byte(body, length(body) / 2) # 1) WHERE session_id = %s AND "
            "event_index = (SELECT max(event_index) FROM workrail_events "
            "WHERE session_id = %s)",
            (session_id, session_id),
        )


@pytest.fixture
def hold_writer(module_db_url: str) -> Callable[[str], AbstractContextManager[None]]:
    """Holds a session's write lock from another connection while the block runs, as a
    writer of another replica would."""

    @contextmanager
    def on_another_connection(session_id: str) -> Iterator[None]:
        with psycopg.connect(module_db_url) as other:
            other.execute("SELECT pg_advisory_xact_lock(%s)", (session_lock_key(session_id),))
            yield
            other.rollback()

    return on_another_connection
