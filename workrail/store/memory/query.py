"""Lifecycle records and session summaries in memory.

A session's summary is projected when a write commits (the session store's projector),
while the writer is still held, from the accumulator kept beside the session's index, and
again when its lifecycle record changes; filters and candidate searches are plain loops
over the summaries, in the orders the other backends' indexes answer, reading the query
with the same normalisation and loose match as their SQL (store.summary_query).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from datetime import datetime

from returns.result import Failure, Result, Success

from workrail.core.canonical import canonical_bytes
from workrail.core.ids import is_session_id
from workrail.core.lifecycle import DEFAULT_LIFECYCLE, SessionLifecycle
from workrail.core.summary import SessionSummary
from workrail.store.errors import StoreError
from workrail.store.log_state import invalid_reference
from workrail.store.memory.session_store import MemorySessionStore
from workrail.store.memory.storage import MemoryStorage, SessionRows
from workrail.store.ports import CandidateQuery, PageCursor, SessionFilter, SessionLog, SummaryPage
from workrail.store.summaries import SummaryProjector, SummarySource
from workrail.store.summary_query import (
    activity_us,
    candidate_words,
    loosely,
    on_branch,
    page_limit,
    text_words,
)


def _newest_first(summary: SessionSummary) -> tuple[int, str]:
    return (-activity_us(summary.last_activity), summary.session_id)


def _lifecycle_of(rows: SessionRows | None) -> SessionLifecycle:
    if rows is None or rows.lifecycle is None:
        return DEFAULT_LIFECYCLE
    return SessionLifecycle.from_json(json.loads(rows.lifecycle)) or DEFAULT_LIFECYCLE


class MemoryLifecycleStore:
    def __init__(self, storage: MemoryStorage, sessions: MemorySessionStore) -> None:
        self._storage = storage
        self._sessions = sessions
        self._query: MemorySessionQuery | None = None

    def observe(self, query: MemorySessionQuery) -> None:
        self._query = query

    def get(self, session_id: str) -> Result[SessionLifecycle, StoreError]:
        if not is_session_id(session_id):
            return Failure(invalid_reference(session_id))
        with self._storage.mutex:
            return Success(_lifecycle_of(self._storage.sessions.get(session_id)))

    def put(self, session_id: str, lifecycle: SessionLifecycle) -> Result[bool, StoreError]:
        document = canonical_bytes(lifecycle.to_json())

        def write(rows: SessionRows) -> None:
            rows.lifecycle = document

        return self._change(session_id, write)

    def restamp(self, session_id: str, moment: datetime) -> Result[bool, StoreError]:
        """The session's last activity is `moment` from now on (its append times stay
        when they were written)."""

        def stamp(rows: SessionRows) -> None:
            rows.last_activity = moment

        return self._change(session_id, stamp)

    def _change(
        self, session_id: str, change: Callable[[SessionRows], None]
    ) -> Result[bool, StoreError]:
        """Apply `change` to an existing session's rows under its writer, then project
        its summary again."""

        def write(rows: SessionRows) -> Result[bool, StoreError]:
            with self._storage.mutex:
                change(rows)
                rows.version += 1
            if self._query is not None:
                self._query.reproject(session_id)
            return Success(True)

        written = self._sessions.exclusive(session_id, write)
        if isinstance(written, Failure):
            return Failure(written.failure())
        return Success(bool(written.unwrap()))


def _passes(summary: SessionSummary, where: SessionFilter) -> bool:
    if where.statuses and summary.status not in where.statuses:
        return False
    if where.workflow is not None and summary.workflow_id != where.workflow:
        return False
    if where.workspace is not None and where.workspace not in (
        summary.workspace_path,
        summary.repo_root_hash,
    ):
        return False
    if where.branch is not None and summary.git_branch != where.branch:
        return False
    if where.since is not None and summary.last_activity is None:
        return False
    if where.since is not None and activity_us(summary.last_activity) < activity_us(where.since):
        return False
    if summary.archived != (where.archived == "only") and where.archived != "include":
        return False
    if where.healthy_only and not summary.is_healthy:
        return False
    return summary.words.issuperset(text_words(where))


class MemorySessionQuery:
    def __init__(
        self,
        storage: MemoryStorage,
        sessions: MemorySessionStore,
        lifecycles: MemoryLifecycleStore,
        projector: SummaryProjector,
    ) -> None:
        self._storage = storage
        self._source = SummarySource(sessions, lifecycles, projector)

    # --- keeping the projection current -------------------------------------------------

    def committed(self, log: SessionLog) -> None:
        with self._storage.mutex:
            rows = self._storage.sessions.get(log.session_id)
            lifecycle, last = _lifecycle_of(rows), None if rows is None else rows.last_activity
        summary = self._source.projector.of_log(log, last_activity=last, lifecycle=lifecycle)
        with self._storage.mutex:
            self._storage.summaries[log.session_id] = summary

    def deleted(self, session_id: str) -> None:
        with self._storage.mutex:
            self._storage.summaries.pop(session_id, None)

    def reproject(self, session_id: str) -> Result[None, StoreError]:
        """The session's summary from the stores as they stand; kept only when the session
        did not change meanwhile (a write that committed has projected it itself)."""
        with self._storage.mutex:
            rows = self._storage.sessions.get(session_id)
            version = None if rows is None else rows.version
        loaded = self._source.load(session_id)
        if isinstance(loaded, Failure):
            return Failure(loaded.failure())
        summary = loaded.unwrap()
        with self._storage.mutex:
            now = self._storage.sessions.get(session_id)
            if (None if now is None else now.version) != version:
                return Success(None)
            if summary is None:
                self._storage.summaries.pop(session_id, None)
            else:
                self._storage.summaries[session_id] = summary
        return Success(None)

    def rebuild(self) -> Result[int, StoreError]:
        with self._storage.mutex:
            self._storage.summaries.clear()
            ids = sorted(self._storage.sessions)
        for session_id in ids:
            done = self.reproject(session_id)
            if isinstance(done, Failure):
                return Failure(done.failure())
        with self._storage.mutex:
            return Success(len(self._storage.summaries))

    # --- the port ----------------------------------------------------------------------

    def _all(self) -> list[SessionSummary]:
        with self._storage.mutex:
            return list(self._storage.summaries.values())

    def page(
        self, where: SessionFilter, *, limit: int = 50, cursor: PageCursor | None = None
    ) -> Result[SummaryPage, StoreError]:
        limit = page_limit(limit)
        found = sorted((s for s in self._all() if _passes(s, where)), key=_newest_first)
        if cursor is not None:
            after = (-cursor.activity_us, cursor.session_id)
            found = [s for s in found if _newest_first(s) > after]
        shown = tuple(found[:limit])
        more = len(found) > limit
        last = shown[-1] if more else None
        next_cursor = (
            None if last is None else PageCursor(activity_us(last.last_activity), last.session_id)
        )
        return Success(SummaryPage(shown, next_cursor))

    def get(self, session_ids: Collection[str]) -> Result[Mapping[str, SessionSummary], StoreError]:
        with self._storage.mutex:
            known = self._storage.summaries
            return Success({sid: known[sid] for sid in session_ids if sid in known})

    def candidates(self, query: CandidateQuery) -> Result[list[SessionSummary], StoreError]:
        pool = sorted(
            (
                s
                for s in self._all()
                if (query.include_archived or not s.archived)
                and (query.include_unhealthy or s.is_healthy)
            ),
            key=_newest_first,
        )
        n = max(1, query.per_signal)
        ids = {s.session_id for s in pool[:n]}  # the most recent, whatever they say

        def take(signal: bool, wanted: list[SessionSummary]) -> None:
            if signal:
                ids.update(s.session_id for s in wanted[:n])

        ids.update(s.session_id for s in pool if s.session_id == query.session_id)
        if query.run_id is not None:
            ids.update(s.session_id for s in pool if query.run_id in {r.run_id for r in s.runs})
        words, every = candidate_words(query)
        take(bool(words), [s for s in pool if s.words.issuperset(every)])
        take(bool(words), [s for s in pool if loosely(words, s.words)])
        take(
            query.git_head_sha is not None,
            [s for s in pool if s.git_head_sha == query.git_head_sha],
        )
        branch = query.git_branch
        take(branch is not None, [s for s in pool if branch and on_branch(s.git_branch, branch)])
        workspace = query.workspace
        take(
            workspace is not None,
            [s for s in pool if workspace in (s.workspace_path, s.repo_root_hash)],
        )
        return Success(sorted((s for s in pool if s.session_id in ids), key=lambda s: s.session_id))
