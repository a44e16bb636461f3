"""The v1 token string: `<kind><version>.<payload>.<mac>`, all URL-safe ASCII.

* `<kind>` is `st`, `ack`, `chk` or `ct` (continue); `<version>` is `1`. This prefix is readable before any
  key is touched (wrong kind, unknown version) and is itself covered by the MAC.
* `<payload>` is base64url (no padding) of 48 bytes = 64 characters: three 16-byte id bodies,
  `sessionId ‖ nodeId ‖ workflowHashRef` (state) or `sessionId ‖ nodeId ‖ attemptId`
  (ack, checkpoint, continue). The id prefixes are implied by position and re-attached on decode.
* `<mac>` is base64url of HMAC-SHA256 truncated to 16 bytes (128 bits) = 22 characters.

Lengths: state and continue 4 + 64 + 1 + 22 = 91 characters; ack and checkpoint 92.
"""

from __future__ import annotations

import base64
import re
from typing import Final, TypeVar

from workrail.core.ids import id_bytes, make_id
from workrail.tokens.models import (
    AckToken,
    AttemptToken,
    CheckpointToken,
    ContinueToken,
    StateToken,
    Token,
    TokenKind,
)

_Attempt = TypeVar("_Attempt", bound=AttemptToken)

VERSION: Final = 1
KINDS: Final[tuple[TokenKind, ...]] = ("state", "ack", "checkpoint", "continue")
KIND_WORDS: Final[dict[str, TokenKind]] = {
    "st": "state",
    "ack": "ack",
    "chk": "checkpoint",
    "ct": "continue",
}
PREFIXES: Final[dict[TokenKind, str]] = {
    kind: f"{word}{VERSION}." for word, kind in KIND_WORDS.items()
}
SALTS: Final[dict[TokenKind, str]] = {kind: f"workrail.token.v{VERSION}.{kind}" for kind in KINDS}

ID_BYTES: Final = 16
PAYLOAD_BYTES: Final = 3 * ID_BYTES
PAYLOAD_CHARS: Final = 64
MAC_BYTES: Final = 16
MAC_CHARS: Final = 22
SEP: Final = "."

HEAD_RE: Final = re.compile(r"(st|ack|chk|ct)([0-9]{1,3})\.")
BODY_RE: Final = re.compile(rf"[A-Za-z0-9_-]{{{PAYLOAD_CHARS}}}\.[A-Za-z0-9_-]{{{MAC_CHARS}}}")
# The reference's bech32m tokens: recognised only to say why they are refused.
FOREIGN_RE: Final = re.compile(r"(st|ack|chk)1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{20,}")


def token_length(kind: TokenKind) -> int:
    """Length of every v1 token of this kind."""
    return len(PREFIXES[kind]) + PAYLOAD_CHARS + len(SEP) + MAC_CHARS


def b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def b64decode_canonical(text: str) -> bytes | None:
    """Decode unpadded base64url; None unless `text` is the one canonical encoding.

    Rejecting non-zero pad bits means no two strings ever carry the same bytes.
    """
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return None
    return raw if b64encode(raw) == text else None


def pack(token: Token) -> bytes:
    """The 48 payload bytes. Raises ValueError for a malformed id (a caller bug)."""
    match token:
        case StateToken(session_id=s, node_id=n, workflow_hash_ref=w):
            return id_bytes(s, "sess") + id_bytes(n, "node") + id_bytes(w, "wf")
        case AttemptToken(session_id=s, node_id=n, attempt_id=a):
            return id_bytes(s, "sess") + id_bytes(n, "node") + id_bytes(a, "attempt")


def _split(raw: bytes) -> tuple[str, str, bytes]:
    if len(raw) != PAYLOAD_BYTES:
        raise ValueError(f"payload must be {PAYLOAD_BYTES} bytes, got {len(raw)}")
    session, node, last = raw[:ID_BYTES], raw[ID_BYTES : 2 * ID_BYTES], raw[2 * ID_BYTES :]
    return make_id("sess", session), make_id("node", node), last


def unpack_state(raw: bytes) -> StateToken:
    """Inverse of `pack` for state payloads. Raises ValueError unless `raw` is 48 bytes."""
    session, node, last = _split(raw)
    return StateToken(session, node, make_id("wf", last))


def unpack_ack(raw: bytes) -> AckToken:
    return _unpack_attempt(AckToken, raw)


def unpack_checkpoint(raw: bytes) -> CheckpointToken:
    return _unpack_attempt(CheckpointToken, raw)


def unpack_continue(raw: bytes) -> ContinueToken:
    return _unpack_attempt(ContinueToken, raw)


def _unpack_attempt(cls: type[_Attempt], raw: bytes) -> _Attempt:
    session, node, last = _split(raw)
    return cls(session, node, make_id("attempt", last))
