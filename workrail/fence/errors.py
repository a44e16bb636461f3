"""The closed error set of the checkpoint tool and the envelope every failure crosses with.

Codes, retryability and recovery text are the contract's; they live, with the HTTP status,
in the product's one catalogue (workrail/core/errors.py). The envelope is the product's one
shape (`code`, `message`, `retry`, `details.suggestion`) plus the fields the contract fixes
(`retryable`, `retry_after_seconds`, `recovery`, `charged`), both read from the same
catalogue entry. A failure never echoes a raw namespace, workflow key, holder or observation
key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from workrail.core.errors import CATALOG, Retry, retry_after_seconds

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
    """The contract's view of a catalogue entry (the describe document publishes it)."""

    retryable: bool
    recovery: str
    http_status: int
    retry: Retry


def _contract_view(code: ErrorCode) -> ErrorSpec:
    spec = CATALOG[code]
    return ErrorSpec(spec.retry.retryable, spec.suggestion, spec.http_status, spec.retry)


# In the contract's order: the describe document lists the errors in this order.
ERROR_CATALOG: Final[dict[ErrorCode, ErrorSpec]] = {
    code: _contract_view(code) for code in get_args(ErrorCode)
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

    @property
    def retry(self) -> Retry:
        """The product's retry guidance: this failure's own wait, else the catalogue's."""
        spec = ERROR_CATALOG[self.code]
        if spec.retryable and self.retry_after_seconds is not None:
            return retry_after_seconds(self.retry_after_seconds)
        return spec.retry

    def envelope(self) -> dict[str, Any]:
        """The wire form shared by HTTP and MCP: `{"ok": false, "error": {...}}`."""
        spec = ERROR_CATALOG[self.code]
        return {
            "ok": False,
            "error": {
                "code": self.code,
                "message": self.message,
                "retry": self.retry.to_json(),
                "details": {"suggestion": spec.recovery},
                "retryable": spec.retryable,
                "retry_after_seconds": self.retry_after_seconds,
                "recovery": spec.recovery,
                "charged": False,
            },
        }
