"""The backend contract for summaries, lifecycle, deletion and content listing against
PostgreSQL, plus the property test: what an append's transaction keeps equals a rebuild."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from tests.services.postgres import PostgresCluster
from tests.store.contract import BackendContract, ProjectionPropertyContract, engine_over
from tests.store.postgres.conftest import OpenBackend
from workrail.store.postgres import PostgresBackend, open_postgres_backend


def indexed_rows(backend: PostgresBackend) -> dict[str, dict[str, Any]]:
    """The summary rows as the append transactions left them."""
    with psycopg.connect(backend.database.url) as conn:
        rows = conn.execute(
            "SELECT s.session_id, s.projection, s.record, (SELECT array_agg(t.term ORDER BY "
            "t.term) FROM workrail_summary_terms t WHERE t.session_id = s.session_id) "
            "FROM workrail_summaries s"
        ).fetchall()
        runs = conn.execute("SELECT run_id, session_id FROM workrail_summary_runs").fetchall()
    out = {
        sid: {"projection": version, "record": json.loads(record), "terms": terms}
        for sid, version, record, terms in rows
    }
    for run_id, sid in runs:
        out[sid].setdefault("runs", []).append(run_id)
    for entry in out.values():
        entry.get("runs", []).sort()
    return out


def _one_session(url: str, goal: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """Start one probe-flow session with `goal` on `url`: its id and the summary rows."""
    backend = open_postgres_backend(url).unwrap()
    try:
        engine = engine_over(backend)
        r = engine.start_workflow("probe-flow", {"goal": goal}).unwrap()
        sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
        return sid, indexed_rows(backend)
    finally:
        backend.close()


class TestPostgresBackend(BackendContract, ProjectionPropertyContract):
    @pytest.fixture
    def backend(self, pg_backend: PostgresBackend) -> Any:
        return pg_backend

    @pytest.fixture
    def reopen_backend(self, open_backend: OpenBackend) -> Any:
        return open_backend

    @pytest.fixture
    def fresh_backend(self, postgres_cluster: PostgresCluster) -> Any:
        def one() -> PostgresBackend:
            url = postgres_cluster.url(postgres_cluster.create_database())
            return open_postgres_backend(url, pool_size=4).unwrap()

        return one

    @pytest.fixture
    def indexed(self) -> Any:
        return indexed_rows

    @pytest.fixture
    def damage_content(self, module_db_url: str) -> Any:
        def overwrite(ref: str) -> None:
            with psycopg.connect(module_db_url, autocommit=True) as conn:
                conn.execute(
                    "UPDATE workrail_snapshots SET body = body || '\\x20'::bytea WHERE ref = %s",
                    (ref,),
                )

        return overwrite


def test_a_database_from_before_summaries_gets_them_on_open(
    postgres_cluster: PostgresCluster,
) -> None:
    url = postgres_cluster.url(postgres_cluster.create_database())
    sid, kept = _one_session(url, "remember me")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM workrail_summaries")
    again = open_postgres_backend(url).unwrap()
    try:
        assert indexed_rows(again) == kept
        assert again.query.get([sid]).unwrap()[sid].title == "remember me"
    finally:
        again.close()


def test_a_database_whose_corpus_is_in_columns_is_upgraded_and_found_by_text(
    postgres_cluster: PostgresCluster,
) -> None:
    """A database at the schema before corpus terms (each summary's corpus, tokens and
    prefixes in columns of its row): the upgrade moves them to rows and search finds the
    sessions as before."""
    from workrail.store.ports import SessionFilter
    from workrail.store.postgres.migrations import MIGRATIONS, VERSION_TABLE

    terms = next(m.version for m in MIGRATIONS if "workrail_summary_terms (" in m.sql)
    url = postgres_cluster.url(postgres_cluster.create_database())
    sid, kept = _one_session(url, "Tune the tokenizer")
    with psycopg.connect(url, autocommit=True) as conn:  # back to the older schema
        conn.execute("DROP TABLE workrail_summary_terms")
        conn.execute(
            "ALTER TABLE workrail_summaries ADD COLUMN corpus text NOT NULL DEFAULT 'tokenizer', "
            "ADD COLUMN tokens text[] NOT NULL DEFAULT '{tokenizer}', "
            "ADD COLUMN prefixes text[] NOT NULL DEFAULT '{tok}'"
        )
        conn.execute(f"DELETE FROM {VERSION_TABLE} WHERE version >= %s", (terms,))
    again = open_postgres_backend(url).unwrap()
    try:
        assert indexed_rows(again) == kept
        assert kept[sid]["terms"]
        found = again.query.page(SessionFilter(text="tokenizer")).unwrap()
        assert [s.session_id for s in found.summaries] == [sid]
    finally:
        again.close()


def test_a_failed_append_leaves_no_summary(pg_backend: PostgresBackend) -> None:
    from tests.store.plans import Chain
    from workrail.store.ports import AppendPlan

    chain = Chain()
    start = chain.start()
    refused = pg_backend.sessions.write(
        chain.sess, lambda txn: txn.append(AppendPlan(start.events, ()))
    )
    assert refused.failure().code == "SESSION_STORE_INVARIANT_VIOLATION"
    assert dict(pg_backend.query.get([chain.sess]).unwrap()) == {}


def test_resume_session_ranks_the_same_on_postgres(pg_backend: PostgresBackend) -> None:
    from workrail.engine.resume import ResumeRequest

    engine = engine_over(pg_backend)
    starts = [
        engine.start_workflow("probe-flow", {"goal": goal}).unwrap()
        for goal in ("Tune the tokenizer on postgres", "Write the changelog")
    ]
    wanted = engine.deps.codec.parse_state(starts[0]["stateToken"]).unwrap().session_id
    found = engine.resume_session(ResumeRequest(query="tokenizer tuning postgres")).unwrap()
    best = found.candidates[0].to_json()
    assert best["sessionId"] == wanted
    assert "matched_fuzzy" in best["whyMatched"]
    assert engine.rehydrate(best["stateToken"]).unwrap()["pending"]["stepId"] == "plan"
