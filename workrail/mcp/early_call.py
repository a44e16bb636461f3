"""A workflow tool's call answered on stdio without the SDK's server.

The first `tools/call` after spawn used to wait for the SDK's import and server build,
most of a second on a quiet machine. The call itself needs only the engine and our own
validation (workrail.mcp.tool_calls), both loaded first; so the stdio start-up runs a
plain call of an engine tool here and writes the answer the SDK's server writes, byte for
byte (tests/mcp/test_early_call.py compares them for every protocol revision). Anything
this module is not sure of is left to the SDK (None), as workrail.mcp.handshake does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic_core import to_json
from returns.result import Failure

from workrail.mcp.handshake import SERVER_INFO_KEY, plain_tool_call
from workrail.mcp.schemas import ToolSpec
from workrail.mcp.tool_calls import Handler, call_tool, tool_text, unexpected_failure

log = logging.getLogger("workrail.mcp")

Calls = Mapping[str, tuple[ToolSpec, Handler]]
"""Tool name → its spec and handler: the calls this module may answer."""


def tool_call(
    frame: bytes, calls: Calls, *, modern: bool = False
) -> tuple[int | str, ToolSpec, Handler, dict[str, Any]] | None:
    """(id, spec, handler, arguments) when `frame` is a plain `tools/call` of one of
    `calls` (arguments an object or absent, no `_meta` but a progress token; with
    `modern`, the 2026 era's envelope instead, see handshake.plain_tool_call); None
    otherwise (the SDK answers)."""
    call = plain_tool_call(frame, modern=modern)
    if call is None or call[1] not in calls:
        return None
    request_id, name, arguments = call
    spec, handler = calls[name]
    return request_id, spec, handler, arguments


def answer_call(
    request_id: int | str,
    spec: ToolSpec,
    handler: Handler,
    arguments: dict[str, Any],
    server_info: Mapping[str, Any] | None = None,
) -> bytes:
    """Run the call (blocking) and return the answer's line, as the SDK's server writes it:
    the result's fields in its order, `structuredContent` on success only; on a 2026-era
    connection (`server_info`, the SDK's stamp of the server's identity) with the era's
    `resultType` and that stamp too. An answer that cannot be made (a payload that does
    not serialise) is an INTERNAL_ERROR result, never a request left unanswered."""
    outcome = call_tool(spec, handler, arguments)
    if isinstance(outcome, Failure):
        return _failure_line(request_id, outcome.failure().to_envelope(), server_info)
    payload = outcome.unwrap()
    try:
        content = [{"text": tool_text(payload), "type": "text"}]
        result = _result(content, False, server_info, payload)
        return to_json({"jsonrpc": "2.0", "id": request_id, "result": result})
    except Exception:
        log.exception("%s: the answer could not be written", spec.name)
        envelope = unexpected_failure(spec.name).to_envelope()
        return _failure_line(request_id, envelope, server_info)


def _failure_line(
    request_id: int | str, envelope: dict[str, Any], server_info: Mapping[str, Any] | None
) -> bytes:
    content = [{"text": tool_text(envelope), "type": "text"}]
    result = _result(content, True, server_info)
    return to_json({"jsonrpc": "2.0", "id": request_id, "result": result})


def _result(
    content: list[dict[str, str]],
    is_error: bool,
    server_info: Mapping[str, Any] | None,
    payload: Any = None,
) -> dict[str, Any]:
    """A `CallToolResult` with its keys in the SDK's order, for the connection's era."""
    result: dict[str, Any] = {"content": content, "isError": is_error}
    if server_info is not None:
        result["resultType"] = "complete"
    if not is_error:
        result["structuredContent"] = payload
    if server_info is not None:
        result["_meta"] = {SERVER_INFO_KEY: dict(server_info)}
    return result
