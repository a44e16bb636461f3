"""Versioned migrations: run once however many replicas start at once; a schema newer than
the code is refused."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import psycopg
import pytest
from returns.result import Failure, Success

from workrail.cli import main
from workrail.core.canonical import digest_file_name
from workrail.core.snapshot_state import _parsed
from workrail.engine.sessions_view import load_session, node_state
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
    assert len(results) == 8
    assert all(isinstance(r, Success) for r in results)
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
    assert f"version {LATEST + 1}" in message
    assert "upgrade WorkRail" in message
    with psycopg.connect(postgres_url) as conn:
        count = conn.execute(f"SELECT count(*) FROM {VERSION_TABLE}").fetchone()
    assert count is not None
    assert count[0] == len(MIGRATIONS) + 1


def test_reopening_changes_nothing(postgres_url: str) -> None:
    for _ in range(2):
        open_postgres_backend(postgres_url).unwrap().close()
    with psycopg.connect(postgres_url) as conn:
        count = conn.execute(f"SELECT count(*) FROM {VERSION_TABLE}").fetchone()
    assert count is not None
    assert count[0] == len(MIGRATIONS)


STATES_VERSION = next(m.version for m in MIGRATIONS if "state_kind" in m.sql)
"""The migration that added the snapshot state columns."""


def test_a_database_from_before_snapshot_states_answers_them_from_the_bodies(
    postgres_url: str, reference_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reference sessions moved into a database from before the state columns, as a
    version before them left it: after the upgrade every node's state is what its
    snapshot says, and reading them writes nothing."""
    assert main(["migrate", "--from", str(reference_data), "--to", postgres_url]) == 0
    capsys.readouterr()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "ALTER TABLE workrail_snapshots DROP COLUMN state_kind, DROP COLUMN pending_step"
        )
        conn.execute(f"DELETE FROM {VERSION_TABLE} WHERE version >= %s", (STATES_VERSION,))
    sessions = sorted(p.name for p in (reference_data / "sessions").iterdir())
    backend = open_postgres_backend(postgres_url).unwrap()
    try:
        with psycopg.connect(postgres_url) as conn:
            before = conn.execute(
                "SELECT md5(string_agg(t::text, '' ORDER BY ref)) FROM workrail_snapshots t"
            ).fetchone()
            unrecorded = conn.execute(
                "SELECT count(*) FROM workrail_snapshots WHERE state_kind IS NULL"
            ).fetchone()
        assert unrecorded is not None
        assert unrecorded[0] > 0
        for sid in sessions:
            nodes = [n for run in load_session(backend, sid).runs for n in run.nodes.values()]
            assert nodes, sid
            for node in nodes:
                path = reference_data / "snapshots" / digest_file_name(node.snapshot_ref)
                raw = json.loads(path.read_bytes())
                # `done` is a pending snapshot an accepted output has left
                said = "pending" if node.state == "done" else node.state
                assert (said, node.step_id) == node_state(_parsed(raw)), node.node_id
        with psycopg.connect(postgres_url) as conn:
            after = conn.execute(
                "SELECT md5(string_agg(t::text, '' ORDER BY ref)) FROM workrail_snapshots t"
            ).fetchone()
        assert after == before, "reading states never writes"
    finally:
        backend.close()
