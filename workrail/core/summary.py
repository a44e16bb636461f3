"""The session summary: one pure projection of a session's events (plus the snapshots at
its tips, its pinned workflows and its lifecycle record) into what lists, search, resume
and the console show.

Pure and versioned: an index of summaries is a disposable cache of this function, so a
stored summary of another `PROJECTION_VERSION` is rebuilt, never trusted. Projection
happens in two steps so the shell fetches only what is needed: `needs(index)` names the
snapshot refs and workflow hashes to look up, `summarize(...)` folds the answers in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from returns.result import Success

from workrail.core.budgets import truncate_utf8
from workrail.core.events import (
    DomainEvent,
    GapRecorded,
    NodeOutputAppended,
    ObservationRecorded,
)
from workrail.core.health import HealthKind, SessionHealth
from workrail.core.lifecycle import SessionLifecycle
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.snapshot import BlockedState, CompleteState, RunningState, parse_snapshot
from workrail.core.text import first_line, normalise, tokens

PROJECTION_VERSION: Final = 1
"""Bump whenever `summarize` would answer differently for the same input."""

RunStatus = Literal["in_progress", "blocked", "complete", "complete_with_gaps"]
RUN_STATUSES: Final[tuple[RunStatus, ...]] = (
    "in_progress",
    "blocked",
    "complete",
    "complete_with_gaps",
)

TITLE_KEYS: Final = (
    "goal",
    "taskDescription",
    "task",
    "prTitle",
    "ticketTitle",
    "title",
    "problem",
    "objective",
)
"""Run context keys that name what a session is about, in order of preference."""

TITLE_MAX: Final = 120
SNIPPET_MAX_BYTES: Final = 1024
CORPUS_MAX_TOKENS: Final = 4000
"""Search text kept per session (newest notes win when a session says more)."""

BLOCKING_GAP_CATEGORIES: Final = frozenset(
    {"user_only_dependency", "contract_violation", "capability_missing"}
)

TipKind = Literal["init", "running", "blocked", "complete", "missing", "invalid"]


@dataclass(frozen=True)
class TipState:
    """What a tip's execution snapshot says (missing/invalid when it cannot be read)."""

    kind: TipKind
    pending_step_id: str | None = None
    completed_step_ids: frozenset[str] = frozenset()


def tip_state_of(snapshot: Mapping[str, Any] | None) -> TipState:
    if snapshot is None:
        return TipState("missing")
    parsed = parse_snapshot(snapshot)
    if not isinstance(parsed, Success):
        return TipState("invalid")
    state = parsed.unwrap().state
    if isinstance(state, CompleteState):
        return TipState("complete")
    if isinstance(state, RunningState | BlockedState):
        pending = state.pending_step
        done = frozenset(key.rsplit("::", 1)[-1] for key in state.completed.values)
        kind: TipKind = "blocked" if isinstance(state, BlockedState) else "running"
        return TipState(kind, None if pending is None else pending.step_id, done)
    return TipState("init")


@dataclass(frozen=True)
class WorkflowFacts:
    """The parts of a pinned workflow a summary shows: its name and its steps' titles."""

    name: str
    step_titles: Mapping[str, str]


def workflow_facts_of(envelope: Mapping[str, Any] | None) -> WorkflowFacts | None:
    """Read a pinned envelope leniently: a summary must never fail on a workflow shape."""
    if envelope is None:
        return None
    definition = envelope.get("definition")
    name = envelope.get("name")
    if not isinstance(definition, dict):
        return None
    if not isinstance(name, str):
        name = str(definition.get("name", ""))
    titles: dict[str, str] = {}
    steps = definition.get("steps")
    for step in steps if isinstance(steps, list) else ():
        if not isinstance(step, dict):
            continue
        body = step.get("body") if step.get("type") == "loop" else None
        members = body if isinstance(body, list) else [] if body is not None else [step]
        if isinstance(body, str):
            titles.setdefault(body, body)
        for member in members:
            if isinstance(member, dict) and isinstance(member.get("id"), str):
                titles[member["id"]] = str(member.get("title") or member["id"])
    return WorkflowFacts(name, titles)


@dataclass(frozen=True)
class Needs:
    """What `summarize` wants looked up: tip snapshots and pinned workflows."""

    snapshot_refs: frozenset[str]
    workflow_hashes: frozenset[str]


def needs(index: SessionIndex) -> Needs:
    refs: set[str] = set()
    hashes: set[str] = set()
    for run_id, run in index.runs.items():
        hashes.add(run.started.data.workflowHash)
        tip = _preferred_tip(index, run_id)
        if tip is not None:
            refs.add(index.nodes[tip].data.snapshotRef)
    return Needs(frozenset(refs), frozenset(hashes))


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    workflow_id: str
    workflow_hash: str
    workflow_name: str
    status: RunStatus
    preferred_tip: str | None
    tip_activity: int
    """The preferred tip's last-activity event index (spec 70 §2 score)."""
    pending_step_id: str | None
    pending_step_title: str | None
    steps_done: int
    steps_known: int
    snippet: str
    """The newest notes on the preferred tip's path, at most 1 KiB (marker included)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "workflowId": self.workflow_id,
            "workflowHash": self.workflow_hash,
            "workflowName": self.workflow_name,
            "status": self.status,
            "preferredTipNodeId": self.preferred_tip,
            "tipActivity": self.tip_activity,
            "pendingStep": _pending_json(self.pending_step_id, self.pending_step_title),
            "progress": {"done": self.steps_done, "known": self.steps_known},
            "snippet": self.snippet,
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> RunSummary:
        pending = raw.get("pendingStep") or {}
        return RunSummary(
            run_id=raw["runId"],
            workflow_id=raw["workflowId"],
            workflow_hash=raw["workflowHash"],
            workflow_name=raw["workflowName"],
            status=raw["status"],
            preferred_tip=raw["preferredTipNodeId"],
            tip_activity=raw["tipActivity"],
            pending_step_id=pending.get("stepId"),
            pending_step_title=pending.get("title"),
            steps_done=raw["progress"]["done"],
            steps_known=raw["progress"]["known"],
            snippet=raw["snippet"],
        )


@dataclass(frozen=True)
class SessionSummary:
    session_id: str
    runs: tuple[RunSummary, ...]
    title: str | None
    health: HealthKind | Literal["unreadable"]
    archived: bool
    event_count: int
    last_activity: datetime | None
    workspace_path: str | None
    repo_root_hash: str | None
    git_branch: str | None
    git_head_sha: str | None
    corpus: str = field(repr=False, default="")
    """Normalised search tokens (title, notes), space-separated, newest notes kept."""

    @property
    def primary(self) -> RunSummary | None:
        """The run a person means: the most recently active one."""
        return self.runs[0] if self.runs else None

    @property
    def status(self) -> RunStatus:
        return self.primary.status if self.primary is not None else "in_progress"

    @property
    def workflow_id(self) -> str | None:
        return self.primary.workflow_id if self.primary is not None else None

    @property
    def workflow_name(self) -> str | None:
        return self.primary.workflow_name if self.primary is not None else None

    @property
    def is_healthy(self) -> bool:
        return self.health == "healthy"

    @property
    def display_title(self) -> str:
        return self.title or self.workflow_name or self.workflow_id or "(no runs)"

    def to_json(self) -> dict[str, Any]:
        """The wire form (console, `--json`), without the search corpus."""
        primary = self.primary
        return {
            "sessionId": self.session_id,
            "title": self.title,
            "status": self.status,
            "archived": self.archived,
            "health": self.health,
            "workflowId": self.workflow_id,
            "workflowName": self.workflow_name,
            "pendingStep": _pending_json(
                primary.pending_step_id if primary else None,
                primary.pending_step_title if primary else None,
            ),
            "progress": {
                "done": primary.steps_done if primary else 0,
                "known": primary.steps_known if primary else 0,
            },
            "eventCount": self.event_count,
            "lastActivity": _iso(self.last_activity),
            "workspacePath": self.workspace_path,
            "repoRootHash": self.repo_root_hash,
            "gitBranch": self.git_branch,
            "gitHeadSha": self.git_head_sha,
            "runs": [r.to_json() for r in self.runs],
        }

    def to_record(self) -> dict[str, Any]:
        """`to_json` plus what an index stores to answer later (version, corpus)."""
        return {**self.to_json(), "v": PROJECTION_VERSION, "corpus": self.corpus}

    @staticmethod
    def from_record(raw: Mapping[str, Any]) -> SessionSummary | None:
        """None for a record of another projection version (it must be rebuilt)."""
        if raw.get("v") != PROJECTION_VERSION:
            return None
        stamp = raw.get("lastActivity")
        return SessionSummary(
            session_id=raw["sessionId"],
            runs=tuple(RunSummary.from_json(r) for r in raw["runs"]),
            title=raw["title"],
            health=raw["health"],
            archived=raw["archived"],
            event_count=raw["eventCount"],
            last_activity=None if stamp is None else datetime.fromisoformat(stamp),
            workspace_path=raw["workspacePath"],
            repo_root_hash=raw["repoRootHash"],
            git_branch=raw["gitBranch"],
            git_head_sha=raw["gitHeadSha"],
            corpus=raw.get("corpus", ""),
        )


def _pending_json(step_id: str | None, title: str | None) -> dict[str, Any] | None:
    return None if step_id is None else {"stepId": step_id, "title": title or step_id}


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    """Inverse of the wire form of `lastActivity`."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- the projection --------------------------------------------------------------------


@dataclass(frozen=True)
class SessionFacts:
    """Everything `summarize` reads; the shell gathers it, nothing here does I/O."""

    session_id: str
    events: Sequence[DomainEvent]
    index: SessionIndex | None
    """None when the events do not replay into a DAG (an unhealthy prefix)."""
    health: SessionHealth | None
    """None when the store could not even say (unreadable)."""
    last_activity: datetime | None
    lifecycle: SessionLifecycle
    tips: Mapping[str, TipState]
    """By snapshot ref."""
    workflows: Mapping[str, WorkflowFacts]
    """By workflow hash."""


def replay(events: Sequence[DomainEvent]) -> SessionIndex | None:
    """A fresh index over `events` (a prefix of an unhealthy session), None if it fails."""
    index = SessionIndex()
    try:
        for event in events:
            index.apply(event)
    except ProjectionError:
        return None
    return index


def summarize(facts: SessionFacts) -> SessionSummary:
    index = facts.index
    runs: list[RunSummary] = []
    gaps = _unresolved_critical_gaps(facts.events)
    if index is not None:
        for run_id in index.runs:
            runs.append(_run_summary(index, run_id, facts, gaps.get(run_id, ())))
    # most recently active first; a later-started run wins a tie
    order = {run_id: n for n, run_id in enumerate(index.runs if index else ())}
    runs.sort(key=lambda r: (r.tip_activity, order[r.run_id]), reverse=True)
    observations = _latest_observations(facts.events)
    title = _title(index, runs, facts.events)
    health: HealthKind | Literal["unreadable"] = (
        "unreadable" if facts.health is None else facts.health.kind
    )
    return SessionSummary(
        session_id=facts.session_id,
        runs=tuple(runs),
        title=title,
        health=health,
        archived=facts.lifecycle.archived,
        event_count=len(facts.events),
        last_activity=facts.last_activity,
        workspace_path=facts.lifecycle.workspace_path,
        repo_root_hash=observations.get("repo_root_hash"),
        git_branch=observations.get("git_branch"),
        git_head_sha=observations.get("git_head_sha"),
        corpus=_corpus(title, index, runs),
    )


def _preferred_tip(index: SessionIndex, run_id: str) -> str | None:
    try:
        return index.preferred_tip(run_id)
    except ProjectionError:
        return None


def _run_summary(
    index: SessionIndex, run_id: str, facts: SessionFacts, gaps: Sequence[GapRecorded]
) -> RunSummary:
    run = index.runs[run_id]
    started = run.started.data
    workflow = facts.workflows.get(started.workflowHash)
    tip = _preferred_tip(index, run_id)
    state = TipState("missing")
    activity = run.started.eventIndex
    if tip is not None:
        node = index.nodes[tip]
        state = facts.tips.get(node.data.snapshotRef, TipState("missing"))
        activity = max(index.last_activity[n] for n in index.ancestors(tip))
    known_titles = workflow.step_titles if workflow is not None else {}
    known = len(known_titles)
    if state.kind == "complete":
        done = known
    elif known:
        done = len(state.completed_step_ids & known_titles.keys())
    else:
        done = len(state.completed_step_ids)
    pending = state.pending_step_id
    notes = _path_notes(index, tip) if tip is not None else []
    return RunSummary(
        run_id=run_id,
        workflow_id=started.workflowId,
        workflow_hash=started.workflowHash,
        workflow_name=(workflow.name if workflow is not None else "") or started.workflowId,
        status=_status(index, run_id, tip, state, gaps),
        preferred_tip=tip,
        tip_activity=activity,
        pending_step_id=pending,
        pending_step_title=None if pending is None else known_titles.get(pending, pending),
        steps_done=done,
        steps_known=max(known, done),
        snippet=truncate_utf8(notes[-1], SNIPPET_MAX_BYTES) if notes else "",
    )


def _status(
    index: SessionIndex,
    run_id: str,
    tip: str | None,
    state: TipState,
    gaps: Sequence[GapRecorded],
) -> RunStatus:
    """Spec 70 §7: complete(-with-gaps) at the preferred tip, else blocked, else in progress."""
    if state.kind == "complete":
        return "complete_with_gaps" if gaps else "complete"
    autonomy = index.runs[run_id].preferences.get("autonomy", "guided")
    if autonomy == "full_auto_never_stop":
        return "in_progress"
    blocked_tip = tip is not None and (
        index.nodes[tip].data.nodeKind == "blocked_attempt" or state.kind == "blocked"
    )
    blocking_gap = any(g.data.reason.category in BLOCKING_GAP_CATEGORIES for g in gaps)
    return "blocked" if blocked_tip or blocking_gap else "in_progress"


def _unresolved_critical_gaps(events: Sequence[DomainEvent]) -> dict[str, list[GapRecorded]]:
    """Spec 70 §6, per run: the latest record per gapId, minus those another resolves."""
    latest: dict[str, GapRecorded] = {}
    resolved: set[str] = set()
    for event in events:
        if isinstance(event, GapRecorded):
            latest[event.data.gapId] = event
            target = event.data.resolution.resolvesGapId
            if event.data.resolution.kind == "resolves" and target:
                resolved.add(target)
    out: dict[str, list[GapRecorded]] = {}
    for gap_id, gap in sorted(latest.items(), key=lambda kv: (kv[1].eventIndex, kv[0])):
        data = gap.data
        if data.resolution.kind == "unresolved" and data.severity == "critical":
            if gap_id not in resolved:
                out.setdefault(gap.run_id, []).append(gap)
    return out


def _latest_observations(events: Sequence[DomainEvent]) -> dict[str, str]:
    found: dict[str, tuple[int, str]] = {}
    for event in events:
        if isinstance(event, ObservationRecorded):
            key = event.data.key
            if key not in found or found[key][0] <= event.eventIndex:
                found[key] = (event.eventIndex, event.data.value.value)
    return {key: value for key, (_, value) in found.items()}


def _path_notes(index: SessionIndex, tip: str) -> list[str]:
    """Current recap notes on the root → tip path, oldest first (superseded ones left out)."""
    try:
        path = list(reversed(index.ancestors(tip)))
    except ProjectionError:
        return []
    notes: list[str] = []
    for node_id in path:
        outputs: Sequence[NodeOutputAppended] = index.outputs.get(node_id, ())
        superseded = {o.data.supersedesOutputId for o in outputs if o.data.supersedesOutputId}
        for output in outputs:
            payload = output.data.payload
            if payload.payloadKind == "notes" and output.data.outputId not in superseded:
                notes.append(payload.notesMarkdown)
    return notes


def _title(
    index: SessionIndex | None, runs: Sequence[RunSummary], events: Sequence[DomainEvent]
) -> str | None:
    if index is not None:
        for run in runs:
            context = index.run_context(run.run_id)
            for key in TITLE_KEYS:
                value = context.get(key)
                if isinstance(value, str) and value.strip():
                    return first_line(value, TITLE_MAX) or None
    for event in events:
        if isinstance(event, NodeOutputAppended) and event.data.payload.payloadKind == "notes":
            line = first_line(event.data.payload.notesMarkdown, TITLE_MAX)
            if line:
                return line
    return None


def _corpus(title: str | None, index: SessionIndex | None, runs: Sequence[RunSummary]) -> str:
    """Title, workflow names and every run's path notes as normalised tokens, the newest
    notes kept when the session says more than CORPUS_MAX_TOKENS."""
    head: list[str] = tokens(title or "")
    for run in runs:
        head.extend(tokens(f"{run.workflow_id} {run.workflow_name}"))
    body: list[str] = []
    if index is not None:
        for run in runs:
            if run.preferred_tip is None:
                continue
            for notes in reversed(_path_notes(index, run.preferred_tip)):
                body.extend(tokens(notes))
                if len(head) + len(body) >= CORPUS_MAX_TOKENS:
                    break
    kept = head + body[: max(0, CORPUS_MAX_TOKENS - len(head))]
    return " ".join(kept)


def matches_text(summary: SessionSummary, query: str) -> bool:
    """Every query token in the summary's corpus or ids (what the index's text filter
    answers; kept here so every backend agrees)."""
    wanted = set(tokens(query))
    if not wanted:
        return True
    have = set(summary.corpus.split())
    have.add(normalise(summary.session_id))
    return wanted <= have
