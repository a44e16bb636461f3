"""The session-store contract, typed against the port: every backend subclasses
`SessionStoreContract` and provides the fixtures below for its own storage. The tests run
unchanged against every backend."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from returns.result import Failure, Result, Success

from tests.store.plans import Chain, advance_plan, new_id
from workrail.core.events import DomainEvent
from workrail.store.errors import StoreError
from workrail.store.ports import (
    LIST_PAGE_MAX,
    AppendOutcome,
    AppendPlan,
    SessionStore,
    SessionWatch,
    WriteTxn,
)

Reopen = Callable[[], SessionStore]
HoldWriter = Callable[[str], AbstractContextManager[None]]


def append(store: SessionStore, session_id: str, plan: AppendPlan) -> Any:
    def write(txn: WriteTxn) -> Result[AppendOutcome, StoreError]:
        return txn.append(plan)

    return store.write(session_id, write)


def events_of(store: SessionStore, session_id: str) -> list[DomainEvent]:
    result = store.read(session_id, lambda log: list(log.events))
    assert isinstance(result, Success), result
    return result.unwrap()


class SessionStoreContract:
    """Fixtures a backend provides: `store`; `reopen()` (a new store over the same
    storage, with no in-process cache); `damage(session_id)` (corrupt the bytes of the
    latest committed append); `orphan(session_id, first_index)` (leave the debris of an
    append that was written but never attested); `hold_writer(session_id)` (a context
    manager that holds the session's writer from another process or connection)."""

    @pytest.fixture
    def store(self) -> SessionStore:
        raise NotImplementedError

    def test_damaged_append_makes_the_session_corrupt_and_read_only(
        self, store: Any, reopen: Any, damage: Any
    ) -> None:
        chain = Chain()
        append(store, chain.sess, chain.start())
        append(store, chain.sess, chain.advance())
        damage(chain.sess)
        fresh = reopen()
        health = fresh.health(chain.sess).unwrap()
        assert health.kind == "corrupt_tail"
        assert health.reason is not None and health.reason.code == "digest_mismatch"
        assert append(fresh, chain.sess, chain.advance()).failure().code == "SESSION_NOT_HEALTHY"
        prefix = fresh.load_prefix(chain.sess).unwrap()
        assert not prefix.complete and len(prefix.events) == 3

    def test_orphaned_append_debris_is_ignored(self, store: Any, reopen: Any, orphan: Any) -> None:
        chain = Chain()
        append(store, chain.sess, chain.start())
        orphan(chain.sess, 3)
        fresh = reopen()
        assert fresh.health(chain.sess).unwrap().kind == "healthy"
        assert len(events_of(fresh, chain.sess)) == 3
        assert isinstance(append(fresh, chain.sess, chain.advance()), Success)
        assert len(events_of(reopen(), chain.sess)) == 6

    def test_unknown_session_loads_empty(self, store: Any) -> None:
        assert events_of(store, new_id("sess")) == []

    def test_append_then_load(self, store: Any) -> None:
        chain = Chain()
        assert isinstance(append(store, chain.sess, chain.start()), Success)
        assert isinstance(append(store, chain.sess, chain.advance()), Success)
        events = events_of(store, chain.sess)
        assert [e.eventIndex for e in events] == list(range(6))
        assert store.health(chain.sess).unwrap().kind == "healthy"

    def test_replayed_plan_is_a_noop_reporting_existing_events(self, store: Any) -> None:
        chain = Chain()
        start = chain.start()
        append(store, chain.sess, start)
        again = append(store, chain.sess, start)
        outcome = again.unwrap()
        assert outcome.deduplicated is True
        assert [e.eventId for e in outcome.events] == [e.eventId for e in start.events]
        assert len(events_of(store, chain.sess)) == 3

    def test_partial_overlap_is_rejected(self, store: Any) -> None:
        chain = Chain()
        start = chain.start()
        append(store, chain.sess, start)
        mixed = AppendPlan((start.events[0], *chain.advance().events), ())
        result = append(store, chain.sess, mixed)
        assert isinstance(result, Failure)
        assert result.failure().code == "SESSION_STORE_INVARIANT_VIOLATION"
        assert len(events_of(store, chain.sess)) == 3

    def test_non_contiguous_plan_is_rejected(self, store: Any) -> None:
        chain = Chain()
        append(store, chain.sess, chain.start())
        chain.next_index += 1  # leave a gap
        result = append(store, chain.sess, chain.advance())
        assert result.failure().code == "SESSION_STORE_INVARIANT_VIOLATION"
        assert len(events_of(store, chain.sess)) == 3

    def test_plan_for_another_session_is_rejected(self, store: Any) -> None:
        chain = Chain()
        other = new_id("sess")
        result = append(store, other, chain.start())
        assert result.failure().code == "SESSION_STORE_INVARIANT_VIOLATION"
        assert events_of(store, other) == []

    def test_plan_with_dangling_edge_is_rejected(self, store: Any) -> None:
        chain = Chain()
        append(store, chain.sess, chain.start())
        bad = advance_plan(
            chain.sess, chain.run, 3, new_id("node"), new_id("node"), new_id("attempt")
        )
        assert append(store, chain.sess, bad).failure().code == "SESSION_STORE_INVARIANT_VIOLATION"

    def test_plan_without_pin_is_rejected(self, store: Any) -> None:
        chain = Chain()
        start = chain.start()
        unpinned = AppendPlan(start.events, ())
        assert (
            append(store, chain.sess, unpinned).failure().code
            == "SESSION_STORE_INVARIANT_VIOLATION"
        )

    def test_write_capability_dies_with_the_callback(self, store: Any) -> None:
        chain = Chain()
        kept: list[WriteTxn] = []

        def grab(txn: WriteTxn) -> Any:
            kept.append(txn)
            return Success(None)

        store.write(chain.sess, grab)
        late = kept[0].append(chain.start())
        assert late.failure().code == "SESSION_STORE_INVARIANT_VIOLATION"
        assert events_of(store, chain.sess) == []

    def test_writer_is_exclusive_within_a_process(self, store: Any) -> None:
        chain = Chain()

        def nested(txn: WriteTxn) -> Any:
            return store.write(chain.sess, lambda inner: inner.append(chain.start()))

        result = store.write(chain.sess, nested)
        assert result.failure().code in ("SESSION_LOCK_REENTRANT", "SESSION_LOCKED")
        assert result.failure().retryable
        assert events_of(store, chain.sess) == []

    def test_reads_work_while_a_writer_holds_the_session(self, store: Any) -> None:
        chain = Chain()
        append(store, chain.sess, chain.start())

        def read_inside(txn: WriteTxn) -> Any:
            return Success(len(events_of(store, chain.sess)))

        assert store.write(chain.sess, read_inside).unwrap() == 3

    def test_many_appends_stay_contiguous(self, store: Any) -> None:
        chain = Chain()
        append(store, chain.sess, chain.start())
        for _ in range(20):
            assert isinstance(append(store, chain.sess, chain.advance()), Success)
        events = events_of(store, chain.sess)
        assert [e.eventIndex for e in events] == list(range(63))
        assert len({e.dedupeKey for e in events}) == 63

    def test_session_ids_are_listed(self, store: Any) -> None:
        chain = Chain()
        append(store, chain.sess, chain.start())
        assert chain.sess in store.list_ids().unwrap()
        assert store.exists(chain.sess).unwrap() is True
        assert store.exists(new_id("sess")).unwrap() is False

    def test_listing_is_paged_in_id_order(self, store: SessionStore) -> None:
        chains = [Chain() for _ in range(5)]
        for chain in chains:
            append(store, chain.sess, chain.start())
        ours = sorted(c.sess for c in chains)
        seen: list[str] = []
        after: str | None = None
        while True:
            page = store.list_ids(after=after, limit=2).unwrap()
            assert len(page) <= 2 and page == sorted(page)
            if not page:
                break
            seen.extend(page)
            after = page[-1]
        assert [s for s in seen if s in ours] == ours
        assert len(store.list_ids(limit=LIST_PAGE_MAX + 50).unwrap()) <= LIST_PAGE_MAX
        assert store.list_ids(after=ours[-1], limit=1000).unwrap() == [
            s for s in seen if s > ours[-1]
        ]

    def test_last_activity_is_when_the_store_last_wrote(self, store: SessionStore) -> None:
        chain = Chain()
        assert store.last_activity(chain.sess).unwrap() is None
        before = datetime.now(UTC) - timedelta(seconds=2)
        append(store, chain.sess, chain.start())
        stamp = store.last_activity(chain.sess).unwrap()
        assert stamp is not None and before <= stamp <= datetime.now(UTC) + timedelta(seconds=2)

    def test_another_writer_on_the_same_store_excludes_this_one(
        self, store: SessionStore, hold_writer: HoldWriter
    ) -> None:
        chain = Chain()
        append(store, chain.sess, chain.start())
        plan = chain.advance()
        with hold_writer(chain.sess):
            refused = append(store, chain.sess, plan)
            assert isinstance(refused, Failure)
            assert refused.failure().code == "SESSION_LOCKED" and refused.failure().retryable
            assert len(events_of(store, chain.sess)) == 3  # reads go on while it writes
        assert isinstance(append(store, chain.sess, plan), Success)
        assert len(events_of(store, chain.sess)) == 6

    def test_malformed_session_id_never_reaches_storage(self, store: Any) -> None:
        for bad in ("../../etc", "sess_../x", "sess_ABC", "", "sess_" + "a" * 26 + "/.."):
            result = store.read(bad, lambda log: log.count)
            assert isinstance(result, Failure)
            assert result.failure().code == "INVALID_REFERENCE"

    def test_watch_reports_appends_to_watched_sessions(
        self, store: SessionStore, watch: SessionWatch
    ) -> None:
        watched, other = Chain(), Chain()
        append(store, watched.sess, watched.start())
        feed = watch.subscribe([watched.sess]).unwrap()
        try:
            assert feed.wait(0.05).unwrap() == frozenset()
            append(store, other.sess, other.start())
            append(store, watched.sess, watched.advance())
            changed: set[str] = set()
            for _ in range(50):  # bounded: each wait returns as soon as something changed
                changed |= feed.wait(0.2).unwrap()
                if watched.sess in changed:
                    break
            assert watched.sess in changed and other.sess not in changed
        finally:
            feed.close()

    def test_watching_everything_sees_new_sessions(
        self, store: SessionStore, watch: SessionWatch
    ) -> None:
        feed = watch.subscribe().unwrap()
        try:
            chain = Chain()
            append(store, chain.sess, chain.start())
            changed: set[str] = set()
            for _ in range(50):
                changed |= feed.wait(0.2).unwrap()
                if chain.sess in changed:
                    break
            assert chain.sess in changed
        finally:
            feed.close()
