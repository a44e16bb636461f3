"""The file backend: every local store over one data directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workrail.store.local.cas import LocalPinnedWorkflowStore, LocalSnapshotStore
from workrail.store.local.keyring import LocalKeyringStore
from workrail.store.local.layout import Layout
from workrail.store.local.lifecycle import LocalLifecycleStore
from workrail.store.local.session_store import FaultHook, LocalSessionStore
from workrail.store.local.summary_index import LocalSessionQuery
from workrail.store.local.watch import LocalWatch
from workrail.store.summaries import SummaryProjector


@dataclass(frozen=True)
class LocalBackend:
    layout: Layout
    sessions: LocalSessionStore
    snapshots: LocalSnapshotStore
    pinned: LocalPinnedWorkflowStore
    keyring: LocalKeyringStore
    watch: LocalWatch
    lifecycle: LocalLifecycleStore
    query: LocalSessionQuery

    @staticmethod
    def open(
        data_dir: Path, faults: FaultHook | None = None, *, allow_insecure_keys: bool = False
    ) -> LocalBackend:
        """Nothing is created until something is written (the summary index included:
        it appears with the first append or query). Removals a crash interrupted are
        finished here (one listdir), so their debris never outlives the next start."""
        layout = Layout(data_dir.expanduser().absolute())
        sessions = LocalSessionStore(layout, faults)
        sessions.sweep_trash()
        snapshots = LocalSnapshotStore(layout)
        pinned = LocalPinnedWorkflowStore(layout)
        lifecycle = LocalLifecycleStore(layout, sessions)
        query = LocalSessionQuery(layout, sessions, lifecycle, SummaryProjector(snapshots, pinned))
        sessions.observe(query)
        lifecycle.observe(query)
        keyring = LocalKeyringStore(layout.root, allow_insecure=allow_insecure_keys)
        watch = LocalWatch(layout)
        return LocalBackend(layout, sessions, snapshots, pinned, keyring, watch, lifecycle, query)

    @property
    def location(self) -> str:
        return str(self.layout.root)

    def close(self) -> None:
        """Files hold no connections but the summary index's and the snapshot states'."""
        self.query.close()
        self.snapshots.close()
