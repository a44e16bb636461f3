"""The HTTP server against raw sockets: idle and slow connections are closed, requests in
flight when SIGTERM arrives are still answered, and the server then exits cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mcp.servers import ROOT, free_port, server_env, wait_until_accepting
from workrail.mcp.http_guard import HEAD_TIMEOUT_S

BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
).encode()


def _start(data_dir: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "workrail", "mcp", "--http", "--port", str(port)],
        env=server_env(data_dir),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wait_until_accepting(proc, port)
    return proc, port


def _stop(proc: subprocess.Popen[bytes]) -> bytes:
    """Kill it if it still runs; its stdout (closing both pipes)."""
    if proc.poll() is None:
        proc.kill()
    out, _err = proc.communicate(timeout=30)
    return out


def _head(port: int, *, expect_continue: bool = False) -> bytes:
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"Content-Length: {len(BODY)}",
    ]
    if expect_continue:
        lines.append("Expect: 100-continue")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _closed_by_server(sock: socket.socket, within: float) -> bool:
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


@pytest.mark.slow
def test_silent_and_trickling_connections_are_closed(data_dir: Path) -> None:
    proc, port = _start(data_dir)
    silent = socket.create_connection(("127.0.0.1", port))
    slow = socket.create_connection(("127.0.0.1", port))
    try:
        started = time.monotonic()
        head = _head(port)
        sent = 0
        # a byte every half second: uvicorn alone re-arms its 5 s timer on every byte
        while time.monotonic() - started < HEAD_TIMEOUT_S + 5 and sent < len(head):
            try:
                slow.send(head[sent : sent + 1])
            except OSError:
                break
            sent += 1
            slow.settimeout(0.5)
            try:
                if slow.recv(1) == b"":
                    break
            except TimeoutError:
                continue
        assert _closed_by_server(slow, HEAD_TIMEOUT_S + 5)
        assert time.monotonic() - started < HEAD_TIMEOUT_S + 5
        assert _closed_by_server(silent, 5)
        # and the server still serves whoever behaves
        with socket.create_connection(("127.0.0.1", port), timeout=30) as ok:
            ok.sendall(_head(port) + BODY)
            assert ok.recv(4096).startswith(b"HTTP/1.1 200")
    finally:
        silent.close()
        slow.close()
        _stop(proc)


def test_sigterm_answers_the_request_in_flight_then_exits(data_dir: Path) -> None:
    proc, port = _start(data_dir)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(_head(port, expect_continue=True))
            # "100 Continue" is sent when the app starts reading the body: the request is
            # being served when SIGTERM arrives.
            assert sock.recv(4096).startswith(b"HTTP/1.1 100")
            os.kill(proc.pid, signal.SIGTERM)
            sock.sendall(BODY)
            answer = b""
            while b"serverInfo" not in answer:
                chunk = sock.recv(65536)
                assert chunk, f"connection closed before the answer: {answer!r}"
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200")
        assert proc.wait(timeout=30) == 0
    finally:
        out = _stop(proc)
    assert out == b"", "nothing but logs, and those on stderr"


def test_idle_sessions_are_bounded_tightly(engine: object) -> None:
    """The SDK's defaults hold an abandoned session 30 minutes, up to 10,000 of them."""
    from workrail.mcp import build_server
    from workrail.mcp.http_guard import MAX_SESSIONS, SESSION_IDLE_S
    from workrail.mcp.transport import _mcp_app

    server = build_server(engine)  # type: ignore[arg-type]
    _mcp_app(server, "127.0.0.1")
    manager = server.session_manager
    assert manager.session_idle_timeout == SESSION_IDLE_S <= 300
    assert manager.max_sessions == MAX_SESSIONS <= 1000
    assert manager.json_response is True


def test_running_out_of_descriptors_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    import asyncio
    import errno

    from workrail.mcp.http_guard import ExhaustionLogOnce

    handler = ExhaustionLogOnce()
    loop = asyncio.new_event_loop()
    try:
        for _ in range(1000):
            emfile = OSError(errno.EMFILE, "Too many open files")
            handler(
                loop, {"message": "socket.accept() out of system resource", "exception": emfile}
            )
        records = [r for r in caplog.records if r.name == "workrail.http"]
        assert len(records) == 1
        assert "ulimit -n" in records[0].getMessage()
        assert not any(r.exc_info for r in caplog.records)
    finally:
        loop.close()
