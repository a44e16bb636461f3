"""The decoded-content cache both backends' content stores keep."""

from __future__ import annotations

import threading

from workrail.store.content_cache import ContentCache


def test_bounded_by_bytes_and_entries_oldest_out_first() -> None:
    cache = ContentCache(max_bytes=100, max_entries=3)
    for n in range(3):
        cache.put(f"r{n}", {"n": n}, 30)
    assert [f"r{n}" in cache for n in range(3)] == [True, True, True]
    assert cache.get("r0") == {"n": 0}  # now the newest
    cache.put("r3", {"n": 3}, 30)  # a fourth entry: the oldest (r1) goes
    assert "r1" not in cache
    assert "r0" in cache
    assert len(cache) == 3
    cache.put("r4", {"n": 4}, 80)  # over the bytes: everything older goes
    assert len(cache) == 1
    assert cache.held_bytes == 80


def test_the_newest_object_is_kept_even_when_larger_than_the_bound() -> None:
    cache = ContentCache(max_bytes=10)
    cache.put("huge", {"x": 1}, 1_000)
    assert cache.get("huge") == {"x": 1}
    assert cache.held_bytes == 1_000


def test_replacing_and_forgetting_keep_the_byte_count_exact() -> None:
    cache = ContentCache(max_bytes=1_000)
    cache.put("a", {}, 100)
    cache.put("a", {}, 40)
    cache.put("b", {}, 10)
    assert cache.held_bytes == 50
    cache.forget("a")
    cache.forget("missing")
    assert cache.held_bytes == 10
    assert len(cache) == 1


def test_threads_sharing_one_cache_keep_it_consistent() -> None:
    cache = ContentCache(max_bytes=500, max_entries=20)
    barrier = threading.Barrier(8)

    def work(t: int) -> None:
        barrier.wait()
        for n in range(2_000):
            ref = f"r{(t * 7 + n) % 60}"
            cache.put(ref, {"n": n}, 5 + n % 20)
            cache.get(f"r{n % 60}")
            if n % 11 == 0:
                cache.forget(ref)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(cache) <= 20
    assert 0 <= cache.held_bytes <= 500
    assert cache.held_bytes == sum(size for _, size in cache._items.values())
