"""The in-process cache of parsed snapshots stays bounded by the keys it holds."""

from __future__ import annotations

from workrail.core.completed import CompletedKeys
from workrail.core.snapshot import ExecutionSnapshot, complete_snapshot, running_snapshot
from workrail.engine.loaded import _ParsedSnapshots


def _snapshot_with(n: int) -> tuple[str, ExecutionSnapshot]:
    snapshot = running_snapshot(CompletedKeys(f"s{i}" for i in range(n)), [], None)
    return snapshot.snapshot_ref(), snapshot


def test_a_long_session_cannot_keep_every_snapshot() -> None:
    """Step n's snapshot holds n keys: 2,000 steps by count alone held ~2 million."""
    cache = _ParsedSnapshots()
    refs = []
    for n in range(0, 2000, 10):
        ref, snapshot = _snapshot_with(n)
        cache.keep(ref, snapshot)
        refs.append(ref)
    kept = [(ref, got) for ref in refs if (got := cache.get(ref)) is not None]
    held = [ref for ref, _ in kept]
    total = sum(
        len(got.to_json()["enginePayload"]["engineState"]["completed"]["values"]) for _, got in kept
    )
    assert total <= _ParsedSnapshots.MAX_KEYS
    assert held == refs[-len(held) :]  # the newest are the ones kept
    assert cache.get(refs[-1]) is not None


def test_entries_are_bounded_and_recently_read_ones_survive() -> None:
    cache = _ParsedSnapshots()
    cache.max_entries = 3
    first = ("sha256:" + "0" * 64, complete_snapshot())
    cache.keep(*first)
    others = [(f"sha256:{i:064x}", complete_snapshot()) for i in range(1, 4)]
    cache.keep(*others[0])
    cache.keep(*others[1])
    assert cache.get(first[0]) is not None  # read: now the most recent
    cache.keep(*others[2])
    assert cache.get(first[0]) is not None
    assert cache.get(others[0][0]) is None


def test_one_snapshot_over_the_budget_is_still_kept() -> None:
    cache = _ParsedSnapshots()
    cache.max_weight = 5
    ref, snapshot = _snapshot_with(50)
    cache.keep(ref, snapshot)
    assert cache.get(ref) is snapshot
