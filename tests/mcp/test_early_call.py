"""The calls the stdio start-up answers before the SDK has loaded get the SDK's bytes."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp.server import MCPServer
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from workrail.engine.api import Engine
from workrail.mcp import build_server
from workrail.mcp.early_call import Calls, answer_call, tool_call
from workrail.mcp.handshake import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from workrail.mcp.stdio import parse_frame, wire_bytes
from workrail.mcp.tool_calls import engine_tools

INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'

CALLS: list[dict[str, Any]] = [
    {"name": "list_workflows", "arguments": {}},
    {"name": "list_workflows"},
    {"name": "inspect_workflow", "arguments": {"workflowId": "branch-flow"}},
    {"name": "inspect_workflow", "arguments": {"workflowId": "branch-flow", "mode": "full"}},
    {"name": "inspect_workflow", "arguments": {"workflowId": "nope-é"}},
    {"name": "inspect_workflow", "arguments": {"workflowId": 7}},
    {"name": "continue_workflow", "arguments": {"stateToken": "st1x", "intent": "rehydrate"}},
    {"name": "checkpoint_workflow", "arguments": {"checkpointToken": "chk1\u2028"}},
    {"name": "start_workflow", "arguments": {"workflowId": "no-such-flow"}},
    {"name": "export_session", "arguments": {}},
    # A client given a progress callback asks for progress; no tool reports any.
    {"name": "list_workflows", "arguments": {}, "_meta": {"progressToken": 1}},
    {"name": "list_workflows", "_meta": {"progressToken": "tok-é"}},
    {
        "name": "inspect_workflow",
        "arguments": {"workflowId": "nope"},
        "_meta": {"progressToken": ""},
    },
    {
        "name": "start_workflow",
        "arguments": {"workflowId": "no-such"},
        "_meta": {"progressToken": -3},
    },
    {"name": "export_session", "arguments": {}, "_meta": {"progressToken": 2**53 - 1}},
]


def _frame(request_id: int, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message, ensure_ascii=False).encode()


async def _sdk_answers(server: MCPServer, frames: list[bytes]) -> list[bytes]:
    """The SDK server's answers to `frames`, serialized as WorkRail's transport does."""
    lowlevel = server._lowlevel_server
    to_server, read_stream = create_context_streams[SessionMessage | Exception](1)
    write_stream, from_server = create_context_streams[SessionMessage](1)
    answers = []
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lowlevel.run, read_stream, write_stream, lowlevel.create_initialization_options()
            )
            for frame in frames:
                parsed = parse_frame(frame)
                assert not isinstance(parsed, dict), parsed
                await to_server.send(SessionMessage(parsed))
                if b'"id"' in frame:
                    with anyio.fail_after(30):
                        answers.append(wire_bytes((await from_server.receive()).message))
            tg.cancel_scope.cancel()
    finally:
        for stream in (to_server, read_stream, write_stream, from_server):
            await stream.aclose()
    return answers


@pytest.fixture(scope="module")
def engine(engines: dict[bool, Engine]) -> Engine:
    return engines[True]


@pytest.fixture(scope="module")
def calls(engine: Engine) -> Calls:
    return {spec.name: (spec, handler) for spec, handler in engine_tools(engine)}


@pytest.mark.parametrize("revision", HANDSHAKE_PROTOCOL_VERSIONS)
def test_each_call_is_answered_with_the_sdks_bytes(
    engine: Engine, calls: Calls, revision: str
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": revision,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    frames = [_frame(i, params) for i, params in enumerate(CALLS, start=1)]
    sdk = anyio.run(
        _sdk_answers, build_server(engine), [json.dumps(initialize).encode(), INITIALIZED, *frames]
    )[1:]
    ours = []
    for frame in frames:
        call = tool_call(frame, calls)
        assert call is not None, frame
        ours.append(answer_call(*call))
    for expected, got, params in zip(sdk, ours, CALLS, strict=True):
        assert got == expected, params


def _envelope(revision: str, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": revision,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
        **extra,
    }


def _modern(params: dict[str, Any], revision: str) -> dict[str, Any]:
    """`params` as a 2026-era client sends them: its envelope in `_meta`."""
    return {**params, "_meta": {**_envelope(revision), **params.get("_meta", {})}}


@pytest.mark.parametrize("revision", MODERN_PROTOCOL_VERSIONS)
def test_each_call_of_the_2026_era_is_answered_with_the_sdks_bytes(
    engine: Engine, calls: Calls, revision: str
) -> None:
    capabilities = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}}}
    info = {"name": "agent-é", "version": "2.0", "title": "An agent"}
    odd_envelopes = [
        {"name": "list_workflows", "_meta": {"io.modelcontextprotocol/clientInfo": info}},
        {
            "name": "list_workflows",
            "_meta": {"io.modelcontextprotocol/clientCapabilities": capabilities},
        },
    ]
    params = [_modern(p, revision) for p in CALLS + odd_envelopes]
    without_info = _modern({"name": "list_workflows"}, revision)
    del without_info["_meta"]["io.modelcontextprotocol/clientInfo"]
    params.append(without_info)
    frames = [_frame(i, p) for i, p in enumerate(params, start=1)]
    server = build_server(engine)
    sdk = anyio.run(_sdk_answers, server, frames)
    stamp = server._lowlevel_server.server_info_stamp
    ours = []
    for frame in frames:
        call = tool_call(frame, calls, modern=True)
        assert call is not None, frame
        assert tool_call(frame, calls) is None  # never taken for a handshake-era call
        ours.append(answer_call(*call, stamp))
    for expected, got, sent in zip(sdk, ours, params, strict=True):
        assert got == expected, sent
    assert b'"resultType":"complete"' in ours[0]


@pytest.mark.parametrize(
    "meta",
    [
        {},
        {"progressToken": 1},
        _envelope("2025-11-25"),
        _envelope("2026-07-29"),
        _envelope(20260728),  # type: ignore[arg-type]
        _envelope(MODERN_PROTOCOL_VERSIONS[-1], **{"io.modelcontextprotocol/logLevel": "info"}),
        _envelope(MODERN_PROTOCOL_VERSIONS[-1], other=1),
        _envelope(MODERN_PROTOCOL_VERSIONS[-1], progressToken=True),
        _envelope(MODERN_PROTOCOL_VERSIONS[-1], progressToken=None),
        _envelope(MODERN_PROTOCOL_VERSIONS[-1], **{"io.modelcontextprotocol/clientInfo": 7}),
        _envelope(MODERN_PROTOCOL_VERSIONS[-1], **{"io.modelcontextprotocol/clientInfo": {}}),
        _envelope(
            MODERN_PROTOCOL_VERSIONS[-1], **{"io.modelcontextprotocol/clientCapabilities": []}
        ),
        _envelope(
            MODERN_PROTOCOL_VERSIONS[-1],
            **{"io.modelcontextprotocol/clientCapabilities": {"sampling": True}},
        ),
        {
            k: v
            for k, v in _envelope(MODERN_PROTOCOL_VERSIONS[-1]).items()
            if k != "io.modelcontextprotocol/clientCapabilities"
        },
        {
            k: v
            for k, v in _envelope(MODERN_PROTOCOL_VERSIONS[-1]).items()
            if k != "io.modelcontextprotocol/protocolVersion"
        },
    ],
)
def test_a_2026_era_call_is_taken_only_with_a_plain_envelope_of_ours(
    calls: Calls, meta: dict[str, Any]
) -> None:
    assert (
        tool_call(_frame(1, {"name": "list_workflows", "_meta": meta}), calls, modern=True) is None
    )


def test_a_2026_era_call_without_a_meta_is_left_to_the_sdk(calls: Calls) -> None:
    assert tool_call(_frame(1, {"name": "list_workflows"}), calls, modern=True) is None


@pytest.mark.parametrize(
    "frame",
    [
        _frame(1, {"name": "list_workflows", "_meta": _envelope(MODERN_PROTOCOL_VERSIONS[-1])}),
        _frame(1, {"name": "effect_checkpoint", "arguments": {}}),
        _frame(1, {"name": "no_such_tool", "arguments": {}}),
        _frame(1, {"name": "list_workflows", "arguments": [], "_meta": {}}),
        _frame(1, {"name": "list_workflows", "_meta": {"progressToken": 1, "other": 1}}),
        _frame(1, {"name": "list_workflows", "_meta": {"progressToken": True}}),
        _frame(1, {"name": "list_workflows", "_meta": {"progressToken": None}}),
        _frame(1, {"name": "list_workflows", "_meta": {"progressToken": 1.5}}),
        _frame(1, {"name": "list_workflows", "_meta": {"progressToken": [1]}}),
        _frame(1, {"name": "list_workflows", "_meta": {"progressToken": 2**53}}),
        _frame(1, {"name": "list_workflows", "_meta": []}),
        _frame(1, {"name": "list_workflows", "arguments": None}),
        _frame(1, {"name": "inspect_workflow", "arguments": {"workflowId": 1.5}}),
        _frame(1, {"arguments": {}}),
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_workflows",'
        b'"name":"list_workflows"}}',
        b'{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"list_workflows"}}',
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"list_workflows"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"list_workflows"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800"}}',
        b"not json",
    ],
)
def test_anything_unsure_is_left_to_the_sdk(calls: Calls, frame: bytes) -> None:
    assert tool_call(frame, calls) is None
