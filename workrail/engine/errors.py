"""Engine errors: the closed set of wire codes (spec 40 §1), each with a message that says
what to do next and retry guidance. Converted to the MCP error envelope at the edge; every
code here has its entry in the catalogue (workrail/core/errors.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from workrail.core.errors import (
    LOCK_RETRY_MS,
    NOT_RETRYABLE,
    STORE_RETRY_MS,
    Retry,
    retry_after_ms,
    spec_of,
)
from workrail.core.wording import did_you_mean

if TYPE_CHECKING:
    from workrail.engine.catalog import CatalogEntry, WorkflowCatalog

__all__ = ["NOT_RETRYABLE", "EngineError", "ErrorCode", "Retry", "error"]

ErrorCode = Literal[
    "VALIDATION_ERROR",
    "NOT_FOUND",
    # a workflow id whose file is found but fails validation
    "WORKFLOW_INVALID",
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


@dataclass(frozen=True)
class EngineError:
    """A wire error of the engine's closed set; retry guidance and the suggestion default to
    the catalogue's (workrail/core/errors.py) unless the failing call knows better."""

    code: ErrorCode
    message: str
    retry: Retry | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def retry_guidance(self) -> Retry:
        return self.retry if self.retry is not None else spec_of(self.code).retry

    def to_envelope(self) -> dict[str, Any]:
        """`{code, message, retry, details?}` as the reference sends it."""
        envelope: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "retry": self.retry_guidance.to_json(),
        }
        if self.details:
            envelope["details"] = self.details
        return envelope


def error(
    code: ErrorCode,
    message: str,
    suggestion: str | None = None,
    *,
    retry: Retry | None = None,
    **extra: Any,
) -> EngineError:
    details: dict[str, Any] = {"suggestion": suggestion or spec_of(code).suggestion}
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
        retry=retry_after_ms(LOCK_RETRY_MS),
    )


def unavailable(detail: str) -> EngineError:
    """The session store cannot be reached; nothing was written, the same call can be
    sent again."""
    return error(
        "STORE_UNAVAILABLE",
        f"The session store is unavailable right now: {detail}",
        "Nothing was recorded. Send the same call again in a few seconds; if this persists, "
        "ask a person to check the database.",
        retry=retry_after_ms(STORE_RETRY_MS),
    )


def io_error(detail: str) -> EngineError:
    """The store's files or tables could not be read or written for a reason a person must
    fix (a path that is not a directory, a permission, a missing table): not a bug in
    WorkRail, and the same call works once the store is put right."""
    return error(
        "STORE_UNAVAILABLE",
        f"The session store could not be read or written: {detail}",
        "Nothing was recorded. The data directory or database named here needs a person "
        "to check it (permissions, that it is the right path); the same call works once "
        "it is put right.",
        retry=NOT_RETRYABLE,
        storeCode="SESSION_STORE_IO_ERROR",
    )


def storage_fault(detail: str) -> EngineError:
    """The store could not write (disk full, quota, I/O error): nothing was acknowledged,
    and the same call succeeds once the storage recovers."""
    return error(
        "STORE_UNAVAILABLE",
        f"The session store cannot write right now: {detail}",
        "Nothing was acknowledged. Send the same call again later (it is safe: a write that "
        "did land is answered from the log, never repeated); ask a person to free disk "
        "space or check the storage device.",
        retry=Retry("retryable_after_ms", STORE_RETRY_MS),
        storeCode="STORAGE_FAULT",
    )


def workflow_not_found(workflow_id: str, known: Sequence[str] = ()) -> EngineError:
    """NOT_FOUND; with the id a typo most likely meant (`didYouMean`) when one of the
    `known` ids is close."""
    message, hint = (
        f"Workflow not found: {workflow_id}",
        "Use list_workflows to discover available workflows.",
    )
    close = did_you_mean(workflow_id, known, cutoff=0.6)
    if close is None:
        return error("NOT_FOUND", message, hint)
    return error("NOT_FOUND", message, f"Did you mean {close!r}? {hint}", didYouMean=close)


MAX_REPORTED_PROBLEMS = 20
"""An invalid workflow's error lists at most this many problems (problemCount has all)."""


def workflow_unavailable(
    workflow_id: str, entry: CatalogEntry | None, catalog: WorkflowCatalog
) -> EngineError:
    """NOT_FOUND for an id no file defines (with the valid id it most likely misspells);
    WORKFLOW_INVALID, with the file and its problems, for one whose only definitions
    fail validation."""
    if entry is None or not entry.source_path:
        return workflow_not_found(
            workflow_id, [e.workflow_id for e in catalog.entries() if e.valid]
        )
    return workflow_invalid(workflow_id, entry.source_path, entry.problems)


def workflow_invalid(
    workflow_id: str, path: str, problems: Sequence[Mapping[str, str]]
) -> EngineError:
    """The id's file is there but fails validation: say which file and what is wrong
    (the first MAX_REPORTED_PROBLEMS problems), so the fix is not a hunt."""
    count = len(problems)
    return error(
        "WORKFLOW_INVALID",
        f"Workflow {workflow_id} is defined in {path}, but that file fails validation "
        f"({count} problem{'' if count == 1 else 's'}): it cannot be used until it is fixed.",
        f"Fix each problem at its JSON path (details.details.problems), check the file with "
        f"`workrail validate {path}`, then send the call again; or start another workflow "
        "from list_workflows.",
        workflowId=workflow_id,
        path=path,
        problemCount=count,
        problems=[dict(p) for p in problems[:MAX_REPORTED_PROBLEMS]],
    )
