"""Snapshots and pinned workflows in tables: the file CAS's bytes, verified on read."""

from __future__ import annotations

import psycopg
import pytest
from returns.result import Failure, Success

from tests.store.postgres.conftest import OpenBackend
from tests.workflow.wf_helpers import running_doc
from workrail.core.canonical import canonical_bytes, canonical_digest
from workrail.core.snapshot_state import INVALID, SnapshotState


@pytest.mark.parametrize("table", ["snapshots", "pinned"])
def test_put_get_and_damage(open_backend: OpenBackend, module_db_url: str, table: str) -> None:
    value = {"label": table, "n": [1, 2.5, "é"]}
    store = getattr(open_backend(), table)
    ref = store.put(value).unwrap()
    assert ref == canonical_digest(value)
    assert store.put(value) == Success(ref)  # idempotent
    assert getattr(open_backend(), table).get(ref) == Success(value)
    name, key = (
        ("workrail_snapshots", "ref")
        if table == "snapshots"
        else ("workrail_pinned_workflows", "workflow_hash")
    )
    with psycopg.connect(module_db_url, autocommit=True) as conn:
        stored = conn.execute(f"SELECT body FROM {name} WHERE {key} = %s", (ref,)).fetchone()
        assert stored is not None
        assert bytes(stored[0]) == canonical_bytes(value)
        conn.execute(f"UPDATE {name} SET body = %s WHERE {key} = %s", (b'{"label":"x"}', ref))
    damaged = getattr(open_backend(), table).get(ref)
    assert isinstance(damaged, Failure)
    assert "does not match" in damaged.failure().message
    repaired = open_backend()
    assert getattr(repaired, table).put(value) == Success(ref)
    assert getattr(open_backend(), table).get(ref) == Success(value)


def test_absent_and_malformed_refs(pg_backend: object) -> None:
    snapshots = pg_backend.snapshots  # type: ignore[attr-defined]
    assert snapshots.get("sha256:" + "0" * 64) == Success(None)
    bad = snapshots.get("../../etc/passwd")
    assert isinstance(bad, Failure)
    assert bad.failure().code == "INVALID_REFERENCE"
    unstorable = snapshots.put({"x": float("nan")})
    assert isinstance(unstorable, Failure)


def test_the_decoded_cache_is_bounded_by_bytes_newest_kept(open_backend: OpenBackend) -> None:
    """As on files: past the byte bound the oldest objects go, never the newest, and what
    fell out is read back verified (the cache was once emptied whole at 4,096 objects
    whatever their size)."""
    from workrail.store.content_cache import CACHE_BYTES

    store = open_backend().snapshots
    big = "x" * (CACHE_BYTES // 8)
    refs = [store.put({"n": n, "pad": big}).unwrap() for n in range(12)]
    cache = store._cache
    assert cache.held_bytes <= CACHE_BYTES
    kept = [ref for ref in refs if ref in cache]
    assert kept == refs[-len(kept) :]
    assert len(kept) >= 6
    assert store.get(refs[0]).unwrap() == {"n": 0, "pad": big}


def test_states_of_rows_stored_before_they_were_recorded_come_from_the_bodies(
    open_backend: OpenBackend, module_db_url: str
) -> None:
    running = running_doc([], [], {"kind": "some", "step": {"stepId": "plan", "loopPath": []}})
    writer = open_backend().snapshots
    refs = [writer.put(running).unwrap(), writer.put({"probe": "old row"}).unwrap()]
    damaged = writer.put({"probe": "damaged old row"}).unwrap()
    with psycopg.connect(module_db_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE workrail_snapshots SET state_kind = NULL, pending_step = NULL "
            "WHERE ref = ANY(%s)",
            ([*refs, damaged],),
        )
        conn.execute(
            "UPDATE workrail_snapshots SET body = body || '\\x20'::bytea WHERE ref = %s",
            (damaged,),
        )
        before = conn.execute(
            "SELECT md5(string_agg(t::text, '')) FROM workrail_snapshots t"
        ).fetchone()
    states = open_backend().snapshots.states([*refs, damaged]).unwrap()
    assert states == {refs[0]: SnapshotState("running", "plan"), refs[1]: INVALID}
    with psycopg.connect(module_db_url, autocommit=True) as conn:
        after = conn.execute(
            "SELECT md5(string_agg(t::text, '')) FROM workrail_snapshots t"
        ).fetchone()
    assert after == before, "reading states never writes"


def test_states_when_the_database_is_gone_are_an_error(open_backend: OpenBackend) -> None:
    backend = open_backend()
    ref = "sha256:" + "1" * 64
    backend.close()
    failed = backend.snapshots.states([ref])
    assert isinstance(failed, Failure)
    assert failed.failure().code == "STORE_UNAVAILABLE"
