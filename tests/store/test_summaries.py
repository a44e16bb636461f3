"""The projector's caches of immutable content stay bounded by what they hold."""

from __future__ import annotations

from workrail.core.summary_facts import TipState
from workrail.core.weighted_lru import WeightedLru
from workrail.store.summaries import TIP_CACHE_WEIGHT, tip_weight


def tip(steps: int) -> TipState:
    return TipState("running", "next", frozenset(f"s{i}" for i in range(steps)))


def test_tip_states_are_bounded_by_the_steps_they_hold() -> None:
    """A long session leaves a tip state per step, each holding every step done before
    it: counted per entry they filled memory quadratically (2,000 steps: over 100 MB)."""
    cache: WeightedLru[TipState] = WeightedLru(TIP_CACHE_WEIGHT, TIP_CACHE_WEIGHT)
    for n in range(2_000):
        cache.put(f"ref{n}", tip(n), tip_weight(tip(n)))
    held = [cache.get(f"ref{n}") for n in range(2_000)]
    kept = [t for t in held if t is not None]
    assert sum(1 + len(t.completed_step_ids) for t in kept) <= TIP_CACHE_WEIGHT
    assert held[-1] == tip(1_999)
    assert held[0] is None


def test_many_small_tips_all_fit_and_the_least_recently_used_goes_first() -> None:
    cache: WeightedLru[TipState] = WeightedLru(8, 8)
    for n in range(4):
        cache.put(f"ref{n}", tip(1), tip_weight(tip(1)))  # weight 2 each: exactly full
    assert all(cache.get(f"ref{n}") is not None for n in (1, 2, 3, 0))  # ref0 used last
    cache.put("ref4", tip(1), tip_weight(tip(1)))
    assert cache.get("ref1") is None
    assert cache.get("ref0") is not None
    cache.put("big", tip(20), tip_weight(tip(20)))  # heavier than the whole budget: kept alone
    assert cache.get("big") is not None
    assert len(cache) == 1
    cache.put("big", tip(0), tip_weight(tip(0)))  # replacing a value re-weighs it
    cache.put("ref5", tip(1), tip_weight(tip(1)))
    assert cache.get("big") is not None
    assert cache.get("ref5") is not None
