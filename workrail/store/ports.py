"""The small interfaces the engine talks to. A backend (files today, a server later)
implements these and passes the shared contract test suite in tests/store/contract.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from returns.result import Result

from workrail.core.events import DomainEvent
from workrail.core.health import Corruption, SessionHealth
from workrail.core.manifest import ManifestRecord
from workrail.core.session_index import SessionIndex
from workrail.store.errors import StoreError

T = TypeVar("T")
E = TypeVar("E")


@dataclass(frozen=True, order=True)
class SnapshotPin:
    """`snapshot_pinned` input: sorts by (snapshotRef, eventIndex, createdByEventId)."""

    snapshot_ref: str
    event_index: int
    created_by_event_id: str


@dataclass(frozen=True)
class AppendPlan:
    """Everything one use case writes: complete events (contiguous indices) and their pins."""

    events: tuple[DomainEvent, ...]
    pins: tuple[SnapshotPin, ...]


@dataclass(frozen=True)
class AppendOutcome:
    """The events as they now stand in the log; `deduplicated` when nothing was written."""

    events: tuple[DomainEvent, ...]
    deduplicated: bool


@dataclass(frozen=True)
class SessionLog:
    """A validated view of a session: the first `count` events, their manifest and index.

    The sequences are shared with the store's cache and only ever grow; read them only
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
    """The capability to append, handed out only while the session lock is held."""

    @property
    def log(self) -> SessionLog: ...

    def append(self, plan: AppendPlan) -> Result[AppendOutcome, StoreError]: ...


class SessionStore(Protocol):
    def read(self, session_id: str, fn: Callable[[SessionLog], T]) -> Result[T, StoreError]: ...

    def write(
        self, session_id: str, fn: Callable[[WriteTxn], Result[T, E]]
    ) -> Result[T, E | StoreError]: ...

    def health(self, session_id: str) -> SessionHealth: ...

    def load_prefix(self, session_id: str) -> PrefixLoad: ...

    def session_ids(self) -> list[str]: ...


class SnapshotStore(Protocol):
    def put(self, snapshot: dict[str, Any]) -> str: ...

    def get(self, ref: str) -> Result[dict[str, Any] | None, StoreError]: ...


class PinnedWorkflowStore(Protocol):
    def put(self, envelope: dict[str, Any]) -> str: ...

    def get(self, workflow_hash: str) -> Result[dict[str, Any] | None, StoreError]: ...
