"""The keyring file `keys/keyring.json`: a current and an optional previous 32-byte HMAC key.

Created with mode 0600 on first use; `rotate` moves current to previous. The format is the
reference's (JCS bytes, base64url keys without padding), so a data directory can be shared.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from workrail.core.canonical import canonical_bytes
from workrail.store.local.fsio import atomic_write, create_exclusive

KEY_BYTES = 32


class KeyringCorrupt(Exception):
    """`KEYRING_CORRUPTION_DETECTED`: the file exists but is not a valid keyring."""


class KeyRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    alg: Literal["hmac_sha256"]
    keyBase64Url: str

    @field_validator("keyBase64Url")
    @classmethod
    def _is_32_bytes(cls, value: str) -> str:
        if len(_b64decode(value)) != KEY_BYTES:
            raise ValueError("key must be 32 bytes")
        return value


class KeyringFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    v: Literal[1]
    current: KeyRecord
    previous: KeyRecord | None

    @field_validator("v", mode="before")
    @classmethod
    def _not_bool(cls, value: object) -> object:
        # Literal[1] would accept True (True == 1); the file format says the number 1.
        if isinstance(value, bool):
            raise ValueError("v must be the number 1")
        return value


@dataclass(frozen=True)
class Keyring:
    """Raw key bytes. Sign with `current`; verify with `current`, then `previous`."""

    current: bytes
    previous: bytes | None

    @property
    def verify_keys(self) -> tuple[bytes, ...]:
        """Keys to try when verifying, newest first."""
        return (self.current,) if self.previous is None else (self.current, self.previous)


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _b64decode(text: str) -> bytes:
    if "=" in text:
        raise ValueError("base64url without padding expected")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _record(raw: bytes) -> KeyRecord:
    return KeyRecord(alg="hmac_sha256", keyBase64Url=_b64encode(raw))


def keyring_path(data_dir: Path) -> Path:
    return data_dir / "keys" / "keyring.json"


def _encode(keyring: Keyring) -> bytes:
    doc = KeyringFile(
        v=1,
        current=_record(keyring.current),
        previous=None if keyring.previous is None else _record(keyring.previous),
    )
    return canonical_bytes(doc.model_dump(mode="json"))


def read_keyring(data_dir: Path) -> Keyring | None:
    """The keyring on disk, or None when there is none. Raises `KeyringCorrupt`."""
    path = keyring_path(data_dir)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        doc = KeyringFile.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as exc:
        raise KeyringCorrupt(f"{path.name}: {exc}") from exc
    return Keyring(
        current=_b64decode(doc.current.keyBase64Url),
        previous=None if doc.previous is None else _b64decode(doc.previous.keyBase64Url),
    )


def load_or_create_keyring(data_dir: Path) -> Keyring:
    """Load the keyring, creating it (0600) with a fresh random key when missing."""
    existing = read_keyring(data_dir)
    if existing is not None:
        return existing
    fresh = Keyring(current=os.urandom(KEY_BYTES), previous=None)
    # First writer wins: processes racing to create the keyring all end up with the one
    # key that was published, never with a private key of their own.
    create_exclusive(keyring_path(data_dir), _encode(fresh))
    published = read_keyring(data_dir)
    assert published is not None
    return published


def rotate_keyring(data_dir: Path) -> Keyring:
    """previous := current, current := fresh random key. Returns the new keyring."""
    old = load_or_create_keyring(data_dir)
    new = Keyring(current=os.urandom(KEY_BYTES), previous=old.current)
    atomic_write(keyring_path(data_dir), _encode(new))
    return new
