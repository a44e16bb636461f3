"""The token keyring in memory: created on first use (first caller wins, under the
storage's lock), rotated in place, shared by every backend over the same storage."""

from __future__ import annotations

import os

from returns.result import Result, Success

from workrail.core.keyring import KEY_BYTES, Keyring
from workrail.store.errors import StoreError
from workrail.store.memory.storage import MemoryStorage


class MemoryKeyringStore:
    def __init__(self, storage: MemoryStorage) -> None:
        self._storage = storage

    def load(self) -> Result[Keyring, StoreError]:
        return self.adopt(Keyring(current=os.urandom(KEY_BYTES), previous=None))

    def adopt(self, keyring: Keyring) -> Result[Keyring, StoreError]:
        with self._storage.mutex:
            if self._storage.keyring is None:
                self._storage.keyring = keyring
            return Success(self._storage.keyring)

    def rotate(self) -> Result[Keyring, StoreError]:
        with self._storage.mutex:
            current = self._storage.keyring or Keyring(os.urandom(KEY_BYTES), None)
            self._storage.keyring = current.rotated(os.urandom(KEY_BYTES))
            return Success(self._storage.keyring)
