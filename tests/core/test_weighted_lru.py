"""The doubly bounded cache: oldest out first, by weight and by count, newest always kept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from workrail.core.weighted_lru import WeightedLru


def test_the_oldest_go_first_and_a_read_counts_as_use() -> None:
    cache: WeightedLru[str] = WeightedLru(max_weight=10, max_entries=3)
    for key in "abc":
        cache.put(key, key.upper(), 1)
    assert cache.get("a") == "A"
    cache.put("d", "D", 1)
    assert "b" not in cache
    assert all(k in cache for k in "acd")
    cache.put("e", "E", 9)  # 12 > 10: c, then a, go
    assert len(cache) == 2
    assert "d" in cache
    assert cache.held_weight == 10
    cache.put("f", "F", 11)  # heavier than the bound: kept alone
    assert len(cache) == 1
    assert cache.get("f") == "F"
    assert cache.held_weight == 11
    cache.forget("f")
    assert len(cache) == 0
    assert cache.held_weight == 0


@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 40)), max_size=60))
def test_bounds_hold_after_any_sequence_of_puts(puts: list[tuple[str, int]]) -> None:
    cache: WeightedLru[int] = WeightedLru(max_weight=50, max_entries=4)
    for key, weight in puts:
        cache.put(key, weight, weight)
        assert cache.get(key) == weight  # the newest is always kept
        assert len(cache) <= 4
        assert len(cache) == 1 or cache.held_weight <= 50
