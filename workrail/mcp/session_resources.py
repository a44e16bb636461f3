"""MCP resources for sessions, `workrail://sessions/{sessionId}`, so a user can @-mention
earlier work: the session's summary, each run's recap and a ready rehydrate call (see
workrail/engine/session_recap.py). resources/list offers the most recently active ones;
the template reaches any session, by its id or a unique start of it (both listed by
workrail.mcp.resource_listing, without the SDK).

Read-only: listing and reading write no session (on files, a first query writes only the
index rows this process's own appends left pending).
Unknown or malformed ids answer JSON-RPC -32602 with the engine's message.
"""

from __future__ import annotations

import json
from typing import Final

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from returns.result import Failure

from workrail.engine.api import Engine, EngineError
from workrail.mcp.resource_listing import SESSION_URI_PREFIX
from workrail.mcp.validation import clip

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


def listing_error(err: EngineError) -> MCPError:
    """Why resources/list could not list the sessions (the store could not answer)."""
    return _rpc_error(err, SESSION_URI_PREFIX)


def is_session_uri(uri: str) -> bool:
    return uri.startswith(SESSION_URI_PREFIX)


def read_session_resource(engine: Engine, uri: str) -> str:
    found = engine.session_recap(uri.removeprefix(SESSION_URI_PREFIX))
    if isinstance(found, Failure):
        raise _rpc_error(found.failure(), uri)
    return json.dumps(found.unwrap().to_json(), indent=2, ensure_ascii=False)
