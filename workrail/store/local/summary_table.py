"""The SQLite tables of the files backend's session index, `<data>/index/sessions.sqlite3`:
their schema and versions, and the statements that read and write a session's rows — its
summary, its runs and its corpus terms (one row per distinct term, so text search
intersects postings and an append writes only the terms that changed).

The filters themselves are the shared builder's (store.summary_query, SQLite dialect).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Final

from workrail.core.summary import PROJECTION_VERSION, SessionSummary
from workrail.store.local.sqlite_file import boot_id, checked_since_boot
from workrail.store.ports import CandidateQuery
from workrail.store.summary_query import SQLITE, candidate_sql, row_values, upsert_sql

INDEX_SCHEMA: Final = 4
INDEX_RELPATH: Final = Path("index") / "sessions.sqlite3"
Stamp = int
"""A random value each write of a row sets: equal to the one a connection wrote, the row
(and its terms) is still that write's, whoever else projected the session since."""

SCHEMA_SQL: Final = """
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

_UPSERT: Final = upsert_sql(SQLITE, ("identity", "stamp"))

# --- the versions --------------------------------------------------------------------------


def write_meta(conn: sqlite3.Connection) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        [
            ("schema", str(INDEX_SCHEMA)),
            ("projection", str(PROJECTION_VERSION)),
            ("boot_id", boot_id()),
        ],
    )


def of_this_version(conn: sqlite3.Connection) -> bool:
    """The index is of this schema and projection version (False when it has no meta)."""
    return _current(_meta(conn))


def usable(conn: sqlite3.Connection) -> bool:
    """Of this version, and checked since the last boot."""
    meta = _meta(conn)
    return _current(meta) and checked_since_boot(conn, meta.get("boot_id"))


def _current(meta: dict[str, str]) -> bool:
    schema, projection = meta.get("schema"), meta.get("projection")
    return schema == str(INDEX_SCHEMA) and projection == str(PROJECTION_VERSION)


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    except sqlite3.OperationalError:
        return {}


def empty_memory() -> sqlite3.Connection:
    memory = sqlite3.connect(":memory:", check_same_thread=False)
    memory.executescript(SCHEMA_SQL)
    return memory


def copy_to_memory(source: sqlite3.Connection) -> sqlite3.Connection:
    memory = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        source.backup(memory)
    except sqlite3.DatabaseError:
        memory.close()
        return empty_memory()
    return memory


# --- reading rows --------------------------------------------------------------------------


def identities(conn: sqlite3.Connection) -> dict[str, str]:
    """Every row's identity by session id."""
    return {str(k): str(v) for k, v in conn.execute("SELECT session_id, identity FROM summaries")}


def stored_identity(conn: sqlite3.Connection, session_id: str) -> str | None:
    row = conn.execute(
        "SELECT identity FROM summaries WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None else str(row[0])


def parse(record: str) -> SessionSummary:
    summary = SessionSummary.from_record(json.loads(record))
    if summary is None:
        raise sqlite3.DatabaseError("a summary of another projection version")
    return summary


def summary_of(conn: sqlite3.Connection, session_id: str, *, strict: bool) -> SessionSummary | None:
    """The session's row with its corpus terms; None when it has none, or (unless
    `strict`, which raises) when its record is of another projection version."""
    row = conn.execute(
        "SELECT id, record FROM summaries WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        return None
    summary = parse(row[1]) if strict else SessionSummary.from_record(json.loads(row[1]))
    return None if summary is None else replace(summary, words=_terms_of(conn, int(row[0])))


def candidates(conn: sqlite3.Connection, query: CandidateQuery) -> list[SessionSummary]:
    """resume_session's candidates (with their corpus terms), by row id."""
    ids: set[int] = set()
    for sql, args in candidate_sql(SQLITE, query):
        ids.update(r[0] for r in conn.execute(sql, args).fetchall())
    out: list[SessionSummary] = []
    for rowid in sorted(ids):
        row = conn.execute("SELECT record FROM summaries WHERE id = ?", (rowid,)).fetchone()
        if row is not None:
            out.append(replace(parse(row[0]), words=_terms_of(conn, rowid)))
    return out


def _terms_of(conn: sqlite3.Connection, rowid: int) -> frozenset[str]:
    return frozenset(
        str(r[0]) for r in conn.execute("SELECT term FROM terms WHERE id = ?", (rowid,))
    )


def _runs_of(conn: sqlite3.Connection, session_id: str) -> list[str]:
    rows = conn.execute(
        "SELECT run_id FROM runs WHERE session_id = ? ORDER BY run_id", (session_id,)
    ).fetchall()
    return [str(r[0]) for r in rows]


# --- writing rows --------------------------------------------------------------------------


def begin(conn: sqlite3.Connection) -> None:
    """Take the write lock now (reads that follow are of what this transaction writes)."""
    if not conn.in_transaction:
        conn.execute("BEGIN IMMEDIATE")


def stamp_of(conn: sqlite3.Connection, session_id: str) -> Stamp | None:
    row = conn.execute("SELECT stamp FROM summaries WHERE session_id = ?", (session_id,)).fetchone()
    return None if row is None else int(row[0])


def delete_row(conn: sqlite3.Connection, session_id: str) -> None:
    row = conn.execute("SELECT id FROM summaries WHERE session_id = ?", (session_id,)).fetchone()
    if row is None:
        return
    conn.execute("DELETE FROM terms WHERE id = ?", (row[0],))
    conn.execute("DELETE FROM summaries WHERE id = ?", (row[0],))
    conn.execute("DELETE FROM runs WHERE session_id = ?", (session_id,))


def mark_stale(conn: sqlite3.Connection, session_id: str) -> None:
    """An identity no session has: the next query projects the session again."""
    conn.execute("UPDATE summaries SET identity = '' WHERE session_id = ?", (session_id,))


def upsert(
    conn: sqlite3.Connection,
    summary: SessionSummary,
    ident: str,
    before: frozenset[str] | None = None,
) -> Stamp:
    """Write a summary's row, its runs and its corpus terms; the row's new stamp. `before`
    is what the row's terms are known to be (only the difference is written), None to
    read them."""
    sid = summary.session_id
    stamp = secrets.randbits(62)
    conn.execute(_UPSERT, (sid, ident, stamp, *row_values(summary)))
    (rowid,) = conn.execute("SELECT id FROM summaries WHERE session_id = ?", (sid,)).fetchone()
    if before is None:
        before = _terms_of(conn, rowid)
    gone = before - summary.words
    new = summary.words - before
    if gone:
        conn.executemany("DELETE FROM terms WHERE term = ? AND id = ?", [(t, rowid) for t in gone])
    if new:
        conn.executemany("INSERT INTO terms (term, id) VALUES (?, ?)", [(t, rowid) for t in new])
    runs = sorted(run.run_id for run in summary.runs)
    if runs != _runs_of(conn, sid):
        conn.execute("DELETE FROM runs WHERE session_id = ?", (sid,))
        conn.executemany(
            "INSERT OR REPLACE INTO runs (run_id, session_id) VALUES (?, ?)",
            [(run_id, sid) for run_id in runs],
        )
    return stamp
