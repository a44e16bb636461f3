"""The store contract suite, unchanged, against the in-memory backend. Another backend
opened over the same `MemoryStorage` plays the part another process or connection plays
for the other backends: it shares the rows and the writer locks, never the caches."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from returns.result import Success

from tests.store.contract import BackendContract, ProjectionPropertyContract, SessionStoreContract
from tests.store.keyring_contract import KeyringContract, OpenKeyring
from workrail.store.memory import MemoryBackend, MemoryStorage


def utc_now() -> datetime:
    return datetime.now(UTC)


def opened(storage: MemoryStorage) -> MemoryBackend:
    return MemoryBackend.open(utc_now, storage)


@pytest.fixture
def storage() -> MemoryStorage:
    return MemoryStorage()


def writer_on_another_backend(storage: MemoryStorage) -> Any:
    """A context manager factory: hold a session's writer from another backend (a thread
    inside its `write`), as another process would."""

    @contextmanager
    def on_another_backend(session_id: str) -> Iterator[None]:
        held, release = threading.Event(), threading.Event()

        def hold(_txn: Any) -> Any:
            held.set()
            release.wait(60)
            return Success(None)

        other = opened(storage)
        thread = threading.Thread(target=lambda: other.sessions.write(session_id, hold))
        thread.start()
        assert held.wait(60)
        try:
            yield
        finally:
            release.set()
            thread.join(60)

    return on_another_backend


class TestMemorySessionStore(SessionStoreContract):
    # Memory lives and dies with its process: there is no storage left to look at after
    # a killed child process, so the crash test of the durable backends does not apply.
    test_a_killed_import_leaves_no_session_and_the_retry_keeps_the_id = None

    @pytest.fixture
    def store(self, storage: MemoryStorage) -> Any:
        return opened(storage).sessions

    @pytest.fixture
    def watch(self, storage: MemoryStorage) -> Any:
        return opened(storage).watch

    @pytest.fixture
    def reopen(self, storage: MemoryStorage) -> Any:
        return lambda: opened(storage).sessions

    @pytest.fixture
    def damage(self, storage: MemoryStorage) -> Any:
        def flip_a_byte_of_the_latest_event(session_id: str) -> None:
            rows = storage.sessions[session_id]
            raw = bytearray(rows.events[rows.event_count - 1])
            raw[len(raw) // 2] ^= 1
            rows.events[rows.event_count - 1] = bytes(raw)

        return flip_a_byte_of_the_latest_event

    @pytest.fixture
    def orphan(self, storage: MemoryStorage) -> Any:
        def rows_no_manifest_record_attests(session_id: str, first: int) -> None:
            for index in range(first, first + 3):
                storage.sessions[session_id].events[index] = b"not attested"

        return rows_no_manifest_record_attests

    @pytest.fixture
    def hold_writer(self, storage: MemoryStorage) -> Any:
        return writer_on_another_backend(storage)


def indexed_rows(backend: MemoryBackend) -> dict[str, dict[str, Any]]:
    """The summaries as the commits left them."""
    with backend.storage.mutex:
        return {sid: s.to_record() for sid, s in backend.storage.summaries.items()}


class TestMemoryBackend(BackendContract, ProjectionPropertyContract):
    @pytest.fixture
    def backend(self, storage: MemoryStorage) -> Any:
        return opened(storage)

    @pytest.fixture
    def reopen_backend(self, storage: MemoryStorage) -> Any:
        return lambda: opened(storage)

    @pytest.fixture
    def fresh_backend(self) -> Any:
        return lambda: opened(MemoryStorage())

    @pytest.fixture
    def hold_writer(self, storage: MemoryStorage) -> Any:
        return writer_on_another_backend(storage)

    @pytest.fixture
    def indexed(self) -> Any:
        return indexed_rows

    @pytest.fixture
    def damage_content(self, storage: MemoryStorage) -> Any:
        def overwrite(ref: str) -> None:
            row = storage.snapshots[ref]
            row.body = row.body.replace(b'"kind"', b'"kine"', 1)

        return overwrite


class TestMemoryKeyring(KeyringContract):
    @pytest.fixture
    def open_keyring(self, storage: MemoryStorage) -> OpenKeyring:
        return lambda: opened(storage).keyring


def test_nothing_outlives_its_storage() -> None:
    """Backends over separate storage share nothing: the data is the storage's alone."""
    from tests.store.contract import append, events_of
    from tests.store.plans import Chain

    chain = Chain()
    one = opened(MemoryStorage())
    append(one.sessions, chain.sess, chain.start())
    assert len(events_of(one.sessions, chain.sess)) == 3
    assert events_of(opened(MemoryStorage()).sessions, chain.sess) == []
    assert one.location.startswith("memory://")


def test_a_restamped_session_is_last_active_then_and_listed_so(storage: MemoryStorage) -> None:
    """`restamp` (what migrate uses) moves the last activity and the summary with it,
    for an existing session only, and waits for no writer."""
    from datetime import timedelta

    from tests.store.contract import append
    from tests.store.plans import Chain, new_id

    backend = opened(storage)
    chain = Chain()
    append(backend.sessions, chain.sess, chain.start())
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert backend.lifecycle.restamp(chain.sess, moment).unwrap() is True
    assert backend.sessions.last_activity(chain.sess).unwrap() == moment
    assert opened(storage).query.get([chain.sess]).unwrap()[chain.sess].last_activity == moment
    assert backend.lifecycle.restamp(new_id("sess"), moment).unwrap() is False
    with writer_on_another_backend(storage)(chain.sess):
        later = moment + timedelta(days=1)
        refused = backend.lifecycle.restamp(chain.sess, later)
        assert refused.failure().code == "SESSION_LOCKED"
    assert backend.sessions.last_activity(chain.sess).unwrap() == moment


def test_append_times_are_the_clock_read_for_each_committed_append(
    storage: MemoryStorage,
) -> None:
    """The clock comes from whoever opens the backend; a replayed plan writes nothing and
    a write whose function fails publishes no time."""
    from returns.result import Failure

    from tests.store.contract import append
    from tests.store.plans import Chain
    from workrail.store.errors import StoreError

    ticks = iter(datetime(2026, 1, 1, 0, 0, s, tzinfo=UTC) for s in range(10))
    backend = MemoryBackend.open(lambda: next(ticks), storage)
    chain = Chain()
    assert backend.sessions.append_times(chain.sess).unwrap() == ()
    append(backend.sessions, chain.sess, chain.start())
    plan = chain.advance()
    append(backend.sessions, chain.sess, plan)
    append(backend.sessions, chain.sess, plan)
    given_up = StoreError("SESSION_STORE_INVARIANT_VIOLATION", "the caller gave up")

    def append_then_give_up(txn: Any) -> Any:
        assert isinstance(txn.append(chain.advance()), Success)
        return Failure(given_up)

    assert backend.sessions.write(chain.sess, append_then_give_up) == Failure(given_up)
    times = backend.sessions.append_times(chain.sess).unwrap()
    assert [(t.last_event_index, t.at.second) for t in times] == [(2, 0), (5, 1)]
    assert backend.sessions.last_activity(chain.sess).unwrap() == times[-1].at
    assert backend.sessions.read(chain.sess, lambda log: log.count).unwrap() == 6
    assert backend.sessions.append_times("../x").failure().code == "INVALID_REFERENCE"


def test_an_idle_session_is_deleted_and_an_active_one_kept(storage: MemoryStorage) -> None:
    """`delete_idle` judges the last activity holding the writer."""
    from datetime import timedelta

    from tests.store.contract import append
    from tests.store.plans import Chain, new_id

    backend = opened(storage)
    idle, active = Chain(), Chain()
    append(backend.sessions, idle.sess, idle.start())
    append(backend.sessions, active.sess, active.start())
    stamp = backend.sessions.last_activity(active.sess).unwrap()
    assert stamp is not None
    backend.lifecycle.restamp(idle.sess, stamp - timedelta(days=30)).unwrap()
    cutoff = stamp - timedelta(days=1)
    sessions = backend.sessions
    assert sessions.delete_idle(idle.sess, idle_before=cutoff).unwrap() == "deleted"
    assert sessions.delete_idle(active.sess, idle_before=cutoff).unwrap() == "active"
    assert sessions.delete_idle(new_id("sess"), idle_before=cutoff).unwrap() == "absent"
    assert sessions.exists(idle.sess).unwrap() is False
    assert set(backend.query.get([idle.sess, active.sess]).unwrap()) == {active.sess}
