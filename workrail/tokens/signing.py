"""itsdangerous signers: HMAC-SHA256 truncated to 128 bits, one salt per token kind.

`key_derivation="hmac"` turns each keyring key into HMAC-SHA256(key, salt), so a MAC made
for one kind is meaningless under another kind's salt. Keys are passed oldest first, as
itsdangerous expects: it signs with the last (current) and verifies newest first.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final, Protocol

from itsdangerous.encoding import want_bytes
from itsdangerous.signer import HMACAlgorithm, Signer

from workrail.tokens.layout import KINDS, MAC_BYTES, SALTS, SEP
from workrail.tokens.models import TokenKind

MIN_KEY_BYTES: Final = 32


class KeySource(Protocol):
    """What the codec needs from a keyring (`workrail.store.local.keyring.Keyring` fits)."""

    @property
    def current(self) -> bytes: ...

    @property
    def previous(self) -> bytes | None: ...


class TruncatedHMAC(HMACAlgorithm):
    """HMAC-SHA256 cut to its first 16 bytes: 128-bit forgery resistance, 22 characters.

    Verification compares the truncated values with `hmac.compare_digest` (inherited).
    """

    def __init__(self) -> None:
        super().__init__(hashlib.sha256)

    def get_signature(self, key: bytes, value: bytes) -> bytes:
        # hmac.digest is the one-shot C path: the same MAC without an HMAC object.
        return hmac.digest(key, value, "sha256")[:MAC_BYTES]


class KeyedSigner(Signer):
    """A Signer that derives each key once. itsdangerous derives HMAC(key, salt) again on
    every sign and verify, yet a signer's keys and salt never change."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._derived: dict[bytes, bytes] = {}

    def derive_key(self, secret_key: str | bytes | None = None) -> bytes:
        raw = self.secret_key if secret_key is None else want_bytes(secret_key)
        derived = self._derived.get(raw)
        if derived is None:
            derived = self._derived[raw] = super().derive_key(raw)
        return derived


def _keys_oldest_first(keys: KeySource) -> list[bytes]:
    ordered = [keys.current] if keys.previous is None else [keys.previous, keys.current]
    for key in ordered:
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(f"token keys must be at least {MIN_KEY_BYTES} bytes")
    return ordered


def make_signers(keys: KeySource) -> dict[TokenKind, Signer]:
    """One deterministic signer per kind (no timestamps, no random salt)."""
    secret_keys = _keys_oldest_first(keys)
    return {
        kind: KeyedSigner(
            secret_keys,
            salt=SALTS[kind],
            sep=SEP,
            key_derivation="hmac",
            digest_method=hashlib.sha256,
            algorithm=TruncatedHMAC(),
        )
        for kind in KINDS
    }
