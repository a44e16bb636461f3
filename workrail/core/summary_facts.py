"""What the summary projection reads beyond the events, and the two steps that gather it:
`needs(index)` names the tip snapshots and pinned workflows to look up, and the shell
answers with `tip_state_of`/`workflow_facts_of` of each, put together in `SessionFacts`.

Both readers are lenient: a summary must never fail on a snapshot or a workflow's shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from returns.result import Success

from workrail.core.events import DomainEvent
from workrail.core.health import SessionHealth
from workrail.core.lifecycle import SessionLifecycle
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.snapshot import BlockedState, CompleteState, RunningState, parse_snapshot

TipKind = Literal["init", "running", "blocked", "complete", "missing", "invalid"]


@dataclass(frozen=True)
class TipState:
    """What a tip's execution snapshot says (missing/invalid when it cannot be read)."""

    kind: TipKind
    pending_step_id: str | None = None
    completed_step_ids: frozenset[str] = frozenset()
    completed_keys: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    """The snapshot's completed StepInstanceKeys, checked (the step ids' set itself when
    no key is in a loop): a tip that holds them too checks only the keys it adds."""


def tip_state_of(snapshot: Mapping[str, Any] | None, like: TipState | None = None) -> TipState:
    """What a summary shows of a snapshot. Everything but the completed keys is validated
    as `parse_snapshot` would; the keys (one per completed step, so O(session)) are checked
    at C speed for type and alphabet only, since a summary counts them and the engine
    checks their order whenever it loads the snapshot to act on it. `like` is a state
    read before (the parent tip's, one step behind): the keys it holds were checked then,
    so an advance checks the one key it added, not every key again."""
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
        done = _completed_steps(keys, like)
        if done is None:
            return TipState("invalid")
        pending = parsed_state.pending_step
        if pending is not None and pending.key in done.keys:
            return TipState("invalid")
        kind: TipKind = "blocked" if isinstance(parsed_state, BlockedState) else "running"
        step_id = None if pending is None else pending.step_id
        return TipState(kind, step_id, done.step_ids, done.keys)
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


def _completed_steps(values: list[Any], like: TipState | None) -> _Completed | None:
    """The completed keys and their step ids, or None when a key is not a valid key; the
    keys `like` holds are known valid."""
    try:
        keys = frozenset(values)
    except TypeError:
        return None
    known = like.completed_keys if like is not None else frozenset()
    fresh = keys - known if known else keys
    try:
        joined = "\n".join(fresh)
    except TypeError:
        return None
    if fresh and (
        joined.count("\n") != len(fresh) - 1 or _KEYS_RE.fullmatch(joined + "\n") is None
    ):
        return None
    if "::" not in joined and (like is None or _plain(like)):
        return _Completed(keys, keys)
    return _Completed(keys, frozenset(key.rsplit("::", 1)[-1] for key in keys))


def _plain(state: TipState) -> bool:
    """No completed key of `state` is in a loop (each key is its step id)."""
    ids, keys = state.completed_step_ids, state.completed_keys
    return ids is keys or ids == keys


@dataclass(frozen=True)
class WorkflowFacts:
    """The parts of a pinned workflow a summary shows: its name and its steps' titles."""

    name: str
    step_titles: Mapping[str, str]
    step_ids: frozenset[str] = field(init=False, compare=False, repr=False)
    """The titled step ids as a set, made once per workflow: a summary counts the steps
    done against it at each append."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "step_ids", frozenset(self.step_titles))


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
    parents: Mapping[str, str] = field(default_factory=dict)
    """A tip snapshot's ref → its node's parent's snapshot ref (the `like` of
    `tip_state_of`: a step behind, it holds all but the keys the advance added)."""


def needs(index: SessionIndex) -> Needs:
    refs: set[str] = set()
    hashes: set[str] = set()
    parents: dict[str, str] = {}
    for run_id, run in index.runs.items():
        hashes.add(run.started.data.workflowHash)
        try:
            tip = index.preferred_tip(run_id)
        except ProjectionError:
            tip = None
        if tip is not None:
            data = index.nodes[tip].data
            refs.add(data.snapshotRef)
            parent = None if data.parentNodeId is None else index.nodes.get(data.parentNodeId)
            if parent is not None:
                parents[data.snapshotRef] = parent.data.snapshotRef
    return Needs(frozenset(refs), frozenset(hashes), parents)


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
