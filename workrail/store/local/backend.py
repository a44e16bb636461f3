"""One object that opens every local store over a data directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workrail.store.local.cas import LocalPinnedWorkflowStore, LocalSnapshotStore
from workrail.store.local.keyring import Keyring, load_or_create_keyring
from workrail.store.local.layout import Layout
from workrail.store.local.session_store import FaultHook, LocalSessionStore


@dataclass(frozen=True)
class LocalBackend:
    layout: Layout
    sessions: LocalSessionStore
    snapshots: LocalSnapshotStore
    pinned: LocalPinnedWorkflowStore

    @staticmethod
    def open(data_dir: Path, faults: FaultHook | None = None) -> LocalBackend:
        layout = Layout(data_dir.expanduser().absolute())
        return LocalBackend(
            layout=layout,
            sessions=LocalSessionStore(layout, faults),
            snapshots=LocalSnapshotStore(layout),
            pinned=LocalPinnedWorkflowStore(layout),
        )

    def keyring(self) -> Keyring:
        return load_or_create_keyring(self.layout.root)
