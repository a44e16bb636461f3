"""The database going away under a running store: a retryable STORE_UNAVAILABLE per call,
nothing half-written, and normal service again once it is back, without a restart."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from returns.result import Failure, Result, Success

from tests.services.postgres import PostgresCluster
from tests.store.contract import append, events_of
from tests.store.plans import Chain
from workrail.store.postgres import PostgresBackend, open_postgres_backend


def _open(url: str) -> PostgresBackend:
    return open_postgres_backend(url, pool_wait=1.0).unwrap()


def _count_afresh(url: str, session_id: str) -> int:
    other = _open(url)
    try:
        return len(events_of(other.sessions, session_id))
    finally:
        other.close()


@contextmanager
def _started(url: str) -> Iterator[tuple[PostgresBackend, Chain]]:
    """A store on `url` holding one started session (closed on exit)."""
    backend = _open(url)
    try:
        chain = Chain()
        append(backend.sessions, chain.sess, chain.start())
        yield backend, chain
    finally:
        backend.close()


def _until(call: Callable[[], Result[Any, Any]], seconds: float = 30) -> Any:
    """Repeat `call` until it succeeds; every failure on the way must be retryable."""
    deadline = time.monotonic() + seconds
    while True:
        result = call()
        if isinstance(result, Success):
            return result.unwrap()
        error = result.failure()
        assert error.code == "STORE_UNAVAILABLE", error
        assert error.retryable, error
        assert time.monotonic() < deadline, f"still failing: {error}"


def test_a_stopped_database_is_retryable_per_call_and_then_serves_again(
    own_postgres: PostgresCluster,
) -> None:
    url = own_postgres.url(own_postgres.create_database())
    with _started(url) as (backend, chain):
        plan = chain.advance()
        own_postgres.stop("immediate")
        for call in (
            lambda: backend.sessions.read(chain.sess, lambda log: log.count),
            lambda: append(backend.sessions, chain.sess, plan),
            lambda: backend.sessions.list_ids(),
            lambda: backend.snapshots.get("sha256:" + "1" * 64),
            lambda: backend.keyring.rotate(),
        ):
            result = call()
            assert isinstance(result, Failure)
            error = result.failure()
            assert error.code == "STORE_UNAVAILABLE"
            assert error.retryable
            assert own_postgres.password not in error.message
        own_postgres.start()
        _until(lambda: append(backend.sessions, chain.sess, plan))
        assert len(events_of(backend.sessions, chain.sess)) == 6
        assert _count_afresh(url, chain.sess) == 6


def test_a_connection_lost_inside_a_write_leaves_nothing_behind(postgres_url: str) -> None:
    url = postgres_url
    with _started(url) as (backend, chain):
        first, second = chain.advance(), chain.advance()

        def append_then_lose_the_connection(txn: Any) -> Any:
            assert isinstance(txn.append(first), Success)
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (txn.conn.info.backend_pid,))
            return txn.append(second)

        result = backend.sessions.write(chain.sess, append_then_lose_the_connection)
        assert isinstance(result, Failure)
        assert result.failure().code == "STORE_UNAVAILABLE"
        assert result.failure().retryable
        assert _count_afresh(url, chain.sess) == 3
        assert len(events_of(backend.sessions, chain.sess)) == 3
        _until(lambda: append(backend.sessions, chain.sess, first))
        assert len(events_of(backend.sessions, chain.sess)) == 6


def test_a_writer_whose_client_stops_answering_frees_the_session(postgres_url: str) -> None:
    """A frozen process in the middle of a write holds the session's lock only until the
    server ends its idle transaction; its own write then fails, retryable, and leaves
    nothing behind, while another replica's write goes through."""
    url = postgres_url
    frozen = open_postgres_backend(url, pool_wait=1.0, write_idle=1.0).unwrap()
    other = _open(url)
    try:
        chain = Chain()
        append(frozen.sessions, chain.sess, chain.start())
        plan = chain.advance()
        holding, release = threading.Event(), threading.Event()
        outcome: list[Any] = []

        def stall_inside_the_write(txn: Any) -> Any:
            holding.set()
            release.wait(60)
            return txn.append(plan)

        writer = threading.Thread(
            target=lambda: outcome.append(frozen.sessions.write(chain.sess, stall_inside_the_write))
        )
        writer.start()
        assert holding.wait(30)
        deadline = time.monotonic() + 30
        while True:
            result = append(other.sessions, chain.sess, plan)
            if isinstance(result, Success):
                break
            assert result.failure().code == "SESSION_LOCKED", result.failure()
            assert time.monotonic() < deadline, "the frozen writer still holds the session"
            time.sleep(0.1)
        release.set()
        writer.join(30)
        assert isinstance(outcome[0], Failure)
        assert outcome[0].failure().code == "STORE_UNAVAILABLE"
        assert outcome[0].failure().retryable
        assert _count_afresh(url, chain.sess) == 6
    finally:
        release.set()
        frozen.close()
        other.close()


def test_watch_reconnects_after_a_restart_and_misses_nothing(
    own_postgres: PostgresCluster,
) -> None:
    url = own_postgres.url(own_postgres.create_database())
    with _started(url) as (backend, chain):
        feed = backend.watch.subscribe([chain.sess]).unwrap()
        plan = chain.advance()
        own_postgres.restart("immediate")
        _until(lambda: append(backend.sessions, chain.sess, plan))
        seen: set[str] = set()
        deadline = time.monotonic() + 30
        while chain.sess not in seen and time.monotonic() < deadline:
            got = feed.wait(0.5)
            if isinstance(got, Success):
                seen |= got.unwrap()
            else:
                assert got.failure().code == "STORE_UNAVAILABLE"
        assert chain.sess in seen
        feed.close()
