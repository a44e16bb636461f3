"""An incremental, pure projection of a session's event log: the run DAG and the lookups
every use case needs (by dedupe key, node, edges, outputs, context).

Built by applying events in order, so a cached index is extended with only the new events:
this is what keeps each call O(new events) instead of O(session). The DAG rules are those
of spec 70-projections §1; a violation is reported as a `ProjectionError`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from workrail.core.events import (
    AdvanceRecorded,
    ArtifactRefPayload,
    ContextSet,
    DomainEvent,
    EdgeCreated,
    NodeCreated,
    NodeOutputAppended,
    PreferencesChanged,
    RunStarted,
)

LOOP_CONTROL_KIND = "wr.loop_control"
RECAP_OUTPUT_PREFIX = "out_recap_"
"""An attempt's notes are the output `out_recap_<attemptId>` of the node it advanced from."""


class ProjectionError(ValueError):
    """The event log is well-formed line by line but its DAG is inconsistent."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class RunInfo:
    run_id: str
    started: RunStarted
    node_ids: list[str] = field(default_factory=list)
    latest_context: ContextSet | None = None
    # (eventIndex, context) of every context_set, oldest first, for as-of lookups
    context_history: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    preferences: dict[str, str] = field(
        default_factory=lambda: {"autonomy": "guided", "riskPolicy": "conservative"}
    )


@dataclass
class SessionIndex:
    """Mutable only through `apply`; callers treat an index as read-only."""

    count: int = 0
    dedupe: dict[str, int] = field(default_factory=dict)
    runs: dict[str, RunInfo] = field(default_factory=dict)
    nodes: dict[str, NodeCreated] = field(default_factory=dict)
    edges_from: dict[str, list[EdgeCreated]] = field(default_factory=dict)
    outputs: dict[str, list[NodeOutputAppended]] = field(default_factory=dict)
    # (nodeId, attemptId) → the notes that attempt recorded there (the first such output):
    # a rehydrate reads hundreds of them, one lookup each
    recaps: dict[tuple[str, str], str] = field(default_factory=dict)
    # last-activity event index per node (spec 70 §2, preferred tip)
    last_activity: dict[str, int] = field(default_factory=dict)
    # the advance that created each node (keyed by the new node id)
    advance_into: dict[str, AdvanceRecorded] = field(default_factory=dict)
    # inline content of every loop-control artifact output, in event order: the only
    # artifacts the interpreter reads back, kept apart so an advance never scans them all
    loop_control_artifacts: list[Any] = field(default_factory=list)
    # children of each node by parentNodeId, in creation order
    children: dict[str, list[str]] = field(default_factory=dict)
    # per run: the latest eventIndex that raised a node's last activity, and the topmost
    # nodes raised at that index: the preferred tip lies below one of them
    touched: dict[str, tuple[int, list[str]]] = field(default_factory=dict)

    def apply(self, event: DomainEvent) -> None:
        """Fold one event (the next by eventIndex) into the index."""
        if event.eventIndex < self.count - 1:
            raise ProjectionError(
                "PROJECTION_INVARIANT_VIOLATION", "events are not in eventIndex order"
            )
        self.count = event.eventIndex + 1
        self.dedupe.setdefault(event.dedupeKey, event.eventIndex)
        if isinstance(event, RunStarted):
            self._run_started(event)
        elif isinstance(event, NodeCreated):
            self._node_created(event)
        elif isinstance(event, EdgeCreated):
            self._edge_created(event)
        else:
            if isinstance(event, NodeOutputAppended):
                self.outputs.setdefault(event.node_id, []).append(event)
                payload = event.data.payload
                output_id = event.data.outputId
                if payload.payloadKind == "notes" and output_id.startswith(RECAP_OUTPUT_PREFIX):
                    attempt = output_id[len(RECAP_OUTPUT_PREFIX) :]
                    self.recaps.setdefault((event.node_id, attempt), payload.notesMarkdown)
                if (
                    isinstance(payload, ArtifactRefPayload)
                    and isinstance(payload.content, dict)
                    and payload.content.get("kind") == LOOP_CONTROL_KIND
                ):
                    self.loop_control_artifacts.append(payload.content)
            elif isinstance(event, AdvanceRecorded):
                outcome = event.data.outcome
                if outcome.kind == "advanced":
                    self.advance_into[outcome.toNodeId] = event
            elif isinstance(event, PreferencesChanged):
                run = self.runs.get(event.run_id)
                if run is not None:
                    run.preferences = event.data.effective.to_json()
            elif isinstance(event, ContextSet):
                run = self.runs.get(event.run_id)
                if run is not None:
                    if not isinstance(event.data.context, dict):
                        raise ProjectionError(
                            "PROJECTION_CORRUPTION_DETECTED", "run context must be an object"
                        )
                    run.latest_context = event
                    run.context_history.append((event.eventIndex, event.data.context))
            scope = event.scope
            if scope is not None and scope.nodeId is not None:
                node_id = scope.nodeId
                if node_id in self.last_activity:
                    self.last_activity[node_id] = max(self.last_activity[node_id], event.eventIndex)
                    self._touch(self.nodes[node_id].run_id, event.eventIndex, node_id)

    def _run_started(self, event: RunStarted) -> None:
        existing = self.runs.get(event.run_id)
        if existing is not None:
            if existing.started.data.workflowHash != event.data.workflowHash:
                raise ProjectionError(
                    "PROJECTION_CORRUPTION_DETECTED",
                    f"run {event.run_id} started twice with different workflow hashes",
                )
            return
        self.runs[event.run_id] = RunInfo(event.run_id, event)

    def _node_created(self, event: NodeCreated) -> None:
        node_id = event.node_id
        existing = self.nodes.get(node_id)
        if existing is not None:
            if existing.data != event.data or existing.scope != event.scope:
                raise ProjectionError(
                    "PROJECTION_CORRUPTION_DETECTED", f"node {node_id} created twice"
                )
            return
        parent = event.data.parentNodeId
        if parent is not None:
            parent_event = self.nodes.get(parent)
            if parent_event is None or parent_event.run_id != event.run_id:
                raise ProjectionError(
                    "PROJECTION_INVARIANT_VIOLATION",
                    f"node {node_id} names parent {parent}, which is not a node of its run",
                )
        self.nodes[node_id] = event
        self.last_activity[node_id] = event.eventIndex
        self._touch(event.run_id, event.eventIndex, node_id)
        if parent is not None:
            self.children.setdefault(parent, []).append(node_id)
        run = self.runs.get(event.run_id)
        if run is not None:
            run.node_ids.append(node_id)

    def _edge_created(self, event: EdgeCreated) -> None:
        data = event.data
        src = self.nodes.get(data.fromNodeId)
        dst = self.nodes.get(data.toNodeId)
        if src is None or dst is None:
            raise ProjectionError(
                "PROJECTION_INVARIANT_VIOLATION",
                f"edge {data.fromNodeId}->{data.toNodeId} names a missing node",
            )
        if dst.data.parentNodeId != data.fromNodeId:
            raise ProjectionError(
                "PROJECTION_CORRUPTION_DETECTED",
                f"edge {data.fromNodeId}->{data.toNodeId} disagrees with the child's parent",
            )
        self.edges_from.setdefault(data.fromNodeId, []).append(event)
        activity = max(
            self.last_activity[data.fromNodeId], self.last_activity[data.toNodeId], event.eventIndex
        )
        self.last_activity[data.fromNodeId] = activity
        self.last_activity[data.toNodeId] = activity
        self._touch(src.run_id, event.eventIndex, data.fromNodeId)  # the child lies below

    def _touch(self, run_id: str, event_index: int, node_id: str) -> None:
        touch = self.touched.get(run_id)
        if touch is not None and touch[0] == event_index:
            touch[1].append(node_id)
        else:
            self.touched[run_id] = (event_index, [node_id])

    # --- queries -----------------------------------------------------------------------

    def tips(self, run_id: str) -> list[str]:
        """Nodes of the run without an outgoing edge, in plain string order."""
        run = self.runs.get(run_id)
        if run is None:
            return []
        return sorted(n for n in run.node_ids if not self.edges_from.get(n))

    def ancestors(self, node_id: str) -> list[str]:
        """The parent chain from `node_id` up to the root, `node_id` first."""
        return list(self.walk_up(node_id))

    def walk_up(self, node_id: str) -> Iterator[str]:
        """`node_id`, its parent, … up to the root, lazily (callers may stop early)."""
        seen: set[str] = set()
        current: str | None = node_id
        while current is not None:
            if current in seen:
                raise ProjectionError("PROJECTION_INVARIANT_VIOLATION", "cycle in parent chain")
            seen.add(current)
            yield current
            node = self.nodes.get(current)
            current = None if node is None else node.data.parentNodeId

    def preferred_tip(self, run_id: str) -> str | None:
        """The deterministic 'latest activity' tip of spec 70 §2."""
        scored = self.preferred_tip_scored(run_id)
        return None if scored is None else scored[0]

    def preferred_tip_scored(self, run_id: str) -> tuple[str, int] | None:
        """The preferred tip and its score, in O(the subtree of the latest touched node)
        rather than O(run).

        Every event raises the nodes it touches to its own eventIndex, the highest so far,
        so the tips that score highest are exactly the tips at or below the nodes the
        run's latest activity touched (an edge touches its child too, which lies below its
        parent). They tie on score, so the rest of the order decides among them."""
        run = self.runs.get(run_id)
        touch = self.touched.get(run_id)
        if run is None or touch is None:
            return None
        best: tuple[int, tuple[int, ...]] | None = None
        best_id: str | None = None
        stack = list(touch[1])
        while stack:
            current = stack.pop()
            node = self.nodes[current]
            children = self.children.get(current)
            if children:
                stack.extend(children)
            # a tip of the run: no outgoing edge, created once the run had started
            if not self.edges_from.get(current) and node.eventIndex > run.started.eventIndex:
                key = (node.eventIndex, _invert(current))
                if best is None or key > best:
                    best, best_id = key, current
        if best_id is None:  # only nodes from before the run started lie there
            tip = self.best_tip(self.tips(run_id))
            return None if tip is None else (tip, self._reach(tip, {}))
        return best_id, touch[0]

    def preferred_tip_by_scoring(self, run_id: str) -> str | None:
        """Spec 70 §2 computed literally over every tip (what `preferred_tip` must equal)."""
        return self.best_tip(self.tips(run_id))

    def descendant_tips(self, node_id: str) -> list[str]:
        """Tips reachable from `node_id` (itself when it has no outgoing edge)."""
        found: list[str] = []
        stack = [node_id]
        while stack:
            current = stack.pop()
            edges = self.edges_from.get(current)
            if edges:
                stack.extend(e.data.toNodeId for e in edges)
            else:
                found.append(current)
        return found

    def best_tip_below(self, node_id: str) -> str | None:
        """`best_tip(descendant_tips(node_id))` without walking the whole ancestry: when
        the run's preferred tip lies below `node_id` it is the best of any tips that hold
        it, and checking that walks only from that tip up to `node_id` (a parent is
        always created before its child). Otherwise every tip below is scored."""
        node = self.nodes.get(node_id)
        scored = None if node is None else self.preferred_tip_scored(node.run_id)
        touch = None if node is None else self.touched.get(node.run_id)
        if (
            node is not None
            and scored is not None
            and touch is not None
            and scored[1] == touch[0]  # not the fallback: nothing below can score higher
            and self._edge_path(node, scored[0])
        ):
            return scored[0]
        return self.best_tip(self.descendant_tips(node_id))

    def _edge_path(self, top: NodeCreated, node_id: str) -> bool:
        """Whether edges lead from `top` down to `node_id`."""
        current = node_id
        while current != top.node_id:
            node = self.nodes.get(current)
            parent = None if node is None else node.data.parentNodeId
            if node is None or parent is None or node.eventIndex <= top.eventIndex:
                return False
            if not any(e.data.toNodeId == current for e in self.edges_from.get(parent, ())):
                return False
            current = parent
        return True

    def best_tip(self, tips: Iterable[str]) -> str | None:
        """Spec 70 §2 scoring: the highest last activity over the tip and its ancestors;
        ties go to the later-created tip, then to the lexically smaller id."""
        best: tuple[int, int, tuple[int, ...]] | None = None
        best_id: str | None = None
        reach: dict[str, int] = {}  # node → highest activity over it and its ancestors
        for tip in tips:
            score = self._reach(tip, reach)
            key = (score, self.nodes[tip].eventIndex, _invert(tip))
            if best is None or key > best:
                best, best_id = key, tip
        return best_id

    def _reach(self, node_id: str, reach: dict[str, int]) -> int:
        """The highest last activity over `node_id` and its ancestors, sharing `reach`
        between calls: tips of one run share most of their ancestry, which is then walked
        once instead of once per tip."""
        chain: list[str] = []
        current: str | None = node_id
        while current is not None and current not in reach:
            if len(chain) > len(self.nodes):
                raise ProjectionError("PROJECTION_INVARIANT_VIOLATION", "cycle in parent chain")
            chain.append(current)
            node = self.nodes.get(current)
            current = None if node is None else node.data.parentNodeId
        highest = -1 if current is None else reach[current]
        for name in reversed(chain):
            highest = max(highest, self.last_activity[name])
            reach[name] = highest
        return reach[node_id]

    def context_before(self, run_id: str, event_index: int) -> dict[str, Any]:
        """The run context as it stood just before `event_index` (for replays)."""
        run = self.runs.get(run_id)
        if run is None:
            return {}
        pos = bisect.bisect_left(run.context_history, event_index, key=lambda item: item[0])
        return run.context_history[pos - 1][1] if pos else {}

    def recap_of(self, node_id: str, attempt_id: str) -> str | None:
        """The notes recorded by attempt `attempt_id` when it advanced from `node_id`."""
        return self.recaps.get((node_id, attempt_id))

    def run_context(self, run_id: str) -> dict[str, Any]:
        run = self.runs.get(run_id)
        if run is None or run.latest_context is None:
            return {}
        context = run.latest_context.data.context
        assert isinstance(context, dict)
        return context


def _invert(text: str) -> tuple[int, ...]:
    """A key that sorts strings in reverse, so `max` prefers the lexically smaller id."""
    return tuple(-ord(c) for c in text) + (1,)
