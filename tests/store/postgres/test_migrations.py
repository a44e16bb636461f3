"""Versioned migrations: run once however many replicas start at once; a schema newer than
the code is refused."""

from __future__ import annotations

import threading

import psycopg
from returns.result import Failure, Success

from workrail.store.postgres import open_postgres_backend
from workrail.store.postgres.migrations import LATEST, MIGRATIONS, VERSION_TABLE


def test_replicas_starting_at_once_migrate_exactly_once(postgres_url: str) -> None:
    results: list[object] = []
    barrier = threading.Barrier(8)

    def start() -> None:
        barrier.wait()
        results.append(open_postgres_backend(postgres_url))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 8 and all(isinstance(r, Success) for r in results)
    for result in results:
        result.unwrap().close()  # type: ignore[attr-defined]
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(f"SELECT version FROM {VERSION_TABLE} ORDER BY version").fetchall()
    assert [r[0] for r in rows] == [m.version for m in MIGRATIONS]


def test_a_newer_schema_is_refused_and_left_alone(postgres_url: str) -> None:
    open_postgres_backend(postgres_url).unwrap().close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {VERSION_TABLE} (version, description) VALUES (%s, 'from the future')",
            (LATEST + 1,),
        )
    opened = open_postgres_backend(postgres_url)
    assert isinstance(opened, Failure)
    message = opened.failure().message
    assert f"version {LATEST + 1}" in message and "upgrade WorkRail" in message
    with psycopg.connect(postgres_url) as conn:
        count = conn.execute(f"SELECT count(*) FROM {VERSION_TABLE}").fetchone()
    assert count is not None and count[0] == len(MIGRATIONS) + 1


def test_reopening_changes_nothing(postgres_url: str) -> None:
    for _ in range(2):
        open_postgres_backend(postgres_url).unwrap().close()
    with psycopg.connect(postgres_url) as conn:
        count = conn.execute(f"SELECT count(*) FROM {VERSION_TABLE}").fetchone()
    assert count is not None and count[0] == len(MIGRATIONS)
