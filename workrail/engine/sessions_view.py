"""The read model of sessions: list them, and project one session's run DAG for display.

A read-only use case over the store ports (never writes, never takes the write lock), so the
CLI, a web console or an MCP tool can share one projection and only differ in rendering.
An unhealthy session is still shown: its health, plus whatever validated prefix the store
can read back, because an unhealthy session refuses to advance or checkpoint but can
still be read.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from returns.result import Success

from workrail.core.events import DomainEvent, NodeCreated
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.snapshot_state import SnapshotState
from workrail.core.summary import SessionSummary
from workrail.store.errors import StoreError
from workrail.store.ports import SessionLog, SessionStore, SnapshotStore

UNHEALTHY_BANNER = (
    "An unhealthy session refuses to advance or checkpoint, but can still be read: "
    "shown below is its validated prefix."
)


class SessionSource(Protocol):
    """The two stores the read model needs (a Backend or EngineDeps both fit)."""

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def snapshots(self) -> SnapshotStore: ...


@dataclass
class NodeView:
    node_id: str
    kind: str
    parent: str | None
    edge_kind: str | None
    snapshot_ref: str
    state: str = "unknown"
    step_id: str | None = None
    notes: list[str] = field(default_factory=list)
    artifacts: int = 0
    children: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeId": self.node_id,
            "nodeKind": self.kind,
            "parentNodeId": self.parent,
            "edgeKind": self.edge_kind,
            "state": self.state,
            "pendingStepId": self.step_id,
            "notes": self.notes,
            "artifacts": self.artifacts,
            "children": self.children,
        }


@dataclass
class RunView:
    run_id: str
    workflow_id: str
    workflow_hash: str
    nodes: dict[str, NodeView]
    tips: list[str]
    preferred_tip: str | None
    summary_status: str | None = None
    """The run's status as its summary projects it (spec 70 §7), when it was read."""

    @property
    def roots(self) -> list[str]:
        return [n.node_id for n in self.nodes.values() if n.parent is None]

    @property
    def status(self) -> str:
        """The run status words of `sessions` (`in_progress`, `blocked`, `complete`,
        `complete_with_gaps`): the summary's when known, else read off the tip's state."""
        if self.summary_status is not None:
            return self.summary_status
        tip = self.nodes.get(self.preferred_tip or "")
        return "empty" if tip is None else _RUN_WORDS.get(tip.state, tip.state)

    def to_json(self) -> dict[str, Any]:
        edges = [
            {"fromNodeId": n.parent, "toNodeId": n.node_id, "edgeKind": n.edge_kind}
            for n in self.nodes.values()
            if n.parent is not None
        ]
        return {
            "runId": self.run_id,
            "workflowId": self.workflow_id,
            "workflowHash": self.workflow_hash,
            "status": self.status,
            "tips": self.tips,
            "preferredTip": self.preferred_tip,
            "nodes": [n.to_json() for n in self.nodes.values()],
            "edges": edges,
        }


@dataclass
class SessionView:
    session_id: str
    health: dict[str, Any]
    event_count: int
    last_activity: str | None
    runs: list[RunView]
    prefix_only: bool = False
    """True when the runs come from the validated prefix of an unhealthy session."""

    @property
    def is_healthy(self) -> bool:
        return self.health.get("kind") == "healthy"

    @property
    def workflow_id(self) -> str:
        return self.runs[0].workflow_id if self.runs else "-"

    @property
    def status(self) -> str:
        if not self.is_healthy:
            return str(self.health.get("kind"))
        return self.runs[0].status if self.runs else "empty"

    def take_statuses(self, summary: SessionSummary) -> None:
        """Show each run with the status its summary projects, so `sessions show` and the
        console say what `sessions` says (gaps and blocking gaps included)."""
        known = {run.run_id: run.status for run in summary.runs}
        for run in self.runs:
            run.summary_status = known.get(run.run_id)

    def summary_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "workflowId": self.workflow_id,
            "status": self.status,
            "health": self.health,
            "events": self.event_count,
            "runs": len(self.runs),
            "lastActivity": self.last_activity,
        }

    def to_json(self) -> dict[str, Any]:
        out = {**self.summary_json(), "runs": [r.to_json() for r in self.runs]}
        if self.prefix_only:
            out["validatedPrefixOnly"] = True
            out["notice"] = UNHEALTHY_BANNER
        return out


def project_runs(index: SessionIndex) -> list[RunView]:
    """Copy what the views need while the store guarantees a consistent index."""
    runs = []
    for run_id, info in index.runs.items():
        nodes: dict[str, NodeView] = {}
        for node_id in info.node_ids:
            created: NodeCreated = index.nodes[node_id]
            nodes[node_id] = NodeView(
                node_id=node_id,
                kind=created.data.nodeKind,
                parent=created.data.parentNodeId,
                edge_kind=None,
                snapshot_ref=created.data.snapshotRef,
            )
        for node_id in info.node_ids:
            for edge in index.edges_from.get(node_id, ()):
                nodes[node_id].children.append(edge.data.toNodeId)
                child = nodes.get(edge.data.toNodeId)
                if child is not None:
                    child.edge_kind = edge.data.edgeKind
            for output in index.outputs.get(node_id, ()):
                payload = output.data.payload
                if payload.payloadKind == "notes":
                    nodes[node_id].notes.append(payload.notesMarkdown)
                else:
                    nodes[node_id].artifacts += 1
        started = info.started.data
        runs.append(
            RunView(
                run_id=run_id,
                workflow_id=started.workflowId,
                workflow_hash=started.workflowHash,
                nodes=nodes,
                tips=index.tips(run_id),
                preferred_tip=index.preferred_tip(run_id),
            )
        )
    return runs


def _from_log(log: SessionLog) -> tuple[int, list[RunView]]:
    return log.count, project_runs(log.index)


def _from_prefix(events: tuple[DomainEvent, ...]) -> list[RunView]:
    """Replay the prefix into a fresh index; a prefix whose DAG does not replay shows no runs."""
    index = SessionIndex()
    try:
        for event in events:
            index.apply(event)
    except ProjectionError:
        return []
    return project_runs(index)


def fill_states(
    snapshots: SnapshotStore, runs: list[RunView], only: Collection[str] | None = None
) -> None:
    """Each node's state and pending step from its snapshot (only the nodes in `only`,
    when given: a page that shows just the status needs just the tips). One call to the
    store for the whole run: states are facts it records when a snapshot is stored."""
    nodes = [
        node for run in runs for node in run.nodes.values() if only is None or node.node_id in only
    ]
    if not nodes:
        return
    known = snapshots.states({node.snapshot_ref for node in nodes}).value_or({})
    for node in nodes:
        node.state, node.step_id = node_state(known.get(node.snapshot_ref))
    for run in runs:
        for node in run.nodes.values():
            if node.state == "pending" and _advanced_from(run, node):
                node.state = "done"


def _advanced_from(run: RunView, node: NodeView) -> bool:
    """Whether an accepted output left the node (a step child over an acked_step edge):
    its step is done, whatever its snapshot still says was pending there."""
    for child_id in node.children:
        child = run.nodes.get(child_id)
        if child is not None and child.kind == "step" and child.edge_kind == "acked_step":
            return True
    return False


NodeState = tuple[str, str | None]
MISSING_SNAPSHOT: NodeState = ("missing_snapshot", None)
_LABELS = {"running": "pending", "invalid": "invalid_snapshot"}
_RUN_WORDS = {"pending": "in_progress", "init": "in_progress"}
"""A tip's node state in the run status words (a run whose step waits is in progress)."""


def node_state(state: SnapshotState | None) -> NodeState:
    """What a node's snapshot shows: `pending` while a step waits, `blocked`, `complete`,
    `init`, or why its snapshot cannot tell (`missing_snapshot`, `invalid_snapshot`);
    `fill_states` then says `done` for a pending node an accepted output left."""
    if state is None:
        return MISSING_SNAPSHOT
    return _LABELS.get(state.kind, state.kind), state.pending_step


def session_activity(sessions: SessionStore, session_id: str) -> str | None:
    moment: datetime | None = sessions.last_activity(session_id).value_or(None)
    return None if moment is None else moment.astimezone().isoformat(timespec="seconds")


def load_session(source: SessionSource, session_id: str) -> SessionView:
    """A read-only view of one session; an unhealthy one shows its validated prefix."""
    checked = source.sessions.health(session_id)
    if not isinstance(checked, Success):
        error: StoreError = checked.failure()
        return SessionView(
            session_id,
            {"kind": "unreadable", "reason": {"code": error.code, "message": error.message}},
            0,
            None,
            [],
        )
    health = checked.unwrap()
    view = SessionView(
        session_id, health.to_json(), 0, session_activity(source.sessions, session_id), []
    )
    if health.is_healthy:
        read = source.sessions.read(session_id, _from_log)
        if isinstance(read, Success):
            view.event_count, view.runs = read.unwrap()
    else:
        prefix = source.sessions.load_prefix(session_id)
        if isinstance(prefix, Success):
            view.event_count = len(prefix.unwrap().events)
            view.runs = _from_prefix(prefix.unwrap().events)
        view.prefix_only = True
    fill_states(source.snapshots, view.runs)
    return view


def all_session_ids(sessions: SessionStore) -> Iterator[str]:
    """Every session id, page by page (stops quietly if the store cannot be listed)."""
    after: str | None = None
    while True:
        page = sessions.list_ids(after=after)
        if not isinstance(page, Success) or not page.unwrap():
            return
        yield from page.unwrap()
        after = page.unwrap()[-1]
