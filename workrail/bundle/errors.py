"""Bundle error values: a closed set of codes, each with the offending path and a message
that says what to do. Nothing here is retryable (a bad bundle stays bad, and a store that
failed needs a person) except a store that was busy or out of space (`retry_for`). Each code's suggestion and status live in the product's catalogue
(workrail/core/errors.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from workrail.core.errors import STORE_RETRY_MS, Retry, envelope, retry_after_ms, spec_of

BundleCode = Literal[
    # the reference's closed validation set (60-bundles §4)
    "BUNDLE_INVALID_FORMAT",
    "BUNDLE_UNSUPPORTED_VERSION",
    "BUNDLE_INTEGRITY_FAILED",
    "BUNDLE_MISSING_SNAPSHOT",
    "BUNDLE_MISSING_PINNED_WORKFLOW",
    "BUNDLE_EVENT_ORDER_INVALID",
    "BUNDLE_MANIFEST_ORDER_INVALID",
    # added here: the size limit is checked before parsing, so it needs its own code
    "BUNDLE_TOO_LARGE",
]
ExportCode = Literal[
    "EXPORT_SESSION_STORE_ERROR",
    "EXPORT_MISSING_SNAPSHOT",
    "EXPORT_MISSING_PINNED_WORKFLOW",
    "EXPORT_SNAPSHOT_STORE_ERROR",
    "EXPORT_PINNED_WORKFLOW_STORE_ERROR",
    "EXPORT_BUILD_FAILED",
]
ImportCode = Literal[
    "IMPORT_READ_FAILED",
    "IMPORT_SNAPSHOT_STORE_ERROR",
    "IMPORT_PINNED_WORKFLOW_STORE_ERROR",
    "IMPORT_SESSION_STORE_ERROR",
]
ErrorCode = Literal[BundleCode, ExportCode, ImportCode]

BUNDLE_CODES: Final[tuple[BundleCode, ...]] = get_args(BundleCode)


@dataclass(frozen=True)
class BundleError:
    """`path` is a slash-separated pointer into the bundle (`session/events/3/eventIndex`),
    or the session id / file for shell errors; empty when the whole document is at fault."""

    code: ErrorCode
    message: str
    path: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def retry(self) -> Literal["no"]:
        """The bundle layer's spelling (60-bundles §4) of the catalogue's `not_retryable`."""
        assert not spec_of(self.code).retry.retryable
        return "no"

    def to_json(self) -> dict[str, Any]:
        """`{code, message, retry, path, details?}` (the reference's shape plus `path`)."""
        out: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "retry": self.retry,
            "path": self.path,
        }
        if self.details:
            out["details"] = dict(self.details)
        return out


def pointer(*parts: str | int) -> str:
    """Join path parts the way error paths and integrity paths are written."""
    return "/".join(str(p) for p in parts)


def retry_for(details: Mapping[str, Any]) -> Retry | None:
    """A bundle stays bad, so bundle failures are not retryable; the exception is a store
    that was busy or could not write (a full disk, `details.retryable`): then the same
    bundle imports once it recovers."""
    return retry_after_ms(STORE_RETRY_MS) if details.get("retryable") else None


def to_envelope(err: BundleError) -> dict[str, Any]:
    """The product's envelope for a bundle failure (MCP tools, `--json`):
    `{code, message, retry, details: {suggestion, path, ...}}`."""
    return envelope(
        err.code,
        err.message,
        retry=retry_for(err.details),
        details={**err.details, "path": err.path},
    )
