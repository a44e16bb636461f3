"""The backend-neutral append rules, as pure functions."""

from __future__ import annotations

import pytest

from tests.store.plans import Chain, advance_plan, new_id
from workrail.core.append import (
    Admitted,
    AppendPlan,
    PartialOverlap,
    admit,
    manifest_group,
    plan_problem,
    recorded_events,
    segment_bytes,
)
from workrail.core.canonical import sha256_digest
from workrail.core.manifest import SegmentClosed, SnapshotPinned
from workrail.core.session_index import SessionIndex


def _indexed(plan: AppendPlan) -> SessionIndex:
    index = SessionIndex()
    for event in plan.events:
        index.apply(event)
    return index


def test_a_fully_recorded_plan_is_a_replay_and_a_partial_one_is_refused() -> None:
    chain = Chain()
    start = chain.start()
    index = _indexed(start)
    assert recorded_events(index.dedupe, start.events, start) == start.events
    fresh = chain.advance()
    assert recorded_events(index.dedupe, start.events, fresh) is None
    mixed = AppendPlan((start.events[0], *fresh.events), ())
    with pytest.raises(PartialOverlap):
        recorded_events(index.dedupe, start.events, mixed)


def test_plan_problems_name_what_is_wrong() -> None:
    chain = Chain()
    start = chain.start()
    empty = SessionIndex()
    assert plan_problem(empty, 0, chain.sess, start) is None
    assert plan_problem(empty, 0, chain.sess, AppendPlan((), ())) == "empty append plan"
    assert "expected 1" in (plan_problem(empty, 1, chain.sess, start) or "")
    assert "wrong sessionId" in (plan_problem(empty, 0, new_id("sess"), start) or "")
    assert "no snapshot pin" in (
        plan_problem(empty, 0, chain.sess, AppendPlan(start.events, ())) or ""
    )
    index = _indexed(start)
    dangling = advance_plan(
        chain.sess, chain.run, 3, new_id("node"), new_id("node"), new_id("attempt")
    )
    assert "unknown parent" in (plan_problem(index, 3, chain.sess, dangling) or "")
    assert plan_problem(index, 3, chain.sess, chain.advance()) is None


def test_the_manifest_group_attests_the_segment_then_each_sorted_pin() -> None:
    chain = Chain()
    plan = chain.start()
    segment = segment_bytes(plan)
    group = manifest_group(chain.sess, 7, plan, segment)
    closed = group[0]
    assert isinstance(closed, SegmentClosed)
    assert (closed.manifestIndex, closed.firstEventIndex, closed.lastEventIndex) == (7, 0, 2)
    assert closed.segmentRelPath == "events/00000000-00000002.jsonl"
    assert closed.sha256 == sha256_digest(segment)
    assert closed.bytes == len(segment)
    pins = group[1:]
    assert all(isinstance(p, SnapshotPinned) for p in pins)
    assert [p.manifestIndex for p in pins] == list(range(8, 8 + len(plan.pins)))
    assert segment.count(b"\n") == len(plan.events)
    assert segment.endswith(b"\n")


def test_admit_answers_a_replay_the_rows_to_write_or_why_not() -> None:
    """What a store of rows does with a plan: one decision, shared by PostgreSQL and
    memory, whose lines are exactly the file backend's segment."""
    chain = Chain()
    start = chain.start()
    admitted = admit(SessionIndex(), [], 0, chain.sess, start)
    assert isinstance(admitted, Admitted)
    assert b"".join(line + b"\n" for line in admitted.lines) == segment_bytes(start)
    assert admitted.records == manifest_group(chain.sess, 0, start, segment_bytes(start))
    index = _indexed(start)
    assert admit(index, start.events, len(admitted.records), chain.sess, start) == start.events
    mixed = AppendPlan((start.events[0], *chain.advance().events), ())
    assert "partially overlaps" in str(admit(index, start.events, 2, chain.sess, mixed))
    assert isinstance(admit(SessionIndex(), [], 0, new_id("sess"), start), str)
