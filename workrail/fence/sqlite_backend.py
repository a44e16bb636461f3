"""Embedded backend: one SQLite file in the data directory, no server needed.

Every mutating action runs the pure decision inside `BEGIN IMMEDIATE`, which takes SQLite's
write lock across processes, so concurrent claimers on one machine are serialised and a
crash leaves either the whole decision or none of it. Deleted rows are zeroed
(`secure_delete`) so expired digests do not linger in free pages. The file is opened on the
first request, so a problem with it is a per-call DEPENDENCY_UNAVAILABLE, not a missing tool.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from workrail.fence.backend import BackendUnavailable, FenceKeyReplaced
from workrail.fence.sql_backend import FENCE_KEY_SETTING, FenceSql, SqlConnection, SqlFenceBackend
from workrail.store.fsio import ensure_tree, open_regular

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS checkpoints (
    workflow_hash TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS checkpoints_expiry ON checkpoints (expires_ms);
CREATE TABLE IF NOT EXISTS budgets (
    scope TEXT NOT NULL,
    window INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (scope, window)
);
CREATE TABLE IF NOT EXISTS replays (
    key TEXT PRIMARY KEY,
    reply TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS replays_expiry ON replays (expires_ms);
CREATE TABLE IF NOT EXISTS settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""
_TABLES: Final = _SCHEMA.count("CREATE TABLE")
BUSY_TIMEOUT_MS: Final = 10_000
_SQL: Final = FenceSql(
    load="SELECT record FROM checkpoints WHERE workflow_hash = ?",
    store="INSERT INTO checkpoints (workflow_hash, record, expires_ms) VALUES (?, ?, ?)"
    " ON CONFLICT (workflow_hash) DO UPDATE SET record = excluded.record,"
    " expires_ms = excluded.expires_ms",
    purge_checkpoints="DELETE FROM checkpoints WHERE expires_ms <= ?",
    count="SELECT count FROM budgets WHERE scope = ? AND window = ?",
    bump="INSERT INTO budgets (scope, window, count) VALUES (?, ?, 1)"
    " ON CONFLICT (scope, window) DO UPDATE SET count = count + 1",
    purge_budgets="DELETE FROM budgets WHERE window < ?",
    setting="SELECT value FROM settings WHERE name = ?",
    set_paused="INSERT INTO settings (name, value) VALUES ('paused', ?)"
    " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    recall="SELECT reply FROM replays WHERE key = ? AND expires_ms > ?",
    purge_replays="DELETE FROM replays WHERE expires_ms <= ?",
    remember="INSERT INTO replays (key, reply, expires_ms) VALUES (?, ?, ?)"
    " ON CONFLICT (key) DO NOTHING",
)


def sqlite_path(data_dir: Path) -> Path:
    return data_dir / "fence" / "fence.sqlite3"


class SqliteBackend(SqlFenceBackend):
    """The default backend. One connection per instance, guarded for use from threads."""

    name = "sqlite"
    sql = _SQL

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        key_check: str | None = None,
        key_created: bool = False,
    ) -> None:
        self.path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._key_check = key_check
        self._key_created = key_created
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _open(self) -> sqlite3.Connection:
        ensure_tree(self.path.parent.parent, self.path.parent)
        os.close(open_regular(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        conn = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA secure_delete=ON")
            # Switching to WAL and creating the schema need the write lock, and many
            # processes may open the database at the same instant; do them only when needed
            # and under BEGIN IMMEDIATE (which waits for the busy timeout) where possible.
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                self._retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"))
            if (
                conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[
                    0
                ]
                < _TABLES
            ):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            self._agree_on_key(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _agree_on_key(self, conn: sqlite3.Connection) -> None:
        """The first opener records its fence-key check digest; later openers must match.
        A key created just now never adopts a database that already holds state: that
        state was made with the key that went missing."""
        if self._key_check is None:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            recorded = self._setting(conn, FENCE_KEY_SETTING)
            if recorded is None and not (self._key_created and _holds_state(conn)):
                conn.execute(
                    "INSERT INTO settings (name, value) VALUES (?, ?)",
                    (FENCE_KEY_SETTING, self._key_check),
                )
                recorded = self._key_check
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if recorded != self._key_check:
            raise FenceKeyReplaced(
                f"{self.path} holds checkpoints made with another keys/fence.key"
            )

    def _retry_busy(self, action: Callable[[], object]) -> None:
        """Run `action`, retrying while SQLite says the database is locked (the journal-mode
        switch does not wait on the busy handler), up to the busy timeout."""
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        while True:
            try:
                action()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.005)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """The connection (opened on first use), held alone; failures are BackendUnavailable."""
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = self._open()
                yield self._conn
            except (OSError, sqlite3.Error) as exc:
                raise BackendUnavailable(f"fence database error: {exc}") from exc

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """`BEGIN IMMEDIATE` (the cross-process write lock) … COMMIT, or ROLLBACK on any error."""
        with self._db() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _lock_checkpoint(self, conn: SqlConnection, workflow_hash: str) -> None:
        """Nothing more: `BEGIN IMMEDIATE` already holds the database's one write lock."""

    def _lock_budgets(self, conn: SqlConnection) -> None:
        """Nothing more, as for a checkpoint."""

    def stored_bytes(self) -> bytes:
        with self._db() as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            chunks = [self.path.read_bytes()]
        for suffix in ("-wal", "-shm"):
            extra = self.path.with_name(self.path.name + suffix)
            if extra.exists():
                chunks.append(extra.read_bytes())
        return b"".join(chunks)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _holds_state(conn: sqlite3.Connection) -> bool:
    """Whether any checkpoint or kept reply exists (expired ones included: they are only
    deleted lazily, and refusing is the safe side)."""
    return any(
        conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None
        for table in ("checkpoints", "replays")
    )
