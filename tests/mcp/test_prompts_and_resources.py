"""Prompts and resources that exist: one prompt per workflow that can be started and one
resource per workflow definition; unknown names are JSON-RPC -32602 with a clear message
and no traceback; the capabilities are advertised only when there is content."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.engine.conftest import make_engine
from tests.mcp.conftest import ok
from workrail.mcp import build_server

pytestmark = pytest.mark.anyio


async def _startable(client: Client) -> list[str]:
    listed = await ok(client, "list_workflows", {})
    return [w["workflowId"] for w in listed["workflows"] if w["workflowHash"]]


async def test_one_prompt_per_startable_workflow(client: Client) -> None:
    prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == await _startable(client)
    probe = next(p for p in prompts if p.name == "probe-flow")
    assert probe.title == "Probe Flow"
    assert [(a.name, a.required) for a in probe.arguments or []] == [("goal", False)]


async def test_a_prompt_tells_the_agent_to_start_its_workflow_with_the_goal(
    client: Client,
) -> None:
    got = await client.get_prompt("probe-flow", {"goal": "ship the fix"})
    (message,) = got.messages
    assert message.role == "user"
    text = message.content.text  # type: ignore[union-attr]
    assert "start_workflow" in text and "nextCall" in text
    call = json.loads(text[text.index("{") : text.index("}}") + 2])
    assert call == {"workflowId": "probe-flow", "context": {"goal": "ship the fix"}}
    # What the prompt says to send really starts the workflow with the goal.
    start = await ok(client, "start_workflow", call)
    assert start["pending"]["stepId"] == "plan"


async def test_a_prompt_without_a_goal_starts_without_context(client: Client) -> None:
    got = await client.get_prompt("probe-flow")
    assert '{"workflowId": "probe-flow"}' in got.messages[0].content.text  # type: ignore[union-attr]


async def test_workflow_resources_hold_the_definitions(client: Client) -> None:
    resources = (await client.list_resources()).resources
    uris = [str(r.uri) for r in resources]
    assert uris == [f"workrail://workflows/{w}" for w in await _startable(client)]
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["workrail://workflows/{workflowId}"]
    read = await client.read_resource("workrail://workflows/probe-flow")
    (content,) = read.contents
    assert content.mime_type == "application/json"
    definition = json.loads(content.text)  # type: ignore[union-attr]
    assert definition["id"] == "probe-flow" and definition["steps"][0]["id"] == "plan"


@pytest.mark.parametrize(
    "uri", ["workrail://workflows/nope", "workrail://sessions/x", "file:///etc/passwd"]
)
async def test_unknown_resource_is_invalid_params_without_a_traceback(
    client: Client, uri: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(MCPError) as raised:
        await client.read_resource(uri)
    assert raised.value.error.code == -32602
    assert raised.value.error.message.startswith(f"Unknown resource: {uri}.")
    assert "Traceback" not in caplog.text


async def test_unknown_prompt_is_invalid_params_without_a_traceback(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(MCPError) as raised:
        await client.get_prompt("nope")
    assert raised.value.error.code == -32602
    assert "Unknown prompt: nope." in raised.value.error.message
    assert "prompts/list" in raised.value.error.message
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)


async def test_capabilities_with_content_are_advertised(client: Client) -> None:
    caps = client.server_capabilities
    assert caps.tools is not None and caps.prompts is not None and caps.resources is not None
    assert caps.completions is None and caps.logging is None


async def test_without_workflows_no_prompt_or_resource_capability(tmp_path: Path) -> None:
    empty = tmp_path / "no-workflows"
    empty.mkdir()
    engine = make_engine(tmp_path / "data", empty)
    async with Client(build_server(engine)) as bare:
        caps = bare.server_capabilities
        assert caps.tools is not None
        assert caps.prompts is None and caps.resources is None
