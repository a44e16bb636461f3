"""Watching for appends in memory: every committed write announces its session to the
storage's feeds, so a waiting feed wakes at once (no polling)."""

from __future__ import annotations

from collections.abc import Collection

from returns.result import Result, Success

from workrail.store.errors import StoreError
from workrail.store.memory.storage import Feed, MemoryStorage


class MemoryWatch:
    def __init__(self, storage: MemoryStorage) -> None:
        self._storage = storage

    def subscribe(self, session_ids: Collection[str] | None = None) -> Result[_Feed, StoreError]:
        ids = None if session_ids is None else frozenset(session_ids)
        return Success(_Feed(self._storage.subscribe(ids)))


class _Feed:
    """The ChangeFeed port over a storage feed."""

    def __init__(self, feed: Feed) -> None:
        self._feed = feed

    def wait(self, timeout: float) -> Result[frozenset[str], StoreError]:
        return Success(self._feed.wait(timeout))

    def close(self) -> None:
        self._feed.close()
