"""`workrail serve`: one loopback port for MCP (Streamable HTTP at /mcp) and the fence's
HTTP routes; plus effect_checkpoint through the in-memory client, and a fence backend that
cannot open leaving the workflow tools up."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from starlette.testclient import TestClient

from tests.engine.conftest import make_engine
from tests.fence.conftest import free_port
from tests.fence.helpers import claim, fence_from_env
from tests.mcp.conftest import error_body, ok
from tests.mcp.servers import http_subprocess, server_env
from workrail.config import HttpLimits
from workrail.fence import FenceService
from workrail.fence.describe import describe_result
from workrail.mcp import build_server
from workrail.mcp.transport import build_http_app

pytestmark = pytest.mark.anyio

CHECKPOINT_PATH = "/v1/tools/workflow-checkpoint"


@pytest.fixture
def served(data_dir: Path) -> Iterator[str]:
    """`python -m workrail serve` on a free loopback port; yields its base URL."""
    with http_subprocess(data_dir, "serve") as base:
        yield base


def _http(
    url: str, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={**(headers or {})})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def test_serve_offers_mcp_and_the_fence_routes_on_one_port(served: str) -> None:
    status, described = _http(served + CHECKPOINT_PATH)
    assert status == 200
    assert described["result"]["input_schema"] == describe_result()["input_schema"]
    assert described["result"]["output_schema"] == describe_result()["output_schema"]

    headers = {"Idempotency-Key": "serve-test-claim-1"}
    status, claimed = _http(served + CHECKPOINT_PATH, claim(), headers)
    assert status == 200
    assert claimed["result"]["acquired"] is True

    async with Client(served + "/mcp") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "effect_checkpoint" in names
        assert "start_workflow" in names
        start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
        assert start["pending"]["stepId"] == "plan"
        status_call = await client.call_tool(
            "effect_checkpoint",
            {
                "action": "status",
                "namespace": claim()["namespace"],
                "workflow_key": claim()["workflow_key"],
            },
        )
        assert status_call.is_error is False  # the claim made over plain HTTP is visible


def test_fence_routes_refuse_a_foreign_host_header(data_dir: Path, fence: FenceService) -> None:
    app = build_http_app(make_engine(data_dir), fence, "127.0.0.1", limits=HttpLimits())
    with TestClient(app, base_url="http://127.0.0.1:8000") as http:
        assert http.get(CHECKPOINT_PATH).status_code == 200
        foreign = http.get(CHECKPOINT_PATH, headers={"Host": "attacker.example:8000"})
        assert foreign.status_code == 421
        assert foreign.json()["error"]["code"] == "INVALID_INPUT"


async def test_effect_checkpoint_claim_in_memory(full_client: Client) -> None:
    claimed = await full_client.call_tool("effect_checkpoint", claim())
    assert claimed.is_error is False
    assert claimed.structured_content is not None
    assert claimed.structured_content["acquired"] is True
    again = await full_client.call_tool("effect_checkpoint", claim("h_01J9N7M1ZZZZZZZZZZZZZZZZZZ"))
    assert again.structured_content is not None
    assert again.structured_content["acquired"] is False


def test_a_bad_fence_setting_stops_the_server_with_one_line(data_dir: Path) -> None:
    env = {**server_env(data_dir), "WORKRAIL_FENCE_URL": "ftp://nowhere"}
    done = subprocess.run(
        [sys.executable, "-m", "workrail", "serve", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "WORKRAIL_FENCE_URL" in done.stderr
    assert "Traceback" not in done.stderr


async def test_unreachable_redis_keeps_the_tool_and_answers_dependency_unavailable(
    data_dir: Path,
) -> None:
    fence = fence_from_env(data_dir, {"WORKRAIL_FENCE_URL": f"redis://127.0.0.1:{free_port()}/0"})
    engine = make_engine(data_dir)
    with TestClient(
        build_http_app(engine, fence, limits=HttpLimits()), base_url="http://127.0.0.1:8000"
    ) as http:
        down = http.post(CHECKPOINT_PATH, json=claim(), headers={"Idempotency-Key": "down-0001"})
        assert down.status_code == 503
        assert down.json()["error"]["code"] == "DEPENDENCY_UNAVAILABLE"
        assert down.headers["Retry-After"] == "1"
        assert http.get(CHECKPOINT_PATH).status_code == 200
    async with Client(build_server(engine, fence)) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "effect_checkpoint" in names
        called = await client.call_tool("effect_checkpoint", claim())
        refused = error_body(called)["error"]
        assert refused["code"] == "DEPENDENCY_UNAVAILABLE"
        assert refused["retryable"] is True
    fence.close()


async def test_serve_refuses_cross_site_requests_to_the_fence_routes(served: str) -> None:
    status, refused = _http(
        served + CHECKPOINT_PATH,
        {"action": "status", "namespace": claim()["namespace"], "workflow_key": "w"},
        {"Origin": "https://attacker.example"},
    )
    assert (status, refused["error"]["code"]) == (403, "INVALID_INPUT")
