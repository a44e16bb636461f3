"""The append rules every session store obeys, as pure functions.

A backend only stores and fetches; what may be appended is decided here, so the file store
and the PostgreSQL store refuse exactly the same plans and record exactly the same manifest
facts (spec 10-storage §3–§4): a plan is contiguous with the log, belongs to the session,
has unique dedupe keys, keeps the run DAG valid and pins a snapshot for every node it
creates; a plan whose dedupe keys are all recorded is a no-op, a partly recorded one is
refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workrail.core.canonical import CanonicalJsonError, canonical_bytes, jsonl_line, sha256_digest
from workrail.core.events import DomainEvent, EdgeCreated, NodeCreated
from workrail.core.manifest import ManifestRecord, SegmentClosed, SnapshotPinned, segment_rel_path
from workrail.core.session_index import SessionIndex


@dataclass(frozen=True, order=True)
class SnapshotPin:
    """`snapshot_pinned` input: sorts by (snapshotRef, eventIndex, createdByEventId)."""

    snapshot_ref: str
    event_index: int
    created_by_event_id: str


@dataclass(frozen=True)
class AppendPlan:
    """Everything one use case writes: complete events (contiguous indices) and their pins."""

    events: tuple[DomainEvent, ...]
    pins: tuple[SnapshotPin, ...]


class PartialOverlap(ValueError):
    """Some, but not all, of a plan's dedupe keys are already recorded."""


def recorded_events(
    dedupe: Mapping[str, int], events: Sequence[DomainEvent], plan: AppendPlan
) -> tuple[DomainEvent, ...] | None:
    """The events already recorded for `plan` when every key is present (a replay, to be
    answered without writing); None when none is. Raises `PartialOverlap` otherwise."""
    found = [dedupe.get(e.dedupeKey) for e in plan.events]
    if all(i is None for i in found):
        return None
    if any(i is None for i in found):
        raise PartialOverlap("append plan partially overlaps events already recorded")
    return tuple(events[i] for i in found if i is not None)


def plan_problem(index: SessionIndex, count: int, session_id: str, plan: AppendPlan) -> str | None:
    """Why `plan` may not follow a log of `count` events indexed by `index`, or None.

    Spec 10-storage §4 step 5, plus DAG and pin checks, so a plan can never turn a healthy
    session into a corrupt one.
    """
    if not plan.events:
        return "empty append plan"
    nodes: dict[str, NodeCreated] = {}
    keys: set[str] = set()
    for offset, event in enumerate(plan.events):
        if event.eventIndex != count + offset:
            return f"Invalid domain event at index {event.eventIndex}: expected {count + offset}"
        if event.sessionId != session_id:
            return f"Invalid domain event at index {event.eventIndex}: wrong sessionId"
        if event.dedupeKey in keys:
            return f"duplicate dedupeKey in plan: {event.dedupeKey}"
        keys.add(event.dedupeKey)
        if isinstance(event, NodeCreated):
            parent = event.data.parentNodeId
            if parent is not None and parent not in nodes and parent not in index.nodes:
                return f"node {event.node_id} names an unknown parent {parent}"
            nodes[event.node_id] = event
        elif isinstance(event, EdgeCreated):
            child = nodes.get(event.data.toNodeId) or index.nodes.get(event.data.toNodeId)
            known = event.data.fromNodeId in nodes or event.data.fromNodeId in index.nodes
            if child is None or not known:
                return f"edge {event.data.fromNodeId}->{event.data.toNodeId} names a missing node"
            if child.data.parentNodeId != event.data.fromNodeId:
                return "edge disagrees with the child's parentNodeId"
    first, last = plan.events[0].eventIndex, plan.events[-1].eventIndex
    pinned = {(p.event_index, p.created_by_event_id, p.snapshot_ref) for p in plan.pins}
    for pin in plan.pins:
        if not first <= pin.event_index <= last:
            return f"pin for event {pin.event_index} lies outside the plan"
    for node in nodes.values():
        if (node.eventIndex, node.eventId, node.data.snapshotRef) not in pinned:
            return f"node_created at {node.eventIndex} has no snapshot pin"
    return None


@dataclass(frozen=True)
class Admitted:
    """A plan a store may write: each event's canonical line (without its newline) and the
    manifest records that attest them."""

    lines: tuple[bytes, ...]
    records: list[ManifestRecord]


def admit(
    index: SessionIndex,
    events: Sequence[DomainEvent],
    manifest_count: int,
    session_id: str,
    plan: AppendPlan,
) -> tuple[DomainEvent, ...] | Admitted | str:
    """What a store that keeps one row per event and per manifest record does with `plan`
    on a log of `events` (indexed by `index`, attested by `manifest_count` records): the
    events already recorded (a replay, nothing to write), the rows to write, or why the
    plan is refused."""
    try:
        existing = recorded_events(index.dedupe, events, plan)
    except PartialOverlap as exc:
        return str(exc)
    if existing is not None:
        return existing
    problem = plan_problem(index, len(events), session_id, plan)
    if problem is not None:
        return problem
    try:
        lines = tuple(canonical_bytes(e.to_json()) for e in plan.events)
    except CanonicalJsonError as exc:
        return str(exc)
    segment = b"".join(line + b"\n" for line in lines)
    return Admitted(lines, manifest_group(session_id, manifest_count, plan, segment))


def segment_bytes(plan: AppendPlan) -> bytes:
    """The plan's events as one JSONL segment of canonical lines (raises
    `CanonicalJsonError` for a value JCS cannot represent)."""
    return b"".join(jsonl_line(e.to_json()) for e in plan.events)


def manifest_group(
    session_id: str, manifest_index: int, plan: AppendPlan, segment: bytes
) -> list[ManifestRecord]:
    """The manifest records that attest one append: its `segment_closed`, then one
    `snapshot_pinned` per pin in sorted order, numbered from `manifest_index`."""
    first, last = plan.events[0].eventIndex, plan.events[-1].eventIndex
    records: list[ManifestRecord] = [
        SegmentClosed(
            v=1,
            manifestIndex=manifest_index,
            sessionId=session_id,
            kind="segment_closed",
            firstEventIndex=first,
            lastEventIndex=last,
            segmentRelPath=segment_rel_path(first, last),
            sha256=sha256_digest(segment),
            bytes=len(segment),
        )
    ]
    for offset, pin in enumerate(sorted(plan.pins), start=manifest_index + 1):
        records.append(
            SnapshotPinned(
                v=1,
                manifestIndex=offset,
                sessionId=session_id,
                kind="snapshot_pinned",
                eventIndex=pin.event_index,
                snapshotRef=pin.snapshot_ref,
                createdByEventId=pin.created_by_event_id,
            )
        )
    return records
