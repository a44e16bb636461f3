"""Running `python -m workrail …` servers as real subprocesses on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

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
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        assert proc.stderr is not None
        written = proc.stdout.read()
        proc.stdout.close()
        proc.stderr.close()
        assert written == b"", f"{args[0]} must not write to stdout"
