"""`workrail console` as a real process: it prints its URL with the secret, serves the
pages there, stops cleanly on SIGTERM/SIGINT with a browser tab's live stream open, and a
port already in use is one line and a non-zero exit."""

from __future__ import annotations

import http.client
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.mcp.servers import ROOT, closed_by_server, reap, server_env
from workrail.config import HEAD_TIMEOUT_ENV

HEAD_TIMEOUT_S = 1.0
"""The request-head deadline of the console started for the silent connections (10 s by
default): its sockets must close after it, well before the default would close them."""


def _spawn(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return _workrail(data_dir, "console", *args, env=env)


def _workrail(
    data_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """`python -m workrail ARGS`, stdout and stderr piped as text; `env` is added to the
    servers' usual environment."""
    return subprocess.Popen(
        [sys.executable, "-m", "workrail", *args],
        env={**server_env(data_dir), **(env or {})},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_console_prints_its_url_serves_and_stops(data_dir: Path) -> None:
    proc = _spawn(data_dir, "--port", "0")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first == f"WorkRail console for {data_dir}\n"
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert "/?secret=" in url
        base = url.split("?", 1)[0]
        assert "secret" in proc.stdout.readline()
        with urllib.request.urlopen(base, timeout=10) as reply:
            assert reply.status == 200
            assert b"Sessions" in reply.read()
        stream = urllib.request.urlopen(base + "live", timeout=10)
        assert stream.readline().startswith(b"retry:")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) in (0, 130)
        stream.close()
    finally:
        _, errors = reap(proc)
    assert "Traceback" not in errors


def _spawn_ready(
    data_dir: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], int]:
    proc = _spawn(data_dir, "--port", "0", env=env)
    assert proc.stdout is not None
    proc.stdout.readline()
    url = proc.stdout.readline().strip()
    proc.stdout.readline()
    found = re.match(r"http://127\.0\.0\.1:(\d+)/", url)
    assert found, url
    return proc, int(found[1])


@pytest.mark.slow
def test_silent_connections_are_closed_like_serves(data_dir: Path) -> None:
    """The same connection guards as `serve` (http_guard): a socket that never sends a
    request head is closed after the head deadline instead of being held forever."""
    proc, port = _spawn_ready(data_dir, {HEAD_TIMEOUT_ENV: str(HEAD_TIMEOUT_S)})
    started = time.monotonic()
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
    try:
        for sock in silent:
            assert closed_by_server(sock, HEAD_TIMEOUT_S + 8)
        assert HEAD_TIMEOUT_S <= time.monotonic() - started < HEAD_TIMEOUT_S + 8
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
            assert reply.status == 200, "and it still serves whoever behaves"
    finally:
        for sock in silent:
            sock.close()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)


def _status(port: int, host: str, path: str = "/") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": host})
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_wildcard_host_prints_a_loopback_url_and_answers_ip_addresses(data_dir: Path) -> None:
    """`--host 0.0.0.0`: the printed URL works, and so does any IP address of the machine
    (an IP literal cannot come from DNS rebinding); a name needs --allow-host."""
    proc = _spawn(data_dir, "--host", "0.0.0.0", "--port", "0", "--allow-host", "Box.lan")
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        url = proc.stdout.readline().strip()
        proc.stdout.readline()
        warning = proc.stdout.readline()
        found = re.match(r"http://127\.0\.0\.1:(\d+)/\?secret=[\w-]+$", url)
        assert found, url
        port = int(found[1])
        assert "every address" in warning
        assert "--allow-host" in warning
        assert _status(port, f"127.0.0.1:{port}", url.split(str(port), 1)[1]) == 303
        for allowed in ("10.1.2.3", "192.168.0.7", "[fe80::1]", "box.lan", "localhost"):
            assert _status(port, f"{allowed}:{port}") == 200, allowed
        for refused in ("evil.example", "10.1.2.3.nip.io", "box.lan.evil.example"):
            assert _status(port, f"{refused}:{port}") == 421, refused
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)


def test_serve_on_a_wildcard_host_names_a_console_url_that_works(data_dir: Path) -> None:
    from tests.mcp.servers import free_port, wait_until_accepting

    port = free_port()
    proc = _workrail(data_dir, "serve", "--host", "0.0.0.0", "--port", str(port))
    try:
        assert proc.stderr is not None
        secret_url = ""
        for _ in range(200):
            found = re.search(
                r"console at (http://\S+/console/\?secret=[\w-]+)", proc.stderr.readline()
            )
            if found:
                secret_url = found[1]
                break
        assert secret_url.startswith(f"http://127.0.0.1:{port}/console/"), secret_url
        wait_until_accepting(proc, port)  # type: ignore[arg-type]
        assert _status(port, f"127.0.0.1:{port}", secret_url.split(str(port), 1)[1]) == 303
        assert _status(port, f"10.1.2.3:{port}", "/console/") == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)


def test_port_in_use_is_one_line_and_a_non_zero_exit(data_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = _spawn(data_dir, "--port", str(port))
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert out == ""
    assert err == (
        f"workrail console: port {port} on 127.0.0.1 is already in use; stop what holds it "
        "or pick another with --port.\n"
    )


def test_serve_mounts_the_console_at_slash_console(data_dir: Path) -> None:
    """`workrail serve` carries the console at /console, secret and guard included."""
    from tests.mcp.servers import free_port, wait_until_accepting

    port = free_port()
    proc = _workrail(data_dir, "serve", "--port", str(port))
    try:
        assert proc.stderr is not None
        secret_url = ""
        for _ in range(200):
            line = proc.stderr.readline()
            found = re.search(r"console at (http://\S+/console/\?secret=[\w-]+)", line)
            if found:
                secret_url = found[1]
                break
        assert secret_url, "the ready line names the console's URL with its secret"
        wait_until_accepting(proc, port)  # type: ignore[arg-type]
        base = f"http://127.0.0.1:{port}/console/"
        with urllib.request.urlopen(base, timeout=10) as reply:
            page = reply.read().decode()
        assert "Sessions" in page
        assert f'href="{base}static/console.css"' in page
        opener = urllib.request.build_opener(_NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as redirect:  # the secret link redirects
            opener.open(secret_url, timeout=10)
        redirect.value.close()  # its response's socket, else a ResourceWarning at GC
        assert redirect.value.code == 303
        cookie = redirect.value.headers["set-cookie"]
        assert "Path=/console" in cookie
        assert "HttpOnly" in cookie
        redirect.value.close()
        refused = urllib.request.Request(base, headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as error:  # a foreign Host is refused
            urllib.request.urlopen(refused, timeout=10)
        error.value.close()
        assert error.value.code == 421
        error.value.close()
        stream = urllib.request.urlopen(base + "live", timeout=10)
        assert stream.readline().startswith(b"retry:")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) in (0, 130), "an open live stream does not hold it"
        stream.close()
    finally:
        _, rest = reap(proc)
    assert "Traceback" not in rest


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None
