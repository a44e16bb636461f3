"""The ports the engine talks to. Every backend (files, PostgreSQL) implements them and
passes the shared contract suite in tests/store/contract.py; the composition root
(workrail/app.py) is the only place that picks one.

Every method returns a value: a `Result` whose failure is a `StoreError` with a closed
code; nothing raises across a port.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

from returns.result import Result

from workrail.core.append import AppendPlan, SnapshotPin
from workrail.core.events import DomainEvent
from workrail.core.health import Corruption, SessionHealth
from workrail.core.keyring import Keyring
from workrail.core.lifecycle import SessionLifecycle
from workrail.core.manifest import ManifestRecord
from workrail.core.session_index import SessionIndex
from workrail.core.snapshot_state import SnapshotState
from workrail.core.summary import RunStatus, SessionSummary
from workrail.core.summary_accumulator import SummaryAccumulator
from workrail.store.errors import StoreError

__all__ = [
    "AppendOutcome",
    "AppendPlan",
    "Backend",
    "CandidateQuery",
    "ChangeFeed",
    "IdleDelete",
    "KeyringStore",
    "LifecycleStore",
    "LogStores",
    "PageCursor",
    "PinnedWorkflowStore",
    "PrefixLoad",
    "SessionFilter",
    "SessionLog",
    "SessionQuery",
    "SessionStore",
    "SessionWatch",
    "SnapshotPin",
    "SnapshotStore",
    "StoredRef",
    "SummaryPage",
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
    summary: SummaryAccumulator = field(default_factory=SummaryAccumulator, compare=False)
    """The session's summary facts, kept beside the index (folded when a summary is asked)."""

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


class AppendTime(NamedTuple):
    """One committed append: the index of its last event and when the store wrote it."""

    last_event_index: int
    at: datetime


class WriteTxn(Protocol):
    """The capability to append, handed out only while the session's single-writer lock
    is held. `log` includes what this transaction appended so far."""

    @property
    def log(self) -> SessionLog: ...

    def append(self, plan: AppendPlan) -> Result[AppendOutcome, StoreError]: ...


IdleDelete = Literal["deleted", "absent", "active"]
"""What `delete_idle` did: removed the session, found none, or kept it (written since)."""


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

    def append_times(self, session_id: str) -> Result[tuple[AppendTime, ...], StoreError]:
        """When each committed append of the session was written (the store's clock),
        oldest first, for the appends the store knows the time of: the log records no
        clock, so this is what per-step timings are measured with."""
        ...

    def delete(self, session_id: str) -> Result[bool, StoreError]:
        """Remove the session (log, lifecycle record, its summary) while holding its
        writer, so a session being written is never deleted from under its writer: a busy
        session is a retryable `SESSION_LOCKED` and nothing is removed. False when there
        was nothing to delete. Content-addressed data is left for the collector."""
        ...

    def delete_idle(
        self, session_id: str, *, idle_before: datetime
    ) -> Result[IdleDelete, StoreError]:
        """`delete`, but only when the session was last appended to before `idle_before`,
        judged while holding its writer (so an append acknowledged before the delete
        takes the writer is always seen): a session active since is kept ("active")."""
        ...


@dataclass(frozen=True)
class StoredRef:
    """One content-addressed entry and when it was last stored or re-stored (a `put` of
    existing content refreshes it), so a collector can spare what is about to be pinned."""

    ref: str
    stored_at: datetime


class ContentStore(Protocol):
    def list_refs(
        self, *, after: str | None = None, limit: int = LIST_PAGE_MAX
    ) -> Result[list[StoredRef], StoreError]:
        """One page of entries in ascending ref order, those greater than `after`."""
        ...

    def delete(self, ref: str, *, stored_before: datetime) -> Result[bool, StoreError]:
        """Remove one entry if it was last stored before `stored_before`; False when it is
        absent or was stored (or re-stored by a `put`) since. The check and the removal are
        one step against concurrent puts, so content a start or advance has just stored
        again is never removed from under the append that will pin it. Only the collector
        calls this."""
        ...


class SnapshotStore(ContentStore, Protocol):
    def put(self, snapshot: dict[str, Any]) -> Result[str, StoreError]:
        """Store under sha256(JCS(snapshot)) and return that ref; idempotent, and it
        refreshes `stored_at` of content already there."""
        ...

    def get(self, ref: str) -> Result[dict[str, Any] | None, StoreError]:
        """The snapshot, None when absent, an error when stored bytes are not what their
        ref promises."""
        ...

    def states(self, refs: Collection[str]) -> Result[dict[str, SnapshotState], StoreError]:
        """The engine state and pending step of each stored snapshot among `refs`, for
        drawing a run DAG; refs not stored (or not readable) are left out. These are facts
        of immutable content, recorded when a snapshot is stored: a whole run's states are
        one lookup, without reading its snapshots again (a state recorded before the
        stored bytes were damaged is still answered; `get` reports the damage)."""
        ...


class PinnedWorkflowStore(ContentStore, Protocol):
    def put(self, envelope: dict[str, Any]) -> Result[str, StoreError]:
        """Store under its workflowHash and return it; idempotent (refreshes `stored_at`)."""
        ...

    def get(self, workflow_hash: str) -> Result[dict[str, Any] | None, StoreError]: ...


class LifecycleStore(Protocol):
    """Durable per-session facts outside the event log: archive state and workspace."""

    def get(self, session_id: str) -> Result[SessionLifecycle, StoreError]:
        """The record, or the default (not archived, no workspace) when none was stored."""
        ...

    def put(self, session_id: str, lifecycle: SessionLifecycle) -> Result[bool, StoreError]:
        """Store the record of an existing session (False, nothing stored, when the session
        does not exist); retryable `SESSION_LOCKED` while the session is being deleted."""
        ...

    def restamp(self, session_id: str, moment: datetime) -> Result[bool, StoreError]:
        """Record that an existing session was last active at `moment` (its summary too),
        as `migrate` does: the log records no clock, so a session copied from another
        store would otherwise seem active at the time of the copy. False when the session
        does not exist; retryable `SESSION_LOCKED` while it is being written."""
        ...


@dataclass(frozen=True)
class PageCursor:
    """Where a page of summaries (newest activity first) stopped."""

    activity_us: int
    session_id: str


ArchivedFilter = Literal["exclude", "include", "only"]


@dataclass(frozen=True)
class SessionFilter:
    """Which summaries a listing returns; every field narrows, empty means any."""

    statuses: frozenset[RunStatus] = frozenset()
    workflow: str | None = None
    """A workflow id, exactly."""
    workspace: str | None = None
    """A workspace path (exactly as recorded) or a `repo_root_hash`."""
    branch: str | None = None
    """A git branch, exactly."""
    text: str | None = None
    """Every normalised token must be in the session's title and notes."""
    since: datetime | None = None
    """Last activity at or after this moment."""
    archived: ArchivedFilter = "exclude"
    healthy_only: bool = False


@dataclass(frozen=True)
class SummaryPage:
    summaries: tuple[SessionSummary, ...]
    next_cursor: PageCursor | None
    """None on the last page."""


QUERY_PAGE_MAX = 500
"""The largest page `SessionQuery.page` returns."""


@dataclass(frozen=True)
class CandidateQuery:
    """What resume_session looks for; the query returns a superset, the engine ranks."""

    tokens: tuple[str, ...] = ()
    """Normalised query tokens; sessions sharing a token or a 3-character prefix of one."""
    session_id: str | None = None
    run_id: str | None = None
    workflow_tokens: tuple[str, ...] = ()
    git_head_sha: str | None = None
    git_branch: str | None = None
    """Sessions on this branch, or one that is a prefix of it, or that it prefixes."""
    workspace: str | None = None
    include_archived: bool = False
    include_unhealthy: bool = False
    per_signal: int = 100
    """At most this many candidates from each signal."""


class SessionQuery(Protocol):
    """Reads across sessions, answered from a disposable projection of the logs (an index
    of `SessionSummary`) that the backend keeps up to date with every append."""

    def page(
        self, where: SessionFilter, *, limit: int = 50, cursor: PageCursor | None = None
    ) -> Result[SummaryPage, StoreError]:
        """A page of summaries by last activity (newest first, then session id)."""
        ...

    def get(self, session_ids: Collection[str]) -> Result[Mapping[str, SessionSummary], StoreError]:
        """The summaries of those of `session_ids` that exist."""
        ...

    def candidates(self, query: CandidateQuery) -> Result[list[SessionSummary], StoreError]:
        """Summaries worth ranking for resume_session. Never writes anything."""
        ...

    def rebuild(self) -> Result[int, StoreError]:
        """Throw the projection away and build it again from the logs; the session count."""
        ...


class KeyringStore(Protocol):
    def load(self) -> Result[Keyring, StoreError]:
        """The keyring, created with a fresh random key on first use (first writer wins:
        every process and replica ends up with the same key)."""
        ...

    def rotate(self) -> Result[Keyring, StoreError]:
        """previous := current, current := a fresh key, for every user of this store."""
        ...

    def adopt(self, keyring: Keyring) -> Result[Keyring, StoreError]:
        """Use `keyring` if the store has none yet (first writer wins, as for `load`), so
        tokens signed elsewhere keep verifying here; the keyring the store now holds."""
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


class LogStores(Protocol):
    """The three stores a session's history lives in: its log and the content the log
    pins. What reads or copies whole sessions needs (export, import, inspection), and
    nothing local-only, so every backend (and the engine's dependencies) fits."""

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def snapshots(self) -> SnapshotStore: ...

    @property
    def pinned(self) -> PinnedWorkflowStore: ...


class Backend(LogStores, Protocol):
    """Everything durable, behind one object built by the composition root."""

    @property
    def keyring(self) -> KeyringStore: ...

    @property
    def watch(self) -> SessionWatch: ...

    @property
    def lifecycle(self) -> LifecycleStore: ...

    @property
    def query(self) -> SessionQuery: ...

    @property
    def location(self) -> str:
        """Where the data lives, for people (a directory, or a URL without password)."""
        ...

    def close(self) -> None: ...
