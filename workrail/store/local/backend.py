"""The file backend: every local store over one data directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workrail.store.local.cas import LocalPinnedWorkflowStore, LocalSnapshotStore
from workrail.store.local.keyring import LocalKeyringStore
from workrail.store.local.layout import Layout
from workrail.store.local.session_store import FaultHook, LocalSessionStore
from workrail.store.local.watch import LocalWatch


@dataclass(frozen=True)
class LocalBackend:
    layout: Layout
    sessions: LocalSessionStore
    snapshots: LocalSnapshotStore
    pinned: LocalPinnedWorkflowStore
    keyring: LocalKeyringStore
    watch: LocalWatch

    @staticmethod
    def open(data_dir: Path, faults: FaultHook | None = None) -> LocalBackend:
        """Nothing is created until something is written."""
        layout = Layout(data_dir.expanduser().absolute())
        return LocalBackend(
            layout=layout,
            sessions=LocalSessionStore(layout, faults),
            snapshots=LocalSnapshotStore(layout),
            pinned=LocalPinnedWorkflowStore(layout),
            keyring=LocalKeyringStore(layout.root),
            watch=LocalWatch(layout),
        )

    @property
    def location(self) -> str:
        return str(self.layout.root)

    def close(self) -> None:
        """Files hold no connections; nothing to release."""
