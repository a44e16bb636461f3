"""Session summaries and lifecycle records in PostgreSQL.

The summary of a session is projected inside every append's transaction (the session
store's projector hook), so a committed append and its summary are one fact: no replica
ever lists a session differently from its log. Lifecycle records (archive state,
workspace) live in their own table and update the summary row in the same transaction,
under the session's writer lock. A summary's corpus is one row per distinct term
(`workrail_summary_terms`, keyed by term): an append inserts and deletes only the terms
that changed, and text search intersects the terms' rows (every query token must be
there: set containment, as spec 70 §9 asks); resume_session's loose candidates are ranges
of terms sharing a query word's first three characters.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.core.canonical import canonical_bytes
from workrail.core.events import DomainEvent
from workrail.core.ids import is_session_id
from workrail.core.lifecycle import DEFAULT_LIFECYCLE, SessionLifecycle
from workrail.core.summary import PROJECTION_VERSION, SessionSummary
from workrail.store.errors import StoreError
from workrail.store.ports import CandidateQuery, PageCursor, SessionFilter, SessionLog, SummaryPage
from workrail.store.postgres.connection import Connection, Database
from workrail.store.postgres.content import PostgresPinnedWorkflowStore, PostgresSnapshotStore
from workrail.store.postgres.locks import session_lock_key
from workrail.store.postgres.session_store import PostgresSessionStore
from workrail.store.summaries import SummaryProjector, SummarySource
from workrail.store.summary_query import (
    POSTGRES,
    candidate_sql,
    page_limit,
    page_of,
    page_sql,
    row_values,
    upsert_sql,
)

log = logging.getLogger("workrail.store.postgres")


def _lifecycle_on(conn: Connection, session_id: str) -> SessionLifecycle:
    row = conn.execute(
        "SELECT document FROM workrail_session_lifecycle WHERE session_id = %s", (session_id,)
    ).fetchone()
    if row is None:
        return DEFAULT_LIFECYCLE
    try:
        raw = json.loads(bytes(row[0]))
    except ValueError:
        return DEFAULT_LIFECYCLE
    return SessionLifecycle.from_json(raw) or DEFAULT_LIFECYCLE


class _OnConnection:
    """A content store read through the transaction's own connection."""

    def __init__(
        self, conn: Connection, store: PostgresSnapshotStore | PostgresPinnedWorkflowStore
    ) -> None:
        self._conn = conn
        self._store = store

    def get(self, ref: str) -> Result[dict[str, Any] | None, StoreError]:
        return self._store.get_on(self._conn, ref)


_UPSERT: Final = upsert_sql(POSTGRES, ("projection",))


def upsert_summary(
    conn: Connection,
    summary: SessionSummary,
    before: tuple[frozenset[str], tuple[str, ...]] | None = None,
) -> None:
    """Write a summary's row, its corpus terms and its runs. `before` is what the terms
    and runs in the database are known to be: only the difference is written then (an
    append changes a few terms), else they are replaced."""
    sid = summary.session_id
    conn.execute(_UPSERT, (sid, PROJECTION_VERSION, *row_values(summary)))
    if before is None:
        conn.execute("DELETE FROM workrail_summary_terms WHERE session_id = %s", (sid,))
        gone: list[str] = []
        new = sorted(summary.words)
    else:
        gone = sorted(before[0] - summary.words)
        new = sorted(summary.words - before[0])
    if gone:
        conn.execute(
            "DELETE FROM workrail_summary_terms WHERE session_id = %s AND term = ANY(%s)",
            (sid, gone),
        )
    if new:
        conn.execute(
            "INSERT INTO workrail_summary_terms (term, session_id) "
            "SELECT unnest(%s::text[]), %s ON CONFLICT DO NOTHING",  # never fail an append
            (new, sid),
        )
    runs = tuple(sorted({run.run_id for run in summary.runs}))
    if before is None or before[1] != runs:
        conn.execute("DELETE FROM workrail_summary_runs WHERE session_id = %s", (sid,))
        if runs:
            conn.execute(
                "INSERT INTO workrail_summary_runs (run_id, session_id) "
                "SELECT unnest(%s::text[]), %s",
                (list(runs), sid),
            )


def _words_on(conn: Connection, session_ids: Sequence[str]) -> dict[str, frozenset[str]]:
    rows = conn.execute(
        "SELECT session_id, array_agg(term) FROM workrail_summary_terms "
        "WHERE session_id = ANY(%s) GROUP BY session_id",
        (list(session_ids),),
    ).fetchall()
    return {str(r[0]): frozenset(r[1]) for r in rows}


def _parse(record: str, words: frozenset[str] = frozenset()) -> SessionSummary | None:
    summary = SessionSummary.from_record(json.loads(record))
    return None if summary is None else replace(summary, words=words)


class PostgresLifecycleStore:
    def __init__(self, db: Database, sessions: PostgresSessionStore) -> None:
        self._db = db
        self._sessions = sessions

    def get(self, session_id: str) -> Result[SessionLifecycle, StoreError]:
        if not is_session_id(session_id):
            return Failure(
                StoreError("INVALID_REFERENCE", f"not a session id: {session_id[:60]!r}")
            )
        return self._db.run(lambda conn: _lifecycle_on(conn, session_id))

    def put(self, session_id: str, lifecycle: SessionLifecycle) -> Result[bool, StoreError]:
        document = canonical_bytes(lifecycle.to_json())

        def write(conn: Connection) -> Result[bool, StoreError]:
            conn.execute(
                "INSERT INTO workrail_session_lifecycle (session_id, document, updated_at) "
                "VALUES (%s, %s, clock_timestamp()) ON CONFLICT (session_id) DO UPDATE SET "
                "document = EXCLUDED.document, updated_at = EXCLUDED.updated_at",
                (session_id, document),
            )
            _revise_summary(
                conn,
                session_id,
                archived=lifecycle.archived,
                workspace_path=lifecycle.workspace_path,
            )
            return Success(True)

        return self._changed(session_id, write)

    def restamp(self, session_id: str, moment: datetime) -> Result[bool, StoreError]:
        """The session's last activity and its summary's, in one transaction under its
        writer lock (the next append stamps it with the database's clock again)."""

        def stamp(conn: Connection) -> Result[bool, StoreError]:
            conn.execute(
                "UPDATE workrail_sessions SET last_activity = %s WHERE session_id = %s",
                (moment, session_id),
            )
            _revise_summary(conn, session_id, last_activity=moment.astimezone(UTC))
            return Success(True)

        return self._changed(session_id, stamp)

    def _changed(
        self, session_id: str, change: Callable[[Connection], Result[bool, StoreError]]
    ) -> Result[bool, StoreError]:
        """`change` in one transaction under the session's writer lock; False when the
        session does not exist."""
        done = self._sessions.exclusive(session_id, change)
        if isinstance(done, Failure):
            return Failure(done.failure())
        return Success(bool(done.unwrap()))


def _revise_summary(conn: Connection, session_id: str, **changes: Any) -> None:
    """The session's summary row with these fields changed (lifecycle facts, the last
    activity); its corpus and runs are left as they are, so only the row is written."""
    row = conn.execute(
        "SELECT record FROM workrail_summaries WHERE session_id = %s", (session_id,)
    ).fetchone()
    summary = None if row is None else _parse(str(row[0]))
    if summary is not None:
        runs = tuple(sorted({run.run_id for run in summary.runs}))
        upsert_summary(conn, replace(summary, **changes), before=(summary.words, runs))


class PostgresSessionQuery:
    def __init__(
        self,
        db: Database,
        sessions: PostgresSessionStore,
        lifecycles: PostgresLifecycleStore,
        snapshots: PostgresSnapshotStore,
        pinned: PostgresPinnedWorkflowStore,
    ) -> None:
        self._db = db
        self._snapshots = snapshots
        self._pinned = pinned
        self._source = SummarySource(sessions, lifecycles, SummaryProjector(snapshots, pinned))

    # --- the append transaction's projector ---------------------------------------------

    def __call__(
        self, conn: Connection, session_id: str, events: Sequence[DomainEvent], log: SessionLog
    ) -> None:
        row = conn.execute(
            "SELECT last_activity FROM workrail_sessions WHERE session_id = %s", (session_id,)
        ).fetchone()
        last = None if row is None else row[0].astimezone(UTC)
        # Every append projects, so the row holds the summary at the count before this
        # append: when the accumulator answered that summary, only the changes are written.
        known = log.summary.last
        before = None
        if known is not None and known[0] == log.count - len(events):
            before = (known[1], known[2])
        summary = self._source.projector.of_log(
            log,
            last_activity=last,
            lifecycle=_lifecycle_on(conn, session_id),
            snapshots=_OnConnection(conn, self._snapshots),
            pinned=_OnConnection(conn, self._pinned),
        )
        upsert_summary(conn, summary, before)

    # --- keeping the projection current -------------------------------------------------

    def refresh_outdated(self) -> Result[int, StoreError]:
        """Project the sessions without a summary of this projection version (a database
        from before summaries existed, or after an upgrade); the count refreshed."""

        def outdated(conn: Connection) -> list[str]:
            rows = conn.execute(
                "SELECT s.session_id FROM workrail_sessions s LEFT JOIN workrail_summaries m "
                "ON m.session_id = s.session_id WHERE m.session_id IS NULL OR "
                "m.projection <> %s ORDER BY s.session_id",
                (PROJECTION_VERSION,),
            ).fetchall()
            return [str(r[0]) for r in rows]

        return self._reproject_each(outdated)

    def rebuild(self) -> Result[int, StoreError]:
        """Every summary projected again from the logs, one session at a time."""

        def ids(conn: Connection) -> list[str]:
            rows = conn.execute("SELECT session_id FROM workrail_sessions ORDER BY 1").fetchall()
            return [str(r[0]) for r in rows]

        return self._reproject_each(ids)

    def _reproject_each(self, select: Callable[[Connection], list[str]]) -> Result[int, StoreError]:
        """Project again each session `select` names, in order; how many."""
        found = self._db.run(select)
        if isinstance(found, Failure):
            return Failure(found.failure())
        for session_id in found.unwrap():
            done = self._reproject(session_id)
            if isinstance(done, Failure):
                return Failure(done.failure())
        return Success(len(found.unwrap()))

    def _reproject(self, session_id: str) -> Result[None, StoreError]:
        """One session's summary from its rows, holding its writer lock (waiting for it:
        appends are short) so no append commits in between."""

        def project(conn: Connection) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (session_lock_key(session_id),))
                loaded = self._source.load(session_id)
                if isinstance(loaded, Failure):
                    raise _Refused(loaded.failure())
                summary = loaded.unwrap()
                if summary is None:
                    conn.execute(
                        "DELETE FROM workrail_summaries WHERE session_id = %s", (session_id,)
                    )
                else:
                    upsert_summary(conn, summary)

        try:
            return self._db.run(project, repeat=False)
        except _Refused as refused:
            return Failure(refused.error)

    # --- the port ----------------------------------------------------------------------

    def page(
        self, where: SessionFilter, *, limit: int = 50, cursor: PageCursor | None = None
    ) -> Result[SummaryPage, StoreError]:
        limit = page_limit(limit)
        sql, args = page_sql(POSTGRES, where, limit, cursor)
        rows = self._db.run(lambda conn: conn.execute(sql, args).fetchall())
        if isinstance(rows, Failure):
            return Failure(rows.failure())
        return Success(page_of(rows.unwrap(), limit, _parse))

    def get(self, session_ids: Collection[str]) -> Result[Mapping[str, SessionSummary], StoreError]:
        wanted = sorted({s for s in session_ids if is_session_id(s)})
        if not wanted:
            return Success({})

        def select(conn: Connection) -> dict[str, SessionSummary]:
            rows = conn.execute(
                "SELECT session_id, record FROM workrail_summaries WHERE session_id = ANY(%s)",
                (wanted,),
            ).fetchall()
            words = _words_on(conn, [str(r[0]) for r in rows])
            out: dict[str, SessionSummary] = {}
            for sid, record in rows:
                summary = _parse(str(record), words.get(str(sid), frozenset()))
                if summary is not None:
                    out[str(sid)] = summary
            return out

        return self._db.run(select)

    def candidates(self, query: CandidateQuery) -> Result[list[SessionSummary], StoreError]:
        return self._db.run(lambda conn: _candidates(conn, query))


class _Refused(Exception):
    def __init__(self, error: StoreError) -> None:
        super().__init__(error.message)
        self.error = error


def _candidates(conn: Connection, query: CandidateQuery) -> list[SessionSummary]:
    ids: set[str] = set()
    for sql, args in candidate_sql(POSTGRES, query):
        ids.update(str(r[0]) for r in conn.execute(sql, args).fetchall())
    if not ids:
        return []
    rows = conn.execute(
        "SELECT session_id, record FROM workrail_summaries WHERE session_id = ANY(%s) "
        "ORDER BY session_id",
        (sorted(ids),),
    ).fetchall()
    found = _words_on(conn, sorted(ids))
    parsed = (_parse(str(r[1]), found.get(str(r[0]), frozenset())) for r in rows)
    return [s for s in parsed if s is not None]
