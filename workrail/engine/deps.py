"""The ports and edge services a use case needs, bundled so use cases stay small."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from workrail.core.ids import IdPrefix, make_id
from workrail.engine.catalog import WorkflowCatalog
from workrail.engine.signing import Codec
from workrail.store.ports import PinnedWorkflowStore, SessionStore, SnapshotStore


@dataclass(frozen=True)
class EngineDeps:
    sessions: SessionStore
    snapshots: SnapshotStore
    pinned: PinnedWorkflowStore
    catalog: WorkflowCatalog
    codec: Codec
    entropy: Callable[[int], bytes] = field(default=os.urandom)

    def mint(self, prefix: IdPrefix) -> str:
        """A fresh random id; the only randomness the engine uses."""
        return make_id(prefix, self.entropy(16))
