"""The HTTP server against raw sockets: idle and slow connections are closed, requests in
flight when SIGTERM arrives are still answered, and the server then exits cleanly.

The servers run with a short request-head deadline and a small session cap (their
settings), so the tests wait a second where the defaults would make them wait ten."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.mcp.servers import (
    INITIALIZE,
    ROOT,
    closed_by_server,
    free_port,
    server_env,
    wait_until_accepting,
)
from workrail.config import HEAD_TIMEOUT_ENV, MAX_SESSIONS_ENV, HttpLimits, load_config

BODY = json.dumps(INITIALIZE).encode()
HEAD_TIMEOUT_S = 1.0
"""The request-head deadline of the servers started here (the default is 10 s)."""
LATE_S = 8.0
"""How long after its deadline a connection may still be closed: room for a loaded machine,
yet the sum stays below the default deadline, so a server that ignored its setting fails."""
SESSION_CAP = 8
"""The session cap of the servers started here (the default is 512)."""


def _launch(data_dir: Path, *, quiet: bool = False) -> tuple[subprocess.Popen[bytes], int]:
    """`workrail mcp --http` on a free port, not yet waited for. `quiet`: warnings only,
    for tests that make many requests (nobody reads the pipe until the end, and a full one
    would stall the server)."""
    port = free_port()
    env = server_env(data_dir)
    env[HEAD_TIMEOUT_ENV] = str(HEAD_TIMEOUT_S)
    env[MAX_SESSIONS_ENV] = str(SESSION_CAP)
    if quiet:
        env["WORKRAIL_LOG_LEVEL"] = "WARNING"
    proc = subprocess.Popen(
        [sys.executable, "-m", "workrail", "mcp", "--http", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return proc, port


def _start(data_dir: Path, *, quiet: bool = False) -> tuple[subprocess.Popen[bytes], int]:
    proc, port = _launch(data_dir, quiet=quiet)
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


@pytest.mark.slow
def test_silent_and_trickling_connections_are_closed(data_dir: Path) -> None:
    proc, port = _start(data_dir)
    started = time.monotonic()  # before the server can have armed either deadline
    silent = socket.create_connection(("127.0.0.1", port))
    slow = socket.create_connection(("127.0.0.1", port))
    try:
        head = _head(port)
        sent = 0
        # a byte every half second: uvicorn alone re-arms its 5 s timer on every byte, and
        # the whole head would take over a minute to arrive
        while time.monotonic() - started < HEAD_TIMEOUT_S + LATE_S and sent < len(head):
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
        assert closed_by_server(slow, HEAD_TIMEOUT_S + LATE_S)
        assert HEAD_TIMEOUT_S <= time.monotonic() - started < HEAD_TIMEOUT_S + LATE_S
        assert sent < len(head)
        assert closed_by_server(silent, LATE_S)
        # and the server still serves whoever behaves
        with socket.create_connection(("127.0.0.1", port), timeout=30) as ok:
            ok.sendall(_head(port) + BODY)
            assert ok.recv(4096).startswith(b"HTTP/1.1 200")
    finally:
        silent.close()
        slow.close()
        _stop(proc)


def _read_answer(sock: socket.socket, what: str, *, refuse_server_error: bool = False) -> bytes:
    """The bytes read until the initialize answer is in (the connection must not close
    before it; with `refuse_server_error`, no 5xx may start it either)."""
    answer = b""
    while b"serverInfo" not in answer:
        chunk = sock.recv(65536)
        assert chunk, f"{what}: closed before the answer: {answer!r}"
        answer += chunk
        if refuse_server_error:
            assert not answer.startswith(b"HTTP/1.1 5"), (what, answer[:200])
    return answer


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
            answer = _read_answer(sock, "the request in flight")
            assert answer.startswith(b"HTTP/1.1 200")
        assert proc.wait(timeout=30) == 0
    finally:
        out = _stop(proc)
    assert out == b"", "nothing but logs, and those on stderr"


SIGTERM_RUNS = 5
BODY_HELD_S = 1.5
"""How long the body of the request in flight is held back after SIGTERM: longer than a
graceful shutdown bounded at one second (which cancelled it with a 500)."""


@pytest.mark.slow
def test_sigterm_answers_a_slow_request_in_flight_every_time(data_dir: Path) -> None:
    """The request is held in flight by withholding its body after `Expect: 100-continue`
    (the app is reading it when SIGTERM arrives), then completed: it is answered 200 by
    every one of several servers (run side by side, each on its own data directory), and
    each exits 0."""
    servers = [_launch(data_dir / f"run{run}") for run in range(SIGTERM_RUNS)]
    socks: list[socket.socket] = []
    try:
        for proc, port in servers:
            wait_until_accepting(proc, port)
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=60))
            socks[-1].sendall(_head(port, expect_continue=True))
        for sock in socks:
            assert sock.recv(4096).startswith(b"HTTP/1.1 100")
        for proc, _ in servers:
            os.kill(proc.pid, signal.SIGTERM)
        time.sleep(BODY_HELD_S)  # slow clients: every request stays in flight
        for run, sock in enumerate(socks):
            sock.sendall(BODY)
            answer = _read_answer(sock, f"run {run}", refuse_server_error=True)
            assert answer.startswith(b"HTTP/1.1 200"), (run, answer[:200])
            sock.close()
        for proc, _ in servers:
            assert proc.wait(timeout=60) == 0
    finally:
        for sock in socks:
            sock.close()
        for proc, _ in servers:
            _stop(proc)


def _rpc(
    conn: http.client.HTTPConnection,
    port: int,
    method: str,
    params: Mapping[str, object],
    session: str | None = None,
    rid: int = 1,
) -> tuple[int, str | None, bytes]:
    headers = {
        "Host": f"127.0.0.1:{port}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    if session is not None:
        headers["Mcp-Session-Id"] = session
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.getheader("mcp-session-id"), resp.read()


def _initialize(conn: http.client.HTTPConnection, port: int) -> tuple[int, str | None]:
    params = json.loads(BODY)["params"]
    status, session, _ = _rpc(conn, port, "initialize", params)
    if status == 200:
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        conn.request(
            "POST",
            "/mcp",
            body=json.dumps(initialized),
            headers={
                "Host": f"127.0.0.1:{port}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "Mcp-Session-Id": session or "",
                "MCP-Protocol-Version": "2025-06-18",
            },
        )
        conn.getresponse().read()
    return status, session


@pytest.mark.slow
def test_at_the_session_cap_the_least_recently_used_idle_session_makes_room(
    data_dir: Path,
) -> None:
    """As many idle sessions held as the cap allows (a local process can hold the default
    512): a new client still initializes; the oldest session answers 404 (its client
    starts again) and a token minted through it still works in the new one."""
    proc, port = _start(data_dir, quiet=True)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        status, oldest = _initialize(conn, port)
        assert status == 200
        assert oldest is not None
        call = {"name": "start_workflow", "arguments": {"workflowId": "probe-flow"}}
        started = _rpc(conn, port, "tools/call", call, oldest, 2)
        assert started[0] == 200, started
        held = [oldest]
        for _ in range(SESSION_CAP - 1):
            status, session = _initialize(conn, port)
            assert status == 200, status
            held.append(session or "")
        status, newcomer = _initialize(conn, port)
        assert status == 200, "a new client was locked out at the session cap"
        gone = _rpc(conn, port, "tools/list", {}, oldest, 3)
        assert gone[0] == 404
        assert _rpc(conn, port, "tools/list", {}, held[-1], 4)[0] == 200  # the recent stay
        text = json.loads(started[2])["result"]["content"][0]["text"]
        token = json.loads(text)["stateToken"]
        rehydrate = {
            "name": "continue_workflow",
            "arguments": {"intent": "rehydrate", "stateToken": token},
        }
        again = _rpc(conn, port, "tools/call", rehydrate, newcomer, 5)
        assert again[0] == 200, again
        assert json.loads(again[2])["result"].get("isError") is not True, again
    finally:
        conn.close()
        _stop(proc)


def test_idle_sessions_are_bounded_tightly(engine: object) -> None:
    """The SDK's defaults hold an abandoned session 30 minutes, up to 10,000 of them."""
    from workrail.mcp import build_server
    from workrail.mcp.http_guard import uvicorn_options
    from workrail.mcp.transport import _mcp_app

    defaults = load_config({}).unwrap().http
    assert defaults == HttpLimits()
    server = build_server(engine)  # type: ignore[arg-type]
    _mcp_app(server, "127.0.0.1", defaults)
    manager = server.session_manager
    assert manager.session_idle_timeout == defaults.session_idle_s == 300
    assert manager.max_sessions == defaults.max_sessions == 512
    assert manager.json_response is True
    options = uvicorn_options(defaults)
    assert options["http"].head_timeout_s == defaults.head_timeout_s == 10
    assert options["timeout_keep_alive"] == 5
    assert options["limit_concurrency"] == 256


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
