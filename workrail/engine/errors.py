"""Engine errors: the closed set of wire codes (spec 40 §1), each with a message that says
what to do next and retry guidance. Converted to the MCP error envelope at the edge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ErrorCode = Literal[
    "VALIDATION_ERROR",
    "NOT_FOUND",
    "PRECONDITION_FAILED",
    "TIMEOUT",
    "INTERNAL_ERROR",
    "TOKEN_INVALID_FORMAT",
    "TOKEN_UNSUPPORTED_VERSION",
    "TOKEN_BAD_SIGNATURE",
    "TOKEN_SCOPE_MISMATCH",
    "TOKEN_UNKNOWN_NODE",
    "TOKEN_WORKFLOW_HASH_MISMATCH",
    "TOKEN_SESSION_LOCKED",
    "SESSION_NOT_HEALTHY",
    # a shared store (PostgreSQL) that cannot be reached right now
    "STORE_UNAVAILABLE",
    # portable checkpoint records (not part of the reference's set)
    "CHECKPOINT_RECORD_INVALID",
    "CHECKPOINT_PLAN_MISMATCH",
    "CHECKPOINT_CONTEXT_MISMATCH",
]

LOCK_RETRY_MS = 1000


@dataclass(frozen=True)
class Retry:
    kind: Literal["not_retryable", "retryable_immediate", "retryable_after_ms"]
    after_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        if self.after_ms is None:
            return {"kind": self.kind}
        return {"kind": self.kind, "afterMs": self.after_ms}


NOT_RETRYABLE = Retry("not_retryable")


@dataclass(frozen=True)
class EngineError:
    code: ErrorCode
    message: str
    retry: Retry = NOT_RETRYABLE
    details: dict[str, Any] = field(default_factory=dict)

    def to_envelope(self) -> dict[str, Any]:
        """`{code, message, retry, details?}` as the reference sends it."""
        envelope: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "retry": self.retry.to_json(),
        }
        if self.details:
            envelope["details"] = self.details
        return envelope


def error(
    code: ErrorCode,
    message: str,
    suggestion: str | None = None,
    *,
    retry: Retry = NOT_RETRYABLE,
    **extra: Any,
) -> EngineError:
    details: dict[str, Any] = {}
    if suggestion is not None:
        details["suggestion"] = suggestion
    if extra:
        details["details"] = extra
    return EngineError(code, message, retry, details)


def internal(kind: str) -> EngineError:
    return error(
        "INTERNAL_ERROR",
        f"Advance failed due to internal invariant violation: {kind}",
        "Retry; if this persists, treat as invariant violation.",
    )


def locked() -> EngineError:
    return error(
        "TOKEN_SESSION_LOCKED",
        "Session is locked; retry in 1–3 seconds; if this persists >10s, ensure no other "
        "WorkRail process is running for this session.",
        "Retry in 1–3 seconds; if this persists >10s, ensure no other WorkRail process is running.",
        retry=Retry("retryable_after_ms", LOCK_RETRY_MS),
    )


STORE_RETRY_MS = 2000


def unavailable(detail: str) -> EngineError:
    """The session store cannot be reached; nothing was written, the same call can be
    sent again."""
    return error(
        "STORE_UNAVAILABLE",
        f"The session store is unavailable right now: {detail}",
        "Nothing was recorded. Send the same call again in a few seconds; if this persists, "
        "ask a person to check the database.",
        retry=Retry("retryable_after_ms", STORE_RETRY_MS),
    )


def workflow_not_found(workflow_id: str) -> EngineError:
    return error(
        "NOT_FOUND",
        f"Workflow not found: {workflow_id}",
        "Use list_workflows to discover available workflows.",
    )
