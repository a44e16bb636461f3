"""Embedded backend: one SQLite file in the data directory, no server needed.

Every mutating action runs the pure decision inside `BEGIN IMMEDIATE`, which takes SQLite's
write lock across processes, so concurrent claimers on one machine are serialised and a
crash leaves either the whole decision or none of it. Deleted rows are zeroed
(`secure_delete`) so expired digests do not linger in free pages. The file is opened on the
first request, so a problem with it is a per-call DEPENDENCY_UNAVAILABLE, not a missing tool.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from returns.result import Success

from workrail.fence.backend import (
    REPLAY_RETENTION_MS,
    BackendUnavailable,
    FenceKeyReplaced,
    Gate,
    StoredReply,
)
from workrail.fence.decide import Decision, decide
from workrail.fence.ratelimit import (
    RateLimits,
    over_limit,
    retry_after_seconds,
    window_of,
)
from workrail.fence.record import CheckpointRecord, Command, StatusCommand
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
GLOBAL_SCOPE: Final = "global"
FENCE_KEY_SETTING: Final = "fence-key"


def sqlite_path(data_dir: Path) -> Path:
    return data_dir / "fence" / "fence.sqlite3"


class SqliteBackend:
    """The default backend. One connection per instance, guarded for use from threads."""

    name = "sqlite"

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
            recorded = _setting(conn, FENCE_KEY_SETTING)
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

    def apply(self, command: Command, now_ms: int) -> Decision:
        if isinstance(command, StatusCommand):
            with self._db() as conn:
                return decide(_load(conn, command.workflow_hash), command, now_ms)
        with self._transaction() as conn:
            decision = decide(_load(conn, command.workflow_hash), command, now_ms)
            match decision:
                case Success(outcome) if outcome.changed:
                    _store(conn, outcome.record)
                    conn.execute("DELETE FROM checkpoints WHERE expires_ms <= ?", (now_ms,))
                case _:
                    pass
        return decision

    def gate(self, client: str, now_ms: int, limits: RateLimits) -> Gate:
        window = window_of(now_ms)
        with self._transaction() as conn:
            if _setting(conn, "paused") == "1":
                return "paused"
            counts = {scope: _count(conn, scope, window) for scope in (client, GLOBAL_SCOPE)}
            if over_limit(counts[client], limits.client_rpm) or over_limit(
                counts[GLOBAL_SCOPE], limits.global_rpm
            ):
                return retry_after_seconds(now_ms)
            for scope in (client, GLOBAL_SCOPE):
                conn.execute(
                    "INSERT INTO budgets (scope, window, count) VALUES (?, ?, 1)"
                    " ON CONFLICT (scope, window) DO UPDATE SET count = count + 1",
                    (scope, window),
                )
            conn.execute("DELETE FROM budgets WHERE window < ?", (window - 1,))
            return "open"

    def is_paused(self) -> bool:
        with self._db() as conn:
            return _setting(conn, "paused") == "1"

    def set_paused(self, paused: bool) -> None:
        with self._db() as conn:
            conn.execute(
                "INSERT INTO settings (name, value) VALUES ('paused', ?)"
                " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                ("1" if paused else "0",),
            )

    def recall(self, key: str, now_ms: int) -> StoredReply | None:
        with self._db() as conn:
            row = conn.execute(
                "SELECT reply FROM replays WHERE key = ? AND expires_ms > ?", (key, now_ms)
            ).fetchone()
        if row is None:
            return None
        return StoredReply.from_doc(json.loads(row[0]))

    def remember(self, key: str, reply: StoredReply, now_ms: int) -> None:
        doc = json.dumps(reply.doc())
        with self._transaction() as conn:
            conn.execute("DELETE FROM replays WHERE expires_ms <= ?", (now_ms,))
            conn.execute(
                "INSERT INTO replays (key, reply, expires_ms) VALUES (?, ?, ?)"
                " ON CONFLICT (key) DO NOTHING",
                (key, doc, now_ms + REPLAY_RETENTION_MS),
            )

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


def _load(conn: sqlite3.Connection, workflow_hash: str) -> CheckpointRecord | None:
    row = conn.execute(
        "SELECT record FROM checkpoints WHERE workflow_hash = ?", (workflow_hash,)
    ).fetchone()
    return None if row is None else CheckpointRecord.model_validate_json(row[0])


def _store(conn: sqlite3.Connection, record: CheckpointRecord) -> None:
    conn.execute(
        "INSERT INTO checkpoints (workflow_hash, record, expires_ms) VALUES (?, ?, ?)"
        " ON CONFLICT (workflow_hash) DO UPDATE SET record = excluded.record,"
        " expires_ms = excluded.expires_ms",
        (record.workflow_hash, record.model_dump_json(), record.state_expires_ms),
    )


def _count(conn: sqlite3.Connection, scope: str, window: int) -> int:
    row = conn.execute(
        "SELECT count FROM budgets WHERE scope = ? AND window = ?", (scope, window)
    ).fetchone()
    return 0 if row is None else int(row[0])


def _holds_state(conn: sqlite3.Connection) -> bool:
    """Whether any checkpoint or kept reply exists (expired ones included: they are only
    deleted lazily, and refusing is the safe side)."""
    return any(
        conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None
        for table in ("checkpoints", "replays")
    )


def _setting(conn: sqlite3.Connection, name: str) -> str | None:
    row = conn.execute("SELECT value FROM settings WHERE name = ?", (name,)).fetchone()
    return None if row is None else str(row[0])
