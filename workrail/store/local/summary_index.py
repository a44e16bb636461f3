"""The files backend's `SessionQuery`: a disposable SQLite index of session summaries
(with a table of their search terms) in `<data>/index/sessions.sqlite3`.

Truth stays in the logs. Each row remembers the identity (inode, size, mtime) of the
session's manifest, lifecycle record and newest segment it was projected from; before answering, the
index compares those with one `stat` each and re-projects what changed, drops what was
deleted and adds what is new — so a session written by another process (ours or the
reference's) is never listed stale. Appends made in this process update their row at once
(`committed`), under the session's writer. An index of another schema or projection
version, or one SQLite cannot read, is thrown away and rebuilt.

The index is written with `synchronous=OFF`: losing it costs a rebuild, never a session.
After a reboot (the kernel's boot id changed) it is checked once before use. It runs in
rollback-journal mode, so a read-only query creates and changes no file: `candidates`
(resume_session) never writes, and when rows are stale it works on an in-memory copy.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.core.ids import is_session_id
from workrail.core.lifecycle import SessionLifecycle
from workrail.core.manifest import ManifestRecord, SegmentClosed
from workrail.core.summary import PROJECTION_VERSION, SessionSummary
from workrail.core.text import tokens
from workrail.store.errors import StoreError
from workrail.store.fsio import ensure_tree
from workrail.store.local.layout import Layout
from workrail.store.local.lifecycle import LIFECYCLE_FILE, LocalLifecycleStore
from workrail.store.local.session_store import LocalSessionStore
from workrail.store.local.sqlite_file import (
    boot_id,
    checked_since_boot,
    connect_index,
    connect_index_readonly,
    discard_index,
)
from workrail.store.ports import (
    QUERY_PAGE_MAX,
    CandidateQuery,
    PageCursor,
    SessionFilter,
    SessionLog,
    SummaryPage,
)
from workrail.store.summaries import SummaryProjector

log = logging.getLogger("workrail.store.index")

INDEX_SCHEMA: Final = 4
REMEMBERED_TERMS: Final = 256
"""Sessions whose last-written corpus terms this process keeps, to write only changes."""
Stamp = int
"""A random value each write of a row sets: equal to the one a connection wrote, the row
(and its terms) is still that write's, whoever else projected the session since."""
INDEX_RELPATH: Final = Path("index") / "sessions.sqlite3"

_SCHEMA: Final = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE summaries (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    identity TEXT NOT NULL,
    stamp INTEGER NOT NULL,
    activity_us INTEGER NOT NULL,
    status TEXT NOT NULL,
    archived INTEGER NOT NULL,
    healthy INTEGER NOT NULL,
    workflow_id TEXT,
    workspace_path TEXT,
    repo_root_hash TEXT,
    git_branch TEXT,
    git_head_sha TEXT,
    record TEXT NOT NULL
);
CREATE INDEX summaries_recent ON summaries (activity_us DESC, session_id);
CREATE INDEX summaries_head ON summaries (git_head_sha);
CREATE INDEX summaries_branch ON summaries (git_branch);
CREATE INDEX summaries_workspace ON summaries (workspace_path);
CREATE INDEX summaries_root ON summaries (repo_root_hash);
CREATE TABLE runs (run_id TEXT NOT NULL, session_id TEXT NOT NULL, PRIMARY KEY (run_id, session_id));
CREATE INDEX runs_session ON runs (session_id);
CREATE TABLE terms (term TEXT NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (term, id)) WITHOUT ROWID;
CREATE INDEX terms_row ON terms (id);
"""

Identity = str


def activity_us(moment: datetime | None) -> int:
    if moment is None:
        return 0
    return int(moment.timestamp() * 1_000_000)


def _stat_identity(path: str | Path) -> str | None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


@dataclass(frozen=True)
class _Disk:
    """What the session directories say now: the identity of each session."""

    identities: dict[str, Identity]


class IndexUnavailable(Exception):
    pass


class LocalSessionQuery:
    def __init__(
        self,
        layout: Layout,
        sessions: LocalSessionStore,
        lifecycles: LocalLifecycleStore,
        projector: SummaryProjector,
    ) -> None:
        self._layout = layout
        self._sessions = sessions
        self._lifecycles = lifecycles
        self._projector = projector
        self._root = layout.root
        self._path = layout.root / INDEX_RELPATH
        self._sessions_dir = str(layout.sessions_dir)
        self._mutex = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._known: dict[str, str] | None = None
        self._known_version = -1
        self._written: OrderedDict[str, tuple[Stamp, frozenset[str]]] = OrderedDict()

    def _identities(self, conn: sqlite3.Connection) -> dict[str, str]:
        """Every row's identity, read again only when another connection committed
        (`PRAGMA data_version`); this connection's own writes keep the copy current."""
        if conn is not self._conn:
            return _rows(conn)
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        if self._known is None or version != self._known_version:
            self._known = _rows(conn)
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
                _begin(conn)  # no other connection writes between this read and the write
                row = conn.execute(
                    "SELECT stamp FROM summaries WHERE session_id = ?", (sid,)
                ).fetchone()
                if row is not None and int(row[0]) == memo[0]:
                    before = memo[1]
        stamp = _upsert(conn, summary, ident, before)
        if own:
            self._written[sid] = (stamp, summary.words)
            self._written.move_to_end(sid)
            while len(self._written) > REMEMBERED_TERMS:
                self._written.popitem(last=False)
            if self._known is not None:
                self._known[sid] = ident

    def _drop(self, conn: sqlite3.Connection, session_id: str) -> None:
        _delete_row(conn, session_id)
        self._written.pop(session_id, None)
        if conn is self._conn and self._known is not None:
            self._known.pop(session_id, None)

    def close(self) -> None:
        with self._mutex:
            self._known = None
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # --- identities ------------------------------------------------------------------

    def light_identity(self, session_id: str) -> str | None:
        """One stat: the manifest, which every append grows (ours, another process's, or
        the reference's). None when the session has no manifest. Lifecycle records are
        written only by WorkRail processes, which update the index themselves; they and
        the newest segment are checked where rows are shown (`identity`)."""
        try:
            m = os.lstat(f"{self._sessions_dir}/{session_id}/manifest.jsonl")
        except (FileNotFoundError, NotADirectoryError):
            return None
        return f"{m.st_ino}:{m.st_size}:{m.st_mtime_ns}"

    def identity(self, session_id: str, segment: str | None) -> Identity | None:
        """What a row was projected from: the light identity plus the lifecycle record,
        the events directory and the newest segment, checked where rows are shown."""
        light = self.light_identity(session_id)
        if light is None:
            return None
        # Plain string joins: pathlib's cost more than the stats themselves.
        session_dir = f"{self._sessions_dir}{os.sep}{session_id}{os.sep}"
        life = _stat_identity(session_dir + LIFECYCLE_FILE) or "-"
        # events/ changes whenever a segment is replaced by anything (a FIFO, a directory,
        # a link), so such damage to any segment, not only the newest, is noticed.
        events = _stat_identity(session_dir + "events") or "-"
        if segment is None or not _SEGMENT_RE.match(segment):
            return f"{light}|{life}|{events}|-"
        seg = _stat_identity(session_dir + segment) or "-"
        return f"{light}|{life}|{events}|{segment}@{seg}"

    def fresh_identity(self, session_id: str) -> Identity | None:
        return self.identity(session_id, _newest_segment(self._layout.sessions_dir / session_id))

    def _scan(self) -> _Disk:
        """The light identity of every session now: one listing and one stat each."""
        try:
            names = os.listdir(self._sessions_dir)
        except FileNotFoundError:
            return _Disk({})
        except OSError as exc:
            raise IndexUnavailable(f"cannot list sessions: {exc}") from exc
        found: dict[str, Identity] = {}
        light = self.light_identity
        for name in names:
            if len(name) == 31 and name.startswith("sess_") and is_session_id(name):
                ident = light(name)
                if ident is not None:
                    found[name] = ident
        return _Disk(found)

    def _verified(self, conn: sqlite3.Connection, session_ids: list[str]) -> bool:
        """Bring the rows about to be shown up to date with their newest segment too (the
        scan checks only manifests); True when one changed."""
        touched = False
        for sid in session_ids:
            row = conn.execute(
                "SELECT identity FROM summaries WHERE session_id = ?", (sid,)
            ).fetchone()
            stored = None if row is None else str(row[0])
            if stored is not None and self.identity(sid, _segment_in(stored)) != stored:
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
            fresh = not self._usable(conn)
        except sqlite3.DatabaseError:
            fresh = True
        if fresh:
            conn.close()
            self._discard()
            conn = self._connect_rw()
            conn.executescript(_SCHEMA)
            self._write_meta(conn)
            conn.commit()
        self._conn = conn
        return conn

    def _connect_rw(self) -> sqlite3.Connection:
        return connect_index(self._path, timeout=10.0)

    def _write_meta(self, conn: sqlite3.Connection) -> None:
        conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [
                ("schema", str(INDEX_SCHEMA)),
                ("projection", str(PROJECTION_VERSION)),
                ("boot_id", boot_id()),
            ],
        )

    def _usable(self, conn: sqlite3.Connection) -> bool:
        meta = dict(_meta(conn))
        if meta.get("schema") != str(INDEX_SCHEMA) or meta.get("projection") != str(
            PROJECTION_VERSION
        ):
            return False
        return checked_since_boot(conn, meta.get("boot_id"))

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
            memory = _empty_memory()
        else:
            try:
                rows = self._identities(source)
                stale: bool | None = _lights(rows) != self._scan().identities
            except sqlite3.DatabaseError:
                stale = None
            if stale is False:
                return source
            memory = _empty_memory() if stale is None else _copy(source)
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
        meta = dict(_meta(source))
        if meta.get("schema") != str(INDEX_SCHEMA) or meta.get("projection") != str(
            PROJECTION_VERSION
        ):
            source.close()
            return None
        return source

    # --- keeping rows current ----------------------------------------------------------

    def _sync(self, conn: sqlite3.Connection) -> None:
        rows = _lights(self._identities(conn))
        disk = self._scan()
        changed = [sid for sid, ident in disk.identities.items() if rows.get(sid) != ident]
        gone = [sid for sid in rows if sid not in disk.identities]
        for sid in gone:
            self._drop(conn, sid)
        for sid in sorted(changed):
            self._refresh(conn, sid)
        if changed or gone:
            conn.commit()

    def _refresh(self, conn: sqlite3.Connection, session_id: str) -> None:
        """Project the session as it is now; its identity is taken first, so a write
        that lands meanwhile makes the row look stale next time, never current."""
        ident = self.fresh_identity(session_id)
        if ident is None:
            self._drop(conn, session_id)
            return
        loaded = self._projector.load(self._sessions, self._lifecycles, session_id)
        if isinstance(loaded, Failure):
            raise IndexUnavailable(loaded.failure().message)
        summary = loaded.unwrap()
        if summary is None:
            self._drop(conn, session_id)
        else:
            self._put(conn, summary, ident)

    def committed(self, session_log: SessionLog, last_activity: datetime) -> None:
        """An append of this process (the writer is held): project it now, folding only
        the new events into the accumulator the store keeps beside the session's index."""
        session_id = session_log.session_id
        try:
            with self._mutex:
                conn = self._open()
                segment = _last_segment(session_log.manifest)
                ident = self.identity(session_id, segment)
                if ident is None:
                    return
                lifecycle = self._lifecycles.get(session_id).value_or(SessionLifecycle())
                summary = self._projector.of_log(
                    session_log, last_activity=last_activity, lifecycle=lifecycle
                )
                self._put(conn, summary, ident)
                conn.commit()
        except Exception:  # the append is durable already; the next query re-syncs
            log.warning("session index not updated after an append", exc_info=True)
            self._forget_row(session_id)

    def lifecycle_changed(
        self, session_id: str, lifecycle: SessionLifecycle, written_at: datetime
    ) -> None:
        try:
            with self._mutex:
                conn = self._open()
                _begin(conn)  # the terms read below are what this transaction rewrites
                row = conn.execute(
                    "SELECT record FROM summaries WHERE session_id = ?", (session_id,)
                ).fetchone()
                ident = self.fresh_identity(session_id)
                summary = None if row is None else SessionSummary.from_record(json.loads(row[0]))
                if summary is None or ident is None:
                    conn.rollback()
                    return  # the next query projects it
                words = _words_of(conn, session_id)
                summary = replace(
                    summary,
                    archived=lifecycle.archived,
                    workspace_path=lifecycle.workspace_path,
                    words=words,
                )
                self._put(conn, summary, ident, before=words)
                conn.commit()
        except Exception:
            log.warning("session index not updated after a lifecycle change", exc_info=True)
            self._forget_row(session_id)

    def deleted(self, session_id: str) -> None:
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
                    self._conn.execute(
                        "UPDATE summaries SET identity = '' WHERE session_id = ?", (session_id,)
                    )
                    self._conn.commit()
        except sqlite3.Error:
            pass

    # --- the port ----------------------------------------------------------------------

    def page(
        self, where: SessionFilter, *, limit: int = 50, cursor: PageCursor | None = None
    ) -> Result[SummaryPage, StoreError]:
        limit = max(1, min(limit, QUERY_PAGE_MAX))
        try:
            with self._connection() as conn:
                sql, args = _filter_sql(where)
                if cursor is not None:
                    sql += " AND (activity_us < ? OR (activity_us = ? AND session_id > ?))"
                    args += [cursor.activity_us, cursor.activity_us, cursor.session_id]
                query = (
                    f"SELECT record, activity_us, session_id FROM summaries WHERE {sql} "
                    "ORDER BY activity_us DESC, session_id ASC LIMIT ?"
                )
                rows = conn.execute(query, [*args, limit + 1]).fetchall()
                if conn is self._conn and self._verified(conn, [str(r[2]) for r in rows]):
                    rows = conn.execute(query, [*args, limit + 1]).fetchall()
        except (IndexUnavailable, sqlite3.Error) as exc:
            return Failure(StoreError("SESSION_STORE_IO_ERROR", f"session index: {exc}"))
        summaries = tuple(_parse(r[0]) for r in rows[:limit])
        more = len(rows) > limit
        last = rows[limit - 1] if more else None
        next_cursor = PageCursor(last[1], last[2]) if last is not None else None
        return Success(SummaryPage(summaries, next_cursor))

    def get(self, session_ids: Collection[str]) -> Result[Mapping[str, SessionSummary], StoreError]:
        wanted = sorted({s for s in session_ids if is_session_id(s)})
        found: dict[str, SessionSummary] = {}
        try:
            with self._mutex:
                conn = self._targeted(wanted)
                for sid in wanted:
                    row = conn.execute(
                        "SELECT record FROM summaries WHERE session_id = ?", (sid,)
                    ).fetchone()
                    if row is not None:
                        found[sid] = replace(_parse(row[0]), words=_words_of(conn, sid))
        except (IndexUnavailable, sqlite3.Error) as exc:
            return Failure(StoreError("SESSION_STORE_IO_ERROR", f"session index: {exc}"))
        return Success(found)

    def candidates(self, query: CandidateQuery) -> Result[list[SessionSummary], StoreError]:
        try:
            with self._mutex:
                conn = self._reader()
                try:
                    return Success(self._current(conn, _candidates(conn, query)))
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
            row = conn.execute(
                "SELECT identity FROM summaries WHERE session_id = ?", (sid,)
            ).fetchone()
            stored = None if row is None else str(row[0])
            if stored is not None and self.identity(sid, _segment_in(stored)) == stored:
                out.append(summary)
                continue
            loaded = self._projector.load(self._sessions, self._lifecycles, sid)
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
            rows = {
                sid: conn.execute(
                    "SELECT identity FROM summaries WHERE session_id = ?", (sid,)
                ).fetchone()
                for sid in session_ids
            }
            touched = False
            for sid in session_ids:
                stored = rows[sid][0] if rows[sid] is not None else None
                ident = self.identity(sid, _segment_in(stored))
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


# --- SQL helpers ---------------------------------------------------------------------------


def _copy(source: sqlite3.Connection) -> sqlite3.Connection:
    memory = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        source.backup(memory)
    except sqlite3.DatabaseError:
        memory.close()
        return _empty_memory()
    return memory


def _empty_memory() -> sqlite3.Connection:
    memory = sqlite3.connect(":memory:", check_same_thread=False)
    memory.executescript(_SCHEMA)
    return memory


def _meta(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    try:
        return [(str(k), str(v)) for k, v in conn.execute("SELECT key, value FROM meta")]
    except sqlite3.OperationalError:
        return []


def _rows(conn: sqlite3.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT session_id, identity FROM summaries")}


_SEGMENT_RE: Final = re.compile(r"^events/\d{8,}-\d{8,}\.jsonl$")


def _lights(rows: dict[str, str]) -> dict[str, str]:
    return {sid: ident.split("|", 1)[0] for sid, ident in rows.items()}


def _segment_in(identity: str | None) -> str | None:
    """The segment an identity was taken with (its fourth part, before the '@')."""
    parts = (identity or "").split("|")
    if len(parts) != 4 or parts[3] == "-":
        return None
    return parts[3].rsplit("@", 1)[0]


def _last_segment(manifest: Sequence[ManifestRecord]) -> str | None:
    """The segment the last `segment_closed` names (the manifest's end is read, not all
    of it: an append ends with its segment's record and that segment's pins)."""
    for record in reversed(manifest):
        if isinstance(record, SegmentClosed):
            return record.segmentRelPath
    return None


def _newest_segment(session_dir: Path) -> str | None:
    """The segment the manifest's last `segment_closed` names, from the file's tail."""
    try:
        with open(session_dir / "manifest.jsonl", "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 16384))
            tail = f.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if b'"segment_closed"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        path = record.get("segmentRelPath") if isinstance(record, dict) else None
        if isinstance(path, str) and _SEGMENT_RE.match(path):
            return path
    return None


def _parse(record: str) -> SessionSummary:
    summary = SessionSummary.from_record(json.loads(record))
    if summary is None:
        raise sqlite3.DatabaseError("a summary of another projection version")
    return summary


def _words_of(conn: sqlite3.Connection, session_id: str) -> frozenset[str]:
    row = conn.execute("SELECT id FROM summaries WHERE session_id = ?", (session_id,)).fetchone()
    return frozenset() if row is None else _terms_of(conn, int(row[0]))


def _delete_row(conn: sqlite3.Connection, session_id: str) -> None:
    row = conn.execute("SELECT id FROM summaries WHERE session_id = ?", (session_id,)).fetchone()
    if row is None:
        return
    conn.execute("DELETE FROM terms WHERE id = ?", (row[0],))
    conn.execute("DELETE FROM summaries WHERE id = ?", (row[0],))
    conn.execute("DELETE FROM runs WHERE session_id = ?", (session_id,))


def _upsert(
    conn: sqlite3.Connection,
    summary: SessionSummary,
    ident: Identity,
    before: frozenset[str] | None = None,
) -> Stamp:
    """Write a summary's row, its runs and its corpus terms; the row's new stamp. `before`
    is what the row's terms are known to be (only the difference is written), None to
    read them."""
    record = summary.to_record(corpus=False)
    stamp = secrets.randbits(62)
    conn.execute(
        "INSERT INTO summaries (session_id, identity, stamp, activity_us, status, archived, "
        "healthy, workflow_id, workspace_path, repo_root_hash, git_branch, git_head_sha, "
        "record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO "
        "UPDATE SET identity = excluded.identity, stamp = excluded.stamp, "
        "activity_us = excluded.activity_us, "
        "status = excluded.status, archived = excluded.archived, healthy = excluded.healthy, "
        "workflow_id = excluded.workflow_id, workspace_path = excluded.workspace_path, "
        "repo_root_hash = excluded.repo_root_hash, git_branch = excluded.git_branch, "
        "git_head_sha = excluded.git_head_sha, record = excluded.record",
        (
            summary.session_id,
            ident,
            stamp,
            activity_us(summary.last_activity),
            summary.status,
            int(summary.archived),
            int(summary.is_healthy),
            summary.workflow_id,
            summary.workspace_path,
            summary.repo_root_hash,
            summary.git_branch,
            summary.git_head_sha,
            json.dumps(record, ensure_ascii=False, separators=(",", ":")),
        ),
    )
    (rowid,) = conn.execute(
        "SELECT id FROM summaries WHERE session_id = ?", (summary.session_id,)
    ).fetchone()
    if before is None:
        before = _terms_of(conn, rowid)
    gone = before - summary.words
    new = summary.words - before
    if gone:
        conn.executemany("DELETE FROM terms WHERE term = ? AND id = ?", [(t, rowid) for t in gone])
    if new:
        conn.executemany("INSERT INTO terms (term, id) VALUES (?, ?)", [(t, rowid) for t in new])
    runs = sorted(run.run_id for run in summary.runs)
    if runs != _runs_of(conn, summary.session_id):
        conn.execute("DELETE FROM runs WHERE session_id = ?", (summary.session_id,))
        conn.executemany(
            "INSERT OR REPLACE INTO runs (run_id, session_id) VALUES (?, ?)",
            [(run_id, summary.session_id) for run_id in runs],
        )
    return stamp


def _begin(conn: sqlite3.Connection) -> None:
    """Take the write lock now (reads that follow are of what this transaction writes)."""
    if not conn.in_transaction:
        conn.execute("BEGIN IMMEDIATE")


def _terms_of(conn: sqlite3.Connection, rowid: int) -> frozenset[str]:
    return frozenset(
        str(r[0]) for r in conn.execute("SELECT term FROM terms WHERE id = ?", (rowid,))
    )


def _runs_of(conn: sqlite3.Connection, session_id: str) -> list[str]:
    rows = conn.execute(
        "SELECT run_id FROM runs WHERE session_id = ? ORDER BY run_id", (session_id,)
    ).fetchall()
    return [str(r[0]) for r in rows]


def _with_words(conn: sqlite3.Connection, summary: SessionSummary, rowid: int) -> SessionSummary:
    return replace(summary, words=_terms_of(conn, rowid))


def _with_all(words: Collection[str]) -> tuple[str, list[Any]]:
    """Rows holding every one of `words` (an intersection of the terms' postings)."""
    ordered = sorted(set(words))
    sql = " INTERSECT ".join("SELECT id FROM terms WHERE term = ?" for _ in ordered)
    return f"id IN ({sql})", list(ordered)


def _with_any(words: Collection[str]) -> tuple[str, list[Any]]:
    """Rows holding a word that starts as any longer word of `words` does (its first three
    characters) or that equals any of its short words: resume_session's loose match."""
    clauses: list[str] = []
    args: list[Any] = []
    for word in sorted(set(words)):
        if len(word) > 3:
            clauses.append("(term >= ? AND term < ?)")
            args.extend([word[:3], word[:2] + chr(ord(word[2]) + 1)])
        else:
            clauses.append("term = ?")
            args.append(word)
    return f"id IN (SELECT id FROM terms WHERE {' OR '.join(clauses)})", args


def _filter_sql(where: SessionFilter) -> tuple[str, list[Any]]:
    clauses = ["1"]
    args: list[Any] = []
    if where.statuses:
        marks = ", ".join("?" for _ in where.statuses)
        clauses.append(f"status IN ({marks})")
        args.extend(sorted(where.statuses))
    if where.workflow is not None:
        clauses.append("workflow_id = ?")
        args.append(where.workflow)
    if where.workspace is not None:
        clauses.append("(workspace_path = ? OR repo_root_hash = ?)")
        args.extend([where.workspace, where.workspace])
    if where.branch is not None:
        clauses.append("git_branch = ?")
        args.append(where.branch)
    if where.since is not None:
        clauses.append("activity_us >= ?")
        args.append(activity_us(where.since))
    if where.archived == "exclude":
        clauses.append("archived = 0")
    elif where.archived == "only":
        clauses.append("archived = 1")
    if where.healthy_only:
        clauses.append("healthy = 1")
    if where.text is not None:
        wanted = tokens(where.text)
        if wanted:
            clause, more = _with_all(wanted)
            clauses.append(clause)
            args.extend(more)
    return " AND ".join(clauses), args


def _candidates(conn: sqlite3.Connection, query: CandidateQuery) -> list[SessionSummary]:
    base = ["1"]
    if not query.include_archived:
        base.append("archived = 0")
    if not query.include_unhealthy:
        base.append("healthy = 1")
    cond = " AND ".join(base)
    n = max(1, query.per_signal)
    ids: set[int] = set()

    def take(sql: str, args: list[Any]) -> None:
        ids.update(r[0] for r in conn.execute(sql, args).fetchall())

    recent = "ORDER BY activity_us DESC, session_id LIMIT ?"
    if query.session_id is not None:
        take(f"SELECT id FROM summaries WHERE {cond} AND session_id = ?", [query.session_id])
    if query.run_id is not None:
        take(
            f"SELECT s.id FROM summaries s JOIN runs r ON r.session_id = s.session_id "
            f"WHERE {cond} AND r.run_id = ?",
            [query.run_id],
        )
    words = sorted(set(query.tokens) | set(query.workflow_tokens))
    if words:
        every, every_args = _with_all(sorted(set(query.tokens)) or words)
        take(f"SELECT id FROM summaries WHERE {cond} AND {every} {recent}", [*every_args, n])
        loose, loose_args = _with_any(words)
        take(f"SELECT id FROM summaries WHERE {cond} AND {loose} {recent}", [*loose_args, n])
    if query.git_head_sha is not None:
        take(
            f"SELECT id FROM summaries WHERE {cond} AND git_head_sha = ? {recent}",
            [query.git_head_sha, n],
        )
    if query.git_branch is not None:
        take(
            f"SELECT id FROM summaries WHERE {cond} AND git_branch IS NOT NULL AND "
            f"(git_branch = ? OR substr(git_branch, 1, length(?)) = ? OR "
            f"substr(?, 1, length(git_branch)) = git_branch) {recent}",
            [query.git_branch] * 4 + [n],
        )
    if query.workspace is not None:
        take(
            f"SELECT id FROM summaries WHERE {cond} AND (workspace_path = ? OR "
            f"repo_root_hash = ?) {recent}",
            [query.workspace, query.workspace, n],
        )
    take(f"SELECT id FROM summaries WHERE {cond} {recent}", [n])
    out: list[SessionSummary] = []
    for rowid in sorted(ids):
        row = conn.execute("SELECT record FROM summaries WHERE id = ?", (rowid,)).fetchone()
        if row is not None:
            out.append(_with_words(conn, _parse(row[0]), rowid))
    return out
