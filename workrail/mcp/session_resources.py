"""MCP resources for sessions, `workrail://sessions/{sessionId}`, so a user can @-mention
earlier work: the session's summary, each run's recap and a ready rehydrate call (see
workrail/engine/session_recap.py). resources/list offers the most recently active ones;
the template reaches any session, by its id or a unique start of it.

Read-only: listing and reading never write to the store (no index refresh either).
Unknown or malformed ids answer JSON-RPC -32602 with the engine's message.
"""

from __future__ import annotations

import json
from typing import Final

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, Resource, ResourceTemplate
from returns.result import Failure

from workrail.engine.api import Engine, EngineError
from workrail.mcp.validation import clip

SESSION_URI_PREFIX: Final = "workrail://sessions/"
SESSION_URI_TEMPLATE: Final = SESSION_URI_PREFIX + "{sessionId}"
LISTED_MAX: Final = 20
"""resources/list offers this many sessions; the template reaches every other one."""

_CALLER_CODES: Final = frozenset({"NOT_FOUND", "VALIDATION_ERROR"})
FIND_MORE: Final = (
    "resources/list names the most recently active sessions; resume_session finds the "
    "others by the user's words."
)


def _rpc_error(err: EngineError, uri: str) -> MCPError:
    """The caller's mistake is invalid params; a store that cannot answer is internal,
    with the envelope's retry advice in `data` (never a traceback)."""
    suggestion = err.details.get("suggestion")
    if err.code == "NOT_FOUND":
        suggestion = FIND_MORE
    text = f"{err.message} {suggestion}" if suggestion else err.message
    if err.code in _CALLER_CODES:
        return MCPError(
            code=INVALID_PARAMS,
            message=f"Unknown resource: {clip(uri)}. {text}",
            data={"uri": clip(uri), "code": err.code},
        )
    return MCPError(
        code=INTERNAL_ERROR,
        message=f"Could not read {clip(uri)}: {text}",
        data={"uri": clip(uri), **err.to_envelope()},
    )


def list_session_resources(engine: Engine) -> list[Resource]:
    found = engine.recent_sessions(LISTED_MAX)
    if isinstance(found, Failure):
        raise _rpc_error(found.failure(), SESSION_URI_PREFIX)
    resources = []
    for summary in found.unwrap():
        step = summary.to_json()["pendingStep"]
        where = f", at “{step['title']}”" if step else ""
        workflow = summary.workflow_name or summary.workflow_id or "no run"
        resources.append(
            Resource(
                uri=SESSION_URI_PREFIX + summary.session_id,
                name=summary.session_id,
                title=summary.display_title,
                description=f"WorkRail session: {workflow}, {summary.status}{where}. Its "
                "summary, recap and the call that continues it (JSON).",
                mime_type="application/json",
            )
        )
    return resources


def session_template() -> ResourceTemplate:
    return ResourceTemplate(
        uri_template=SESSION_URI_TEMPLATE,
        name="session",
        title="WorkRail session",
        description="A session's summary, each run's recap and the rehydrate call that "
        "continues it (JSON), by its id (sess_…, or a unique start of it).",
        mime_type="application/json",
    )


def is_session_uri(uri: str) -> bool:
    return uri.startswith(SESSION_URI_PREFIX)


def read_session_resource(engine: Engine, uri: str) -> str:
    found = engine.session_recap(uri.removeprefix(SESSION_URI_PREFIX))
    if isinstance(found, Failure):
        raise _rpc_error(found.failure(), uri)
    return json.dumps(found.unwrap().to_json(), indent=2, ensure_ascii=False)
