"""The real `workrail mcp` process: stdio (clean stdout, clean exit on EOF) and Streamable
HTTP on a loopback port, each driven by the SDK's own client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.mcp.conftest import advance_args, error_body, ok
from tests.mcp.servers import ROOT, http_subprocess, run_workrail, server_env

pytestmark = pytest.mark.anyio


async def _drive(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    advanced = await ok(client, "continue_workflow", advance_args(start, "planned"))
    assert advanced["pending"]["stepId"] == "build"
    await ok(client, "checkpoint_workflow", {"checkpointToken": advanced["checkpointToken"]})
    bad = await client.call_tool("continue_workflow", {"intent": "advance", "stateToken": "x"})
    assert error_body(bad)["code"] == "VALIDATION_ERROR"
    # The continueToken protocol, a forgiven near-miss, prompts and resources.
    by_token = await ok(
        client, "continue_workflow", {"token": advanced["continueToken"], "notes": "built"}
    )
    assert by_token["pending"]["stepId"] == "verify"
    assert by_token["nextCall"]["params"] == {"continueToken": by_token["continueToken"]}
    assert {w["field"] for w in by_token["warnings"]} == {"token", "notes"}
    prompt = await client.get_prompt("probe-flow", {"goal": "g"})
    assert "start_workflow" in prompt.messages[0].content.text  # type: ignore[union-attr]
    read = await client.read_resource("workrail://workflows/probe-flow")
    assert '"id": "probe-flow"' in read.contents[0].text  # type: ignore[union-attr]
    with pytest.raises(MCPError) as unknown:
        await client.get_prompt("nope")
    assert unknown.value.error.code == -32602
    # Earlier work: the resume prompt, and the session as a resource whose call continues.
    resume = await client.get_prompt("resume", {"query": "probe"})
    assert "resume_session" in resume.messages[0].content.text  # type: ignore[union-attr]
    found = await ok(client, "resume_session", {"query": "probe"})
    assert found["candidates"][0]["sessionId"] == start["sessionId"]
    uri = f"workrail://sessions/{start['sessionId']}"
    assert uri in [str(r.uri) for r in (await client.list_resources()).resources]
    session = json.loads((await client.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
    assert session["runs"][0]["recap"] == ["planned", "built"]
    recovered = await ok(client, session["nextCall"]["tool"], session["nextCall"]["params"])
    assert recovered["pending"]["stepId"] == "verify"
    with pytest.raises(MCPError) as missing:
        await client.read_resource("workrail://sessions/sess_" + "a" * 26)
    assert missing.value.error.code == -32602
    caps = client.server_capabilities
    assert caps.prompts is not None
    assert not caps.prompts.list_changed
    assert caps.resources is not None
    assert not caps.resources.subscribe


STDIO = ["workrail", "sdk"]  # our transport, and the SDK's own (the reference)


@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["2026-07-28", "handshake"])
@pytest.mark.parametrize("stdio", STDIO)
async def test_stdio_subprocess(data_dir: Path, stdio: str, mode: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "workrail", "mcp", "--stdio", stdio],
        env=server_env(data_dir),
        cwd=str(ROOT),
    )
    async with Client(params, mode=mode) as client:
        assert (client.protocol_version == "2026-07-28") is (mode == "auto")
        await _drive(client)
    assert (data_dir / "sessions").is_dir()


@pytest.mark.parametrize("stdio", STDIO)
def test_stdio_exits_cleanly_on_eof_and_keeps_stdout_for_protocol(
    data_dir: Path, stdio: str
) -> None:
    init = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        '"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    )
    done = run_workrail(data_dir, "mcp", "--stdio", stdio, input=init, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith('{"jsonrpc":"2.0","id":1,"result":')


@pytest.fixture
def http_server(data_dir: Path) -> Iterator[str]:
    with http_subprocess(data_dir, "mcp", "--http") as base:
        yield f"{base}/mcp"


@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["2026-07-28", "handshake"])
async def test_streamable_http_on_loopback(http_server: str, mode: str) -> None:
    async with Client(http_server, mode=mode) as client:
        assert (client.protocol_version == "2026-07-28") is (mode == "auto")
        tools = await client.list_tools()
        assert len(tools.tools) == 9
        assert tools.tools[-1].name == "effect_checkpoint"
        await _drive(client)


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    """`workrail demo` is the smoke test: it exits 0 only if every expectation held."""
    done = subprocess.run(
        [sys.executable, "-m", "workrail", "demo", "--json", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"ok": true' in done.stdout


async def test_http_takes_import_session_requests_up_to_the_documented_4_mib(
    data_dir: Path,
) -> None:
    """docs/mcp.md: over Streamable HTTP a request is at most 4 MiB, bundle included."""
    from mcp.shared.exceptions import MCPError

    with http_subprocess(data_dir, "mcp", "--http") as base:
        async with Client(base + "/mcp") as client:
            under = await client.call_tool("import_session", {"bundle": "x" * 3_900_000})
            assert error_body(under)["code"] == "BUNDLE_INVALID_FORMAT"  # it arrived
            with pytest.raises(MCPError):
                await client.call_tool("import_session", {"bundle": "x" * (4 * 1024 * 1024)})
