"""What the bundle shell needs from a backend: the three stores, nothing local-only, so a
server backend can export and import too."""

from __future__ import annotations

from typing import Protocol

from workrail.store.ports import PinnedWorkflowStore, SessionStore, SnapshotStore


class BundleBackend(Protocol):
    @property
    def sessions(self) -> SessionStore: ...

    @property
    def snapshots(self) -> SnapshotStore: ...

    @property
    def pinned(self) -> PinnedWorkflowStore: ...
