"""Event-log filters: query values parsed leniently (malformed ones dropped with a notice),
"blocked only" picks out every event of a blocked attempt."""

from __future__ import annotations

from pathlib import Path

from tests.console.scenarios import forked_blocked_looped
from tests.engine.conftest import make_engine
from workrail.console.event_log import PAGE_SIZE, page_of, parse_filter
from workrail.core.events import DomainEvent
from workrail.store.local.backend import LocalBackend


def _events(data_dir: Path) -> list[DomainEvent]:
    sid = forked_blocked_looped(make_engine(data_dir))
    return list(LocalBackend.open(data_dir).sessions.load_prefix(sid).unwrap().events)


def test_good_values_are_taken_and_bad_ones_noticed() -> None:
    wanted = parse_filter({"since": "5", "limit": "20", "blocked": "1"}, ["node_created"])
    assert wanted.kinds == {"node_created"}
    assert wanted.blocked_only
    assert (wanted.since, wanted.limit, wanted.notices) == (5, 20, ())
    bad = parse_filter({"since": "-1", "limit": "0", "blocked": "yes"}, ["nope", ""])
    assert (bad.kinds, bad.blocked_only, bad.since, bad.limit) == (frozenset(), False, 0, PAGE_SIZE)
    assert len(bad.notices) == 4
    huge = parse_filter({"since": "9" * 400}, [])
    assert huge.since == 0
    assert "between" in huge.notices[0]
    assert len(parse_filter({}, ["x" * 10_000]).notices[0]) < 120


def test_query_round_trips() -> None:
    wanted = parse_filter({"since": "7", "blocked": "1"}, ["edge_created", "node_created"])
    assert wanted.query() == "kind=edge_created&kind=node_created&blocked=1&since=7"
    assert wanted.query(since=0) == "kind=edge_created&kind=node_created&blocked=1"


def test_blocked_only_and_paging(data_dir: Path) -> None:
    events = _events(data_dir)
    blocked = page_of(events, parse_filter({"blocked": "1"}, []))
    # The block itself, in log order; what the retry from the blocked node recorded later
    # (its passing validation, notes, artifact, decisions) is not part of it.
    assert [r.kind for r in blocked.rows] == [
        "advance_recorded",
        "validation_performed",
        "node_created",
        "edge_created",
    ]
    assert all(r.blocked for r in blocked.rows)
    assert blocked.total == len(events)
    first = page_of(events, parse_filter({"limit": "10"}, []))
    assert [r.index for r in first.rows] == list(range(10))
    assert first.next_since == 10
    last = page_of(events, parse_filter({"since": str(len(events) - 3)}, []))
    assert len(last.rows) == 3
    assert last.next_since is None
    assert page_of(events, parse_filter({"since": str(len(events) + 5)}, [])).rows == []
