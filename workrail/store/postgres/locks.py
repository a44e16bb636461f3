"""Who may write a session: one thread of this process, holding one transaction-scoped
advisory lock in the database.

The in-process guard answers at once, without a round trip, when another thread of this
process writes the session (and spots a thread re-entering its own write). The advisory
lock excludes every other connection, process and replica; being transaction-scoped it
needs no session state on the server connection (so PgBouncer's transaction mode is fine)
and is released by COMMIT, ROLLBACK or a dead connection — a killed replica never leaves a
session locked.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from workrail.store.errors import StoreError

LOCK_NAMESPACE = b"workrail.session\x00"


def session_lock_key(session_id: str) -> int:
    """The signed 64-bit `pg_try_advisory_xact_lock` key of a session: the first 8 bytes
    of sha256(namespace || id). Ids are random, so distinct sessions practically never
    share a key (and if two did, they would only take turns)."""
    digest = hashlib.sha256(LOCK_NAMESPACE + session_id.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class WriterGuard:
    """Sessions being written by a thread of this process."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._owners: dict[str, int] = {}

    @contextmanager
    def hold(self, session_id: str) -> Iterator[StoreError | None]:
        me = threading.get_ident()
        with self._mutex:
            owner = self._owners.get(session_id)
            if owner is None:
                self._owners[session_id] = me
        if owner == me:
            yield StoreError("SESSION_LOCK_REENTRANT", "this thread already writes the session")
            return
        if owner is not None:
            yield StoreError("SESSION_LOCKED", "another writer in this process holds the session")
            return
        try:
            yield None
        finally:
            with self._mutex:
                del self._owners[session_id]


def locked_elsewhere() -> StoreError:
    return StoreError(
        "SESSION_LOCKED", "another connection (process or replica) is writing the session"
    )
