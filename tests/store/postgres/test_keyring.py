"""The keyring row: one key for every replica, first writer wins, rotation in one
transaction, and a damaged row reported, never replaced."""

from __future__ import annotations

import psycopg
import pytest
from returns.result import Failure

from tests.store.keyring_contract import KeyringContract, OpenKeyring
from tests.store.postgres.conftest import OpenBackend


class TestPostgresKeyring(KeyringContract):
    @pytest.fixture
    def open_keyring(self, open_backend: OpenBackend) -> OpenKeyring:
        return lambda: open_backend().keyring


def test_a_damaged_keyring_row_is_reported(postgres_url: str) -> None:
    from workrail.store.postgres import open_postgres_backend

    backend = open_postgres_backend(postgres_url).unwrap()
    try:
        backend.keyring.load().unwrap()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("UPDATE workrail_keyring SET document = %s", (b'{"v":2}',))
        for result in (backend.keyring.load(), backend.keyring.rotate()):
            assert isinstance(result, Failure) and result.failure().code == "KEYRING_CORRUPT"
        with psycopg.connect(postgres_url) as conn:
            row = conn.execute("SELECT document FROM workrail_keyring").fetchone()
        assert row is not None and bytes(row[0]) == b'{"v":2}'
    finally:
        backend.close()
