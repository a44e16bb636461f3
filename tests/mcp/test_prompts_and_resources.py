"""Prompts and resources that exist: one prompt per workflow that can be started, the
`resume` prompt (through resume_session), one resource per workflow definition (sessions:
test_session_resources.py); unknown names are JSON-RPC -32602 with a clear message and no
traceback; the capabilities are advertised only when there is content, and no change
notification is promised."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import GetPromptResult

from tests.conftest import REFERENCE
from tests.engine.conftest import make_engine
from tests.mcp.conftest import advance_args, ok
from workrail.engine.resume import QUERY_MAX
from workrail.mcp import build_server
from workrail.mcp.resume_prompt import get_resume_prompt

pytestmark = pytest.mark.anyio


async def _startable(client: Client) -> list[str]:
    listed = await ok(client, "list_workflows", {})
    return [w["workflowId"] for w in listed["workflows"] if w["workflowHash"]]


async def test_one_prompt_per_startable_workflow_and_resume(client: Client) -> None:
    prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == [*await _startable(client), "resume"]
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
    assert "start_workflow" in text
    assert "nextCall" in text
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
    assert [t.uri_template for t in templates] == [
        "workrail://workflows/{workflowId}",
        "workrail://sessions/{sessionId}",
    ]
    read = await client.read_resource("workrail://workflows/probe-flow")
    (content,) = read.contents
    assert content.mime_type == "application/json"
    definition = json.loads(content.text)  # type: ignore[union-attr]
    assert definition["id"] == "probe-flow"
    assert definition["steps"][0]["id"] == "plan"


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
    assert "Traceback" not in caplog.text
    assert not any(r.exc_info for r in caplog.records)


@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["2026-07-28", "handshake"])
async def test_capabilities_with_content_are_advertised(server: MCPServer, mode: str) -> None:
    async with Client(server, mode=mode) as either:
        caps = either.server_capabilities
    assert caps.tools is not None
    assert caps.prompts is not None
    assert caps.resources is not None
    assert caps.completions is None
    assert caps.logging is None
    # No change is ever published (lists are re-read on every request), so none is
    # promised, in either protocol era.
    assert not caps.tools.list_changed
    assert not caps.prompts.list_changed
    assert not caps.resources.list_changed
    assert not caps.resources.subscribe


async def test_without_workflows_or_sessions_no_prompt_or_resource_capability(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "no-workflows"
    empty.mkdir()
    engine = make_engine(tmp_path / "data", empty)
    async with Client(build_server(engine)) as bare:
        caps = bare.server_capabilities
        assert caps.tools is not None
        assert caps.prompts is None
        assert caps.resources is None


async def test_sessions_alone_are_content_to_resume(tmp_path: Path) -> None:
    """Workflows gone (or never installed here), sessions kept: resume and the sessions."""
    started = make_engine(tmp_path / "data").start_workflow("probe-flow", None, None).unwrap()
    empty = tmp_path / "no-workflows"
    empty.mkdir()
    engine = make_engine(tmp_path / "data", empty)
    async with Client(build_server(engine), raise_exceptions=True) as left:
        caps = left.server_capabilities
        assert caps.prompts is not None
        assert caps.resources is not None
        assert [p.name for p in (await left.list_prompts()).prompts] == ["resume"]
        listed = [str(r.uri) for r in (await left.list_resources()).resources]
        assert listed == [f"workrail://sessions/{started['sessionId']}"]


# --- the resume prompt ----------------------------------------------------------------------


def _text(got: GetPromptResult) -> str:
    (message,) = got.messages
    assert message.role == "user"
    text = message.content.text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


def _call_in(text: str) -> dict[str, Any]:
    """The JSON object the message tells the agent to send to resume_session."""
    start = text.index("resume_session tool with ") + len("resume_session tool with ")
    call, _ = json.JSONDecoder().raw_decode(text[start:])
    assert isinstance(call, dict)
    return call


async def test_resume_is_listed_with_an_optional_query(client: Client) -> None:
    resume = next(p for p in (await client.list_prompts()).prompts if p.name == "resume")
    assert resume.title == "Resume earlier work"
    assert resume.description is not None
    assert "resume_session" in resume.description
    assert [(a.name, a.required) for a in resume.arguments or []] == [("query", False)]


async def test_resume_finds_the_work_and_its_next_call_continues_it(client: Client) -> None:
    wanted = await ok(
        client,
        "start_workflow",
        {"workflowId": "probe-flow", "context": {"goal": "Refactor the tokenizer"}},
    )
    await ok(client, "continue_workflow", advance_args(wanted, "planned the tokenizer work"))
    await ok(
        client, "start_workflow", {"workflowId": "probe-flow", "context": {"goal": "Other chore"}}
    )
    text = _text(await client.get_prompt("resume", {"query": "the tokenizer refactor"}))
    assert "“the tokenizer refactor”" in text
    for advice in ("nextCall", "ask_user_which", "workspacePath", "isComplete"):
        assert advice in text
    # What the message says to send finds the run, and its nextCall picks the run up.
    call = _call_in(text)
    assert call == {"query": "the tokenizer refactor"}
    found = await ok(client, "resume_session", call)
    assert found["nextIntent"] == "rehydrate"
    assert found["candidates"][0]["sessionId"] == wanted["sessionId"]
    recovered = await ok(client, found["nextCall"]["tool"], found["nextCall"]["params"])
    assert recovered["sessionId"] == wanted["sessionId"]
    assert recovered["pending"]["stepId"] == "build"


async def test_resume_without_words_asks_for_the_most_recent(client: Client) -> None:
    for arguments in (None, {}, {"query": "   "}):
        assert _call_in(_text(await client.get_prompt("resume", arguments))) == {}


async def test_resume_keeps_what_resume_session_accepts(client: Client) -> None:
    text = _text(await client.get_prompt("resume", {"query": "word\n" * 40 + "x" * 500}))
    call = _call_in(text)
    assert 0 < len(call["query"]) <= QUERY_MAX
    await ok(client, "resume_session", call)  # accepted as is


def test_resume_with_a_query_of_another_type_is_invalid_params() -> None:
    # The SDK's own params check refuses a non-string first (prompt arguments are strings
    # on the wire); the prompt does not rely on it.
    with pytest.raises(MCPError) as raised:
        get_resume_prompt({"query": 12})
    assert raised.value.error.code == -32602
    assert raised.value.error.message == "Prompt argument 'query' must be a string."


async def test_a_workflow_named_resume_leaves_the_name_to_the_prompt(tmp_path: Path) -> None:
    workflows = tmp_path / "workflows"
    workflows.mkdir()
    definition = json.loads((REFERENCE / "workflows" / "probe-flow.json").read_text())
    (workflows / "resume.json").write_text(json.dumps({**definition, "id": "resume"}))
    (workflows / "probe-flow.json").write_text(json.dumps(definition))
    engine = make_engine(tmp_path / "data", workflows)
    async with Client(build_server(engine), raise_exceptions=True) as named:
        assert [p.name for p in (await named.list_prompts()).prompts] == ["probe-flow", "resume"]
        assert "resume_session" in _text(await named.get_prompt("resume"))
        # The workflow itself still runs through the tools.
        started = await ok(named, "start_workflow", {"workflowId": "resume"})
        assert started["pending"]["stepId"] == "plan"
