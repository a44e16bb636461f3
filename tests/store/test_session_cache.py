"""The shared session cache keeps its bounds and its event count exact as entries come,
grow and go."""

from __future__ import annotations

from dataclasses import dataclass

from workrail.store.local.session_cache import SessionCache


@dataclass
class Entry:
    event_count: int


def test_least_recently_used_sessions_go_first() -> None:
    cache: SessionCache[Entry] = SessionCache(max_sessions=2, max_events=100)
    a, b, c = Entry(1), Entry(1), Entry(1)
    cache.remember("a", a)
    cache.remember("b", b)
    assert cache.get("a") is a  # now "b" is the least recently used
    cache.remember("c", c)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (a, None, c)
    assert len(cache) == 2
    assert cache.held_events == 2


def test_the_event_bound_evicts_but_keeps_one_large_session() -> None:
    cache: SessionCache[Entry] = SessionCache(max_sessions=10, max_events=10)
    cache.remember("a", Entry(4))
    cache.remember("b", Entry(4))
    assert cache.held_events == 8
    cache.remember("big", Entry(50))
    assert cache.get("a") is None
    assert cache.get("b") is None
    assert len(cache) == 1
    assert cache.held_events == 50


def test_an_entry_that_grew_is_counted_again_not_twice() -> None:
    cache: SessionCache[Entry] = SessionCache(max_sessions=10, max_events=100)
    entry = Entry(3)
    cache.remember("a", entry)
    entry.event_count = 9  # appended to in place, then remembered again
    cache.remember("a", entry)
    assert cache.held_events == 9
    cache.forget("a")
    cache.forget("a")
    assert cache.held_events == 0
    assert len(cache) == 0
