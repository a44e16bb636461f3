"""The keyring row: one key for every replica, first writer wins, rotation in one
transaction, and a damaged row reported, never replaced."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from returns.result import Failure

from tests.store.keyring_contract import KeyringContract, OpenKeyring
from workrail.store.ports import KeyringStore
from workrail.store.postgres import PostgresBackend, open_postgres_backend


class TestPostgresKeyring(KeyringContract):
    @pytest.fixture
    def open_keyring(self, postgres_url: str) -> Iterator[OpenKeyring]:
        """Replicas on a database of the test's own, so the first load creates the row."""
        opened: list[PostgresBackend] = []

        def one() -> KeyringStore:
            backend = open_postgres_backend(postgres_url).unwrap()
            opened.append(backend)
            return backend.keyring

        yield one
        for backend in opened:
            backend.close()


def test_a_damaged_keyring_row_is_reported(postgres_url: str) -> None:
    backend = open_postgres_backend(postgres_url).unwrap()
    try:
        backend.keyring.load().unwrap()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("UPDATE workrail_keyring SET document = %s", (b'{"v":2}',))
        for result in (backend.keyring.load(), backend.keyring.rotate()):
            assert isinstance(result, Failure)
            assert result.failure().code == "KEYRING_CORRUPT"
        with psycopg.connect(postgres_url) as conn:
            row = conn.execute("SELECT document FROM workrail_keyring").fetchone()
        assert row is not None
        assert bytes(row[0]) == b'{"v":2}'
    finally:
        backend.close()
