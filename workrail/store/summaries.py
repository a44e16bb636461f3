"""Gathering what the pure summary projection reads (tip snapshots, pinned workflows,
lifecycle, health) through the ports, for any backend. A backend's query index calls this
after each append and when it rebuilds; snapshots and pinned workflows are immutable, so
what was looked up once is kept (bounded). A healthy session is summarised by the
accumulator its store keeps beside its index, so each call folds only the events that are
new since the last one (this process's appends, or another's read in by the store)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final, Generic, Protocol, TypeVar

from returns.result import Failure, Result, Success

from workrail.core.events import DomainEvent
from workrail.core.health import HEALTHY, SessionHealth
from workrail.core.lifecycle import SessionLifecycle
from workrail.core.session_index import SessionIndex
from workrail.core.summary import (
    SessionFacts,
    SessionSummary,
    TipState,
    WorkflowFacts,
    needs,
    replay,
    summarize,
    tip_state_of,
    workflow_facts_of,
)
from workrail.store.errors import StoreError
from workrail.store.ports import (
    LifecycleStore,
    PinnedWorkflowStore,
    SessionLog,
    SessionStore,
    SnapshotStore,
)

K = TypeVar("K")
V = TypeVar("V")


class ContentReader(Protocol):
    """`get` of a snapshot or pinned-workflow store (or a transaction's view of one)."""

    def get(self, ref: str) -> Result[dict[str, Any] | None, StoreError]: ...


class _Bounded(Generic[K, V]):
    """The most recently used values whose weights add up to at most `size`."""

    def __init__(self, size: int, weigh: Callable[[V], int] = lambda _: 1) -> None:
        self._size = size
        self._weigh = weigh
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._total = 0
        self._mutex = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._mutex:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: K, value: V) -> None:
        weight = self._weigh(value)
        with self._mutex:
            old = self._items.pop(key, None)
            if old is not None:
                self._total -= old[1]
            self._items[key] = (value, weight)
            self._total += weight
            while self._total > self._size and len(self._items) > 1:
                _, (_, dropped) = self._items.popitem(last=False)
                self._total -= dropped

    def __len__(self) -> int:
        return len(self._items)


TIP_CACHE_WEIGHT: Final = 65_536
"""Tip states kept, weighed by 1 + their completed steps: a long session's past tips (each
holding all the steps done before it) must not fill memory, 8,192 short ones fit."""


class SummaryProjector:
    """`SessionSummary` values from the stores; never writes."""

    def __init__(self, snapshots: SnapshotStore, pinned: PinnedWorkflowStore) -> None:
        self._snapshots = snapshots
        self._pinned = pinned
        self._tips: _Bounded[str, TipState] = _Bounded(
            TIP_CACHE_WEIGHT, lambda tip: 1 + len(tip.completed_step_ids)
        )
        self._workflows: _Bounded[str, WorkflowFacts | None] = _Bounded(1024)

    def _facts(
        self,
        index: SessionIndex | None,
        snapshots: ContentReader | None,
        pinned: ContentReader | None,
    ) -> tuple[dict[str, TipState], dict[str, WorkflowFacts]]:
        """The tip states and workflow facts a summary of `index` shows."""
        tips: dict[str, TipState] = {}
        workflows: dict[str, WorkflowFacts] = {}
        if index is not None:
            wanted = needs(index)
            for ref in wanted.snapshot_refs:
                tips[ref] = self._tip(ref, snapshots or self._snapshots)
            for workflow_hash in wanted.workflow_hashes:
                facts = self._workflow(workflow_hash, pinned or self._pinned)
                if facts is not None:
                    workflows[workflow_hash] = facts
        return tips, workflows

    def summarize(
        self,
        session_id: str,
        events: Sequence[DomainEvent],
        index: SessionIndex | None,
        *,
        health: SessionHealth | None,
        last_activity: datetime | None,
        lifecycle: SessionLifecycle,
    ) -> SessionSummary:
        """From scratch (O(session)): for what no store keeps, such as an unhealthy
        session's validated prefix."""
        tips, workflows = self._facts(index, None, None)
        return summarize(
            SessionFacts(
                session_id=session_id,
                events=events,
                index=index,
                health=health,
                last_activity=last_activity,
                lifecycle=lifecycle,
                tips=tips,
                workflows=workflows,
            )
        )

    def of_log(
        self,
        log: SessionLog,
        *,
        last_activity: datetime | None,
        lifecycle: SessionLifecycle,
        snapshots: ContentReader | None = None,
        pinned: ContentReader | None = None,
    ) -> SessionSummary:
        """The summary of a healthy session from its validated view, through the
        accumulator the store keeps beside its index: O(new events) + O(budget).
        `snapshots`/`pinned` replace the stores for this call (a transaction reading its
        own connection)."""
        tips, workflows = self._facts(log.index, snapshots, pinned)
        return log.summary.summarize(
            log.session_id,
            log.events,
            log.index,
            health=HEALTHY,
            last_activity=last_activity,
            lifecycle=lifecycle,
            tips=tips,
            workflows=workflows,
        )

    def load(
        self, sessions: SessionStore, lifecycles: LifecycleStore, session_id: str
    ) -> Result[SessionSummary | None, StoreError]:
        """The summary as the stores stand now; None when the session does not exist. An
        unhealthy session is summarised from its validated prefix."""
        exists = sessions.exists(session_id)
        if isinstance(exists, Failure):
            return Failure(exists.failure())
        if not exists.unwrap():
            return Success(None)
        lifecycle = lifecycles.get(session_id).value_or(SessionLifecycle())
        activity: datetime | None = sessions.last_activity(session_id).value_or(None)
        read = sessions.read(
            session_id,
            lambda log: (
                None
                if log.is_empty
                else self.of_log(log, last_activity=activity, lifecycle=lifecycle)
            ),
        )
        if isinstance(read, Success):
            return Success(read.unwrap())
        error: StoreError = read.failure()
        if error.health is None:
            if error.code == "STORE_UNAVAILABLE":
                return Failure(error)
            return Success(
                self.summarize(
                    session_id, (), None, health=None, last_activity=activity, lifecycle=lifecycle
                )
            )
        prefix = sessions.load_prefix(session_id)
        events: tuple[DomainEvent, ...] = (
            prefix.unwrap().events if isinstance(prefix, Success) else ()
        )
        return Success(
            self.summarize(
                session_id,
                events,
                replay(events),
                health=error.health,
                last_activity=activity,
                lifecycle=lifecycle,
            )
        )

    def _tip(self, ref: str, snapshots: ContentReader) -> TipState:
        cached = self._tips.get(ref)
        if cached is not None:
            return cached
        loaded = snapshots.get(ref)
        if isinstance(loaded, Failure):
            return TipState("invalid")  # not cached: it may be readable next time
        state = tip_state_of(loaded.unwrap())
        if state.kind != "missing":
            self._tips.put(ref, state)
        return state

    def _workflow(self, workflow_hash: str, pinned: ContentReader) -> WorkflowFacts | None:
        cached = self._workflows.get(workflow_hash)
        if cached is not None:
            return cached
        loaded = pinned.get(workflow_hash)
        if isinstance(loaded, Failure):
            return None
        facts = workflow_facts_of(loaded.unwrap())
        if facts is not None:
            self._workflows.put(workflow_hash, facts)
        return facts
