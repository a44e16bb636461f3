"""Inspecting one session in depth: the run DAG, its raw events and, for one node, what a
person wants to know about it — the prompt it showed, the notes and artifacts the agent
left, the context at that point, validation results, blockers with what to fix, and the
decision trace that chose the next step.

A read-only use case like `sessions_view` (never writes, never takes the write lock). A
healthy session is projected inside the store's read callback, where its cached index is
consistent; an unhealthy one from a fresh replay of its validated prefix, so a damaged
session is still shown instead of failing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from returns.result import Success

from workrail.core.events import (
    ArtifactRefPayload,
    DecisionTraceAppended,
    DomainEvent,
    GapRecorded,
    NodeOutputAppended,
    ObservationRecorded,
    ValidationPerformed,
)
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.snapshot import BlockedState, ExecutionSnapshot, TerminalBlock, parse_snapshot
from workrail.engine.compiled import CompiledCache, Uncompiled
from workrail.engine.responses import RETRY_FIXES, pending_instance
from workrail.engine.sessions_view import (
    SessionView,
    fill_states,
    project_runs,
    session_activity,
)
from workrail.store.errors import StoreError
from workrail.store.ports import (
    LogStores,
    SessionLog,
    SessionStore,
    SnapshotStore,
)
from workrail.workflow.prompts import render_pending

InspectSource = LogStores
"""The three stores an inspection reads (a Backend or EngineDeps both fit)."""


@dataclass(frozen=True)
class ArtifactDetail:
    output_id: str
    content_type: str
    byte_length: int
    sha256: str
    content_json: str | None
    """The inline content pretty-printed as JSON (None when the artifact has none)."""


@dataclass(frozen=True)
class ValidationDetail:
    event_index: int
    attempt_id: str
    contract_ref: str
    valid: bool
    issues: tuple[str, ...]
    suggestions: tuple[str, ...]


@dataclass(frozen=True)
class BlockerDetail:
    code: str
    message: str
    fix: str | None
    pointer: str


@dataclass(frozen=True)
class BlockDetail:
    """Why a blocked attempt was blocked, and whether retrying can get past it."""

    kind: str
    reason: str
    blockers: tuple[BlockerDetail, ...]

    @property
    def retryable(self) -> bool:
        """A retryable block's answer carries a retry ack; a terminal one ends the attempt."""
        return self.kind == "retryable_block"


@dataclass(frozen=True)
class TraceDetail:
    event_index: int
    kind: str
    summary: str
    refs: tuple[str, ...]


@dataclass(frozen=True)
class GapDetail:
    severity: str
    category: str
    summary: str
    detail: str


@dataclass(frozen=True)
class PromptDetail:
    step_id: str
    title: str
    text: str


@dataclass
class NodeDetail:
    node_id: str
    run_id: str
    kind: str
    state: str
    step_id: str | None
    parent: str | None
    children: list[str]
    edge_kind: str | None
    created_index: int
    is_tip: bool
    is_preferred_tip: bool
    entered_by_attempt: str | None
    snapshot_ref: str
    workflow_hash: str
    prompt: PromptDetail | None = None
    prompt_problem: str | None = None
    notes: list[str] = field(default_factory=list)
    artifacts: list[ArtifactDetail] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)
    validations: list[ValidationDetail] = field(default_factory=list)
    entry_validation: ValidationDetail | None = None
    """The validation of the attempt that created this node (why it was blocked)."""
    advanced_by: list[str] = field(default_factory=list)
    """The attempts whose output was accepted here (each advanced the run to a new node):
    an accepted output met the step's requirements, and no validation record is written."""
    block: BlockDetail | None = None
    trace: list[TraceDetail] = field(default_factory=list)
    gaps: list[GapDetail] = field(default_factory=list)


@dataclass
class SessionInspection:
    view: SessionView
    events: tuple[DomainEvent, ...]
    observations: dict[str, str]
    """Session-level observations (git_branch, git_head_sha, repo_root_hash)."""
    node: NodeDetail | None = None
    node_known: bool = True
    """False when a node id was asked for and the session has no such node."""
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Run id → the `metrics_*` context values the agent reported (a metricsProfile asks
    for them), as the run's context holds them now."""


def _prompt_problem(found: Uncompiled, workflow_hash: str) -> str:
    """Why the node's prompt cannot be shown, for a person reading the session."""
    if found.why == "unreadable":
        return f"the pinned workflow cannot be read: {found.message}"
    if found.why == "missing":
        return f"the pinned workflow {workflow_hash} is missing"
    if found.why == "invalid":
        return f"the pinned workflow is not valid: {found.message}"
    return f"the pinned workflow does not compile: {found.message}"


def _snapshot(snapshots: SnapshotStore, ref: str) -> ExecutionSnapshot | None:
    got = snapshots.get(ref)
    if not isinstance(got, Success) or got.unwrap() is None:
        return None
    parsed = parse_snapshot(got.unwrap())
    return parsed.unwrap() if isinstance(parsed, Success) else None


def _validation(event: ValidationPerformed) -> ValidationDetail:
    data = event.data
    return ValidationDetail(
        event.eventIndex,
        data.attemptId,
        data.contractRef,
        data.result.valid,
        tuple(data.result.issues),
        tuple(data.result.suggestions),
    )


def _pointer(raw: dict[str, Any]) -> str:
    kind = str(raw.get("kind", ""))
    rest = [f"{k}={v}" for k, v in raw.items() if k != "kind"]
    return kind + (f" ({', '.join(rest)})" if rest else "")


def _block(state: BlockedState) -> BlockDetail:
    """The stored blockers, with the advice the server gives for them: a retryable block's
    answer carries the retry ack in its nextCall, so its fix never says to rehydrate."""
    info = state.blocked
    retryable = not isinstance(info, TerminalBlock)
    blockers = tuple(
        BlockerDetail(
            b.code,
            b.message,
            RETRY_FIXES.get(b.suggested_fix or "", b.suggested_fix)
            if retryable
            else b.suggested_fix,
            _pointer(b.pointer.model_dump(mode="json", by_alias=True)),
        )
        for b in info.blockers.blockers
    )
    return BlockDetail(info.kind, info.reason.kind, blockers)


def _node_detail(
    index: SessionIndex, events: Sequence[DomainEvent], view: SessionView, node_id: str
) -> NodeDetail | None:
    """Everything the index and the events say about the node (no store access: this runs
    inside the store's read callback)."""
    created = index.nodes.get(node_id)
    if created is None:
        return None
    run_id = created.run_id
    run = next((r for r in view.runs if r.run_id == run_id), None)
    shown = run.nodes.get(node_id) if run is not None else None
    entered = index.advance_into.get(node_id)
    detail = NodeDetail(
        node_id=node_id,
        run_id=run_id,
        kind=created.data.nodeKind,
        state="unknown",
        step_id=None,
        parent=created.data.parentNodeId,
        children=[e.data.toNodeId for e in index.edges_from.get(node_id, ())],
        edge_kind=shown.edge_kind if shown else None,
        created_index=created.eventIndex,
        is_tip=run is not None and node_id in run.tips,
        is_preferred_tip=run is not None and run.preferred_tip == node_id,
        entered_by_attempt=entered.data.attemptId if entered else None,
        context=_context_at(index, node_id, run_id),
        snapshot_ref=created.data.snapshotRef,
        workflow_hash=created.data.workflowHash,
    )
    detail.advanced_by = [
        e.data.attemptId
        for e in index.advance_into.values()
        if e.scope is not None and e.scope.nodeId == node_id
    ]
    for event in events:
        _take_event(detail, event)
    return detail


def _take_event(detail: NodeDetail, event: DomainEvent) -> None:
    """What one event says about the node: a validation of it (or of the attempt that
    created it), its notes and artifacts, its decision trace and its gaps."""
    scope = event.scope
    at_node = scope is not None and scope.nodeId == detail.node_id
    if isinstance(event, ValidationPerformed):
        if at_node:
            detail.validations.append(_validation(event))
        entry_attempt = detail.entered_by_attempt
        if entry_attempt is not None and event.data.attemptId == entry_attempt:
            detail.entry_validation = _validation(event)
    elif not at_node:
        return
    elif isinstance(event, NodeOutputAppended):
        payload = event.data.payload
        if payload.payloadKind == "notes":
            detail.notes.append(payload.notesMarkdown)
        else:
            detail.artifacts.append(_artifact(event.data.outputId, payload))
    elif isinstance(event, DecisionTraceAppended):
        for entry in event.data.entries:
            refs = tuple(_ref_text(r.model_dump(mode="json")) for r in entry.refs or ())
            detail.trace.append(TraceDetail(event.eventIndex, entry.kind, entry.summary, refs))
    elif isinstance(event, GapRecorded):
        data = event.data
        detail.gaps.append(
            GapDetail(data.severity, data.reason.category, data.summary, data.reason.detail)
        )


def _artifact(output_id: str, payload: ArtifactRefPayload) -> ArtifactDetail:
    """An artifact output, its inline content (if it has one) pretty-printed."""
    content = (
        json.dumps(payload.content, indent=2, ensure_ascii=False)
        if "content" in payload.model_fields_set
        else None
    )
    return ArtifactDetail(
        output_id, payload.contentType, payload.byteLength, payload.sha256, content
    )


METRICS_PREFIX: Final = "metrics_"


def _metrics(index: SessionIndex, view: SessionView) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for run in view.runs:
        values = {
            k: v for k, v in index.run_context(run.run_id).items() if k.startswith(METRICS_PREFIX)
        }
        if values:
            found[run.run_id] = dict(sorted(values.items()))
    return found


def _context_at(index: SessionIndex, node_id: str, run_id: str) -> dict[str, Any]:
    """The run context the agent worked with at this node: as it stood when the first
    advance from the node was recorded, or the run's current context while none was."""
    leaving = [
        e.eventIndex
        for e in index.advance_into.values()
        if e.scope is not None and e.scope.nodeId == node_id
    ]
    if leaving:
        return index.context_before(run_id, min(leaving))
    return index.run_context(run_id)


def _complete_node(
    source: InspectSource, compiled_cache: CompiledCache, view: SessionView, detail: NodeDetail
) -> None:
    """The parts that need the snapshot and pinned-workflow stores: state, blockers and
    the rendered prompt of the node's pending step."""
    run = next((r for r in view.runs if r.run_id == detail.run_id), None)
    shown = run.nodes.get(detail.node_id) if run is not None else None
    if shown is not None:
        detail.state, detail.step_id = shown.state, shown.step_id
    snapshot = _snapshot(source.snapshots, detail.snapshot_ref)
    if snapshot is None:
        detail.prompt_problem = "the node's execution snapshot is missing or unreadable"
        return
    if isinstance(snapshot.state, BlockedState):
        detail.block = _block(snapshot.state)
    pending = pending_instance(snapshot)
    if pending is None:
        return
    compiled = compiled_cache.compiled(source.pinned, detail.workflow_hash)
    if isinstance(compiled, Uncompiled):
        detail.prompt_problem = _prompt_problem(compiled, detail.workflow_hash)
        return
    try:
        rendered = render_pending(compiled, pending, detail.context)
    except Exception as exc:  # a display must never fail on one odd step
        detail.prompt_problem = f"the prompt cannot be rendered ({type(exc).__name__})"
        return
    detail.prompt = PromptDetail(rendered.step_id, rendered.title, rendered.prompt)


def _ref_text(ref: dict[str, Any]) -> str:
    kind = str(ref.get("kind", ""))
    value = next((v for k, v in ref.items() if k != "kind"), "")
    return f"{kind.replace('_id', '')}: {value}"


def _observations(events: Sequence[DomainEvent]) -> dict[str, str]:
    found: dict[str, str] = {}
    for event in events:
        if isinstance(event, ObservationRecorded):
            found[event.data.key] = event.data.value.value
        elif event.kind not in ("session_created", "observation_recorded"):
            break  # observations are recorded at the start of a session
    return found


def inspect_session(
    source: InspectSource,
    session_id: str,
    node_id: str | None = None,
    *,
    all_states: bool = True,
    compiled: CompiledCache | None = None,
) -> SessionInspection:
    """One session with its events and, when `node_id` is given, that node's detail.
    `all_states=False` reads the state of the tips only (enough for the status).
    `compiled` is the engine's cache of compiled workflows (a fresh one without it)."""
    compiled_cache = CompiledCache() if compiled is None else compiled
    checked = source.sessions.health(session_id)
    if not isinstance(checked, Success):
        return _unreadable(session_id, checked.failure(), node_id)
    health = checked.unwrap()
    view = SessionView(
        session_id, health.to_json(), 0, session_activity(source.sessions, session_id), []
    )

    def project(index: SessionIndex, events: tuple[DomainEvent, ...]) -> SessionInspection:
        view.event_count = len(events)
        view.runs = project_runs(index)
        found = SessionInspection(view, events, _observations(events))
        found.metrics = _metrics(index, view)
        if node_id is not None:
            found.node = _node_detail(index, events, view, node_id)
            found.node_known = found.node is not None
        return found

    def finish(found: SessionInspection) -> SessionInspection:
        tips = None if all_states else {t for r in found.view.runs for t in r.tips}
        fill_states(source.snapshots, found.view.runs, tips)
        if found.node is not None:
            _complete_node(source, compiled_cache, found.view, found.node)
        return found

    if health.is_healthy:

        def from_log(log: SessionLog) -> SessionInspection:
            return project(log.index, tuple(log.events))

        read = source.sessions.read(session_id, from_log)
        if isinstance(read, Success):
            healthy: SessionInspection = read.unwrap()
            return finish(healthy)
    index, events = _replayed_prefix(source.sessions, session_id)
    view.prefix_only = True
    return finish(project(index, events))


def _unreadable(session_id: str, error: StoreError, node_id: str | None) -> SessionInspection:
    """A session whose health cannot even be read: shown as unreadable, with why."""
    view = SessionView(
        session_id,
        {"kind": "unreadable", "reason": {"code": error.code, "message": error.message}},
        0,
        None,
        [],
    )
    return SessionInspection(view, (), {}, None, node_id is None)


def _replayed_prefix(
    sessions: SessionStore, session_id: str
) -> tuple[SessionIndex, tuple[DomainEvent, ...]]:
    """The validated prefix of an unhealthy session and the index replayed from it."""
    prefix = sessions.load_prefix(session_id)
    events: tuple[DomainEvent, ...] = prefix.unwrap().events if isinstance(prefix, Success) else ()
    index = SessionIndex()
    try:
        for event in events:
            index.apply(event)
    except ProjectionError:
        index = SessionIndex()  # a prefix whose DAG does not replay shows no runs, only events
    return index, events
