"""The keyring file `keys/keyring.json` (the document of `workrail.core.keyring`).

Created with mode 0600 on first use, first writer wins; `rotate` moves current to
previous. `LocalKeyringStore` is the keyring port over a data directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from returns.result import Failure, Result, Success

from workrail.core.keyring import (
    KEY_BYTES,
    Keyring,
    KeyringCorrupt,
    decode_keyring,
    encode_keyring,
)
from workrail.store.errors import StoreError
from workrail.store.fsio import atomic_write, create_exclusive

__all__ = [
    "Keyring",
    "KeyringCorrupt",
    "LocalKeyringStore",
    "keyring_path",
    "load_or_create_keyring",
    "read_keyring",
    "rotate_keyring",
]


def keyring_path(data_dir: Path) -> Path:
    return data_dir / "keys" / "keyring.json"


def read_keyring(data_dir: Path) -> Keyring | None:
    """The keyring on disk, or None when there is none. Raises `KeyringCorrupt`."""
    path = keyring_path(data_dir)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    return decode_keyring(raw, path.name)


def load_or_create_keyring(data_dir: Path) -> Keyring:
    """Load the keyring, creating it (0600) with a fresh random key when missing."""
    existing = read_keyring(data_dir)
    if existing is not None:
        return existing
    fresh = Keyring(current=os.urandom(KEY_BYTES), previous=None)
    # First writer wins: processes racing to create the keyring all end up with the one
    # key that was published, never with a private key of their own.
    create_exclusive(keyring_path(data_dir), encode_keyring(fresh))
    published = read_keyring(data_dir)
    assert published is not None
    return published


def rotate_keyring(data_dir: Path) -> Keyring:
    """previous := current, current := fresh random key. Returns the new keyring."""
    new = load_or_create_keyring(data_dir).rotated(os.urandom(KEY_BYTES))
    atomic_write(keyring_path(data_dir), encode_keyring(new))
    return new


class LocalKeyringStore:
    """The keyring port over `<data>/keys/keyring.json`."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir

    def load(self) -> Result[Keyring, StoreError]:
        try:
            return Success(load_or_create_keyring(self._data_dir))
        except KeyringCorrupt as exc:
            return Failure(StoreError("KEYRING_CORRUPT", str(exc)))
        except OSError as exc:
            return Failure(StoreError("KEYRING_IO_ERROR", _os_message(exc)))

    def adopt(self, keyring: Keyring) -> Result[Keyring, StoreError]:
        try:
            if read_keyring(self._data_dir) is None:
                create_exclusive(keyring_path(self._data_dir), encode_keyring(keyring))
            published = read_keyring(self._data_dir)
            assert published is not None
            return Success(published)
        except KeyringCorrupt as exc:
            return Failure(StoreError("KEYRING_CORRUPT", str(exc)))
        except OSError as exc:
            return Failure(StoreError("KEYRING_IO_ERROR", _os_message(exc)))

    def rotate(self) -> Result[Keyring, StoreError]:
        try:
            return Success(rotate_keyring(self._data_dir))
        except KeyringCorrupt as exc:
            return Failure(StoreError("KEYRING_CORRUPT", str(exc)))
        except OSError as exc:
            return Failure(StoreError("KEYRING_IO_ERROR", _os_message(exc)))


def _os_message(exc: OSError) -> str:
    return f"{exc.filename or 'keyring'}: {exc.strerror or exc}"
