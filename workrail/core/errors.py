"""The product's one error catalogue: every code a caller can receive, on any surface (MCP
tools, the HTTP API, the `workrail` command), with its retry guidance, the suggestion sent
when the failing call has nothing more specific to say, its HTTP status and whether the
caller's input was at fault.

Each part of the product keeps its closed set of codes as a `Literal` next to the code that
produces them (engine, tokens, fence, bundle, start-up); `tests/core/test_errors.py` holds
those sets, this catalogue and the table in docs/errors.md equal, so a new code cannot reach
a caller without a retry kind, a suggestion and a line of documentation.

Retry guidance has one spelling: `retry: {"kind": ..., "afterMs"?: ...}` (spec 40 §1).
Where a published contract fixes another spelling (the checkpoint tool's `retryable` and
`retry_after_seconds`, the bundle layer's `retry: "no"`), it is derived from this one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

RetryKind = Literal["not_retryable", "retryable_immediate", "retryable_after_ms"]


@dataclass(frozen=True, slots=True)
class Retry:
    """Whether sending the same call again can succeed, and how long to wait first."""

    kind: RetryKind
    after_ms: int | None = None

    @property
    def retryable(self) -> bool:
        return self.kind != "not_retryable"

    @property
    def after_seconds(self) -> int | None:
        """The wait in whole seconds, rounded up (what a Retry-After header carries)."""
        return None if self.after_ms is None else max(1, math.ceil(self.after_ms / 1000))

    def to_json(self) -> dict[str, Any]:
        if self.after_ms is None:
            return {"kind": self.kind}
        return {"kind": self.kind, "afterMs": self.after_ms}

    def describe(self) -> str:
        """`not_retryable`, `retryable_immediate` or `retryable_after_ms 1000`."""
        return self.kind if self.after_ms is None else f"{self.kind} {self.after_ms}"


NOT_RETRYABLE: Final = Retry("not_retryable")
RETRY_NOW: Final = Retry("retryable_immediate")


def retry_after_ms(ms: int) -> Retry:
    return Retry("retryable_after_ms", ms)


def retry_after_seconds(seconds: int) -> Retry:
    return Retry("retryable_after_ms", seconds * 1000)


Family = Literal["engine", "fence", "bundle", "startup"]
"""Which part of the product owns the code (and so where its `Literal` lives):
engine — the workflow tools and the commands over them (workrail/engine/errors.py,
workrail/tokens/errors.py); fence — the effect checkpoint (workrail/fence/errors.py);
bundle — export and import (workrail/bundle/errors.py); startup — opening the configured
application (workrail/app.py)."""


@dataclass(frozen=True, slots=True)
class CodeSpec:
    family: Family
    retry: Retry
    http_status: int
    input_fault: bool
    """True when the caller sent something wrong (the command exits 2), False when the
    operation could not be done (exit 1)."""
    suggestion: str
    """What to do next, sent when the failing call has nothing more specific to say."""


def _spec(
    family: Family,
    http_status: int,
    suggestion: str,
    *,
    retry: Retry = NOT_RETRYABLE,
    input_fault: bool = False,
) -> CodeSpec:
    return CodeSpec(family, retry, http_status, input_fault, suggestion)


LOCK_RETRY_MS: Final = 1000
STORE_RETRY_MS: Final = 2000

_COPY_TOKENS: Final = (
    "Use the exact tokens returned by WorkRail. Tokens are opaque; do not edit or construct them."
)
_RESEND_BUNDLE: Final = (
    "Send the `bundle` object unmodified, as export_session returned it, or export again."
)
_DATA_DIR: Final = (
    "The data directory could not be read or written; a person should check it (disk "
    "space, permissions) before retrying."
)


def _engine(
    status: int, suggestion: str, *, retry: Retry = NOT_RETRYABLE, input_fault: bool = False
) -> CodeSpec:
    return _spec("engine", status, suggestion, retry=retry, input_fault=input_fault)


def _fence(status: int, recovery: str, *, retry: Retry = NOT_RETRYABLE) -> CodeSpec:
    return _spec("fence", status, recovery, retry=retry, input_fault=status == 400)


def _bundle(status: int, suggestion: str, *, input_fault: bool = False) -> CodeSpec:
    return _spec("bundle", status, suggestion, input_fault=input_fault)


def _startup(status: int, suggestion: str, *, input_fault: bool = False) -> CodeSpec:
    return _spec("startup", status, suggestion, input_fault=input_fault)


CATALOG: Final[Mapping[str, CodeSpec]] = {
    # -- engine: the workflow tools (spec 40 §1's closed set, then ours) --
    "VALIDATION_ERROR": _engine(
        400,
        "Correct the arguments as details.validationErrors describes, then send the call again.",
        input_fault=True,
    ),
    "NOT_FOUND": _engine(
        404,
        "Use list_workflows (or `workrail workflows`) to see the workflow ids that exist.",
        input_fault=True,
    ),
    "WORKFLOW_INVALID": _engine(
        422,
        "Fix each problem at its JSON path (details.details.problems), run `workrail validate` "
        "on the file until it passes, then send the call again; or start another workflow.",
    ),
    "PRECONDITION_FAILED": _engine(
        412, "Use the stateToken returned by WorkRail for this run, or start a new run."
    ),
    "TIMEOUT": _engine(504, "Nothing was recorded; send the same call again.", retry=RETRY_NOW),
    "INTERNAL_ERROR": _engine(
        500,
        "Treat as invariant violation: the server log has the details; report it if it "
        "happens again.",
    ),
    "TOKEN_INVALID_FORMAT": _engine(400, _COPY_TOKENS, input_fault=True),
    "TOKEN_UNSUPPORTED_VERSION": _engine(
        400, "Update WorkRail to a version that supports this token format.", input_fault=True
    ),
    "TOKEN_BAD_SIGNATURE": _engine(
        400,
        "Token signature verification failed. Use the exact tokens returned by WorkRail. If "
        "you did, this server's signing key has changed since they were issued "
        "(keys/keyring.json was replaced or regenerated, or this is another server): no "
        "earlier token verifies any more, but the session is intact. Get fresh tokens for it "
        "with resume_session, or have a person export the session (workrail export SESSION) "
        "and import it (import_session returns fresh tokens); otherwise start_workflow again.",
        input_fault=True,
    ),
    "TOKEN_SCOPE_MISMATCH": _engine(
        400,
        "Tokens must come from the same WorkRail response. "
        "Do not mix tokens from different runs or nodes.",
        input_fault=True,
    ),
    "TOKEN_UNKNOWN_NODE": _engine(
        404, "Use a stateToken returned by WorkRail for an existing node.", input_fault=True
    ),
    "TOKEN_WORKFLOW_HASH_MISMATCH": _engine(
        409, "Use the stateToken returned by WorkRail for this run.", input_fault=True
    ),
    "TOKEN_SESSION_LOCKED": _engine(
        409,
        "Retry in 1–3 seconds; if this persists >10s, ensure no other WorkRail process is running.",
        retry=retry_after_ms(LOCK_RETRY_MS),
    ),
    "SESSION_NOT_HEALTHY": _engine(
        409, "Execution requires a healthy session. Export salvage view, then recreate."
    ),
    "STORE_UNAVAILABLE": _engine(
        503,
        "Nothing was recorded. Send the same call again in a few seconds; if this persists, "
        "ask a person to check the database.",
        retry=retry_after_ms(STORE_RETRY_MS),
    ),
    "CHECKPOINT_RECORD_INVALID": _engine(
        400, "Use a record produced by `workrail checkpoint export`, unmodified.", input_fault=True
    ),
    "CHECKPOINT_PLAN_MISMATCH": _engine(
        409,
        "Resume with the exact workflow version the record was exported from.",
        input_fault=True,
    ),
    "CHECKPOINT_CONTEXT_MISMATCH": _engine(
        409, "Supply the run context exactly as it was at the checkpoint.", input_fault=True
    ),
    # -- fence: the effect checkpoint (its published contract fixes codes and recovery) --
    "INVALID_INPUT": _fence(400, "Correct the request to match input_schema."),
    "CHECKPOINT_NOT_FOUND": _fence(
        404, "Claim the known opaque workflow identity before reading or mutating it."
    ),
    "CHECKPOINT_NOT_HELD": _fence(
        409, "Stand down or recover only after the active claim expires."
    ),
    "CHECKPOINT_TERMINAL": _fence(
        409, "Read the final state; use a new logical workflow identity for new work."
    ),
    "STALE_GENERATION": _fence(
        409, "Read current status and replan against the returned generation."
    ),
    "INVALID_TRANSITION": _fence(
        409, "Follow the published stage transition graph and uncertainty rules."
    ),
    "OBSERVATION_CONFLICT": _fence(
        409, "Use the observation key only for its original transition body."
    ),
    "CONFIGURATION_CONFLICT": _fence(
        409, "Reuse the checkpoint's fixed TTL and retry configuration."
    ),
    "CHECKPOINT_LIMIT_REACHED": _fence(
        409, "Wait for bounded state expiry and review why the workflow exhausted its limits."
    ),
    "TOOL_PAUSED": _fence(
        503, "Wait for the operator to resume the tool.", retry=retry_after_seconds(30)
    ),
    "RATE_LIMITED": _fence(
        429, "Retry after the response Retry-After interval.", retry=retry_after_seconds(60)
    ),
    "DEPENDENCY_UNAVAILABLE": _fence(
        503, "Retry with the same idempotency identity.", retry=retry_after_seconds(1)
    ),
    # -- bundle: export and import (60-bundles §4's closed set, then ours) --
    "BUNDLE_INVALID_FORMAT": _bundle(
        400, "The bundle is not a well-formed bundle. " + _RESEND_BUNDLE, input_fault=True
    ),
    "BUNDLE_UNSUPPORTED_VERSION": _bundle(
        400,
        "Only bundleSchemaVersion 1 is understood; export the session again with a "
        "compatible WorkRail.",
        input_fault=True,
    ),
    "BUNDLE_INTEGRITY_FAILED": _bundle(
        400, "The bundle was changed after it was exported. " + _RESEND_BUNDLE, input_fault=True
    ),
    "BUNDLE_MISSING_SNAPSHOT": _bundle(
        400, "The bundle is incomplete. " + _RESEND_BUNDLE, input_fault=True
    ),
    "BUNDLE_MISSING_PINNED_WORKFLOW": _bundle(
        400, "The bundle is incomplete. " + _RESEND_BUNDLE, input_fault=True
    ),
    "BUNDLE_EVENT_ORDER_INVALID": _bundle(
        400, "The bundle's event log is out of order. " + _RESEND_BUNDLE, input_fault=True
    ),
    "BUNDLE_MANIFEST_ORDER_INVALID": _bundle(
        400, "The bundle's manifest is out of order. " + _RESEND_BUNDLE, input_fault=True
    ),
    "BUNDLE_TOO_LARGE": _bundle(
        413,
        "Bundles over the limit are refused; move the session with `workrail export` / "
        "`workrail import` only if it is genuinely this large.",
        input_fault=True,
    ),
    "EXPORT_SESSION_STORE_ERROR": _bundle(
        404,
        "Check the sessionId (`workrail sessions` lists them); a session damaged at its head "
        "cannot be exported.",
        input_fault=True,
    ),
    "EXPORT_MISSING_SNAPSHOT": _bundle(500, _DATA_DIR),
    "EXPORT_MISSING_PINNED_WORKFLOW": _bundle(500, _DATA_DIR),
    "EXPORT_SNAPSHOT_STORE_ERROR": _bundle(500, _DATA_DIR),
    "EXPORT_PINNED_WORKFLOW_STORE_ERROR": _bundle(500, _DATA_DIR),
    "EXPORT_BUILD_FAILED": _bundle(
        409,
        "This session cannot form a bundle; `workrail sessions show SESSION` shows its state.",
    ),
    "IMPORT_READ_FAILED": _bundle(
        400,
        "Send the bundle inline as the `bundle` argument, or check the file path.",
        input_fault=True,
    ),
    "IMPORT_SNAPSHOT_STORE_ERROR": _bundle(500, _DATA_DIR),
    "IMPORT_PINNED_WORKFLOW_STORE_ERROR": _bundle(500, _DATA_DIR),
    "IMPORT_SESSION_STORE_ERROR": _bundle(500, _DATA_DIR),
    # -- startup: opening the configured application --
    "CONFIG_INVALID": _startup(
        400, "Fix the flag or environment variable and run the command again.", input_fault=True
    ),
    "KEYRING_CORRUPT": _startup(
        500,
        "Restore keys/keyring.json from a backup, or move it aside to start a new one "
        "(tokens issued with the old keys stop working).",
    ),
    "KEYRING_IO_ERROR": _startup(
        500,
        "Check that the data directory's keys/ folder is readable and writable (permissions, "
        "disk space), then run the command again.",
    ),
    "KEYRING_INSECURE": _startup(
        500,
        "Make the keyring yours and private (chown it to this user; chmod 600 "
        "keys/keyring.json; chmod 700 keys), or set WORKRAIL_ALLOW_INSECURE_KEYS=true to use "
        "it anyway with a warning.",
    ),
    "STORAGE_FAULT": _spec(
        "startup",
        507,
        "Free disk space (or fix the storage device) under the data directory, then run the "
        "command again.",
        retry=retry_after_ms(STORE_RETRY_MS),
    ),
    "FENCE_UNAVAILABLE": _startup(
        500,
        "Check WORKRAIL_FENCE_URL and the data directory's keys/fence.key, then start again.",
    ),
}

UNKNOWN: Final = CATALOG["INTERNAL_ERROR"]


def spec_of(code: str) -> CodeSpec:
    """The catalogue entry; a code missing from it is treated as an internal error."""
    return CATALOG.get(code, UNKNOWN)


def envelope(
    code: str,
    message: str,
    suggestion: str | None = None,
    *,
    retry: Retry | None = None,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The one error envelope: `{code, message, retry, details: {suggestion, ...}}`,
    with the catalogue's retry guidance and suggestion unless the caller knows better."""
    spec = spec_of(code)
    return {
        "code": code,
        "message": message,
        "retry": (retry or spec.retry).to_json(),
        "details": {"suggestion": suggestion or spec.suggestion, **(details or {})},
    }


def retry_of(envelope: Mapping[str, Any]) -> Retry:
    """The retry guidance an envelope carries, read back (its code's default if absent)."""
    raw = envelope.get("retry")
    if isinstance(raw, Mapping) and raw.get("kind") in (
        "not_retryable",
        "retryable_immediate",
        "retryable_after_ms",
    ):
        after = raw.get("afterMs")
        return Retry(raw["kind"], after if isinstance(after, int) else None)
    return spec_of(str(envelope.get("code", ""))).retry


def suggestion_of(envelope: Mapping[str, Any]) -> str:
    """What to do next: the envelope's own suggestion, else its code's default."""
    details = envelope.get("details")
    if isinstance(details, Mapping):
        found = details.get("suggestion")
        if isinstance(found, str) and found:
            return found
    return spec_of(str(envelope.get("code", ""))).suggestion


FAMILY_TITLES: Final[Mapping[Family, str]] = {
    "engine": "Workflow tools and the commands over them",
    "fence": "effect_checkpoint (fixed by the checkpoint contract)",
    "bundle": "Session bundles (export and import)",
    "startup": "Start-up (configuration, keys, backends)",
}


def markdown_row(code: str, spec: CodeSpec) -> str:
    """One row of docs/errors.md's table, exactly as the docs must hold it."""
    fault = "input" if spec.input_fault else "operation"
    suggestion = spec.suggestion.replace("|", "\\|")
    return f"| `{code}` | {spec.retry.describe()} | {spec.http_status} | {fault} | {suggestion} |"
