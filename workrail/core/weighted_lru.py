"""An in-memory cache bounded twice: by entry count and by the total weight of what it
holds (bytes, completed keys…), newest last. Both the stores' decoded content and the
engine's parsed snapshots need the weight bound: a snapshot at step n of a run weighs O(n),
so a bound by count alone let one long session keep O(n²) alive. Thread-safe (request
threads share one), and the newest entry is always kept, however heavy."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")


class WeightedLru(Generic[V]):
    def __init__(self, max_weight: int, max_entries: int) -> None:
        self._items: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self.max_weight = max_weight
        self.max_entries = max_entries
        self._mutex = threading.Lock()

    def get(self, key: str) -> V | None:
        with self._mutex:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: str, value: V, weight: int) -> None:
        """Keep `value`; the oldest go while over either bound."""
        with self._mutex:
            old = self._items.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            self._items[key] = (value, weight)
            self._weight += weight
            while len(self._items) > 1 and (
                self._weight > self.max_weight or len(self._items) > self.max_entries
            ):
                _, (_, dropped) = self._items.popitem(last=False)
                self._weight -= dropped

    def forget(self, key: str) -> None:
        with self._mutex:
            old = self._items.pop(key, None)
            if old is not None:
                self._weight -= old[1]

    def __contains__(self, key: object) -> bool:
        with self._mutex:
            return key in self._items

    @property
    def held_weight(self) -> int:
        with self._mutex:
            return self._weight

    def __len__(self) -> int:
        with self._mutex:
            return len(self._items)
