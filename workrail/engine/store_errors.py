"""Mapping store error values to wire errors (spec 10-storage §7 table)."""

from __future__ import annotations

from typing import Literal

from workrail.engine.errors import EngineError, error, locked, storage_fault, unavailable
from workrail.store.errors import StoreError

Operation = Literal["start", "advance", "rehydrate", "checkpoint"]


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
        return error(
            "TOKEN_UNKNOWN_NODE",
            "No durable node state was found for this token.",
            "Use a token returned by WorkRail for an existing node.",
        )
    if failure.code == "SESSION_STORE_INVARIANT_VIOLATION":
        return error("INTERNAL_ERROR", failure.message, "Treat as invariant violation.")
    return error("INTERNAL_ERROR", f"Session store error: {failure.code}: {failure.message}")
