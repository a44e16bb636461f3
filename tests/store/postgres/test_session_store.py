"""The store contract suite, unchanged, against PostgreSQL, plus what only a database can
get wrong: a second writer that slips past the lock, rolled-back transactions, and the
in-process cache following appends made by another replica."""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from returns.result import Failure, Success

from tests.store.contract import SessionStoreContract, append, events_of
from tests.store.plans import Chain
from tests.store.postgres.conftest import OpenBackend, flip_a_byte_of_the_latest_event
from workrail.store.postgres import PostgresBackend


class TestPostgresSessionStore(SessionStoreContract):
    @pytest.fixture
    def store(self, pg_backend: PostgresBackend) -> Any:
        return pg_backend.sessions

    @pytest.fixture
    def backend_env(self, module_db_url: str, tmp_path: Path) -> dict[str, str]:
        return {"WORKRAIL_STORE_URL": module_db_url, "WORKRAIL_DATA_DIR": str(tmp_path)}

    @pytest.fixture
    def watch(self, pg_backend: PostgresBackend) -> Any:
        return pg_backend.watch

    @pytest.fixture
    def reopen(self, open_backend: OpenBackend) -> Any:
        return lambda: open_backend().sessions

    @pytest.fixture
    def damage(self, module_db_url: str) -> Any:
        return functools.partial(flip_a_byte_of_the_latest_event, module_db_url)

    @pytest.fixture
    def orphan(self, module_db_url: str) -> Any:
        def a_writer_killed_before_commit(session_id: str, first: int) -> None:
            writer = psycopg.connect(module_db_url)
            pid = writer.info.backend_pid
            for index in range(first, first + 3):
                writer.execute(
                    "INSERT INTO workrail_events (session_id, event_index, dedupe_key, body) "
                    "VALUES (%s, %s, %s, %s)",
                    (session_id, index, f"orphan:{index}", b"not attested"),
                )
            with psycopg.connect(module_db_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            writer.close()

        return a_writer_killed_before_commit


def test_a_replica_sees_what_another_appended(open_backend: OpenBackend) -> None:
    one, two = open_backend().sessions, open_backend().sessions
    chain = Chain()
    append(one, chain.sess, chain.start())
    assert len(events_of(two, chain.sess)) == 3
    append(one, chain.sess, chain.advance())
    assert len(events_of(two, chain.sess)) == 6  # the cached 3, extended by the new rows
    assert isinstance(append(two, chain.sess, chain.advance()), Success)
    assert len(events_of(one, chain.sess)) == 9


def test_a_writer_whose_view_is_stale_fails_and_never_forks(open_backend: OpenBackend) -> None:
    """Even past the lock (here: a lock that is not taken), the constraints refuse a second
    append at the same index: the answer is a retryable error, not a fork."""
    one, two = open_backend().sessions, open_backend().sessions
    chain = Chain()
    append(one, chain.sess, chain.start())
    events_of(two, chain.sess)
    fork = Chain()
    fork.sess, fork.run, fork.tip, fork.next_index = chain.sess, chain.run, chain.tip, 3
    append(one, chain.sess, chain.advance())

    def stale(txn: Any) -> Any:
        return txn.append(fork.advance())

    two._refresh = lambda conn, sid, slot: slot.state  # type: ignore[method-assign,assignment,return-value]
    refused = two.write(chain.sess, stale)
    assert isinstance(refused, Failure)
    assert refused.failure().code == "SESSION_LOCKED"
    assert refused.failure().retryable
    assert len(events_of(one, chain.sess)) == 6


def test_a_failed_callback_rolls_back_every_append_of_the_write(
    pg_backend: PostgresBackend,
) -> None:
    store = pg_backend.sessions
    chain = Chain()
    start, advance = chain.start(), chain.advance()

    seen_by_another_thread: list[int] = []
    reader = threading.Thread(
        target=lambda: seen_by_another_thread.append(len(events_of(store, chain.sess)))
    )

    def two_appends_then_fail(txn: Any) -> Any:
        assert isinstance(txn.append(start), Success)
        assert isinstance(txn.append(advance), Success)
        assert txn.log.count == 6  # the transaction reads its own appends
        reader.start()  # another thread reads the session meanwhile
        reader.join(timeout=0.2)
        assert reader.is_alive()  # it waits for the outcome rather than see uncommitted rows
        return Failure("refused by the caller")

    assert store.write(chain.sess, two_appends_then_fail) == Failure("refused by the caller")
    reader.join(timeout=30)
    assert seen_by_another_thread == [0]
    assert events_of(store, chain.sess) == []
    assert store.exists(chain.sess).unwrap() is False

    def two_appends(txn: Any) -> Any:
        txn.append(start)
        return txn.append(advance)

    assert isinstance(store.write(chain.sess, two_appends), Success)
    assert len(events_of(store, chain.sess)) == 6
