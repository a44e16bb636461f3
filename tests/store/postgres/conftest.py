"""Fixtures for the PostgreSQL backend: one database for a module's tests (they keep apart
by random session ids), and backends opened on it and closed after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.services.postgres import PostgresCluster
from workrail.store.postgres import PostgresBackend, open_postgres_backend

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
