"""The closed error set of the checkpoint tool and the envelope every failure crosses with.

Codes, retryability and recovery text are the contract's; the HTTP status is ours. A
failure never echoes a raw namespace, workflow key, holder or observation key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

ErrorCode = Literal[
    "INVALID_INPUT",
    "CHECKPOINT_NOT_FOUND",
    "CHECKPOINT_NOT_HELD",
    "CHECKPOINT_TERMINAL",
    "STALE_GENERATION",
    "INVALID_TRANSITION",
    "OBSERVATION_CONFLICT",
    "CONFIGURATION_CONFLICT",
    "CHECKPOINT_LIMIT_REACHED",
    "TOOL_PAUSED",
    "RATE_LIMITED",
    "DEPENDENCY_UNAVAILABLE",
]


@dataclass(frozen=True)
class ErrorSpec:
    retryable: bool
    recovery: str
    http_status: int


ERROR_CATALOG: Final[dict[ErrorCode, ErrorSpec]] = {
    "INVALID_INPUT": ErrorSpec(False, "Correct the request to match input_schema.", 400),
    "CHECKPOINT_NOT_FOUND": ErrorSpec(
        False,
        "Claim the known opaque workflow identity before reading or mutating it.",
        404,
    ),
    "CHECKPOINT_NOT_HELD": ErrorSpec(
        False, "Stand down or recover only after the active claim expires.", 409
    ),
    "CHECKPOINT_TERMINAL": ErrorSpec(
        False,
        "Read the final state; use a new logical workflow identity for new work.",
        409,
    ),
    "STALE_GENERATION": ErrorSpec(
        False, "Read current status and replan against the returned generation.", 409
    ),
    "INVALID_TRANSITION": ErrorSpec(
        False, "Follow the published stage transition graph and uncertainty rules.", 409
    ),
    "OBSERVATION_CONFLICT": ErrorSpec(
        False, "Use the observation key only for its original transition body.", 409
    ),
    "CONFIGURATION_CONFLICT": ErrorSpec(
        False, "Reuse the checkpoint's fixed TTL and retry configuration.", 409
    ),
    "CHECKPOINT_LIMIT_REACHED": ErrorSpec(
        False,
        "Wait for bounded state expiry and review why the workflow exhausted its limits.",
        409,
    ),
    "TOOL_PAUSED": ErrorSpec(True, "Wait for the operator to resume the tool.", 503),
    "RATE_LIMITED": ErrorSpec(True, "Retry after the response Retry-After interval.", 429),
    "DEPENDENCY_UNAVAILABLE": ErrorSpec(True, "Retry with the same idempotency identity.", 503),
}
ERROR_CODES: Final[tuple[ErrorCode, ...]] = tuple(ERROR_CATALOG)


@dataclass(frozen=True)
class FenceError:
    """A failure as a value: code from the closed set, what happened, when to retry."""

    code: ErrorCode
    message: str
    retry_after_seconds: int | None = None

    @property
    def retryable(self) -> bool:
        return ERROR_CATALOG[self.code].retryable

    @property
    def http_status(self) -> int:
        return ERROR_CATALOG[self.code].http_status

    def envelope(self) -> dict[str, Any]:
        """The wire form shared by HTTP and MCP: `{"ok": false, "error": {...}}`."""
        spec = ERROR_CATALOG[self.code]
        return {
            "ok": False,
            "error": {
                "code": self.code,
                "message": self.message,
                "retryable": spec.retryable,
                "retry_after_seconds": self.retry_after_seconds,
                "recovery": spec.recovery,
                "charged": False,
            },
        }
