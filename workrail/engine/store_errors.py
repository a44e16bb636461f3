"""Mapping store error values to wire errors (spec 10-storage §7 table): the one mapper
every engine operation uses, so the same store failure always reads the same way."""

from __future__ import annotations

from typing import Literal

from workrail.engine.errors import (
    EngineError,
    Retry,
    error,
    io_error,
    locked,
    storage_fault,
    unavailable,
)
from workrail.store.errors import StoreError

Operation = Literal["start", "advance", "rehydrate", "checkpoint", "manage"]
"""What the engine was doing: `manage` is a person's session command (list, show,
archive, delete, prune), addressed by session id rather than by token."""

BUSY_CODES = frozenset({"SESSION_LOCKED"})
"""The only store failures that mean "someone is writing this session right now"; a full
disk or an unreachable database is never reported as busy."""


def is_busy(failure: StoreError) -> bool:
    return failure.code in BUSY_CODES


def from_store(failure: object, operation: Operation) -> EngineError:
    """Store failures become wire errors; engine errors raised inside a write pass through."""
    if isinstance(failure, EngineError):
        return failure
    assert isinstance(failure, StoreError)
    if failure.code == "STORE_UNAVAILABLE":
        return unavailable(failure.message)
    if failure.code == "STORAGE_FAULT":
        return storage_fault(failure.message)
    if failure.retryable:
        if operation == "manage":
            return error(
                "TOKEN_SESSION_LOCKED",
                "The session is being written right now; nothing was changed.",
                "Try again in a moment.",
                retry=Retry("retryable_after_ms", 1000),
            )
        return locked()
    if failure.code == "SESSION_NOT_HEALTHY":
        health = failure.health.to_json() if failure.health is not None else None
        return error(
            "SESSION_NOT_HEALTHY",
            failure.message,
            "Execution requires a healthy session. Export salvage view, then recreate.",
            health=health,
        )
    if failure.code == "INVALID_REFERENCE":
        if operation == "manage":
            return error("VALIDATION_ERROR", failure.message, "Pass a session id (sess_…).")
        return error(
            "TOKEN_UNKNOWN_NODE",
            "No durable node state was found for this token.",
            "Use a token returned by WorkRail for an existing node.",
        )
    if failure.code == "SESSION_STORE_IO_ERROR":
        return io_error(failure.message)
    if failure.code == "SESSION_STORE_INVARIANT_VIOLATION":
        return error("INTERNAL_ERROR", failure.message)
    return error("INTERNAL_ERROR", f"Session store error: {failure.code}: {failure.message}")
