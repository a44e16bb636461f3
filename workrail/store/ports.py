"""The ports the engine talks to. Every backend (files, PostgreSQL) implements them and
passes the shared contract suite in tests/store/contract.py; the composition root
(workrail/app.py) is the only place that picks one.

Every method returns a value: a `Result` whose failure is a `StoreError` with a closed
code; nothing raises across a port.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from returns.result import Result

from workrail.core.append import AppendPlan, SnapshotPin
from workrail.core.events import DomainEvent
from workrail.core.health import Corruption, SessionHealth
from workrail.core.keyring import Keyring
from workrail.core.manifest import ManifestRecord
from workrail.core.session_index import SessionIndex
from workrail.store.errors import StoreError

__all__ = [
    "AppendOutcome",
    "AppendPlan",
    "Backend",
    "ChangeFeed",
    "KeyringStore",
    "PinnedWorkflowStore",
    "PrefixLoad",
    "SessionLog",
    "SessionStore",
    "SessionWatch",
    "SnapshotPin",
    "SnapshotStore",
    "WriteTxn",
]

T = TypeVar("T")
E = TypeVar("E")

LIST_PAGE_MAX = 1000
"""The largest page `SessionStore.list_ids` returns."""


@dataclass(frozen=True)
class AppendOutcome:
    """The events as they now stand in the log; `deduplicated` when nothing was written."""

    events: tuple[DomainEvent, ...]
    deduplicated: bool


@dataclass(frozen=True)
class SessionLog:
    """A validated view of a session: the first `count` events, their manifest and index.

    The sequences may be shared with the store's cache and only ever grow; read them only
    inside the callback that received the view.
    """

    session_id: str
    events: Sequence[DomainEvent]
    manifest: Sequence[ManifestRecord]
    index: SessionIndex

    @property
    def count(self) -> int:
        return len(self.events)

    @property
    def is_empty(self) -> bool:
        return not self.events


@dataclass(frozen=True)
class PrefixLoad:
    """The validated prefix of a session (for read-only inspection and export)."""

    events: tuple[DomainEvent, ...]
    manifest: tuple[ManifestRecord, ...]
    complete: bool
    reason: Corruption | None


class WriteTxn(Protocol):
    """The capability to append, handed out only while the session's single-writer lock
    is held. `log` includes what this transaction appended so far."""

    @property
    def log(self) -> SessionLog: ...

    def append(self, plan: AppendPlan) -> Result[AppendOutcome, StoreError]: ...


class SessionStore(Protocol):
    def read(self, session_id: str, fn: Callable[[SessionLog], T]) -> Result[T, StoreError]:
        """Strictly load the session and call `fn` with it. An unknown session loads empty;
        an unhealthy one is `SESSION_NOT_HEALTHY` (with its health). Never takes the
        writer lock."""
        ...

    def write(
        self, session_id: str, fn: Callable[[WriteTxn], Result[T, E]]
    ) -> Result[T, E | StoreError]:
        """Run `fn` as the session's only writer, failing fast with a retryable
        `SESSION_LOCKED` when another writer (thread, process, connection) holds it.
        Whatever `fn` appended is durable once this returns a success."""
        ...

    def health(self, session_id: str) -> Result[SessionHealth, StoreError]:
        """`healthy` (also for an unknown session), or the corruption class with its
        reason. A failure means the store itself could not be asked."""
        ...

    def load_prefix(self, session_id: str) -> Result[PrefixLoad, StoreError]:
        """The longest valid prefix of the log, for read-only inspection and export."""
        ...

    def exists(self, session_id: str) -> Result[bool, StoreError]:
        """Whether anything is stored under this id (even a damaged session)."""
        ...

    def list_ids(
        self, *, after: str | None = None, limit: int = LIST_PAGE_MAX
    ) -> Result[list[str], StoreError]:
        """One page of session ids in ascending order, those greater than `after`; at most
        `min(limit, LIST_PAGE_MAX)`. Pass the last id of a page to get the next one."""
        ...

    def last_activity(self, session_id: str) -> Result[datetime | None, StoreError]:
        """When the session was last appended to (UTC), None when unknown. The log itself
        records no clock (the reference's format); the store knows when it wrote."""
        ...


class SnapshotStore(Protocol):
    def put(self, snapshot: dict[str, Any]) -> Result[str, StoreError]:
        """Store under sha256(JCS(snapshot)) and return that ref; idempotent."""
        ...

    def get(self, ref: str) -> Result[dict[str, Any] | None, StoreError]:
        """The snapshot, None when absent, an error when stored bytes are not what their
        ref promises."""
        ...


class PinnedWorkflowStore(Protocol):
    def put(self, envelope: dict[str, Any]) -> Result[str, StoreError]:
        """Store under its workflowHash and return it; idempotent."""
        ...

    def get(self, workflow_hash: str) -> Result[dict[str, Any] | None, StoreError]: ...


class KeyringStore(Protocol):
    def load(self) -> Result[Keyring, StoreError]:
        """The keyring, created with a fresh random key on first use (first writer wins:
        every process and replica ends up with the same key)."""
        ...

    def rotate(self) -> Result[Keyring, StoreError]:
        """previous := current, current := a fresh key, for every user of this store."""
        ...


class ChangeFeed(Protocol):
    def wait(self, timeout: float) -> Result[frozenset[str], StoreError]:
        """Block until a watched session has new events, or `timeout` seconds pass; the ids
        of the sessions that changed since the previous call (empty on timeout)."""
        ...

    def close(self) -> None: ...


class SessionWatch(Protocol):
    def subscribe(
        self, session_ids: Collection[str] | None = None
    ) -> Result[ChangeFeed, StoreError]:
        """A feed of appends to the given sessions (every session when None)."""
        ...


class Backend(Protocol):
    """Everything durable, behind one object built by the composition root."""

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def snapshots(self) -> SnapshotStore: ...

    @property
    def pinned(self) -> PinnedWorkflowStore: ...

    @property
    def keyring(self) -> KeyringStore: ...

    @property
    def watch(self) -> SessionWatch: ...

    @property
    def location(self) -> str:
        """Where the data lives, for people (a directory, or a URL without password)."""
        ...

    def close(self) -> None: ...
