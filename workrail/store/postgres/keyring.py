"""The token keyring in the database, so every replica signs and verifies with the same
keys. The row holds the keyring document of `workrail.core.keyring` (the bytes of the file
backend's keys/keyring.json), so a keyring moves between backends unchanged."""

from __future__ import annotations

import os
from typing import Final

from returns.result import Failure, Result, Success

from workrail.core.keyring import KEY_BYTES, Keyring, KeyringCorrupt, decode_keyring, encode_keyring
from workrail.store.errors import StoreError
from workrail.store.postgres.connection import Connection, Database

TOKENS: Final = "tokens"
"""The keyring row's name (room for other keyrings later)."""


class PostgresKeyringStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def load(self) -> Result[Keyring, StoreError]:
        """The keyring; on first use a fresh one, first writer wins (`ON CONFLICT DO
        NOTHING`, then read what won), so replicas starting at once share one key."""
        return self._first_wins(Keyring(current=os.urandom(KEY_BYTES), previous=None))

    def adopt(self, keyring: Keyring) -> Result[Keyring, StoreError]:
        return self._first_wins(keyring)

    def _first_wins(self, candidate: Keyring) -> Result[Keyring, StoreError]:
        def load_or_create(conn: Connection) -> bytes:
            fresh = encode_keyring(candidate)
            row = conn.execute(
                "SELECT document FROM workrail_keyring WHERE name = %s", (TOKENS,), binary=True
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO workrail_keyring (name, document, updated_at) "
                    "VALUES (%s, %s, clock_timestamp()) ON CONFLICT (name) DO NOTHING",
                    (TOKENS, fresh),
                )
                row = conn.execute(
                    "SELECT document FROM workrail_keyring WHERE name = %s", (TOKENS,), binary=True
                ).fetchone()
            assert row is not None
            return bytes(row[0])

        return self._decoded(self._db.run(load_or_create))

    def rotate(self) -> Result[Keyring, StoreError]:
        """previous := current, current := a fresh key, in one transaction that locks the
        row, so two rotations at once happen one after the other."""

        def rotate(conn: Connection) -> bytes:
            with conn.transaction():
                conn.execute(
                    "INSERT INTO workrail_keyring (name, document, updated_at) "
                    "VALUES (%s, %s, clock_timestamp()) ON CONFLICT (name) DO NOTHING",
                    (TOKENS, encode_keyring(Keyring(os.urandom(KEY_BYTES), None))),
                )
                row = conn.execute(
                    "SELECT document FROM workrail_keyring WHERE name = %s FOR UPDATE",
                    (TOKENS,),
                    binary=True,
                ).fetchone()
                assert row is not None
                new = encode_keyring(decode_keyring(bytes(row[0])).rotated(os.urandom(KEY_BYTES)))
                conn.execute(
                    "UPDATE workrail_keyring SET document = %s, updated_at = clock_timestamp() "
                    "WHERE name = %s",
                    (new, TOKENS),
                )
            return new

        try:
            # Not repeated after a lost connection: the first rotation may have committed.
            return self._decoded(self._db.run(rotate, repeat=False))
        except KeyringCorrupt as exc:
            return Failure(StoreError("KEYRING_CORRUPT", str(exc)))

    @staticmethod
    def _decoded(raw: Result[bytes, StoreError]) -> Result[Keyring, StoreError]:
        if isinstance(raw, Failure):
            return raw
        try:
            return Success(decode_keyring(raw.unwrap(), "keyring row"))
        except KeyringCorrupt as exc:
            return Failure(StoreError("KEYRING_CORRUPT", str(exc)))
