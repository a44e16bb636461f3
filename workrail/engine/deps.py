"""The ports and edge services a use case needs, bundled so use cases stay small."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from workrail.core.ids import IdPrefix, make_id
from workrail.engine.catalog import WorkflowCatalog
from workrail.engine.signing import Codec
from workrail.engine.workspace import NO_PROBE, WorkspaceProbe
from workrail.store.ports import (
    Backend,
    LifecycleStore,
    PinnedWorkflowStore,
    SessionQuery,
    SessionStore,
    SessionWatch,
    SnapshotStore,
)


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class EngineDeps:
    sessions: SessionStore
    snapshots: SnapshotStore
    pinned: PinnedWorkflowStore
    catalog: WorkflowCatalog
    codec: Codec
    lifecycle: LifecycleStore
    query: SessionQuery
    watch: SessionWatch
    probe: WorkspaceProbe = NO_PROBE
    entropy: Callable[[int], bytes] = field(default=os.urandom)
    clock: Callable[[], datetime] = field(default=utc_now)

    @staticmethod
    def over(
        backend: Backend,
        catalog: WorkflowCatalog,
        codec: Codec,
        *,
        probe: WorkspaceProbe = NO_PROBE,
        entropy: Callable[[int], bytes] = os.urandom,
        clock: Callable[[], datetime] = utc_now,
    ) -> EngineDeps:
        return EngineDeps(
            sessions=backend.sessions,
            snapshots=backend.snapshots,
            pinned=backend.pinned,
            catalog=catalog,
            codec=codec,
            lifecycle=backend.lifecycle,
            query=backend.query,
            watch=backend.watch,
            probe=probe,
            entropy=entropy,
            clock=clock,
        )

    def mint(self, prefix: IdPrefix) -> str:
        """A fresh random id; the only randomness the engine uses."""
        return make_id(prefix, self.entropy(16))
