"""Embedded backend: one SQLite file in the data directory, no server needed.

Every mutating action runs the pure decision inside `BEGIN IMMEDIATE`, which takes SQLite's
write lock across processes, so concurrent claimers on one machine are serialised and a
crash leaves either the whole decision or none of it. Deleted rows are zeroed
(`secure_delete`) so expired digests do not linger in free pages.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Final

from returns.result import Success

from workrail.fence.backend import (
    REPLAY_RETENTION_MS,
    BackendUnavailable,
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
BUSY_TIMEOUT_MS: Final = 10_000
GLOBAL_SCOPE: Final = "global"


def sqlite_path(data_dir: Path) -> Path:
    return data_dir / "fence" / "fence.sqlite3"


class SqliteBackend:
    """The default backend. One connection per instance, guarded for use from threads."""

    name = "sqlite"

    def __init__(self, path: Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
            self._conn = sqlite3.connect(
                path,
                timeout=busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA secure_delete=ON")
            self._conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise BackendUnavailable(f"cannot open the fence database: {exc}") from exc
        self._lock = threading.Lock()

    def apply(self, command: Command, now_ms: int) -> Decision:
        with self._lock:
            try:
                if isinstance(command, StatusCommand):
                    return decide(self._load(command.workflow_hash), command, now_ms)
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    decision = decide(self._load(command.workflow_hash), command, now_ms)
                    match decision:
                        case Success(outcome) if outcome.changed:
                            self._store(outcome.record)
                            self._conn.execute(
                                "DELETE FROM checkpoints WHERE expires_ms <= ?", (now_ms,)
                            )
                        case _:
                            pass
                    self._conn.execute("COMMIT")
                    return decision
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise BackendUnavailable(f"fence database error: {exc}") from exc

    def _load(self, workflow_hash: str) -> CheckpointRecord | None:
        row = self._conn.execute(
            "SELECT record FROM checkpoints WHERE workflow_hash = ?", (workflow_hash,)
        ).fetchone()
        return None if row is None else CheckpointRecord.model_validate_json(row[0])

    def _store(self, record: CheckpointRecord) -> None:
        self._conn.execute(
            "INSERT INTO checkpoints (workflow_hash, record, expires_ms) VALUES (?, ?, ?)"
            " ON CONFLICT (workflow_hash) DO UPDATE SET record = excluded.record,"
            " expires_ms = excluded.expires_ms",
            (record.workflow_hash, record.model_dump_json(), record.state_expires_ms),
        )

    def gate(self, client: str, now_ms: int, limits: RateLimits) -> Gate:
        window = window_of(now_ms)
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    if self._setting("paused") == "1":
                        self._conn.execute("COMMIT")
                        return "paused"
                    counts = {scope: self._count(scope, window) for scope in (client, GLOBAL_SCOPE)}
                    if over_limit(counts[client], limits.client_rpm) or over_limit(
                        counts[GLOBAL_SCOPE], limits.global_rpm
                    ):
                        self._conn.execute("COMMIT")
                        return retry_after_seconds(now_ms)
                    for scope in (client, GLOBAL_SCOPE):
                        self._conn.execute(
                            "INSERT INTO budgets (scope, window, count) VALUES (?, ?, 1)"
                            " ON CONFLICT (scope, window) DO UPDATE SET count = count + 1",
                            (scope, window),
                        )
                    self._conn.execute("DELETE FROM budgets WHERE window < ?", (window - 1,))
                    self._conn.execute("COMMIT")
                    return "open"
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise BackendUnavailable(f"fence database error: {exc}") from exc

    def _count(self, scope: str, window: int) -> int:
        row = self._conn.execute(
            "SELECT count FROM budgets WHERE scope = ? AND window = ?", (scope, window)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def _setting(self, name: str) -> str | None:
        row = self._conn.execute("SELECT value FROM settings WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def is_paused(self) -> bool:
        with self._lock:
            try:
                return self._setting("paused") == "1"
            except sqlite3.Error as exc:
                raise BackendUnavailable(f"fence database error: {exc}") from exc

    def set_paused(self, paused: bool) -> None:
        with self._lock:
            try:
                self._conn.execute(
                    "INSERT INTO settings (name, value) VALUES ('paused', ?)"
                    " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    ("1" if paused else "0",),
                )
            except sqlite3.Error as exc:
                raise BackendUnavailable(f"fence database error: {exc}") from exc

    def recall(self, key: str, now_ms: int) -> StoredReply | None:
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT reply FROM replays WHERE key = ? AND expires_ms > ?", (key, now_ms)
                ).fetchone()
            except sqlite3.Error as exc:
                raise BackendUnavailable(f"fence database error: {exc}") from exc
        if row is None:
            return None
        doc = json.loads(row[0])
        return StoredReply(request=doc["request"], status=doc["status"], body=doc["body"])

    def remember(self, key: str, reply: StoredReply, now_ms: int) -> None:
        doc = json.dumps({"request": reply.request, "status": reply.status, "body": reply.body})
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    self._conn.execute("DELETE FROM replays WHERE expires_ms <= ?", (now_ms,))
                    self._conn.execute(
                        "INSERT INTO replays (key, reply, expires_ms) VALUES (?, ?, ?)"
                        " ON CONFLICT (key) DO NOTHING",
                        (key, doc, now_ms + REPLAY_RETENTION_MS),
                    )
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise BackendUnavailable(f"fence database error: {exc}") from exc

    def stored_bytes(self) -> bytes:
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            chunks = [self.path.read_bytes()]
        for suffix in ("-wal", "-shm"):
            extra = self.path.with_name(self.path.name + suffix)
            if extra.exists():
                chunks.append(extra.read_bytes())
        return b"".join(chunks)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
