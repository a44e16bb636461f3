"""What the summary projection reads beyond the events, and the two steps that gather it:
`needs(index)` names the tip snapshots and pinned workflows to look up, and the shell
answers with `tip_state_of`/`workflow_facts_of` of each, put together in `SessionFacts`.

Both readers are lenient: a summary must never fail on a snapshot or a workflow's shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
