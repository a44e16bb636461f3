"""The keyring document: a current and an optional previous 32-byte HMAC key.

The format is the reference's `keys/keyring.json` (JCS bytes, base64url keys without
padding); every backend stores this same document, so a keyring can move between them and
a data directory can be shared with the reference. Pure: encoding, decoding and rotation
take their randomness as an argument.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from workrail.core.canonical import canonical_bytes

KEY_BYTES = 32


class KeyringCorrupt(ValueError):
    """`KEYRING_CORRUPTION_DETECTED`: a keyring document exists but is not a valid keyring."""


class KeyRecord(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, strict=True)

    alg: Literal["hmac_sha256"]
    keyBase64Url: str

    @field_validator("keyBase64Url")
    @classmethod
    def _is_32_bytes(cls, value: str) -> str:
        if len(_b64decode(value)) != KEY_BYTES:
            raise ValueError("key must be 32 bytes")
        return value


class KeyringFile(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, strict=True)

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

    def rotated(self, fresh: bytes) -> Keyring:
        """previous := current, current := `fresh`."""
        if len(fresh) != KEY_BYTES:
            raise ValueError("a fresh key must be 32 bytes")
        return Keyring(current=fresh, previous=self.current)


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _b64decode(text: str) -> bytes:
    if "=" in text:
        raise ValueError("base64url without padding expected")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _record(raw: bytes) -> KeyRecord:
    return KeyRecord(alg="hmac_sha256", keyBase64Url=_b64encode(raw))


def encode_keyring(keyring: Keyring) -> bytes:
    """The canonical document bytes."""
    doc = KeyringFile(
        v=1,
        current=_record(keyring.current),
        previous=None if keyring.previous is None else _record(keyring.previous),
    )
    return canonical_bytes(doc.model_dump(mode="json"))


def decode_keyring(raw: bytes, where: str = "keyring") -> Keyring:
    """Parse a keyring document; raises `KeyringCorrupt` naming `where`."""
    try:
        doc = KeyringFile.model_validate(json.loads(raw))
    except ValidationError as exc:
        raise KeyringCorrupt(f"{where}: {_one_line(exc)}") from exc
    except ValueError as exc:
        raise KeyringCorrupt(f"{where}: not JSON ({exc})") from exc
    return Keyring(
        current=_b64decode(doc.current.keyBase64Url),
        previous=None if doc.previous is None else _b64decode(doc.previous.keyBase64Url),
    )


def _one_line(exc: ValidationError) -> str:
    """The first problem, in one line (pydantic's own text spans several)."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "document"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"
