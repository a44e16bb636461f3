"""Running `python -m workrail …` servers as real subprocesses on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, AnyStr

from tests.conftest import REFERENCE

ROOT = Path(__file__).resolve().parents[2]


def server_env(data_dir: Path) -> dict[str, str]:
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


INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
"""The first request of every MCP session, as a raw JSON-RPC frame."""


def run_workrail(
    data_dir: Path, *args: str, extra_env: Mapping[str, str] | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    """`python -m workrail ARGS` to its end, output captured (`kwargs` go to subprocess.run)."""
    kwargs.setdefault("timeout", 120)
    return subprocess.run(
        [sys.executable, "-m", "workrail", *args],
        env={**server_env(data_dir), **(extra_env or {})},
        cwd=ROOT,
        capture_output=True,
        check=False,
        **kwargs,
    )


def stdio_server(data_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    """`python -m workrail mcp ARGS` with all three streams piped (bytes)."""
    return subprocess.Popen(
        [sys.executable, "-m", "workrail", "mcp", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(data_dir),
        cwd=ROOT,
    )


def settle(proc: subprocess.Popen[Any]) -> None:
    """Wait up to 30 s for `proc` to end on its own, then kill it."""
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def reap(proc: subprocess.Popen[AnyStr]) -> tuple[AnyStr, AnyStr]:
    """Stop `proc` if it still runs (SIGTERM, then SIGKILL after 30 s), then read and close
    its piped stdout and stderr: what it wrote to each."""
    if proc.poll() is None:
        proc.terminate()
        settle(proc)
    assert proc.stdout is not None
    assert proc.stderr is not None
    written = proc.stdout.read()
    errors = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    return written, errors


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """True when the server closes `sock` within `within` seconds (recv returns EOF)."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_accepting(proc: subprocess.Popen[bytes], port: int) -> None:
    """Poll the socket (bounded attempts, each a short connect timeout)."""
    for _ in range(600):
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read() if proc.stderr else ''!r}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return
        except OSError:
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.1)
    raise AssertionError("server never accepted connections")


@contextmanager
def http_subprocess(data_dir: Path, *args: str) -> Iterator[str]:
    """`python -m workrail ARGS --port N`; yields `http://127.0.0.1:N`. On exit, stops it
    and checks it never wrote to stdout (logs belong on stderr)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "workrail", *args, "--port", str(port)],
        env=server_env(data_dir),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until_accepting(proc, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        written, _ = reap(proc)
        assert written == b"", f"{args[0]} must not write to stdout"
