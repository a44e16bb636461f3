"""The keyring row: one key for every replica, first writer wins, rotation in one
transaction, and a damaged row reported, never replaced."""

from __future__ import annotations

import threading

import psycopg
from returns.result import Failure

from tests.store.postgres.conftest import OpenBackend
from workrail.core.keyring import Keyring


def test_replicas_creating_the_keyring_at_once_share_one_key(
    open_backend: OpenBackend, postgres_url: str
) -> None:
    from workrail.store.postgres import open_postgres_backend

    backends = [open_postgres_backend(postgres_url).unwrap() for _ in range(6)]
    barrier = threading.Barrier(len(backends))
    keys: list[Keyring] = []

    def load(index: int) -> None:
        barrier.wait()
        keys.append(backends[index].keyring.load().unwrap())

    threads = [threading.Thread(target=load, args=(i,)) for i in range(len(backends))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    for backend in backends:
        backend.close()
    assert len(keys) == 6 and len(set(keys)) == 1 and keys[0].previous is None


def test_rotation_is_seen_by_every_replica(open_backend: OpenBackend) -> None:
    one, two = open_backend(), open_backend()
    first = one.keyring.load().unwrap()
    rotated = two.keyring.rotate().unwrap()
    assert rotated.previous == first.current and rotated.current != first.current
    assert one.keyring.load().unwrap() == rotated


def test_concurrent_rotations_happen_one_after_the_other(open_backend: OpenBackend) -> None:
    backends = [open_backend() for _ in range(4)]
    start = backends[0].keyring.load().unwrap()
    results: list[Keyring] = []
    threads = [
        threading.Thread(target=lambda b=b: results.append(b.keyring.rotate().unwrap()))
        for b in backends
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    chain = {r.previous: r.current for r in results}
    current, steps = start.current, 0
    while current in chain:
        current, steps = chain[current], steps + 1
    assert steps == 4 and backends[0].keyring.load().unwrap().current == current


def test_a_damaged_keyring_row_is_reported(postgres_url: str) -> None:
    from workrail.store.postgres import open_postgres_backend

    backend = open_postgres_backend(postgres_url).unwrap()
    try:
        backend.keyring.load().unwrap()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("UPDATE workrail_keyring SET document = %s", (b'{"v":2}',))
        for result in (backend.keyring.load(), backend.keyring.rotate()):
            assert isinstance(result, Failure) and result.failure().code == "KEYRING_CORRUPT"
        with psycopg.connect(postgres_url) as conn:
            row = conn.execute("SELECT document FROM workrail_keyring").fetchone()
        assert row is not None and bytes(row[0]) == b'{"v":2}'
    finally:
        backend.close()
