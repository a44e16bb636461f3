"""What the in-memory backend holds: the rows a database would, in dicts and lists behind
one lock (eventsourcing's POPO recorder is the model).

Each event and each manifest record is kept as the canonical JSON line the file backend
writes (without its newline), and read back through the same validation, so a damaged row
is the same corruption class as on files. Several `MemoryBackend`s opened over one
`MemoryStorage` behave as several processes over one store: each keeps its own validated
cache, and they share the rows, the writer locks, the keyring and the change feeds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from workrail.core.keyring import Keyring
from workrail.core.snapshot_state import SnapshotState
from workrail.core.summary import SessionSummary
from workrail.store.errors import StoreError
from workrail.store.ports import AppendTime

Clock = Callable[[], datetime]
"""Where the backend's time comes from (passed in by the composition root): aware UTC."""


@dataclass
class SessionRows:
    """One session as committed: its manifest lines, its event lines by index (rows past
    `event_count` are debris no manifest record attests), and what the store knows of it."""

    manifest: list[bytes] = field(default_factory=list)
    events: dict[int, bytes] = field(default_factory=dict)
    event_count: int = 0
    append_times: list[AppendTime] = field(default_factory=list)
    """When each committed append was written, oldest first."""
    last_activity: datetime | None = None
    lifecycle: bytes | None = None
    """The lifecycle record's canonical JSON, None when none was stored."""
    version: int = 0
    """Counts the changes (writes, lifecycle records): a rebuilt summary is kept only
    when nothing changed while it was projected."""


@dataclass
class ContentRow:
    body: bytes
    stored_at: datetime


class Feed:
    """A change feed: the ids of watched sessions committed to since the last `wait`."""

    def __init__(self, storage: MemoryStorage, ids: frozenset[str] | None) -> None:
        self._storage = storage
        self._ids = ids
        self._changed: set[str] = set()
        self._wake = threading.Condition()
        self._closed = False

    def offer(self, session_id: str) -> None:
        if self._ids is None or session_id in self._ids:
            with self._wake:
                self._changed.add(session_id)
                self._wake.notify_all()

    def wait(self, timeout: float) -> frozenset[str]:
        with self._wake:
            if not self._changed and not self._closed:
                self._wake.wait_for(lambda: bool(self._changed) or self._closed, max(0.0, timeout))
            changed, self._changed = frozenset(self._changed), set()
        return changed

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        self._storage.unsubscribe(self)


class MemoryStorage:
    """Everything one in-memory store holds. Take `mutex` to read or change any field;
    never call out (to a projector, a feed) while holding it."""

    def __init__(self) -> None:
        self.mutex = threading.RLock()
        self.sessions: dict[str, SessionRows] = {}
        self.writers: dict[str, int] = {}
        """Session id -> the thread holding its writer."""
        self.snapshots: dict[str, ContentRow] = {}
        self.states: dict[str, SnapshotState] = {}
        """Each stored snapshot's state, recorded when it was stored."""
        self.pinned: dict[str, ContentRow] = {}
        self.summaries: dict[str, SessionSummary] = {}
        self.keyring: Keyring | None = None
        self._feeds: list[Feed] = []

    def take_writer(self, session_id: str) -> StoreError | None:
        """Become the session's only writer, or why not (never waits)."""
        me = threading.get_ident()
        with self.mutex:
            holder = self.writers.get(session_id)
            if holder is None:
                self.writers[session_id] = me
                return None
        if holder == me:
            return StoreError(
                "SESSION_LOCK_REENTRANT",
                f"{session_id} is already being written by this very call chain; a write "
                "must not start another write of the same session",
            )
        return StoreError(
            "SESSION_LOCKED", f"{session_id} is being written by another caller; retry shortly"
        )

    def release_writer(self, session_id: str) -> None:
        with self.mutex:
            self.writers.pop(session_id, None)

    def subscribe(self, ids: frozenset[str] | None) -> Feed:
        feed = Feed(self, ids)
        with self.mutex:
            self._feeds.append(feed)
        return feed

    def unsubscribe(self, feed: Feed) -> None:
        with self.mutex:
            if feed in self._feeds:
                self._feeds.remove(feed)

    def announce(self, session_id: str) -> None:
        """Tell every feed that `session_id` changed (call without holding `mutex`)."""
        with self.mutex:
            feeds = list(self._feeds)
        for feed in feeds:
            feed.offer(session_id)
