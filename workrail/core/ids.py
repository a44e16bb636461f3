"""Typed identifiers: `<prefix>_<26 lowercase base32>` carrying 16 random bytes.

Minting takes the random bytes as an argument so the core stays deterministic; the shell
passes 16 bytes from its entropy source (`EngineDeps.entropy` in `workrail.engine.deps`,
`os.urandom` unless a test hands in another).
"""

from __future__ import annotations

import hashlib
import re
from typing import Final, Literal

IdPrefix = Literal["sess", "run", "node", "evt", "attempt"]
ID_PREFIXES: Final[tuple[IdPrefix, ...]] = ("sess", "run", "node", "evt", "attempt")

_B32_BODY: Final = r"[a-z2-7]{25}[aeimquy4]"
_ID_RE: Final = re.compile(rf"^(sess|run|node|evt|attempt|wf)_({_B32_BODY})$")
SESSION_ID_RE: Final = re.compile(rf"^sess_{_B32_BODY}$")

ATTEMPT_NEXT_PREFIX: Final = "wr_attempt_next_v1:"


_ALPHABET: Final = "abcdefghijklmnopqrstuvwxyz234567"
# Two characters per 10 bits: half the lookups of one character per 5 bits.
_PAIRS: Final = tuple(a + b for a in _ALPHABET for b in _ALPHABET)
# Our alphabet → the digits `int(…, 32)` reads, so decoding is one C-level call.
_TO_INT_DIGITS: Final = str.maketrans(_ALPHABET, "0123456789abcdefghijklmnopqrstuv")
_BODY_RE: Final = re.compile(_B32_BODY)


def b32_encode16(raw: bytes) -> str:
    """Lowercase RFC 4648 base32 of exactly 16 bytes, no padding (26 characters).

    16 bytes are 128 bits; 26 characters hold 130, so the value is shifted left by the two
    zero pad bits and read ten bits (two characters) at a time (faster than `base64`,
    which pads to 40 bytes first; every id and token goes through here).
    """
    if len(raw) != 16:
        raise ValueError("ids carry exactly 16 bytes")
    n = int.from_bytes(raw, "big") << 2
    return "".join([_PAIRS[(n >> shift) & 1023] for shift in range(120, -1, -10)])


def b32_decode16(body: str) -> bytes:
    """Inverse of `b32_encode16`; rejects wrong length, alphabet or non-zero pad bits."""
    if len(body) != 26 or _BODY_RE.fullmatch(body) is None:
        raise ValueError(f"not a 26-character id body: {body!r}")
    n = int(body.translate(_TO_INT_DIGITS), 32)
    if n & 3:
        raise ValueError(f"non-canonical id body: {body!r}")
    return (n >> 2).to_bytes(16, "big")


def make_id(prefix: IdPrefix | Literal["wf"], raw: bytes) -> str:
    """`<prefix>_<base32(raw)>` for 16 bytes of entropy or digest."""
    return f"{prefix}_{b32_encode16(raw)}"


def is_id(text: str, prefix: IdPrefix | Literal["wf"]) -> bool:
    """True when `text` is a well-formed id with this prefix."""
    m = _ID_RE.fullmatch(text)
    return m is not None and m.group(1) == prefix


def is_session_id(text: str) -> bool:
    """Session ids become directory names: only this pattern may reach the file system."""
    return SESSION_ID_RE.fullmatch(text) is not None


def id_bytes(text: str, prefix: IdPrefix | Literal["wf"]) -> bytes:
    """The 16 bytes inside a well-formed id (for compact token payloads)."""
    if not is_id(text, prefix):
        raise ValueError(f"not a {prefix} id: {text!r}")
    return b32_decode16(text.split("_", 1)[1])


def next_attempt_id(parent_attempt_id: str) -> str:
    """The attempt id the reference derives for the node after `parent_attempt_id`."""
    digest = hashlib.sha256((ATTEMPT_NEXT_PREFIX + parent_attempt_id).encode("utf-8")).digest()
    return make_id("attempt", digest[:16])


def workflow_hash_ref(workflow_hash: str) -> str:
    """`wf_<base32 of the first 16 bytes of the digest>` — what a state token carries."""
    hex_part = workflow_hash.removeprefix("sha256:")
    return make_id("wf", bytes.fromhex(hex_part)[:16])
