"""Content-addressed entries in memory: execution snapshots and pinned compiled workflows,
each kept as the JCS bytes of the object under their own sha256 (the file backend's CAS
file), verified against the ref on every first read by this backend, and stamped with
when it was last stored, for the collector."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from returns.result import Failure, Result, Success

from workrail.core.canonical import is_digest
from workrail.core.snapshot_state import SnapshotState, snapshot_state
from workrail.store.content_cache import ContentCache, encode
from workrail.store.errors import StoreError, StoreErrorCode
from workrail.store.memory.storage import Clock, ContentRow, MemoryStorage
from workrail.store.ports import LIST_PAGE_MAX, StoredRef


class _ContentRows:
    _error_code: StoreErrorCode = "SNAPSHOT_STORE_CORRUPTION"

    def __init__(self, storage: MemoryStorage, clock: Clock) -> None:
        self._storage = storage
        self._clock = clock
        self._cache = ContentCache()

    def _rows(self) -> dict[str, ContentRow]:
        raise NotImplementedError

    def _stored(self, ref: str, value: dict[str, Any]) -> None:
        """Facts recorded beside a newly stored entry (called holding the mutex)."""

    def put(self, value: dict[str, Any]) -> Result[str, StoreError]:
        """Store under sha256(JCS(value)); content already there is stamped again."""
        encoded = encode(value, self._error_code)
        if isinstance(encoded, Failure):
            return Failure(encoded.failure())
        ref, data = encoded.unwrap()
        now = self._clock()
        with self._storage.mutex:
            row = self._rows().get(ref)
            if row is not None and row.body == data:
                row.stored_at = max(row.stored_at, now)
            else:  # absent, or damaged bytes replaced by the right ones
                self._rows()[ref] = ContentRow(data, now)
            self._stored(ref, value)
        self._cache.put(ref, value, len(data))
        return Success(ref)

    def get(self, ref: str) -> Result[dict[str, Any] | None, StoreError]:
        cached = self._cache.get(ref)
        if cached is not None:
            return Success(cached)
        if not is_digest(ref):
            return Failure(StoreError("INVALID_REFERENCE", f"not a content ref: {ref[:80]!r}"))
        with self._storage.mutex:
            row = self._rows().get(ref)
        if row is None:
            return Success(None)
        return self._cache.verified(ref, row.body, self._error_code, ref)

    def list_refs(
        self, *, after: str | None = None, limit: int = LIST_PAGE_MAX
    ) -> Result[list[StoredRef], StoreError]:
        with self._storage.mutex:
            found = [
                StoredRef(ref, row.stored_at)
                for ref, row in self._rows().items()
                if after is None or ref > after
            ]
        found.sort(key=lambda entry: entry.ref)
        return Success(found[: max(0, min(limit, LIST_PAGE_MAX))])

    def delete(self, ref: str, *, stored_before: datetime) -> Result[bool, StoreError]:
        """The check and the removal under one lock, so a concurrent `put` either
        refreshes the entry first (it is kept) or stores it again afterwards."""
        self._cache.forget(ref)
        with self._storage.mutex:
            row = self._rows().get(ref)
            if row is None or row.stored_at >= stored_before:
                return Success(False)
            del self._rows()[ref]
            self._storage.states.pop(ref, None)
        return Success(True)


class MemorySnapshotStore(_ContentRows):
    def _rows(self) -> dict[str, ContentRow]:
        return self._storage.snapshots

    def _stored(self, ref: str, value: dict[str, Any]) -> None:
        self._storage.states[ref] = snapshot_state(value)

    def states(self, refs: Collection[str]) -> Result[dict[str, SnapshotState], StoreError]:
        with self._storage.mutex:
            known = self._storage.states
            return Success({ref: known[ref] for ref in refs if ref in known})


class MemoryPinnedWorkflowStore(_ContentRows):
    _error_code: StoreErrorCode = "PINNED_WORKFLOW_IO_ERROR"

    def _rows(self) -> dict[str, ContentRow]:
        return self._storage.pinned
