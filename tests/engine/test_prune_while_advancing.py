"""Prune's age test holds at the moment of deletion, on both backends: sessions listed as
old and then advanced (acknowledged) by another writer while prune runs are kept and
reported, never deleted."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Result, Success

from tests.engine.conftest import engine_over
from workrail.core.summary import SessionSummary
from workrail.engine.api import Engine
from workrail.engine.lifecycle import PruneReport, PruneRequest
from workrail.store.errors import StoreError
from workrail.store.local.backend import LocalBackend
from workrail.store.ports import (
    Backend,
    CandidateQuery,
    PageCursor,
    SessionFilter,
    SessionQuery,
    SummaryPage,
)

SESSIONS = 40
ADVANCED_BEFORE = 10
"""Advanced after prune listed them and before it deletes any."""
ADVANCED_DURING = 10
"""Advanced by threads while prune deletes."""


class ListedGate:
    """The real query port, pausing prune once its listing is complete, so the other
    writer advances sessions prune has already judged old."""

    def __init__(self, inner: SessionQuery) -> None:
        self._inner = inner
        self.listed = threading.Event()
        self.go = threading.Event()

    def page(
        self, where: SessionFilter, *, limit: int = 50, cursor: PageCursor | None = None
    ) -> Result[SummaryPage, StoreError]:
        result = self._inner.page(where, limit=limit, cursor=cursor)
        if isinstance(result, Success) and result.unwrap().next_cursor is None:
            self.listed.set()
            assert self.go.wait(120)
        return result

    def get(self, session_ids: Collection[str]) -> Result[Mapping[str, SessionSummary], StoreError]:
        return self._inner.get(session_ids)

    def candidates(self, query: CandidateQuery) -> Result[list[SessionSummary], StoreError]:
        return self._inner.candidates(query)

    def rebuild(self) -> Result[int, StoreError]:
        return self._inner.rebuild()


@pytest.fixture(params=["files", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Backend]]:
    """Opens a new backend over one store each call (the pruner and the other writer are
    separate users of it, as two processes would be)."""
    opened: list[Backend] = []
    if request.param == "files":
        data_dir = tmp_path / "data"

        def open_one() -> Backend:
            backend = LocalBackend.open(data_dir)
            opened.append(backend)
            return backend

    else:
        from workrail.store.postgres import open_postgres_backend

        url: str = request.getfixturevalue("postgres_url")

        def open_one() -> Backend:
            pg: Backend = open_postgres_backend(url).unwrap()
            opened.append(pg)
            return pg

    yield open_one
    for backend in opened:
        backend.close()


def _advance(engine: Engine, tokens: dict[str, Any]) -> bool:
    """Advance once, retrying while the session is busy; True when acknowledged."""
    while True:
        result = engine.advance(tokens["stateToken"], tokens["ackToken"], notes_markdown="more")
        if isinstance(result, Success):
            return True
        retry = result.failure().retry
        if retry is None or not retry.retryable:
            return False  # deleted before this advance reached it
        time.sleep(0.001)


def test_sessions_advanced_while_prune_runs_are_kept(open_store: Callable[[], Backend]) -> None:
    writer = engine_over(open_store())
    started = {}
    for n in range(SESSIONS):
        r = writer.start_workflow("probe-flow", {"goal": f"old {n}"}).unwrap()
        started[r["sessionId"]] = r
    order = sorted(started)
    time.sleep(0.05)  # file timestamps come from a coarse clock: keep "before" clearly before
    listed_at = datetime.now(UTC)
    time.sleep(0.05)
    pruner = engine_over(open_store())
    gate = ListedGate(pruner.deps.query)
    pruner = Engine(dataclasses.replace(pruner.deps, query=gate, clock=lambda: listed_at))
    reports: list[PruneReport] = []

    def prune() -> None:
        reports.append(pruner.prune(PruneRequest(older_than=timedelta(microseconds=1))).unwrap())

    thread = threading.Thread(target=prune)
    thread.start()
    assert gate.listed.wait(120)
    acknowledged: set[str] = set()
    for sid in order[:ADVANCED_BEFORE]:
        assert _advance(writer, started[sid])
        acknowledged.add(sid)
    during = order[ADVANCED_BEFORE : ADVANCED_BEFORE + ADVANCED_DURING]
    outcomes: dict[str, bool] = {}

    def advance_one(sid: str) -> None:
        outcomes[sid] = _advance(engine_over(open_store()), started[sid])

    advancers = [threading.Thread(target=advance_one, args=(sid,)) for sid in during]
    gate.go.set()
    for advancer in advancers:
        advancer.start()
    for advancer in [*advancers, thread]:
        advancer.join(120)
    acknowledged |= {sid for sid, ok in outcomes.items() if ok}
    (report,) = reports
    assert len(report.selected) == SESSIONS
    assert not acknowledged & set(report.deleted), "an acknowledged advance was deleted"
    assert set(order[:ADVANCED_BEFORE]) <= set(report.active)
    assert set(order[ADVANCED_BEFORE + ADVANCED_DURING :]) <= set(report.deleted)
    fresh = engine_over(open_store())
    for sid in acknowledged:
        summary = fresh.session_summary(sid)
        assert isinstance(summary, Success), sid
        assert summary.unwrap().is_healthy
        assert not isinstance(fresh.export_session(sid, app_version="0.1.0"), Failure)
