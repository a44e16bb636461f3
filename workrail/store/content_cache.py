"""The in-process cache of decoded content-addressed objects that every backend's snapshot
and pinned-workflow store keeps: newest last, bounded by the canonical bytes it holds and
by its entry count (a small object costs more decoded than its bytes say, hence the count
too). Thread-safe: request threads share one store.

It is also where stored bytes become an object, for every backend: encoded once to the
bytes and ref a `put` stores (`encode`), decoded and verified against their ref before
they are cached and handed out (`verified`).
"""

from __future__ import annotations

from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.core.canonical import CanonicalJsonError, canonical_bytes, sha256_digest
from workrail.core.content import decode_content
from workrail.core.weighted_lru import WeightedLru
from workrail.store.errors import StoreError, StoreErrorCode

CACHE_BYTES: Final = 4 * 2**20
"""The canonical bytes of the objects one store keeps decoded in memory, at most."""
CACHE_ENTRIES: Final = 1024
"""And at most this many objects."""


class ContentCache(WeightedLru[dict[str, Any]]):
    """Weighted by each object's canonical size in bytes."""

    def __init__(self, max_bytes: int = CACHE_BYTES, max_entries: int = CACHE_ENTRIES) -> None:
        super().__init__(max_weight=max_bytes, max_entries=max_entries)

    @property
    def held_bytes(self) -> int:
        return self.held_weight

    def verified(
        self, ref: str, data: bytes, code: StoreErrorCode, label: str
    ) -> Result[dict[str, Any], StoreError]:
        """The object `data` holds once its bytes are what `ref` promises, then kept decoded;
        otherwise an error with `code` that names the entry by `label`."""
        decoded = decode_content(ref, data)
        if isinstance(decoded, Failure):
            return Failure(StoreError(code, f"{label}: {decoded.failure()}"))
        value = decoded.unwrap()
        self.put(ref, value, len(data))
        return Success(value)


def encode(value: dict[str, Any], code: StoreErrorCode) -> Result[tuple[str, bytes], StoreError]:
    """The ref and the JCS bytes `value` is stored as, or why it cannot be stored."""
    try:
        data = canonical_bytes(value)
    except CanonicalJsonError as exc:
        return Failure(StoreError(code, f"not storable as canonical JSON: {exc}"))
    return Success((sha256_digest(data), data))
