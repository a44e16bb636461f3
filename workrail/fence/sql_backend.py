"""What the SQLite and PostgreSQL fence backends share: the port's logic over one SQL table set.

Both run the same pure decision, count the same budgets and keep replies alike; they differ in
their SQL text (placeholders, table and column names), how a connection is opened and held, and
which locks a mutating action takes before it reads. A backend supplies its `FenceSql`, its
`_db`/`_transaction` context managers and the two lock hooks.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final, Protocol

from returns.result import Success

from workrail.fence.backend import REPLAY_RETENTION_MS, Gate, StoredReply
from workrail.fence.decide import Decision, decide
from workrail.fence.ratelimit import RateLimits, over_limit, retry_after_seconds, window_of
from workrail.fence.record import CheckpointRecord, Command, StatusCommand

GLOBAL_SCOPE: Final = "global"
FENCE_KEY_SETTING: Final = "fence-key"


class Rows(Protocol):
    def fetchone(self) -> Any: ...


class SqlConnection(Protocol):
    """The one call both drivers' connections answer alike."""

    def execute(self, sql: str, params: Any = ..., /) -> Rows: ...


@dataclass(frozen=True)
class FenceSql:
    """One dialect's statements, each with its placeholders in the order of the calls below."""

    load: str
    """(workflow_hash) -> record"""
    store: str
    """(workflow_hash, record, expires_ms), an upsert"""
    purge_checkpoints: str
    """(now_ms)"""
    count: str
    """(scope, window) -> count"""
    bump: str
    """(scope, window), an upsert that counts one more"""
    purge_budgets: str
    """(oldest window kept)"""
    setting: str
    """(name) -> value"""
    set_paused: str
    """('1' or '0'), an upsert of the paused setting"""
    recall: str
    """(key, now_ms) -> reply"""
    purge_replays: str
    """(now_ms)"""
    remember: str
    """(key, reply, expires_ms), first reply wins"""


class SqlFenceBackend(ABC):
    """The port over a `FenceSql`; subclasses own connections and their dialect's locks."""

    sql: FenceSql

    @abstractmethod
    def _db(self) -> AbstractContextManager[SqlConnection]:
        """A connection for reads and single statements; failures are BackendUnavailable."""

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[SqlConnection]:
        """A connection inside one transaction, committed on success, rolled back on error."""

    @abstractmethod
    def _lock_checkpoint(self, conn: SqlConnection, workflow_hash: str) -> None:
        """Taken in the transaction before a mutating action reads its record."""

    @abstractmethod
    def _lock_budgets(self, conn: SqlConnection) -> None:
        """Taken in the transaction before the budgets are read."""

    def apply(self, command: Command, now_ms: int) -> Decision:
        if isinstance(command, StatusCommand):
            with self._db() as conn:
                return decide(self._load(conn, command.workflow_hash), command, now_ms)
        with self._transaction() as conn:
            self._lock_checkpoint(conn, command.workflow_hash)
            decision = decide(self._load(conn, command.workflow_hash), command, now_ms)
            match decision:
                case Success(outcome) if outcome.changed:
                    self._store(conn, outcome.record)
                    conn.execute(self.sql.purge_checkpoints, (now_ms,))
                case _:
                    pass
        return decision

    def gate(self, client: str, now_ms: int, limits: RateLimits) -> Gate:
        window = window_of(now_ms)
        with self._transaction() as conn:
            if self._setting(conn, "paused") == "1":
                return "paused"
            self._lock_budgets(conn)
            counts = {scope: self._count(conn, scope, window) for scope in (client, GLOBAL_SCOPE)}
            if over_limit(counts[client], limits.client_rpm) or over_limit(
                counts[GLOBAL_SCOPE], limits.global_rpm
            ):
                return retry_after_seconds(now_ms)
            for scope in (client, GLOBAL_SCOPE):
                conn.execute(self.sql.bump, (scope, window))
            conn.execute(self.sql.purge_budgets, (window - 1,))
            return "open"

    def is_paused(self) -> bool:
        with self._db() as conn:
            return self._setting(conn, "paused") == "1"

    def set_paused(self, paused: bool) -> None:
        with self._db() as conn:
            conn.execute(self.sql.set_paused, ("1" if paused else "0",))

    def recall(self, key: str, now_ms: int) -> StoredReply | None:
        with self._db() as conn:
            row = conn.execute(self.sql.recall, (key, now_ms)).fetchone()
        if row is None:
            return None
        return StoredReply.from_doc(json.loads(row[0]))

    def remember(self, key: str, reply: StoredReply, now_ms: int) -> None:
        doc = json.dumps(reply.doc())
        with self._transaction() as conn:
            conn.execute(self.sql.purge_replays, (now_ms,))
            conn.execute(self.sql.remember, (key, doc, now_ms + REPLAY_RETENTION_MS))

    def _load(self, conn: SqlConnection, workflow_hash: str) -> CheckpointRecord | None:
        row = conn.execute(self.sql.load, (workflow_hash,)).fetchone()
        return None if row is None else CheckpointRecord.model_validate_json(row[0])

    def _store(self, conn: SqlConnection, record: CheckpointRecord) -> None:
        conn.execute(
            self.sql.store,
            (record.workflow_hash, record.model_dump_json(), record.state_expires_ms),
        )

    def _count(self, conn: SqlConnection, scope: str, window: int) -> int:
        row = conn.execute(self.sql.count, (scope, window)).fetchone()
        return 0 if row is None else int(row[0])

    def _setting(self, conn: SqlConnection, name: str) -> str | None:
        row = conn.execute(self.sql.setting, (name,)).fetchone()
        return None if row is None else str(row[0])
