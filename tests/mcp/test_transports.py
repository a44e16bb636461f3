"""The real `workrail mcp` process: stdio (clean stdout, clean exit on EOF) and Streamable
HTTP on a loopback port, each driven by the SDK's own client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import REFERENCE
from tests.mcp.conftest import advance_args, ok

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def _env(data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        WORKRAIL_DATA_DIR=str(data_dir),
        WORKFLOW_STORAGE_PATH=str(REFERENCE / "workflows"),
        WORKFLOW_INCLUDE_USER="false",
        WORKFLOW_INCLUDE_PROJECT="false",
        WORKRAIL_LOG_LEVEL="INFO",
        WORKRAIL_FENCE_URL="",  # the embedded SQLite fence backend, in the data dir
    )
    return env


async def _drive(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    advanced = await ok(client, "continue_workflow", advance_args(start, "planned"))
    assert advanced["pending"]["stepId"] == "build"
    await ok(client, "checkpoint_workflow", {"checkpointToken": advanced["checkpointToken"]})
    bad = await client.call_tool("continue_workflow", {"intent": "advance", "stateToken": "x"})
    assert bad.is_error and bad.structured_content is not None
    assert bad.structured_content["code"] == "VALIDATION_ERROR"


async def test_stdio_subprocess(data_dir: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "workrail", "mcp"], env=_env(data_dir), cwd=str(ROOT)
    )
    async with Client(params) as client:
        await _drive(client)
    assert (data_dir / "sessions").is_dir()


def test_stdio_exits_cleanly_on_eof_and_keeps_stdout_for_protocol(data_dir: Path) -> None:
    init = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        '"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "workrail", "mcp"],
        input=init,
        capture_output=True,
        text=True,
        env=_env(data_dir),
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith('{"jsonrpc":"2.0","id":1,"result":')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(data_dir: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "workrail", "mcp", "--http", "--port", str(port)],
        env=_env(data_dir),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_until_accepting(proc, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        assert proc.stdout.read() == b"", "HTTP mode must not log to stdout"


def _wait_until_accepting(proc: subprocess.Popen[bytes], port: int) -> None:
    """Poll the socket (bounded attempts, each a short connect timeout)."""
    for _ in range(600):
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read() if proc.stderr else ''!r}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return
        except OSError:
            try:
                proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass
    raise AssertionError("server never accepted connections")


async def test_streamable_http_on_loopback(http_server: str) -> None:
    async with Client(http_server) as client:
        tools = await client.list_tools()
        assert len(tools.tools) == 8 and tools.tools[-1].name == "effect_checkpoint"
        await _drive(client)


def test_demo_runs_end_to_end() -> None:
    """`workrail demo` is the smoke test: it exits 0 only if every expectation held."""
    done = subprocess.run(
        [sys.executable, "-m", "workrail", "demo", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"ok": true' in done.stdout
