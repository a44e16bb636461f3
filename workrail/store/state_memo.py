"""The snapshot states a process has seen, kept in memory.

A snapshot is immutable, so its state never goes stale: the memo only forgets the least
recently used entries past its bound (a few hundred bytes each) and what the collector
deletes. Shared by both backends' snapshot stores.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Final

from workrail.core.snapshot_state import SnapshotState

MEMO_ENTRIES: Final = 50_000
"""About 25 runs of 2,000 steps."""


class StateMemo:
    def __init__(self, limit: int = MEMO_ENTRIES) -> None:
        self._items: OrderedDict[str, SnapshotState] = OrderedDict()
        self._limit = limit
        self._mutex = threading.Lock()

    def known(self, refs: Iterable[str]) -> dict[str, SnapshotState]:
        found: dict[str, SnapshotState] = {}
        with self._mutex:
            for ref in refs:
                state = self._items.get(ref)
                if state is not None:
                    self._items.move_to_end(ref)
                    found[ref] = state
        return found

    def __contains__(self, ref: object) -> bool:
        with self._mutex:
            return ref in self._items

    def learn(self, states: Mapping[str, SnapshotState]) -> None:
        with self._mutex:
            for ref, state in states.items():
                self._items[ref] = state
                self._items.move_to_end(ref)
            while len(self._items) > self._limit:
                self._items.popitem(last=False)

    def forget(self, ref: str) -> None:
        with self._mutex:
            self._items.pop(ref, None)
