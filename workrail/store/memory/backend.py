"""The in-memory backend: every memory store over one `MemoryStorage`."""

from __future__ import annotations

from dataclasses import dataclass

from workrail.store.memory.content import MemoryPinnedWorkflowStore, MemorySnapshotStore
from workrail.store.memory.keyring import MemoryKeyringStore
from workrail.store.memory.query import MemoryLifecycleStore, MemorySessionQuery
from workrail.store.memory.session_store import MemorySessionStore
from workrail.store.memory.storage import Clock, MemoryStorage
from workrail.store.memory.watch import MemoryWatch
from workrail.store.summaries import SummaryProjector

LOCATION = "memory:// (this process only; nothing is kept when it exits)"


@dataclass(frozen=True)
class MemoryBackend:
    storage: MemoryStorage
    sessions: MemorySessionStore
    snapshots: MemorySnapshotStore
    pinned: MemoryPinnedWorkflowStore
    keyring: MemoryKeyringStore
    watch: MemoryWatch
    lifecycle: MemoryLifecycleStore
    query: MemorySessionQuery

    @staticmethod
    def open(clock: Clock, storage: MemoryStorage | None = None) -> MemoryBackend:
        """A backend over `storage` (new, empty storage when None). Another backend
        opened over the same storage is another process over the same store: it shares
        the rows and the writer locks, not this one's caches. `clock` stamps appends and
        content (aware UTC)."""
        storage = storage if storage is not None else MemoryStorage()
        sessions = MemorySessionStore(storage, clock)
        snapshots = MemorySnapshotStore(storage, clock)
        pinned = MemoryPinnedWorkflowStore(storage, clock)
        lifecycle = MemoryLifecycleStore(storage, sessions)
        query = MemorySessionQuery(
            storage, sessions, lifecycle, SummaryProjector(snapshots, pinned)
        )
        sessions.observe(query)
        lifecycle.observe(query)
        keyring, watch = MemoryKeyringStore(storage), MemoryWatch(storage)
        return MemoryBackend(storage, sessions, snapshots, pinned, keyring, watch, lifecycle, query)

    @property
    def location(self) -> str:
        return LOCATION

    def close(self) -> None:
        """Nothing to release: the data lives as long as its storage is referenced."""
