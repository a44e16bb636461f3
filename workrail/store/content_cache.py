"""The in-process cache of decoded content-addressed objects that every backend's snapshot
and pinned-workflow store keeps: newest last, bounded by the canonical bytes it holds and
by its entry count. A snapshot at step n of a run is O(n) bytes, so a bound by count alone
let one long session keep O(n²) bytes alive; a small object costs more decoded than its
bytes say, hence the count too. Thread-safe: request threads share one store."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Final

CACHE_BYTES: Final = 4 * 2**20
"""The canonical bytes of the objects one store keeps decoded in memory, at most."""
CACHE_ENTRIES: Final = 1024
"""And at most this many objects."""


class ContentCache:
    def __init__(self, max_bytes: int = CACHE_BYTES, max_entries: int = CACHE_ENTRIES) -> None:
        self._items: OrderedDict[str, tuple[dict[str, Any], int]] = OrderedDict()
        self._bytes = 0
        self._max_bytes = max_bytes
        self._max_entries = max_entries
        self._mutex = threading.Lock()

    def get(self, ref: str) -> dict[str, Any] | None:
        with self._mutex:
            item = self._items.get(ref)
            if item is None:
                return None
            self._items.move_to_end(ref)
            return item[0]

    def put(self, ref: str, value: dict[str, Any], size: int) -> None:
        """Keep `value` (`size` canonical bytes); the oldest go while over either bound,
        though the newest object is always kept."""
        with self._mutex:
            old = self._items.pop(ref, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[ref] = (value, size)
            self._bytes += size
            while len(self._items) > 1 and (
                self._bytes > self._max_bytes or len(self._items) > self._max_entries
            ):
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped

    def forget(self, ref: str) -> None:
        with self._mutex:
            old = self._items.pop(ref, None)
            if old is not None:
                self._bytes -= old[1]

    def __contains__(self, ref: object) -> bool:
        with self._mutex:
            return ref in self._items

    @property
    def held_bytes(self) -> int:
        with self._mutex:
            return self._bytes

    def __len__(self) -> int:
        with self._mutex:
            return len(self._items)
