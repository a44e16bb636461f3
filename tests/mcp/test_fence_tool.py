"""The effect_checkpoint tool through the SDK's in-memory client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp import Client
from mcp.server import MCPServer
from pydantic import TypeAdapter

from tests.fence.conftest import KEY, ManualClock
from tests.fence.helpers import claim, status, transition
from tests.mcp.conftest import error_body
from workrail.fence.backend import FenceBackend
from workrail.fence.contract import INPUT_MODELS, CheckpointOutput, EvidenceType
from workrail.fence.describe import output_schema as describe_output
from workrail.fence.ratelimit import RateLimits
from workrail.fence.service import FenceService
from workrail.mcp.fence_tool import DESCRIPTION, TOOL_NAME, effect_checkpoint_tool


def call_all(service: FenceService, calls: list[dict[str, Any]]) -> list[Any]:
    server = MCPServer("fence-test", tools=[effect_checkpoint_tool(service)])

    async def go() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(TOOL_NAME, args) for args in calls]

    return asyncio.run(go())


def test_tool_is_listed_with_schema_and_annotations(service: FenceService) -> None:
    server = MCPServer("fence-test", tools=[effect_checkpoint_tool(service)])

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
    assert output.acquired
    assert output.external_proof is False
    assert moved.structured_content["stage"] == "external_result_uncertain"


def test_errors_are_readable_envelopes(service: FenceService) -> None:
    (missing,) = call_all(service, [transition("claimed", "failed")])
    assert missing.is_error is True
    error = error_body(missing)["error"]
    assert error["code"] == "CHECKPOINT_NOT_FOUND"
    assert error["recovery"]
    assert "CHECKPOINT_NOT_FOUND" in missing.content[0].text


def test_invalid_arguments_come_back_as_invalid_input(service: FenceService) -> None:
    (bad,) = call_all(service, [claim() | {"claim_ttl_seconds": "soon"}])
    assert bad.is_error is True
    assert error_body(bad)["error"]["code"] == "INVALID_INPUT"


def test_unknown_fields_are_invalid_input_not_dropped(service: FenceService) -> None:
    typo = transition("claimed", "caller_verified", evidence=True)
    typo["evidence_fingerprnt"] = typo.pop("evidence_fingerprint")
    extra, misspelt, after = call_all(service, [claim() | {"bogus_field": 1}, typo, status()])
    for result in (extra, misspelt):
        assert result.is_error is True
        error = error_body(result)["error"]
        assert error["code"] == "INVALID_INPUT"
    assert "bogus_field" in error_body(extra)["error"]["message"]
    assert "evidence_fingerprnt" in error_body(misspelt)["error"]["message"]
    assert error_body(after)["error"]["code"] == "CHECKPOINT_NOT_FOUND"  # nothing ran


def test_advertised_schema_is_closed_and_generated_from_the_contract(
    service: FenceService,
) -> None:
    server = MCPServer("fence-test", tools=[effect_checkpoint_tool(service)])

    async def go() -> Any:
        async with Client(server) as client:
            return (await client.list_tools()).tools

    (tool,) = asyncio.run(go())
    schema = tool.input_schema
    assert schema["additionalProperties"] is False
    evidence = dict(schema["properties"]["evidence_type"])
    assert evidence.pop("description")
    assert evidence == TypeAdapter(EvidenceType | None).json_schema()
    assert set(schema["properties"]) == {
        name for model in INPUT_MODELS for name in model.model_fields
    }


def test_one_mcp_client_shares_one_rate_budget(backend: FenceBackend, clock: ManualClock) -> None:
    """The SDK builds a new session object per request, so the budget must not key on it."""
    limited = FenceService(backend, KEY, clock, RateLimits(client_rpm=2, global_rpm=0))
    replies = call_all(limited, [status(), status(), status()])
    codes = [json.loads(r.content[0].text).get("error", {}).get("code") for r in replies]
    assert codes[:2] != ["RATE_LIMITED"] * 2
    assert codes[2] == "RATE_LIMITED"


def test_output_schema_is_the_contract_with_every_field_described(service: FenceService) -> None:
    server = MCPServer("fence-test", tools=[effect_checkpoint_tool(service)])

    async def go() -> Any:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            # The SDK client checks structured results against the advertised schema.
            answered = await client.call_tool(TOOL_NAME, claim())
            return tools, answered

    (tool,), answered = asyncio.run(go())
    schema = tool.output_schema
    assert schema is not None
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == list(CheckpointOutput.model_fields)
    assert schema["required"] == sorted(schema["required"], key=list(schema["properties"]).index)
    assert all(prop.get("description") for prop in schema["properties"].values())
    assert schema["properties"]["stage"]["enum"] == list(
        describe_output()["properties"]["stage"]["enum"]
    )
    # Date-times keep their format, without the regex that spells it out.
    assert schema["properties"]["observed_at"] == {
        "type": "string",
        "format": "date-time",
        "description": schema["properties"]["observed_at"]["description"],
    }
    assert answered.is_error is False
    CheckpointOutput.model_validate(answered.structured_content)


def test_description_spells_out_the_error_envelope_as_sent(service: FenceService) -> None:
    (refused,) = call_all(service, [transition("claimed", "failed")])
    error = error_body(refused)["error"]
    assert set(error) == {
        "code",
        "message",
        "retry",
        "details",
        "retryable",
        "retry_after_seconds",
        "recovery",
        "charged",
    }
    text = " ".join(DESCRIPTION.split())
    for field in error:
        assert field in text, field
    assert "retry: {kind, afterMs?}" in text
    for kind in ("not_retryable", "retryable_immediate", "retryable_after_ms"):
        assert kind in text
