"""The port every checkpoint backend implements, and the one failure it may raise.

A backend applies a decision atomically (all of it or nothing), keeps the pause flag, the
request budgets and the replay store. It raises `BackendUnavailable` when it cannot answer;
the service turns that into the retryable DEPENDENCY_UNAVAILABLE envelope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, Protocol

from workrail.fence.decide import Decision
from workrail.fence.ratelimit import RateLimits
from workrail.fence.record import Command

REPLAY_RETENTION_MS: Final = 24 * 3600 * 1000

Gate = Literal["open", "paused"] | int
"""`open`, `paused`, or the whole seconds to wait before retrying (rate limited)."""


class BackendUnavailable(Exception):
    """The backend could not be reached or did not answer. Whatever it was asked to do was
    applied entirely or not at all (a lost answer may hide a committed action, so a retry
    must be the same request). `client_message` is what the caller is told."""

    client_message: ClassVar[str] = (
        "The checkpoint store is unavailable; nothing is ever half-written. Retry the same"
        " request (same Idempotency-Key and observation_key) shortly."
    )


class FenceKeyMismatch(BackendUnavailable):
    """This server digests identities with another fence key than the shared store records:
    it cannot see the checkpoints there, so it must not act on them."""

    client_message: ClassVar[str] = (
        "This server's keys/fence.key differs from the one the shared checkpoint store was"
        " first used with, so it is refused; nothing was written. An operator must copy the"
        " same keys/fence.key to every machine that shares the store."
    )


class FenceKeyReplaced(FenceKeyMismatch):
    """The embedded database holds checkpoints made with another fence key than the one in
    `keys/fence.key` (deleted and regenerated, or replaced): acting on them could let a
    second holder run a guarded side effect again."""

    client_message: ClassVar[str] = (
        "keys/fence.key is not the key this data directory's checkpoints were made with (it"
        " was deleted or replaced), so the checkpoint tool is refused; nothing was written."
        " An operator must restore the original keys/fence.key from a backup. Only if it is"
        " lost: stop every WorkRail using this data directory and delete fence/fence.sqlite3"
        " (every checkpoint is forgotten, so side effects they guard may run again)."
    )


@dataclass(frozen=True)
class StoredReply:
    """A first response kept for Idempotency-Key replays."""

    request: str
    status: int
    body: dict[str, Any]

    def doc(self) -> dict[str, Any]:
        """The JSON object every backend stores (one shape, so a reply reads back alike)."""
        return {"request": self.request, "status": self.status, "body": self.body}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> StoredReply:
        return cls(request=doc["request"], status=doc["status"], body=doc["body"])


class FenceBackend(Protocol):
    name: str

    def apply(self, command: Command, now_ms: int) -> Decision:
        """Decide and, when the decision changes state, persist it in one atomic step."""
        ...

    def gate(self, client: str, now_ms: int, limits: RateLimits) -> Gate:
        """Check the pause flag and both budgets; count the request only when admitted."""
        ...

    def is_paused(self) -> bool: ...

    def set_paused(self, paused: bool) -> None: ...

    def recall(self, key: str, now_ms: int) -> StoredReply | None: ...

    def remember(self, key: str, reply: StoredReply, now_ms: int) -> None:
        """Keep `reply` for 24 h unless a reply is already kept under `key` (first wins)."""
        ...

    def stored_bytes(self) -> bytes:
        """Everything the backend holds, as bytes: for the privacy tests and operators."""
        ...

    def close(self) -> None: ...
