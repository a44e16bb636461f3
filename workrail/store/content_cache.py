"""The in-process cache of decoded content-addressed objects that every backend's snapshot
and pinned-workflow store keeps: newest last, bounded by the canonical bytes it holds and
by its entry count (a small object costs more decoded than its bytes say, hence the count
too). Thread-safe: request threads share one store."""

from __future__ import annotations

from typing import Any, Final

from workrail.core.weighted_lru import WeightedLru

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
