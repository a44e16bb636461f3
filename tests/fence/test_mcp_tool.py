"""The effect_checkpoint tool through the SDK's in-memory client."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp import Client
from mcp.server import MCPServer

from tests.fence.helpers import claim, transition
from workrail.fence.contract import CheckpointOutput
from workrail.fence.mcp_tool import TOOL_NAME, register_effect_checkpoint
from workrail.fence.service import FenceService


def call_all(service: FenceService, calls: list[dict[str, Any]]) -> list[Any]:
    server = MCPServer("fence-test")
    register_effect_checkpoint(server, service)

    async def go() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(TOOL_NAME, args) for args in calls]

    return asyncio.run(go())


def test_tool_is_listed_with_schema_and_annotations(service: FenceService) -> None:
    server = MCPServer("fence-test")
    register_effect_checkpoint(server, service)

    async def go() -> Any:
        async with Client(server) as client:
            return (await client.list_tools()).tools

    (tool,) = asyncio.run(go())
    assert tool.name == TOOL_NAME
    assert tool.annotations.idempotent_hint is True
    assert tool.annotations.read_only_hint is False
    props = tool.input_schema["properties"]
    assert tool.input_schema["required"] == ["action"]
    assert props["claim_ttl_seconds"]["minimum"] == 60
    assert "caller_verified" in props["to_stage"]["enum"]
    assert all(props[name].get("description") for name in props)


def test_claim_and_transition_through_mcp(service: FenceService) -> None:
    move = transition("claimed", "external_result_uncertain")
    del move["evidence_type"], move["evidence_fingerprint"]  # omitted means null
    claimed, moved = call_all(service, [claim(), move])
    assert claimed.is_error is False
    output = CheckpointOutput.model_validate(claimed.structured_content)
    assert output.acquired and output.external_proof is False
    assert moved.structured_content["stage"] == "external_result_uncertain"


def test_errors_are_readable_envelopes(service: FenceService) -> None:
    (missing,) = call_all(service, [transition("claimed", "failed")])
    assert missing.is_error is True
    error = missing.structured_content["error"]
    assert error["code"] == "CHECKPOINT_NOT_FOUND"
    assert error["recovery"]
    assert "CHECKPOINT_NOT_FOUND" in missing.content[0].text


def test_invalid_arguments_come_back_as_invalid_input(service: FenceService) -> None:
    (bad,) = call_all(service, [claim() | {"claim_ttl_seconds": "soon"}])
    assert bad.is_error is True
    assert bad.structured_content["error"]["code"] == "INVALID_INPUT"
