"""The session summary: one pure projection of a session's events (plus the snapshots at
its tips, its pinned workflows and its lifecycle record) into what lists, search, resume
and the console show.

Pure and versioned: an index of summaries is a disposable cache of this function, so a
stored summary of another `PROJECTION_VERSION` is rebuilt, never trusted. Projection
happens in two steps so the shell fetches only what is needed: `needs(index)` names the
snapshot refs and workflow hashes to look up, `summarize(...)` folds the answers in.
"""

from __future__ import annotations

import re
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

PROJECTION_VERSION: Final = 3
"""Bump whenever `summarize` would answer differently for the same input. 2: the corpus is
the set of distinct tokens over whole notes; tip snapshots are read without re-checking
the collation of their completed set. 3: tokens are trimmed of `-`/`_` and compounds add
their parts (`--verbose` is found by `verbose`); titles are plain text (no Markdown marks)."""

RunStatus = Literal["in_progress", "blocked", "complete", "complete_with_gaps"]
RUN_STATUSES: Final[tuple[RunStatus, ...]] = (
    "in_progress",
    "blocked",
    "complete",
    "complete_with_gaps",
)
STATUS_ALIASES: Final[dict[str, RunStatus]] = {
    "pending": "in_progress",
    "running": "in_progress",
    "active": "in_progress",
    "completed": "complete",
    "done": "complete",
}
"""Words people and older output used for a status (`sessions show` said `pending` for a
run whose step waits), accepted wherever a status is asked for."""


def status_word(text: str) -> RunStatus | None:
    """The run status `text` names: a status (any case, `-` or a space for `_`, as the
    console prints them) or an alias of one; None when it names none."""
    word = "_".join(text.strip().lower().replace("-", " ").replace("_", " ").split())
    for status in RUN_STATUSES:
        if status == word:
            return status
    return STATUS_ALIASES.get(word)


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
"""Search text kept per session, counted with repeats: whole notes, newest first, while
they fit (newest notes win when a session says more)."""

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
    """What a summary shows of a snapshot. Everything but the completed keys is validated
    as `parse_snapshot` would; the keys (one per completed step, so O(session)) are checked
    at C speed for type and alphabet only, since a summary counts them and the engine
    checks their order whenever it loads the snapshot to act on it."""
    if snapshot is None:
        return TipState("missing")
    state = _state_of(snapshot)
    values: Any = None
    if isinstance(state, dict) and state.get("kind") in ("running", "blocked"):
        completed = state.get("completed")
        if isinstance(completed, dict) and isinstance(completed.get("values"), list):
            values = completed["values"]
            # validate the rest of the snapshot with an empty completed set
            snapshot = _with_state(snapshot, {**state, "completed": {**completed, "values": []}})
    parsed = parse_snapshot(snapshot)
    if not isinstance(parsed, Success):
        return TipState("invalid")
    parsed_state = parsed.unwrap().state
    if isinstance(parsed_state, CompleteState):
        return TipState("complete")
    if isinstance(parsed_state, RunningState | BlockedState):
        keys: list[str] = values if values is not None else list(parsed_state.completed.values)
        done = _completed_steps(keys)
        if done is None:
            return TipState("invalid")
        pending = parsed_state.pending_step
        if pending is not None and pending.key in done.keys:
            return TipState("invalid")
        kind: TipKind = "blocked" if isinstance(parsed_state, BlockedState) else "running"
        return TipState(kind, None if pending is None else pending.step_id, done.step_ids)
    return TipState("init")


def _state_of(snapshot: Mapping[str, Any]) -> Any:
    payload = snapshot.get("enginePayload")
    return payload.get("engineState") if isinstance(payload, dict) else None


def _with_state(snapshot: Mapping[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    payload = snapshot["enginePayload"]
    return {**snapshot, "enginePayload": {**payload, "engineState": state}}


@dataclass(frozen=True)
class _Completed:
    keys: frozenset[str]
    step_ids: frozenset[str]


_KEYS_RE: Final = re.compile(r"(?:[a-z0-9_@/:-]+\n)*")


def _completed_steps(values: list[Any]) -> _Completed | None:
    """The completed keys and their step ids, or None when a key is not a valid key."""
    try:
        joined = "\n".join(values)
    except TypeError:
        return None
    if values and (
        joined.count("\n") != len(values) - 1 or _KEYS_RE.fullmatch(joined + "\n") is None
    ):
        return None
    keys = frozenset(values)
    if "::" not in joined:
        return _Completed(keys, keys)
    return _Completed(keys, frozenset(key.rsplit("::", 1)[-1] for key in values))


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
        try:
            tip = index.preferred_tip(run_id)
        except ProjectionError:
            tip = None
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
    words: frozenset[str] = field(repr=False, default=frozenset())
    """The search corpus: normalised tokens of the title, workflow and newest notes."""

    @property
    def corpus(self) -> str:
        """The corpus as text: its words sorted, space-separated."""
        return " ".join(sorted(self.words))

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

    def to_record(self, *, corpus: bool = True) -> dict[str, Any]:
        """`to_json` plus what an index stores to answer later (version, corpus). A store
        that keeps the corpus as terms of its own leaves it out (it costs a sort)."""
        record = {**self.to_json(), "v": PROJECTION_VERSION}
        if corpus:
            record["corpus"] = self.corpus
        return record

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
            words=frozenset(str(raw.get("corpus", "")).split()),
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
    """The projection's definition, from scratch: O(session). Stores keep summaries with
    `SummaryAccumulator` instead, which must answer exactly this (a property test says so)."""
    index = facts.index
    runs: list[RunSummary] = []
    gaps = _unresolved_critical_gaps(facts.events)
    if index is not None:
        for run_id in index.runs:
            tip = _preferred_tip(index, run_id)
            activity = index.runs[run_id].started.eventIndex
            if tip is not None:
                activity = max(index.last_activity[n] for n in index.ancestors(tip))
            notes = _path_notes(index, tip) if tip is not None else []
            found = gaps.get(run_id, ())
            runs.append(
                run_summary(
                    index,
                    run_id,
                    tip,
                    activity,
                    facts,
                    gaps=bool(found),
                    blocking_gap=any(
                        g.data.reason.category in BLOCKING_GAP_CATEGORIES for g in found
                    ),
                    newest_notes=notes[-1] if notes else None,
                )
            )
    sort_runs(index, runs)
    observations = _latest_observations(facts.events)
    title = session_title(index, runs, _first_notes_line(facts.events))
    return session_summary(
        facts,
        runs,
        title,
        event_count=len(facts.events),
        observations=observations,
        words=_corpus(title, index, runs),
    )


def sort_runs(index: SessionIndex | None, runs: list[RunSummary]) -> None:
    """Most recently active first; a later-started run wins a tie."""
    order = {run_id: n for n, run_id in enumerate(index.runs if index else ())}
    runs.sort(key=lambda r: (r.tip_activity, order[r.run_id]), reverse=True)


def session_summary(
    facts: SessionFacts,
    runs: Sequence[RunSummary],
    title: str | None,
    *,
    event_count: int,
    observations: Mapping[str, str],
    words: frozenset[str],
) -> SessionSummary:
    health: HealthKind | Literal["unreadable"] = (
        "unreadable" if facts.health is None else facts.health.kind
    )
    return SessionSummary(
        session_id=facts.session_id,
        runs=tuple(runs),
        title=title,
        health=health,
        archived=facts.lifecycle.archived,
        event_count=event_count,
        last_activity=facts.last_activity,
        workspace_path=facts.lifecycle.workspace_path,
        repo_root_hash=observations.get("repo_root_hash"),
        git_branch=observations.get("git_branch"),
        git_head_sha=observations.get("git_head_sha"),
        words=words,
    )


def _preferred_tip(index: SessionIndex, run_id: str) -> str | None:
    try:
        return index.preferred_tip_by_scoring(run_id)
    except ProjectionError:
        return None


def run_summary(
    index: SessionIndex,
    run_id: str,
    tip: str | None,
    activity: int,
    facts: SessionFacts,
    *,
    gaps: bool,
    blocking_gap: bool,
    newest_notes: str | None,
) -> RunSummary:
    """One run's summary from what the projection found: its preferred tip, that tip's
    activity score, whether unresolved critical gaps (blocking ones) remain, and the
    newest notes on the tip's path."""
    run = index.runs[run_id]
    started = run.started.data
    workflow = facts.workflows.get(started.workflowHash)
    state = TipState("missing")
    if tip is not None:
        state = facts.tips.get(index.nodes[tip].data.snapshotRef, TipState("missing"))
    known_titles = workflow.step_titles if workflow is not None else {}
    known = len(known_titles)
    if state.kind == "complete":
        done = known
    elif known:
        done = len(state.completed_step_ids & known_titles.keys())
    else:
        done = len(state.completed_step_ids)
    pending = state.pending_step_id
    return RunSummary(
        run_id=run_id,
        workflow_id=started.workflowId,
        workflow_hash=started.workflowHash,
        workflow_name=(workflow.name if workflow is not None else "") or started.workflowId,
        status=_status(index, run_id, tip, state, gaps, blocking_gap),
        preferred_tip=tip,
        tip_activity=activity,
        pending_step_id=pending,
        pending_step_title=None if pending is None else known_titles.get(pending, pending),
        steps_done=done,
        steps_known=max(known, done),
        snippet="" if newest_notes is None else truncate_utf8(newest_notes, SNIPPET_MAX_BYTES),
    )


def _status(
    index: SessionIndex,
    run_id: str,
    tip: str | None,
    state: TipState,
    gaps: bool,
    blocking_gap: bool,
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
        critical = data.resolution.kind == "unresolved" and data.severity == "critical"
        if critical and gap_id not in resolved:
            out.setdefault(gap.run_id, []).append(gap)
    return out


OBSERVATION_KEYS: Final = ("repo_root_hash", "git_branch", "git_head_sha")
"""The workspace observations a summary shows."""


def _latest_observations(events: Sequence[DomainEvent]) -> dict[str, str]:
    found: dict[str, tuple[int, str]] = {}
    for event in events:
        if isinstance(event, ObservationRecorded):
            key = event.data.key
            if key not in found or found[key][0] <= event.eventIndex:
                found[key] = (event.eventIndex, event.data.value.value)
    return {key: value for key, (_, value) in found.items() if key in OBSERVATION_KEYS}


def current_notes(outputs: Sequence[NodeOutputAppended]) -> list[str]:
    """A node's current recap notes in output order (superseded ones left out)."""
    superseded = {o.data.supersedesOutputId for o in outputs if o.data.supersedesOutputId}
    notes: list[str] = []
    for output in outputs:
        payload = output.data.payload
        if payload.payloadKind == "notes" and output.data.outputId not in superseded:
            notes.append(payload.notesMarkdown)
    return notes


def _path_notes(index: SessionIndex, tip: str) -> list[str]:
    """Current recap notes on the root → tip path, oldest first (superseded ones left out)."""
    try:
        path = list(reversed(index.ancestors(tip)))
    except ProjectionError:
        return []
    notes: list[str] = []
    for node_id in path:
        notes.extend(current_notes(index.outputs.get(node_id, ())))
    return notes


def notes_line(event: DomainEvent) -> str | None:
    """The title a notes output offers when no context names the session."""
    if isinstance(event, NodeOutputAppended) and event.data.payload.payloadKind == "notes":
        return first_line(event.data.payload.notesMarkdown, TITLE_MAX) or None
    return None


def _first_notes_line(events: Sequence[DomainEvent]) -> str | None:
    for event in events:
        line = notes_line(event)
        if line:
            return line
    return None


def session_title(
    index: SessionIndex | None, runs: Sequence[RunSummary], first_notes_line: str | None
) -> str | None:
    if index is not None:
        for run in runs:
            context = index.run_context(run.run_id)
            for key in TITLE_KEYS:
                value = context.get(key)
                if isinstance(value, str) and value.strip():
                    return first_line(value, TITLE_MAX) or None
    return first_notes_line


def corpus_head(title: str | None, runs: Sequence[RunSummary]) -> list[str]:
    """The tokens every corpus starts with: the title and each run's workflow id and name."""
    head: list[str] = tokens(title or "")
    for run in runs:
        head.extend(tokens(f"{run.workflow_id} {run.workflow_name}"))
    return head


def _corpus(
    title: str | None, index: SessionIndex | None, runs: Sequence[RunSummary]
) -> frozenset[str]:
    """The distinct tokens of the head and of every run's path notes — whole notes, newest
    first, runs in order — while the tokens counted stay within CORPUS_MAX_TOKENS."""
    head = corpus_head(title, runs)
    words = set(head)
    room = CORPUS_MAX_TOKENS - len(head)
    if index is not None:
        for run in runs:
            if run.preferred_tip is None:
                continue
            for notes in reversed(_path_notes(index, run.preferred_tip)):
                found = tokens(notes)
                if len(found) > room:
                    return frozenset(words)
                room -= len(found)
                words.update(found)
    return frozenset(words)


def matches_text(summary: SessionSummary, query: str) -> bool:
    """Every query token in the summary's corpus or ids (what the index's text filter
    answers; kept here so every backend agrees)."""
    wanted = set(tokens(query))
    if not wanted:
        return True
    return wanted - {normalise(summary.session_id), *tokens(summary.session_id)} <= summary.words
