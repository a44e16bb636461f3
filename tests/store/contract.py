"""The session-store contract, typed against the port: every backend subclasses
`SessionStoreContract` and provides the fixtures below for its own storage. The tests run
unchanged against every backend."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Result, Success

from tests.conftest import REFERENCE
from tests.store.plans import Chain, advance_plan, fresh_session_id, new_id
from workrail.core.events import DomainEvent
from workrail.core.snapshot_state import snapshot_state
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
ROOT = Path(__file__).resolve().parents[2]
MULTI_SEGMENT_SESSION = "sess_akuobhxpaal3j6jgnpsnzywq2u"  # reference data: 7 appends
HoldWriter = Callable[[str], AbstractContextManager[None]]
CLOCK_SKEW_ALLOWED = timedelta(minutes=10)
"""How far a store's clock may be from this host's in the tests that compare them."""


def append(store: SessionStore, session_id: str, plan: AppendPlan) -> Any:
    def write(txn: WriteTxn) -> Result[AppendOutcome, StoreError]:
        return txn.append(plan)

    return store.write(session_id, write)


def _multi_segment_bundle(tmp_path: Path) -> Path:
    """A bundle of a reference session with several appends, as a file."""
    from workrail.bundle.export import bundle_bytes, export_session
    from workrail.bundle.rename import rename_session
    from workrail.bundle.validate import check_bundle
    from workrail.store.local.backend import LocalBackend

    source = tmp_path / "bundle-source"
    shutil.copytree(REFERENCE / "data", source)
    exported = export_session(
        LocalBackend.open(source),
        MULTI_SEGMENT_SESSION,
        bundle_id="bundle_fixedfortestsfixedfortest",
        exported_at="2026-01-02T03:04:05.678Z",
        app_version="0.1.0",
    ).unwrap()
    # Under a fresh id, so backends whose tests share one database never see it taken.
    renamed = check_bundle(rename_session(exported, new_id("sess"))).unwrap().bundle
    path = tmp_path / "bundle.json"
    path.write_bytes(bundle_bytes(renamed))
    return path


def _import_child(env: dict[str, str], bundle: Path, kill_after: int) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "tests.bundle.import_child", str(bundle), str(kill_after)],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def events_of(store: SessionStore, session_id: str) -> list[DomainEvent]:
    result = store.read(session_id, lambda log: list(log.events))
    assert isinstance(result, Success), result
    events: list[DomainEvent] = result.unwrap()
    return events


class SessionStoreContract:
    """Fixtures a backend provides: `store`; `reopen()` (a new store over the same
    storage, with no in-process cache); `damage(session_id)` (corrupt the bytes of the
    latest committed append); `orphan(session_id, first_index)` (leave the debris of an
    append that was written but never attested); `hold_writer(session_id)` (a context
    manager that holds the session's writer from another process or connection)."""

    @pytest.fixture
    def store(self) -> SessionStore:
        raise NotImplementedError

    @pytest.fixture
    def backend_env(self) -> dict[str, str]:
        """Environment variables that make `workrail` (the composition root) open this
        backend's storage in a child process."""
        raise NotImplementedError

    @pytest.mark.parametrize("kill_after", [1, 4])
    def test_a_killed_import_leaves_no_session_and_the_retry_keeps_the_id(
        self, reopen: Any, backend_env: dict[str, str], tmp_path: Path, kill_after: int
    ) -> None:
        bundle = _multi_segment_bundle(tmp_path)
        session_id = json.loads(bundle.read_bytes())["session"]["sessionId"]
        killed = _import_child(backend_env, bundle, kill_after)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        fresh = reopen()
        assert fresh.exists(session_id).unwrap() is False
        assert session_id not in fresh.list_ids().unwrap()
        assert fresh.health(session_id).unwrap().kind == "healthy"
        assert events_of(fresh, session_id) == []
        retried = _import_child(backend_env, bundle, -1)
        assert retried.returncode == 0, retried.stderr
        result = json.loads(retried.stdout)
        assert (result["sessionId"], result["renamed"]) == (session_id, False)
        assert len(events_of(reopen(), session_id)) == result["eventCount"]

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
        assert health.reason is not None
        assert health.reason.code == "digest_mismatch"
        assert append(fresh, chain.sess, chain.advance()).failure().code == "SESSION_NOT_HEALTHY"
        prefix = fresh.load_prefix(chain.sess).unwrap()
        assert not prefix.complete
        assert len(prefix.events) == 3

    def test_a_large_cold_load_runs_without_the_collector_and_leaves_it_on(
        self, store: Any, reopen: Any, damage: Any
    ) -> None:
        """A long session parsed from scratch creates no garbage worth collecting: the
        cyclic collector is paused for the parse and on again afterwards, also when the
        parse finds the log damaged."""
        chain = Chain()
        append(store, chain.sess, chain.start())
        for _ in range(200):
            assert isinstance(append(store, chain.sess, chain.advance()), Success)
        collections: list[int] = []
        reader = threading.get_ident()  # other threads' collections are theirs

        def record(phase: str, info: dict[str, int]) -> None:
            if phase == "start" and threading.get_ident() == reader:
                collections.append(info["generation"])

        def cold_count() -> Result[int, StoreError]:
            fresh = reopen()
            before = gc.get_threshold()
            gc.set_threshold(50)  # without the pause, the parse would collect many times
            gc.callbacks.append(record)
            try:
                result: Result[int, StoreError] = fresh.read(chain.sess, lambda log: log.count)
                return result
            finally:
                gc.callbacks.remove(record)
                gc.set_threshold(*before)

        assert cold_count() == Success(3 + 200 * 3)
        # Without the pause the parse alone triggers about a hundred collections here; what
        # remains is the read's own bookkeeping before and after the parse.
        assert len(collections) < 10
        assert gc.isenabled()
        damage(chain.sess)
        assert isinstance(cold_count(), Failure)
        assert gc.isenabled()

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
        # A re-entrant write is a bug in the caller: waiting never clears it.
        assert result.failure().code == "SESSION_LOCK_REENTRANT"
        assert not result.failure().retryable
        assert events_of(store, chain.sess) == []

    def test_reads_work_while_a_writer_holds_the_session(self, store: Any) -> None:
        chain = Chain()
        append(store, chain.sess, chain.start())

        def read_inside(txn: WriteTxn) -> Any:
            return Success(len(events_of(store, chain.sess)))

        assert store.write(chain.sess, read_inside).unwrap() == 3

    def test_many_sessions_read_from_many_threads(self, store: SessionStore) -> None:
        """More sessions than any in-process cache keeps, read from 8 threads at once (an
        HTTP server runs engine calls on several): every read answers, none raises."""
        chains = [Chain() for _ in range(150)]
        for chain in chains:
            append(store, chain.sess, chain.start())
        ids = [c.sess for c in chains]
        start = threading.Barrier(8)
        problems: list[str] = []

        def reader(seed: int) -> None:
            start.wait(timeout=60)
            pick = random.Random(seed)
            for _ in range(1500):
                sess = pick.choice(ids)
                try:
                    count = store.read(sess, lambda log: len(log.events))
                except Exception as exc:  # noqa: BLE001 - the failure under test
                    problems.append(repr(exc))
                    return
                if count != Success(3):
                    problems.append(f"{sess}: {count}")
                    return

        before = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # switch threads as often as CPython allows
        try:
            threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=300)
        finally:
            sys.setswitchinterval(before)
        assert not any(thread.is_alive() for thread in threads)
        assert problems == []

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
            assert len(page) <= 2
            assert page == sorted(page)
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
        """Stamps come from the store's clock (a database may run on another host), so they
        are compared with each other; against this host's clock only within a loose bound
        (`CLOCK_SKEW_ALLOWED`) that catches a wrong zone or unit, not a skewed host."""
        chain, other = Chain(), Chain()
        assert store.last_activity(chain.sess).unwrap() is None
        append(store, chain.sess, chain.start())
        first = store.last_activity(chain.sess).unwrap()
        assert first is not None
        assert first.utcoffset() is not None
        assert abs(first - datetime.now(UTC)) <= CLOCK_SKEW_ALLOWED
        append(store, other.sess, other.start())
        later = store.last_activity(other.sess).unwrap()
        assert later is not None
        assert later >= first
        assert store.last_activity(chain.sess).unwrap() == first  # another session's write
        append(store, chain.sess, chain.advance())
        again = store.last_activity(chain.sess).unwrap()
        assert again is not None
        assert again >= later

    def test_append_times_say_when_each_append_was_written(self, store: SessionStore) -> None:
        chain = Chain()
        assert store.append_times(chain.sess).unwrap() == ()
        append(store, chain.sess, chain.start())
        plan = chain.advance()
        append(store, chain.sess, plan)
        append(store, chain.sess, plan)  # a replayed plan writes nothing
        times = store.append_times(chain.sess).unwrap()
        count = len(events_of(store, chain.sess))
        assert len(times) == 2
        assert times[0].last_event_index < times[1].last_event_index == count - 1
        assert times[0].at <= times[1].at
        assert abs(times[1].at - datetime.now(UTC)) <= CLOCK_SKEW_ALLOWED
        last = store.last_activity(chain.sess).unwrap()
        assert last is not None
        assert times[1].at <= last
        assert isinstance(store.append_times("../../etc"), Failure)

    def test_another_writer_on_the_same_store_excludes_this_one(
        self, store: SessionStore, hold_writer: HoldWriter
    ) -> None:
        chain = Chain()
        append(store, chain.sess, chain.start())
        plan = chain.advance()
        with hold_writer(chain.sess):
            refused = append(store, chain.sess, plan)
            assert isinstance(refused, Failure)
            assert refused.failure().code == "SESSION_LOCKED"
            assert refused.failure().retryable
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
            assert watched.sess in changed
            assert other.sess not in changed
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


# --- the whole backend: deletion, content-addressed entries, lifecycle, summaries -------

IndexedRows = Callable[[Any], dict[str, dict[str, Any]]]


def engine_over(backend: Any, workflows: Path | None = None) -> Any:
    """The real engine over `backend`, with the reference's test workflows (or these)."""
    from tests.engine.conftest import engine_over as build

    return build(backend, workflows)


def everything(backend: Any) -> dict[str, Any]:
    """Every summary the query answers, archived ones included, by id."""
    from workrail.store.ports import SessionFilter

    found: dict[str, Any] = {}
    cursor = None
    while True:
        page = backend.query.page(SessionFilter(archived="include"), limit=7, cursor=cursor)
        page = page.unwrap()
        for summary in page.summaries:
            assert summary.session_id not in found
            found[summary.session_id] = summary
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


class BackendContract:
    """Fixtures a backend provides: `backend` (a Backend); `reopen_backend()` (a new one
    over the same storage); `hold_writer(session_id)` as above; `indexed(backend)` (the
    summary records the backend holds right now, by session id, read without bringing
    them up to date, so the property test sees what was kept incrementally);
    `fresh_backend()` (a backend over new, empty storage, closed by the test)."""

    @pytest.fixture
    def backend(self) -> Any:
        raise NotImplementedError

    # summaries ----------------------------------------------------------------------

    def test_a_started_session_is_summarised(self, backend: Any) -> None:
        engine = engine_over(backend)
        r = engine.start_workflow("probe-flow", {"goal": "Ship the parser\nwith tests"}).unwrap()
        sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
        summary = everything(backend)[sid]
        assert summary.title == "Ship the parser"
        assert summary.status == "in_progress"
        assert summary.health == "healthy"
        assert summary.workflow_id == "probe-flow"
        assert summary.workflow_name == "Probe Flow"
        assert summary.primary.pending_step_id == "plan"
        assert summary.primary.pending_step_title == "Plan"
        assert (summary.primary.steps_done, summary.primary.steps_known) == (0, 3)
        assert summary.event_count == 5
        assert not summary.archived
        assert summary.last_activity is not None

    def test_progress_notes_and_completion_follow_the_preferred_tip(self, backend: Any) -> None:
        engine = engine_over(backend)
        r = engine.start_workflow("probe-flow").unwrap()
        sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
        r = engine.advance(
            r["stateToken"], r["ackToken"], notes_markdown="# Planned the lexer"
        ).unwrap()
        summary = backend.query.get([sid]).unwrap()[sid]
        assert summary.title == "Planned the lexer"  # no title key: the first notes
        assert (summary.primary.steps_done, summary.primary.pending_step_id) == (1, "build")
        assert summary.primary.snippet == "# Planned the lexer"
        r = engine.advance(r["stateToken"], r["ackToken"], notes_markdown="built it").unwrap()
        r = engine.advance(r["stateToken"], r["ackToken"], notes_markdown="verified").unwrap()
        assert r["isComplete"] is True
        summary = backend.query.get([sid]).unwrap()[sid]
        assert summary.status == "complete"
        assert (summary.primary.steps_done, summary.primary.steps_known) == (3, 3)
        assert summary.primary.pending_step_id is None

    def test_a_blocked_attempt_makes_the_session_blocked(self, backend: Any) -> None:
        engine = engine_over(backend)
        r = engine.start_workflow("val-flow").unwrap()
        sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
        assert (
            engine.advance(r["stateToken"], r["ackToken"], notes_markdown="nope").unwrap()["kind"]
            == "blocked"
        )
        assert backend.query.get([sid]).unwrap()[sid].status == "blocked"

    def test_listing_filters_and_pages_by_last_activity(self, backend: Any) -> None:
        from workrail.store.ports import SessionFilter

        engine = engine_over(backend)
        sids = []
        for n in range(5):
            r = engine.start_workflow("probe-flow", {"goal": f"task number{n} shared"}).unwrap()
            sids.append(engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id)
        v = engine.start_workflow("val-flow").unwrap()
        val = engine.deps.codec.parse_state(v["stateToken"]).unwrap().session_id
        listed = everything(backend)
        assert set(sids) | {val} <= set(listed)
        order = [s for s in listed if s in set(sids) | {val}]
        stamps = [listed[s].last_activity for s in order]
        assert stamps == sorted(stamps, reverse=True)

        def only(**kw: Any) -> set[str]:
            page = backend.query.page(SessionFilter(**kw), limit=500).unwrap()
            return {s.session_id for s in page.summaries}

        ours = set(sids) | {val}
        assert only(workflow="val-flow") & ours == {val}
        assert only(text="number3 SHARED") & ours == {sids[3]}
        assert only(text="shared") & ours == set(sids)
        assert only(text="nowhere-to-be-found") == set()
        # a session id is no word of a session's title or notes (ids are looked up apart)
        assert only(text=f"shared {sids[2]}") & ours == set()
        assert val in only(statuses=frozenset({"in_progress"}))
        assert only(statuses=frozenset({"complete"})) & ours == set()
        future = datetime.now(UTC) + timedelta(days=1)
        assert only(since=future) == set()

    def test_a_word_inside_a_flag_or_a_path_is_found(self, backend: Any) -> None:
        from workrail.store.ports import SessionFilter

        engine = engine_over(backend)
        r = engine.start_workflow("probe-flow", {"goal": "Run the linter with --verbose"}).unwrap()
        sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
        engine.advance(
            r["stateToken"], r["ackToken"], notes_markdown="Edited src/report_builder.py"
        ).unwrap()

        def found(text: str) -> bool:
            page = backend.query.page(SessionFilter(text=text), limit=500).unwrap()
            return sid in {s.session_id for s in page.summaries}

        for query in ("verbose", "--verbose", "report", "builder", "report_builder", "src"):
            assert found(query), query
        assert not found("report-writer")  # a compound still asks for the whole word

    def test_archive_is_durable_and_leaves_default_lists(
        self, backend: Any, reopen_backend: Any
    ) -> None:
        from workrail.core.lifecycle import SessionLifecycle
        from workrail.store.ports import SessionFilter

        engine = engine_over(backend)
        r = engine.start_workflow("probe-flow").unwrap()
        sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
        assert backend.lifecycle.get(sid).unwrap() == SessionLifecycle()
        archived = SessionLifecycle().archive("2026-01-01T00:00:00Z")
        assert backend.lifecycle.put(sid, archived).unwrap() is True
        assert backend.lifecycle.put(new_id("sess"), archived).unwrap() is False
        default = backend.query.page(SessionFilter(), limit=500).unwrap().summaries
        assert sid not in {s.session_id for s in default}
        only = backend.query.page(SessionFilter(archived="only"), limit=500).unwrap()
        assert sid in {s.session_id for s in only.summaries}
        again = reopen_backend()
        assert again.lifecycle.get(sid).unwrap().archived is True
        assert again.query.get([sid]).unwrap()[sid].archived is True
        assert again.lifecycle.put(sid, archived.unarchive()).unwrap() is True
        assert again.query.get([sid]).unwrap()[sid].archived is False

    def test_an_over_long_workspace_path_never_costs_the_archive_state(
        self, backend: Any, reopen_backend: Any
    ) -> None:
        from workrail.core.lifecycle import MAX_WORKSPACE_PATH, SessionLifecycle

        engine = engine_over(backend)
        r = engine.start_workflow("probe-flow").unwrap()
        sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
        long_path = "/w/" + "a" * MAX_WORKSPACE_PATH
        record = SessionLifecycle(workspace_path=long_path).archive("2026-01-01T00:00:00Z")
        assert backend.lifecycle.put(sid, record).unwrap() is True
        kept = reopen_backend().lifecycle.get(sid).unwrap()
        assert kept.archived is True
        assert kept.archived_at == "2026-01-01T00:00:00Z"
        assert kept.workspace_path is None  # only the path that could not be kept is gone

    def test_runs_and_ids_are_found(self, backend: Any) -> None:
        engine = engine_over(backend)
        r = engine.start_workflow("probe-flow").unwrap()
        sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
        assert backend.query.get([sid]).unwrap()[sid].primary.run_id.startswith("run_")
        assert dict(backend.query.get([new_id("sess"), "not-an-id"]).unwrap()) == {}

    def test_candidates_cover_ids_words_and_recency(self, backend: Any) -> None:
        from workrail.store.ports import CandidateQuery

        engine = engine_over(backend)
        r = engine.start_workflow("probe-flow", {"goal": "refactor the tokenizer"}).unwrap()
        sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id

        def found(q: CandidateQuery) -> set[str]:
            return {s.session_id for s in backend.query.candidates(q).unwrap()}

        assert sid in found(CandidateQuery(session_id=sid, per_signal=1))
        assert sid in found(CandidateQuery(tokens=("tokenizer",)))
        assert sid in found(CandidateQuery(tokens=("tokeniser",)))  # shares a prefix
        with_corpus = list(backend.query.candidates(CandidateQuery(session_id=sid)).unwrap())
        assert "tokenizer" in next(s for s in with_corpus if s.session_id == sid).corpus.split()

    # deletion -----------------------------------------------------------------------

    def test_delete_removes_the_session_and_its_summary(self, backend: Any) -> None:
        engine = engine_over(backend)
        r = engine.start_workflow("probe-flow").unwrap()
        sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
        assert backend.sessions.delete(sid).unwrap() is True
        assert backend.sessions.exists(sid).unwrap() is False
        assert backend.sessions.read(sid, lambda log: log.count).unwrap() == 0
        assert sid not in everything(backend)
        assert backend.sessions.delete(sid).unwrap() is False
        assert backend.sessions.delete("../x").failure().code == "INVALID_REFERENCE"

    def test_a_session_being_written_is_not_deleted(
        self, backend: Any, hold_writer: HoldWriter
    ) -> None:
        chain = Chain()
        append(backend.sessions, chain.sess, chain.start())
        with hold_writer(chain.sess):
            refused = backend.sessions.delete(chain.sess)
            assert refused.failure().code == "SESSION_LOCKED"
            assert refused.failure().retryable
            assert backend.lifecycle.put(chain.sess, _archived()).failure().code == "SESSION_LOCKED"
        assert len(events_of(backend.sessions, chain.sess)) == 3
        assert backend.sessions.delete(chain.sess).unwrap() is True

    # bundles every backend refuses alike ---------------------------------------------

    @pytest.mark.parametrize(
        ("key", "kind", "value"),
        [
            ("git_branch", "short_string", "fe\x00at"),
            ("git_branch", "short_string", "fe\x1b[31mat"),
            ("git_branch", "short_string", "b" * 81),
            ("git_head_sha", "git_sha1", "\x00" * 40),
            ("git_head_sha", "git_sha1", "A" * 40),
            ("repo_root_hash", "sha256", "sha256:" + "\x00" * 64),
        ],
    )
    def test_a_bundle_with_an_observation_no_store_can_hold_is_refused(
        self, backend: Any, key: str, kind: str, value: str
    ) -> None:
        """The same bundles are refused on every backend, before anything is stored (a
        NUL once imported on files and failed on PostgreSQL, whose text holds no NUL)."""
        from dataclasses import replace

        from tests.bundle.helpers import encode, reseal
        from workrail.engine.api import Engine
        from workrail.engine.workspace import WorkspaceFacts

        class Probe:
            def probe(self, path: str | None) -> WorkspaceFacts:
                return WorkspaceFacts(
                    path or "/w", repo_root="/w", branch="main", head_sha="a" * 40
                )

        engine = engine_over(backend)
        engine = Engine(replace(engine.deps, probe=Probe()))
        started = engine.start_workflow("probe-flow", None, "/w").unwrap()
        doc = json.loads(engine.export_session(started["sessionId"], app_version="t").unwrap().data)
        (observed,) = (
            e
            for e in doc["session"]["events"]
            if e["kind"] == "observation_recorded" and e["data"]["key"] == key
        )
        observed["data"]["value"] = {"type": kind, "value": value}
        old_id = doc["session"]["sessionId"]
        fresh_id = new_id("sess")
        raw = encode(reseal(json.loads(json.dumps(doc).replace(old_id, fresh_id))))
        before = set(everything(backend))
        refused = engine.import_session(raw)
        assert isinstance(refused, Failure), refused
        assert refused.failure().code == "BUNDLE_INVALID_FORMAT", refused.failure()
        assert refused.failure().path.endswith("observation_recorded/data/value")
        assert backend.sessions.exists(fresh_id).unwrap() is False
        assert set(everything(backend)) == before

    # content-addressed entries --------------------------------------------------------

    def test_content_entries_are_listed_and_deleted(self, backend: Any) -> None:
        for store in (backend.snapshots, backend.pinned):
            refs = sorted(store.put({"probe": n, "kind": str(store)}).unwrap() for n in range(3))
            listed = [r.ref for r in store.list_refs().unwrap()]
            assert set(refs) <= set(listed)
            assert listed == sorted(listed)
            page = store.list_refs(after=refs[0], limit=1).unwrap()
            assert len(page) == 1
            assert page[0].ref > refs[0]
            stamp = next(r for r in store.list_refs().unwrap() if r.ref == refs[1]).stored_at
            assert abs((datetime.now(UTC) - stamp).total_seconds()) < 3600
            later = datetime.now(UTC) + timedelta(hours=1)
            assert store.delete(refs[1], stored_before=later).unwrap() is True
            assert store.get(refs[1]).unwrap() is None
            assert store.delete(refs[1], stored_before=later).unwrap() is False
            assert refs[1] not in [r.ref for r in store.list_refs().unwrap()]

    # snapshot states ------------------------------------------------------------------

    def test_snapshot_states_are_what_the_snapshots_say(
        self, backend: Any, reopen_backend: Any
    ) -> None:
        stored = {backend.snapshots.put(raw).unwrap(): snapshot_state(raw) for raw in _snapshots()}
        assert {s.kind for s in stored.values()} == {
            "init",
            "running",
            "blocked",
            "complete",
            "invalid",
        }
        absent = "sha256:" + "0" * 64
        asked = [*stored, absent, "not a ref", *stored]
        assert backend.snapshots.states(asked).unwrap() == stored
        assert reopen_backend().snapshots.states(asked).unwrap() == stored
        assert backend.snapshots.states([]).unwrap() == {}

    def test_a_state_is_recorded_when_its_snapshot_is_stored(
        self, backend: Any, reopen_backend: Any, damage_content: Any
    ) -> None:
        looped = next(raw for raw in _snapshots() if "::" in str(snapshot_state(raw).pending_step))
        ref = backend.snapshots.put(looped).unwrap()
        damage_content(ref)
        fresh = reopen_backend()
        assert isinstance(fresh.snapshots.get(ref), Failure), "the damage is reported"
        assert fresh.snapshots.states([ref]).unwrap() == {ref: snapshot_state(looped)}

    def test_a_deleted_snapshot_has_no_state(self, backend: Any, reopen_backend: Any) -> None:
        ref = backend.snapshots.put(_snapshots()[0]).unwrap()
        assert ref in backend.snapshots.states([ref]).unwrap()
        assert backend.snapshots.delete(ref, stored_before=_later()).unwrap() is True
        assert backend.snapshots.states([ref]).unwrap() == {}
        assert reopen_backend().snapshots.states([ref]).unwrap() == {}

    def test_a_snapshot_deleted_elsewhere_has_no_state(
        self, backend: Any, reopen_backend: Any
    ) -> None:
        """Another process (or replica) collected it after this one learned its state."""
        raw = {**_snapshots()[0], "probe": new_id("snap")}
        ref = backend.snapshots.put(raw).unwrap()
        assert backend.snapshots.states([ref]).unwrap() == {ref: snapshot_state(raw)}
        assert reopen_backend().snapshots.delete(ref, stored_before=_later()).unwrap() is True
        assert backend.snapshots.states([ref]).unwrap() == {}

    def test_content_stored_since_the_cutoff_is_not_deleted(self, backend: Any) -> None:
        for store in (backend.snapshots, backend.pinned):
            ref = store.put({"kept": new_id("x"), "kind": str(store)}).unwrap()
            stamp = _stored_at(store, ref)
            assert store.delete(ref, stored_before=stamp).unwrap() is False  # not before
            assert store.get(ref).unwrap() is not None
            assert store.delete(ref, stored_before=stamp + timedelta(microseconds=1)).unwrap()
            assert store.get(ref).unwrap() is None

    def test_prune_keeps_content_a_start_stores_again_between_its_marks(
        self, fresh_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every start of a workflow stores the same first snapshot and pinned workflow.
        W's only session is gone and W is started again on another thread while prune
        collects: the content is stored again after prune listed it as old, and the new
        session's append lands after prune's second mark. The content stays, and the new
        session is whole."""
        from workrail.engine import lifecycle as lifecycle_uc
        from workrail.engine import loaded
        from workrail.engine.api import Engine
        from workrail.engine.lifecycle import PruneRequest

        workflows = tmp_path / "workflows"
        workflows.mkdir()
        step = f"race-{new_id('x')[2:14]}"  # a first snapshot of this test's own
        flow = {
            "id": "gc-race-flow",
            "name": "GC race",
            "version": "1.0.0",
            "description": "One step, started while prune collects.",
            "steps": [{"id": step, "title": "Race", "prompt": "Do it."}],
        }
        (workflows / "gc-race-flow.json").write_text(json.dumps(flow))
        backend = fresh_backend()
        try:
            engine = engine_over(backend, workflows)
            first = engine.start_workflow("gc-race-flow").unwrap()
            sid = engine.deps.codec.parse_state(first["stateToken"]).unwrap().session_id
            snapshot_ref, workflow_hash = backend.sessions.read(
                sid,
                lambda log: next(
                    (n.data.snapshotRef, n.data.workflowHash) for n in log.index.nodes.values()
                ),
            ).unwrap()
            stored = max(
                _stored_at(backend.snapshots, snapshot_ref),
                _stored_at(backend.pinned, workflow_hash),
            )
            cutoff = stored + timedelta(microseconds=1)  # old: everything stored so far
            _wait_for_store_time(backend.snapshots, cutoff)  # anything stored next is new
            assert engine.delete_sessions([sid]).unwrap().changed == (sid,)
            pruner = Engine(dataclasses.replace(engine.deps, clock=lambda: cutoff))
            request = PruneRequest(older_than=timedelta(days=3650), grace=timedelta(0))
            would = pruner.prune(dataclasses.replace(request, dry_run=True)).unwrap().collected
            assert would.skipped_reason is None
            assert snapshot_ref in would.snapshots
            assert workflow_hash in would.pinned_workflows

            again = engine_over(backend, workflows)  # another caller of the same store
            restarted: list[dict[str, Any]] = []
            marks = lifecycle_uc._mark
            passes = 0

            def mark_then_start_again(deps: Any, forget: frozenset[str]) -> Any:
                nonlocal passes
                marked = marks(deps, forget)
                passes += 1
                if passes == 2:  # between the second mark and the sweep
                    racer = threading.Thread(
                        target=lambda: restarted.append(
                            again.start_workflow("gc-race-flow").unwrap()
                        )
                    )
                    racer.start()
                    racer.join(timeout=120)
                    assert not racer.is_alive()
                return marked

            monkeypatch.setattr(lifecycle_uc, "_mark", mark_then_start_again)
            report = pruner.prune(request).unwrap()
            assert passes == 2
            assert len(restarted) == 1
            assert snapshot_ref not in report.collected.snapshots
            assert workflow_hash not in report.collected.pinned_workflows
            assert backend.snapshots.get(snapshot_ref).unwrap() is not None
            assert backend.pinned.get(workflow_hash).unwrap() is not None
            monkeypatch.setattr(loaded, "_parsed", loaded._ParsedSnapshots())  # a cold start
            pending = engine_over(backend, workflows).rehydrate(restarted[0]["stateToken"])
            assert pending.unwrap()["pending"]["stepId"] == step
        finally:
            backend.close()

    # the projection is what a rebuild says --------------------------------------------

    def test_rebuild_answers_what_was_kept_incrementally(
        self, backend: Any, indexed: IndexedRows
    ) -> None:
        engine = engine_over(backend)
        r = engine.start_workflow("probe-flow", {"goal": "one"}).unwrap()
        engine.advance(r["stateToken"], r["ackToken"], notes_markdown="did one").unwrap()
        kept = indexed(backend)
        assert backend.query.rebuild().unwrap() >= 1
        assert indexed(backend) == kept


def _snapshots() -> list[dict[str, Any]]:
    """The reference's snapshots (running, blocked, complete), one inside a loop, one
    before the first step, and an object that is no snapshot."""
    found = [
        json.loads(path.read_bytes())
        for path in sorted((REFERENCE / "data" / "snapshots").glob("*.json"))
    ]
    progress = {"completed": {"kind": "set", "values": ["plan"]}}
    looped = {
        "kind": "running",
        **progress,
        "loopStack": [{"loopId": "work", "iteration": 3, "bodyIndex": 0}],
        "pending": {
            "kind": "some",
            "step": {"stepId": "act", "loopPath": [{"loopId": "work", "iteration": 3}]},
        },
    }
    made = [
        {"v": 1, "kind": "execution_snapshot", "enginePayload": {"v": 1, "engineState": state}}
        for state in ({"kind": "init"}, looped)
    ]
    return [*made, *found, {"probe": "not a snapshot"}]


def _later() -> datetime:
    """A `stored_before` that everything stored so far is before."""
    return datetime.now(UTC) + timedelta(hours=1)


def _stored_at(store: Any, ref: str) -> datetime:
    """When the store says `ref` was last stored (its own clock)."""
    page = store.list_refs(after=ref[:-1], limit=16).unwrap()
    stamp: datetime = next(entry.stored_at for entry in page if entry.ref == ref)
    return stamp


def _wait_for_store_time(store: Any, moment: datetime, seconds: float = 30) -> None:
    """Until content stored now is stamped at `moment` or later by the store's own clock
    (a file system stamps mtimes in ticks of a few milliseconds)."""
    deadline = time.monotonic() + seconds
    while True:
        ref = store.put({"clock probe": new_id("x")}).unwrap()
        if _stored_at(store, ref) >= moment:
            return
        assert time.monotonic() < deadline, "the store's clock does not move"


def _archived() -> Any:
    from workrail.core.lifecycle import SessionLifecycle

    return SessionLifecycle().archive("2026-01-01T00:00:00Z")


class ProjectionPropertyContract:
    """An index rebuilt from scratch equals the one kept up to date incrementally, for
    random sequences of starts, advances, forks, checkpoints, imports, archives and
    deletes. Fixtures: `fresh_backend()` (a backend over new, empty storage) and
    `indexed(backend)` as in BackendContract."""

    def test_rebuilt_index_equals_the_incremental_one(
        self, fresh_backend: Any, indexed: IndexedRows
    ) -> None:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st

        ops = st.lists(
            st.tuples(
                st.sampled_from(
                    [
                        "start",
                        "advance",
                        "advance",
                        "fork",
                        "checkpoint",
                        "import",
                        "archive",
                        "unarchive",
                        "delete",
                    ]
                ),
                st.integers(0, 7),
                st.sampled_from(["alpha", "beta gamma", "DONE", "Ünïcode wörds", "fix-123"]),
            ),
            min_size=1,
            max_size=14,
        )

        @settings(
            max_examples=12,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(ops)
        def run(sequence: list[tuple[str, int, str]]) -> None:
            backend = fresh_backend()
            try:
                _play(backend, sequence)
                kept = indexed(backend)
                assert backend.query.rebuild().unwrap() == len(kept)
                assert indexed(backend) == kept
                assert set(kept) == set(everything(backend))
            finally:
                backend.close()

        run()


def _play(backend: Any, sequence: list[tuple[str, int, str]]) -> None:
    from workrail.bundle.export import bundle_bytes, export_session
    from workrail.bundle.import_ import import_bundle
    from workrail.core.lifecycle import SessionLifecycle
    from workrail.engine.imported import tokens_for_import

    engine = engine_over(backend)
    live: list[dict[str, Any]] = []  # per session: sid, first and latest responses
    for op, pick, word in sequence:
        target = live[pick % len(live)] if live else None
        if op == "start" or target is None:
            workflow = "val-flow" if pick % 3 == 0 else "probe-flow"
            r = engine.start_workflow(workflow, {"goal": f"{word} {pick}"}).unwrap()
            sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
            live.append({"sid": sid, "first": r, "last": r})
        elif op == "advance":
            last = target["last"]
            if last.get("isComplete") or "ackToken" not in last:
                continue
            result = engine.advance(last["stateToken"], last["ackToken"], notes_markdown=word)
            if isinstance(result, Success):
                target["last"] = result.unwrap()
        elif op == "fork":
            first = target["first"]
            if "stateToken" not in first:
                continue
            fresh = engine.rehydrate(first["stateToken"])
            if isinstance(fresh, Success) and "ackToken" in fresh.unwrap():
                engine.advance(first["stateToken"], fresh.unwrap()["ackToken"], notes_markdown=word)
        elif op == "checkpoint":
            token = target["last"].get("checkpointToken")
            if token:
                engine.checkpoint(token)
        elif op == "import":
            exported = export_session(
                backend,
                target["sid"],
                bundle_id="bundle_" + "a" * 26,
                exported_at="2026-01-01T00:00:00.000Z",
                app_version="test",
            )
            if isinstance(exported, Success):
                imported = import_bundle(
                    backend, bundle_bytes(exported.unwrap()), mint_session_id=fresh_session_id
                ).unwrap()
                runs = tokens_for_import(engine, imported)["runs"]
                first = runs[0] if runs and "error" not in runs[0] else {}
                live.append({"sid": imported.session_id, "first": first, "last": first})
        elif op == "archive":
            backend.lifecycle.put(target["sid"], SessionLifecycle().archive("2026-01-01T00:00:00Z"))
        elif op == "unarchive":
            backend.lifecycle.put(target["sid"], SessionLifecycle())
        elif op == "delete":
            assert backend.sessions.delete(target["sid"]).unwrap() is True
            live.remove(target)
