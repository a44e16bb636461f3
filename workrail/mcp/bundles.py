"""`export_session` and `import_session` (issue #6): the bundle shell behind MCP tools.

Bundle failures keep their own codes (`BUNDLE_*`, `EXPORT_*`, `IMPORT_*`) rather than being
squeezed into the spec's closed engine set: an agent handed a bad bundle needs to know
which check failed and where. They are still sent as the usual envelope
`{code, message, retry, details{path, suggestion, …}}`, and none is retryable — a bad
bundle stays bad, and store failures need a person.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from returns.result import Failure, Result, Success

from workrail import __version__
from workrail.core.errors import envelope
from workrail.engine.api import (
    BundleError,
    BundleErrorCode,
    Engine,
    EngineError,
    bundle_envelope,
    bundle_retry_for,
    error,
    preferred_run,
)

# The bundle layer's closed set, one definition for both layers.
BundleToolCode = BundleErrorCode


@dataclass(frozen=True)
class BundleToolError:
    """A bundle failure as the MCP envelope carries it."""

    code: BundleToolCode
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def of(err: BundleError) -> BundleToolError:
        return BundleToolError(err.code, err.message, bundle_envelope(err)["details"])

    def to_envelope(self) -> dict[str, Any]:
        return envelope(
            self.code, self.message, retry=bundle_retry_for(self.details), details=self.details
        )


BundleResponse = Result[dict[str, Any], BundleToolError | EngineError]


def export_tool(engine: Engine, arguments: dict[str, Any]) -> BundleResponse:
    """`{bundle, summary}`: the bundle object plus what an agent should know about it.
    Agents hold tokens rather than session ids, so either names the session."""
    token = arguments.get("stateToken")
    session_id = arguments.get("sessionId")
    if (token is None) == (session_id is None):
        return Failure(
            error(
                "VALIDATION_ERROR",
                "Invalid input",
                "Pass exactly one of sessionId or stateToken.",
                validationErrors=[
                    {"path": "", "message": "exactly one of sessionId, stateToken is required"}
                ],
            )
        )
    exported = engine.export_session(str(session_id or token), app_version=__version__)
    if isinstance(exported, Failure):
        failure = exported.failure()
        return Failure(BundleToolError.of(failure) if isinstance(failure, BundleError) else failure)
    done = exported.unwrap()
    return Success({"bundle": done.bundle.to_json(), "summary": done.summary_json()})


def _raw(bundle: Any) -> Result[bytes, BundleError]:
    """Bytes for the validator: a string as sent, an object re-encoded as plain JSON (its
    integrity is over canonical values, so re-encoding cannot hide or cause a mismatch)."""
    if isinstance(bundle, str):
        return Success(bundle.encode("utf-8"))
    try:
        return Success(json.dumps(bundle, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    except ValueError as exc:
        return Failure(BundleError("BUNDLE_INVALID_FORMAT", f"Bundle is not plain JSON: {exc}"))


def import_tool(engine: Engine, arguments: dict[str, Any]) -> BundleResponse:
    """tokens_for_import's structure plus the preferred run's nextIntent / nextCall."""
    raw = _raw(arguments["bundle"])
    if isinstance(raw, Failure):
        return Failure(BundleToolError.of(raw.failure()))
    imported = engine.import_session(raw.unwrap())
    if isinstance(imported, Failure):
        return Failure(BundleToolError.of(imported.failure()))
    result = imported.unwrap().result
    body = dict(imported.unwrap().tokens)
    body["originalSessionId"] = result.original_session_id
    body["eventCount"] = result.event_count
    if result.salvage is not None:
        body["salvage"] = result.salvage.to_json()
    run = preferred_run(body)
    body["nextIntent"] = run["nextIntent"] if run is not None else "complete"
    body["nextCall"] = run["nextCall"] if run is not None else None
    return Success(body)
