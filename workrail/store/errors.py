"""Store error values: a closed set of codes, each saying whether a retry can help."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import Final, Literal

from workrail.core.health import SessionHealth

StoreErrorCode = Literal[
    "SESSION_LOCKED",
    # a writer that tries to write the session it already writes: a bug, never cleared by
    # waiting, so not retryable
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
    "KEYRING_INSECURE",
    "STORE_UNAVAILABLE",
    # the store's URL names credentials the server refuses or a database it lacks: the
    # configuration must change, so not retryable
    "CONFIG_INVALID",
    # the disk is full, over quota, or failed an I/O: nothing was acknowledged, and the
    # same call succeeds once a person has freed space (or the device recovers)
    "STORAGE_FAULT",
]

RETRYABLE_CODES: frozenset[StoreErrorCode] = frozenset(
    {
        "SESSION_LOCKED",
        "LOCK_RELEASE_FAILED",
        "STORE_UNAVAILABLE",
        "STORAGE_FAULT",
    }
)

STORAGE_ERRNOS: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})
"""OS errors that say nothing about the request and clear when the storage does."""

_STORAGE_WORDS: Final = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EIO: "the storage device reported an I/O error",
}


@dataclass(frozen=True)
class StoreError:
    code: StoreErrorCode
    message: str
    health: SessionHealth | None = None

    @property
    def retryable(self) -> bool:
        """Lock contention, an unreachable database and a full disk clear by themselves or
        with an operator's help; everything else needs a different input or a person."""
        return self.code in RETRYABLE_CODES


def is_storage_fault(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


def storage_fault_message(exc: OSError) -> str:
    """`the disk is full (No space left on device: /path)` for people."""
    words = _STORAGE_WORDS.get(exc.errno or 0, "the storage failed")
    where = f": {exc.filename}" if exc.filename else ""
    return f"{words} ({exc.strerror or exc}{where})"


def io_error(exc: OSError, code: StoreErrorCode, what: str) -> StoreError:
    """An OS error as a store error: a storage fault (retryable, whatever the operation)
    or `code` with `what` failed and why."""
    if is_storage_fault(exc):
        return StoreError("STORAGE_FAULT", f"{what}: {storage_fault_message(exc)}")
    if exc.strerror:
        detail = exc.strerror + (f": {exc.filename}" if exc.filename else "")
    else:
        detail = str(exc) or type(exc).__name__
    return StoreError(code, f"{what}: {detail}")
