"""The files backend's `SessionQuery`: a disposable SQLite index of session summaries, in
`<data>/index/sessions.sqlite3` (its tables: store.local.summary_table; a session's corpus
is one row per distinct term, which text search intersects).

Truth stays in the logs. Each row remembers the identity (inode, size, mtime) of the
session's manifest, lifecycle record and newest segment it was projected from
(store.local.summary_files); before answering, the index compares those with one `stat`
each and re-projects what changed, drops what was deleted and adds what is new — so a
session written by another process (ours or the reference's) is never listed stale.
Appends made in this process are only noted (`committed`): their rows are projected and
written in one go before this process's next query, when the index is closed, or once
more than `PENDING_MAX` sessions wait (by the write that noted the last one), so an
advance does not wait for the index (another process meanwhile sees the row stale, and
projects the session itself). A lifecycle change of a pending session marks its row
stale. An index of another schema or projection version, or one SQLite cannot read, is
thrown away and rebuilt.

The index is written with `synchronous=OFF`: losing it costs a rebuild, never a session.
After a reboot (the kernel's boot id changed) it is checked once before use. It runs in
rollback-journal mode, so a read-only query creates and changes no file: `candidates`
(resume_session) writes nothing but the rows this process's own appends left pending, and
when rows are stale it works on an in-memory copy.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import replace
from datetime import datetime
from typing import Final

from returns.result import Failure, Result, Success

from workrail.core.ids import is_session_id
from workrail.core.lifecycle import SessionLifecycle
from workrail.core.summary import SessionSummary
from workrail.store.errors import StoreError
from workrail.store.fsio import ensure_tree
from workrail.store.local.layout import Layout
from workrail.store.local.lifecycle import LocalLifecycleStore
from workrail.store.local.session_store import LocalSessionStore
from workrail.store.local.sqlite_file import (
    connect_index,
    connect_index_readonly,
    discard_index,
)
from workrail.store.local.summary_files import (
    Identity,
    IndexUnavailable,
    SessionFiles,
    lights,
    same_log,
)
from workrail.store.local.summary_table import (
    INDEX_RELPATH,
    SCHEMA_SQL,
    Stamp,
    begin,
    candidates,
    copy_to_memory,
    delete_row,
    empty_memory,
    identities,
    mark_stale,
    of_this_version,
    parse,
    stamp_of,
    stored_identity,
    summary_of,
    upsert,
    usable,
    write_meta,
)
from workrail.store.ports import CandidateQuery, PageCursor, SessionFilter, SessionLog, SummaryPage
from workrail.store.summaries import SummaryProjector, SummarySource
from workrail.store.summary_query import SQLITE, page_limit, page_of, page_sql

log = logging.getLogger("workrail.store.index")

REMEMBERED_TERMS: Final = 256
"""Sessions whose last-written corpus terms this process keeps, to write only changes."""
PENDING_MAX: Final = 32
"""Sessions whose rows may wait for the next query; past that, the write that noted the
last one writes them all once its locks are released (while the sessions are likely still
in the store's cache), so neither a long-idle query nor the close has thousands to do."""


class LocalSessionQuery:
    def __init__(
        self,
        layout: Layout,
        sessions: LocalSessionStore,
        lifecycles: LocalLifecycleStore,
        projector: SummaryProjector,
    ) -> None:
        self._source = SummarySource(sessions, lifecycles, projector)
        self._files = SessionFiles(layout)
        self._root = layout.root
        self._path = layout.root / INDEX_RELPATH
        self._mutex = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._known: dict[str, str] | None = None
        self._known_version = -1
        self._written: OrderedDict[str, tuple[Stamp, frozenset[str]]] = OrderedDict()
        # Sessions this process appended to since their rows were last written. Its own
        # lock, never held while another is taken: `committed` runs under a session's
        # state lock, and a query (holding `_mutex`) takes that lock to project.
        self._pending: dict[str, None] = {}
        self._pending_lock = threading.Lock()

    def _identities(self, conn: sqlite3.Connection) -> dict[str, str]:
        """Every row's identity, read again only when another connection committed
        (`PRAGMA data_version`); this connection's own writes keep the copy current."""
        if conn is not self._conn:
            return identities(conn)
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        if self._known is None or version != self._known_version:
            self._known = identities(conn)
            self._known_version = version
        return self._known

    def _put(
        self,
        conn: sqlite3.Connection,
        summary: SessionSummary,
        ident: Identity,
        before: frozenset[str] | None = None,
    ) -> None:
        """Write the row; its terms as a difference from what it held, which this
        connection remembers from its own last write when the row still has that write's
        stamp (otherwise the terms are read). `before`, when given, must have been read in
        the transaction that writes."""
        sid = summary.session_id
        own = conn is self._conn
        if before is None and own:
            memo = self._written.get(sid)
            if memo is not None:
                begin(conn)  # no other connection writes between this read and the write
                if stamp_of(conn, sid) == memo[0]:
                    before = memo[1]
        stamp = upsert(conn, summary, ident, before)
        if own:
            self._written[sid] = (stamp, summary.words)
            self._written.move_to_end(sid)
            while len(self._written) > REMEMBERED_TERMS:
                self._written.popitem(last=False)
            if self._known is not None:
                self._known[sid] = ident

    def _drop(self, conn: sqlite3.Connection, session_id: str) -> None:
        delete_row(conn, session_id)
        self._written.pop(session_id, None)
        if conn is self._conn and self._known is not None:
            self._known.pop(session_id, None)

    def close(self) -> None:
        """Write the rows still pending, then let the connection go (the index reopens
        on next use)."""
        with self._mutex:
            self._flush_pending()
            self._known = None
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _verified(self, conn: sqlite3.Connection, session_ids: list[str]) -> bool:
        """Bring the rows about to be shown up to date with their newest segment too (the
        scan checks only manifests); True when one changed."""
        touched = False
        for sid in session_ids:
            stored = stored_identity(conn, sid)
            if stored is not None and self._files.again(sid, stored) != stored:
                self._refresh(conn, sid)
                touched = True
        if touched:
            conn.commit()
        return touched

    # --- connections -----------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """The read-write connection, (re)creating the index when it is missing, of
        another version, or damaged."""
        if self._conn is not None:
            return self._conn
        ensure_tree(self._root, self._path.parent)
        conn = self._connect_rw()
        try:
            fresh = not usable(conn)
        except sqlite3.DatabaseError:
            fresh = True
        if fresh:
            conn.close()
            self._discard()
            conn = self._connect_rw()
            conn.executescript(SCHEMA_SQL)
            write_meta(conn)
            conn.commit()
        self._conn = conn
        return conn

    def _connect_rw(self) -> sqlite3.Connection:
        return connect_index(self._path, timeout=10.0)

    def _discard(self) -> None:
        discard_index(self._path)

    def _reset(self) -> None:
        self._known = None
        self._written.clear()
        if self._conn is not None:
            with suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        self._discard()

    def _synced(self) -> sqlite3.Connection:
        """The read-write connection, synced with the disk; rebuilt once if damaged. A
        busy or read-only database raises `sqlite3.OperationalError` untouched."""
        for attempt in (1, 2):
            try:
                conn = self._open()
                self._sync(conn)
                return conn
            except sqlite3.OperationalError:
                raise
            except sqlite3.DatabaseError as exc:
                if attempt == 2:
                    raise IndexUnavailable(f"session index unusable: {exc}") from exc
                log.warning("session index damaged (%s); rebuilding it", exc)
                self._reset()
        raise AssertionError("unreachable")

    def _reader(self) -> sqlite3.Connection:
        """A connection that reflects the disk now without writing anything: the index
        itself when it is current, else an in-memory copy brought up to date."""
        own = self._conn is not None
        source = self._conn if self._conn is not None else self._open_readonly()
        if source is None:
            memory = empty_memory()
        else:
            try:
                rows = self._identities(source)
                stale: bool | None = lights(rows) != self._files.scan()
            except sqlite3.DatabaseError:
                stale = None
            if stale is False:
                return source
            memory = empty_memory() if stale is None else copy_to_memory(source)
            if not own:
                source.close()
        self._sync(memory)
        return memory

    def _open_readonly(self) -> sqlite3.Connection | None:
        """The index opened read-only when it exists and is of this version."""
        try:
            source = connect_index_readonly(self._path, timeout=10.0)
        except (sqlite3.DatabaseError, OSError):
            return None
        if source is None:
            return None
        if not of_this_version(source):
            source.close()
            return None
        return source

    # --- keeping rows current ----------------------------------------------------------

    def _sync(self, conn: sqlite3.Connection) -> None:
        rows = lights(self._identities(conn))
        disk = self._files.scan()
        changed = [sid for sid, ident in disk.items() if rows.get(sid) != ident]
        gone = [sid for sid in rows if sid not in disk]
        for sid in gone:
            self._drop(conn, sid)
        for sid in sorted(changed):
            self._refresh(conn, sid)
        if changed or gone:
            conn.commit()

    def _refresh(self, conn: sqlite3.Connection, session_id: str) -> None:
        """Project the session as it is now; its identity is taken first, so a write
        that lands meanwhile makes the row look stale next time, never current."""
        ident = self._files.fresh(session_id)
        if ident is None:
            self._drop(conn, session_id)
            return
        loaded = self._source.load(session_id)
        if isinstance(loaded, Failure):
            raise IndexUnavailable(loaded.failure().message)
        summary = loaded.unwrap()
        if summary is None:
            self._drop(conn, session_id)
        else:
            self._put(conn, summary, ident)

    def committed(self, session_log: SessionLog, last_activity: datetime) -> None:
        """An append of this process (the writer is held): noted only. Its row is written
        by `_flush_pending`, before the next query of this process, at `close`, or by
        `settle` once too many wait, so the append itself never projects."""
        with self._pending_lock:
            self._pending[session_log.session_id] = None

    def settle(self) -> None:
        """A write of this process is done: write the pending rows if too many wait."""
        with self._pending_lock:
            overfull = len(self._pending) > PENDING_MAX
        if overfull:
            with self._mutex:
                self._flush_pending()

    def _flush_pending(self) -> None:
        """Project and write the rows of this process's appends not yet written, in one
        transaction (called holding `_mutex`). A failure leaves them to the next query's
        sync, which finds them stale."""
        with self._pending_lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        try:
            conn = self._open()
            for session_id in pending:
                self._refresh(conn, session_id)
            conn.commit()
        except Exception:  # the appends are durable already; the next query re-syncs
            log.warning("session index not updated after this process's appends", exc_info=True)
            for session_id in pending:
                self._forget_row(session_id)

    def lifecycle_changed(
        self, session_id: str, lifecycle: SessionLifecycle, written_at: datetime
    ) -> None:
        with self._pending_lock:
            pending = session_id in self._pending
        try:
            with self._mutex:
                conn = self._open()
                if pending:
                    # Its pending projection reads the new record; meanwhile no process
                    # may take a row written before (another's, perhaps) as current.
                    self._stale(conn, session_id)
                    return
                begin(conn)  # the terms read below are what this transaction rewrites
                summary = summary_of(conn, session_id, strict=False)
                ident = self._files.fresh(session_id)
                if summary is None or ident is None:
                    conn.rollback()
                    return  # the next query projects it
                stored = stored_identity(conn, session_id)
                if stored is None or not same_log(stored, ident):
                    # The log changed since the row was projected (another process's
                    # append): patching the record would stamp old content as current.
                    conn.rollback()
                    self._stale(conn, session_id)
                    return
                summary = replace(
                    summary, archived=lifecycle.archived, workspace_path=lifecycle.workspace_path
                )
                self._put(conn, summary, ident, before=summary.words)
                conn.commit()
        except Exception:
            log.warning("session index not updated after a lifecycle change", exc_info=True)
            self._forget_row(session_id)

    def _stale(self, conn: sqlite3.Connection, session_id: str) -> None:
        """Mark the session's row, if it has one, for projecting again."""
        if stored_identity(conn, session_id) is None:
            return
        mark_stale(conn, session_id)
        conn.commit()
        if self._known is not None and session_id in self._known:
            self._known[session_id] = ""

    def deleted(self, session_id: str) -> None:
        with self._pending_lock:
            self._pending.pop(session_id, None)
        try:
            with self._mutex:
                conn = self._open()
                self._drop(conn, session_id)
                conn.commit()
        except Exception:
            log.warning("session index not updated after a deletion", exc_info=True)

    def _forget_row(self, session_id: str) -> None:
        """After a failed update: drop what it half wrote and mark the row stale, so the
        next query projects the session again."""
        self._known = None
        self._written.pop(session_id, None)
        try:
            with self._mutex:
                if self._conn is not None:
                    self._conn.rollback()
                    self._stale(self._conn, session_id)
        except sqlite3.Error:
            pass

    # --- the port ----------------------------------------------------------------------

    def page(
        self, where: SessionFilter, *, limit: int = 50, cursor: PageCursor | None = None
    ) -> Result[SummaryPage, StoreError]:
        limit = page_limit(limit)
        try:
            with self._connection() as conn:
                query, args = page_sql(SQLITE, where, limit, cursor)
                rows = conn.execute(query, args).fetchall()
                if conn is self._conn and self._verified(conn, [str(r[2]) for r in rows]):
                    rows = conn.execute(query, args).fetchall()
        except (IndexUnavailable, sqlite3.Error) as exc:
            return Failure(StoreError("SESSION_STORE_IO_ERROR", f"session index: {exc}"))
        return Success(page_of(rows, limit, parse))

    def get(self, session_ids: Collection[str]) -> Result[Mapping[str, SessionSummary], StoreError]:
        wanted = sorted({s for s in session_ids if is_session_id(s)})
        found: dict[str, SessionSummary] = {}
        try:
            with self._mutex:
                self._flush_pending()
                conn = self._targeted(wanted)
                for sid in wanted:
                    summary = summary_of(conn, sid, strict=True)
                    if summary is not None:
                        found[sid] = summary
        except (IndexUnavailable, sqlite3.Error) as exc:
            return Failure(StoreError("SESSION_STORE_IO_ERROR", f"session index: {exc}"))
        return Success(found)

    def candidates(self, query: CandidateQuery) -> Result[list[SessionSummary], StoreError]:
        try:
            with self._mutex:
                self._flush_pending()  # this process's own appends: their writes were due
                conn = self._reader()
                try:
                    return Success(self._current(conn, candidates(conn, query)))
                finally:
                    if conn is not self._conn:
                        conn.close()
        except (IndexUnavailable, sqlite3.Error) as exc:
            return Failure(StoreError("SESSION_STORE_IO_ERROR", f"session index: {exc}"))

    def _current(
        self, conn: sqlite3.Connection, found: list[SessionSummary]
    ) -> list[SessionSummary]:
        """`found`, each re-projected in memory when its newest segment changed since its
        row was written (nothing is written here)."""
        out: list[SessionSummary] = []
        for summary in found:
            sid = summary.session_id
            stored = stored_identity(conn, sid)
            if stored is not None and self._files.again(sid, stored) == stored:
                out.append(summary)
                continue
            loaded = self._source.load(sid)
            fresh = loaded.value_or(None)
            if fresh is not None:
                out.append(fresh)
        return out

    def rebuild(self) -> Result[int, StoreError]:
        try:
            with self._mutex:
                self._reset()
                conn = self._synced()
                (count,) = conn.execute("SELECT count(*) FROM summaries").fetchone()
        except (IndexUnavailable, sqlite3.Error, OSError) as exc:
            return Failure(StoreError("SESSION_STORE_IO_ERROR", f"session index: {exc}"))
        return Success(int(count))

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """The synced index; when it cannot be written (a read-only data directory, a
        database busy for too long), an up-to-date read-only view instead."""
        with self._mutex:
            owned = False
            try:
                self._flush_pending()
                conn = self._synced()
            except (OSError, sqlite3.OperationalError) as exc:
                log.info("session index not writable (%s); answering read-only", exc)
                conn = self._reader()
                owned = conn is not self._conn
            try:
                yield conn
            finally:
                if owned:
                    conn.close()

    def _targeted(self, session_ids: list[str]) -> sqlite3.Connection:
        """The index with just these sessions brought up to date."""
        try:
            conn = self._open()
        except (OSError, sqlite3.OperationalError):
            return self._reader()
        try:
            rows = {sid: stored_identity(conn, sid) for sid in session_ids}
            touched = False
            for sid in session_ids:
                stored = rows[sid]
                ident = self._files.again(sid, stored)
                if ident is None and stored is not None:
                    self._drop(conn, sid)
                    touched = True
                elif ident is not None and ident != stored:
                    self._refresh(conn, sid)
                    touched = True
            if touched:
                conn.commit()
        except sqlite3.DatabaseError:
            self._reset()
            return self._targeted(session_ids)
        return conn
