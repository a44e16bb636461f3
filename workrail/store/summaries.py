"""Gathering what the pure summary projection reads (tip snapshots, pinned workflows,
lifecycle, health) through the ports, for any backend. A backend's query index calls this
after each append and when it rebuilds; snapshots and pinned workflows are immutable, so
what was looked up once is kept (bounded). A healthy session is summarised by the
accumulator its store keeps beside its index, so each call folds only the events that are
new since the last one (this process's appends, or another's read in by the store)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, Protocol

from returns.result import Failure, Result, Success

from workrail.core.events import DomainEvent
from workrail.core.health import HEALTHY, SessionHealth
from workrail.core.lifecycle import SessionLifecycle
from workrail.core.session_index import SessionIndex
from workrail.core.summary import SessionSummary
from workrail.core.summary_accumulator import summarize
from workrail.core.summary_facts import (
    SessionFacts,
    TipState,
    WorkflowFacts,
    needs,
    replay,
    tip_state_of,
    workflow_facts_of,
)
from workrail.core.weighted_lru import WeightedLru
from workrail.store.errors import StoreError
from workrail.store.ports import (
    LifecycleStore,
    PinnedWorkflowStore,
    SessionLog,
    SessionStore,
    SnapshotStore,
)


class ContentReader(Protocol):
    """`get` of a snapshot or pinned-workflow store (or a transaction's view of one)."""

    def get(self, ref: str) -> Result[dict[str, Any] | None, StoreError]: ...


TIP_CACHE_WEIGHT: Final = 65_536
"""Tip states kept, weighed by 1 + their completed steps: a long session's past tips (each
holding all the steps done before it) must not fill memory, 8,192 short ones fit."""


def tip_weight(tip: TipState) -> int:
    """A tip state's weight in the tip cache: itself and each completed step it holds
    (twice over when its keys are in loops: then the keys and step ids are two sets)."""
    ids, keys = tip.completed_step_ids, tip.completed_keys
    return 1 + len(ids) + (0 if keys is ids else len(keys))


class SummarySource:
    """What a query index projects a session from: the stores, and the projector that
    keeps what it looked up in them."""

    def __init__(
        self, sessions: SessionStore, lifecycles: LifecycleStore, projector: SummaryProjector
    ) -> None:
        self.sessions = sessions
        self.lifecycles = lifecycles
        self.projector = projector

    def load(self, session_id: str) -> Result[SessionSummary | None, StoreError]:
        """The session's summary as the stores stand now (see `SummaryProjector.load`)."""
        return self.projector.load(self.sessions, self.lifecycles, session_id)


class SummaryProjector:
    """`SessionSummary` values from the stores; never writes."""

    def __init__(self, snapshots: SnapshotStore, pinned: PinnedWorkflowStore) -> None:
        self._snapshots = snapshots
        self._pinned = pinned
        # Bounded by weight alone: each entry weighs at least 1, so the count never binds.
        self._tips: WeightedLru[TipState] = WeightedLru(TIP_CACHE_WEIGHT, TIP_CACHE_WEIGHT)
        self._workflows: WeightedLru[WorkflowFacts | None] = WeightedLru(1024, 1024)

    def _facts(
        self,
        session_id: str,
        events: Sequence[DomainEvent],
        index: SessionIndex | None,
        *,
        health: SessionHealth | None,
        last_activity: datetime | None,
        lifecycle: SessionLifecycle,
        snapshots: ContentReader | None = None,
        pinned: ContentReader | None = None,
    ) -> SessionFacts:
        """What a summary of `events` reads: with the tip states and workflow facts that
        `index` needs, looked up (or remembered)."""
        tips: dict[str, TipState] = {}
        workflows: dict[str, WorkflowFacts] = {}
        if index is not None:
            wanted = needs(index)
            for ref in wanted.snapshot_refs:
                like = wanted.parents.get(ref)
                tips[ref] = self._tip(ref, snapshots or self._snapshots, like)
            for workflow_hash in wanted.workflow_hashes:
                facts = self._workflow(workflow_hash, pinned or self._pinned)
                if facts is not None:
                    workflows[workflow_hash] = facts
        return SessionFacts(
            session_id, events, index, health, last_activity, lifecycle, tips, workflows
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
        facts = self._facts(
            log.session_id,
            log.events,
            log.index,
            health=HEALTHY,
            last_activity=last_activity,
            lifecycle=lifecycle,
            snapshots=snapshots,
            pinned=pinned,
        )
        return log.summary.summarize(facts)

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
            facts = self._facts(
                session_id, (), None, health=None, last_activity=activity, lifecycle=lifecycle
            )
            return Success(summarize(facts))
        prefix = sessions.load_prefix(session_id)
        events: tuple[DomainEvent, ...] = (
            prefix.unwrap().events if isinstance(prefix, Success) else ()
        )
        # an unhealthy session's validated prefix: no store keeps an accumulator for it
        facts = self._facts(
            session_id,
            events,
            replay(events),
            health=error.health,
            last_activity=activity,
            lifecycle=lifecycle,
        )
        return Success(summarize(facts))

    def _tip(self, ref: str, snapshots: ContentReader, parent_ref: str | None) -> TipState:
        """The tip state of `ref`, read once; the parent tip's state, when still kept,
        spares checking again the completed keys the two share."""
        cached = self._tips.get(ref)
        if cached is not None:
            return cached
        loaded = snapshots.get(ref)
        if isinstance(loaded, Failure):
            return TipState("invalid")  # not cached: it may be readable next time
        like = None if parent_ref is None else self._tips.get(parent_ref)
        state = tip_state_of(loaded.unwrap(), like)
        if state.kind != "missing":
            self._tips.put(ref, state, tip_weight(state))
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
            self._workflows.put(workflow_hash, facts, 1)
        return facts
