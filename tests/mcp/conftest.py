"""In-memory MCP fixtures: the real server over an engine, driven through the SDK's
`Client` (no subprocess, no port). The engine is on the in-memory store (the store
contract suites hold every backend to the same behaviour), except for a test that looks
at the data directory: that one gets the files backend in `data_dir`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp.types import CallToolResult

from tests.engine.conftest import engine_for, make_engine
from tests.fence.conftest import (  # noqa: F401 (fixtures of the fence surfaces' tests)
    backend,
    backend_factory,
    clock,
    redis_server,
    service,
)
from tests.fence.helpers import fence_from_env
from workrail.engine.api import Engine
from workrail.fence import FenceService
from workrail.mcp import build_server


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> Engine:
    """On the in-memory store, unless the test looks at the data directory (asks for
    `data_dir`): then on the files backend there, as `workrail mcp` runs."""
    return engine_for(request)


@pytest.fixture
def server(engine: Engine) -> MCPServer:
    return build_server(engine)


@pytest.fixture
async def client(server: MCPServer) -> AsyncIterator[Client]:
    async with Client(server, raise_exceptions=True) as c:
        yield c


@pytest.fixture
def fence(data_dir: Path) -> Iterator[FenceService]:
    """The embedded (SQLite) fence backend, whatever the caller's environment says."""
    embedded = fence_from_env(data_dir, {"WORKRAIL_FENCE_URL": ""})
    yield embedded
    embedded.close()


@pytest.fixture
async def full_client(engine: Engine, fence: FenceService) -> AsyncIterator[Client]:
    """The server as `workrail mcp` builds it: every tool, effect_checkpoint included."""
    async with Client(build_server(engine, fence), raise_exceptions=True) as c:
        yield c


def body(result: CallToolResult) -> dict[str, Any]:
    """The JSON text an agent reads; also asserts it equals the structured copy."""
    parsed = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert result.structured_content == parsed
    assert isinstance(parsed, dict)
    return parsed


async def ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return body(result)


def error_body(result: CallToolResult) -> dict[str, Any]:
    """The error envelope an agent reads: JSON text only, no structured copy (that is the
    outputSchema's, which describes success answers)."""
    assert result.is_error
    assert result.structured_content is None
    parsed = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert isinstance(parsed, dict)
    return parsed


async def fail(client: Client, tool: str, args: dict[str, Any], code: str) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    envelope = error_body(result)
    assert envelope["code"] == code, envelope
    assert set(envelope) <= {"code", "message", "retry", "details"}
    assert envelope["retry"]["kind"] in {
        "not_retryable",
        "retryable_immediate",
        "retryable_after_ms",
    }
    return envelope


def advance_args(response: dict[str, Any], notes: str | None = "done") -> dict[str, Any]:
    args: dict[str, Any] = dict(response["nextCall"]["params"])
    if notes is not None:
        args["output"] = {"notesMarkdown": notes}
    return args


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Engine]:
    """An engine with workflows, and one with neither workflows nor sessions (for the
    tests that compare early answers with the SDK's, with and without content)."""
    root = tmp_path_factory.mktemp("engines")
    (root / "none").mkdir()
    return {True: make_engine(root / "full"), False: make_engine(root / "bare", root / "none")}
