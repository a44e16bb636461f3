"""Store error values: a closed set of codes, each saying whether a retry can help."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from workrail.core.health import SessionHealth

StoreErrorCode = Literal[
    "SESSION_LOCKED",
    "SESSION_LOCK_REENTRANT",
    "LOCK_RELEASE_FAILED",
    "SESSION_NOT_HEALTHY",
    "SESSION_STORE_IO_ERROR",
    "SESSION_STORE_INVARIANT_VIOLATION",
    "SNAPSHOT_STORE_CORRUPTION",
    "PINNED_WORKFLOW_IO_ERROR",
    "INVALID_REFERENCE",
    "KEYRING_CORRUPT",
    "KEYRING_IO_ERROR",
    "STORE_UNAVAILABLE",
]

RETRYABLE_CODES: frozenset[StoreErrorCode] = frozenset(
    {"SESSION_LOCKED", "SESSION_LOCK_REENTRANT", "LOCK_RELEASE_FAILED", "STORE_UNAVAILABLE"}
)


@dataclass(frozen=True)
class StoreError:
    code: StoreErrorCode
    message: str
    health: SessionHealth | None = None

    @property
    def retryable(self) -> bool:
        """Lock contention and an unreachable database clear by themselves; everything
        else needs a different input or a person."""
        return self.code in RETRYABLE_CODES
