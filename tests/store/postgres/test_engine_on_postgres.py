"""The engine's flows on PostgreSQL, and the same bytes as on files: the same calls with
the same ids give a session whose export is byte-identical to the export from files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from returns.result import Success

from tests.bundle.helpers import BUNDLE_ID, EXPORTED_AT
from tests.engine.conftest import counter_entropy, engine_over
from tests.engine.helpers import err, ok
from tests.store.postgres.conftest import OpenBackend
from workrail.bundle.export import bundle_bytes, export_session
from workrail.engine.api import Engine
from workrail.store.local.backend import LocalBackend
from workrail.store.ports import Backend


def walk(engine: Engine) -> str:
    """Start, advance, replay, fork, checkpoint, a blocked attempt and its retry."""
    r = ok(engine.start_workflow("probe-flow"))
    first = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="plan A"))
    assert ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="plan A")) == first
    fresh = ok(engine.rehydrate(r["stateToken"]))
    ok(engine.advance(r["stateToken"], fresh["ackToken"], notes_markdown="plan B"))
    ok(engine.checkpoint(first["checkpointToken"]))
    ok(engine.advance(first["stateToken"], first["ackToken"], notes_markdown="built A"))
    blocked = ok(engine.start_workflow("val-flow"))
    b = ok(engine.advance(blocked["stateToken"], blocked["ackToken"], notes_markdown="not yet"))
    assert b["kind"] == "blocked"
    ok(engine.advance(b["stateToken"], b["retryAckToken"], notes_markdown="DONE now"))
    return str(engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id)


def export_bytes(backend: Backend, session_id: str) -> bytes:
    bundle = export_session(
        backend, session_id, bundle_id=BUNDLE_ID, exported_at=EXPORTED_AT, app_version="0.1.0"
    ).unwrap()
    return bundle_bytes(bundle)


def test_export_from_postgres_is_byte_identical_to_files(
    open_backend: OpenBackend, data_dir: Path
) -> None:
    files = LocalBackend.open(data_dir)
    pg = open_backend()
    on_files = walk(engine_over(files, entropy=counter_entropy("same")))
    on_pg = walk(engine_over(pg, entropy=counter_entropy("same")))
    assert on_files == on_pg
    exported = export_bytes(pg, on_pg)
    assert exported == export_bytes(files, on_files)
    assert export_bytes(open_backend(), on_pg) == exported  # and from a cold cache


def _row_counts(url: str) -> tuple[Any, ...]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM workrail_events), (SELECT count(*) FROM "
            "workrail_manifest), (SELECT count(*) FROM workrail_snapshots), "
            "(SELECT sum(manifest_count) FROM workrail_sessions)"
        ).fetchone()
    assert row is not None
    return tuple(row)


def test_replays_and_rehydrates_write_nothing(
    open_backend: OpenBackend, module_db_url: str
) -> None:
    engine = engine_over(open_backend())
    r = ok(engine.start_workflow("probe-flow"))
    first = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    before = _row_counts(module_db_url)
    other = engine_over(open_backend())  # another replica with a cold cache
    assert ok(other.advance(r["stateToken"], r["ackToken"], notes_markdown="planned")) == first
    ok(other.rehydrate(first["stateToken"]))
    ok(engine.checkpoint(first["checkpointToken"]))
    after_checkpoint = _row_counts(module_db_url)
    ok(other.checkpoint(first["checkpointToken"]))
    assert _row_counts(module_db_url) == after_checkpoint != before


def test_tokens_from_one_replica_work_on_another(open_backend: OpenBackend) -> None:
    one, two = engine_over(open_backend()), engine_over(open_backend())
    r = ok(one.start_workflow("probe-flow"))
    nxt = ok(two.advance(r["stateToken"], r["ackToken"], notes_markdown="plan"))
    done = ok(one.advance(nxt["stateToken"], nxt["ackToken"], notes_markdown="built"))
    assert done["kind"] == "ok"
    assert err(two.rehydrate("st1.garbage")).code == "TOKEN_INVALID_FORMAT"


def test_many_concurrent_advances_never_starve_the_pool(module_db_url: str) -> None:
    """A write holds a connection and needs another for the snapshot it stores: with more
    writers than connections, each must still finish (none times out on the pool)."""
    import threading

    from workrail.store.postgres import open_postgres_backend

    backend = open_postgres_backend(module_db_url, pool_size=4, pool_wait=10.0).unwrap()
    try:
        engine = engine_over(backend)
        starts = [ok(engine.start_workflow("probe-flow")) for _ in range(8)]
        failures: list[object] = []
        barrier = threading.Barrier(len(starts))

        def advance(start: dict[str, Any]) -> None:
            barrier.wait()
            result = engine.advance(start["stateToken"], start["ackToken"], notes_markdown="x")
            if not isinstance(result, Success):
                failures.append(result)

        threads = [threading.Thread(target=advance, args=(s,)) for s in starts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert failures == []
    finally:
        backend.close()
