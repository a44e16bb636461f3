"""`workrail mcp` and `workrail serve` as a person starts them in a terminal: one ready line
on stderr (never stdout), and Ctrl-C ends them at once, without a traceback."""

from __future__ import annotations

import os
import pty
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.mcp.servers import ROOT, free_port, server_env

START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0


@dataclass
class Terminal:
    """A pseudo-terminal standing in for the person's: what the server writes to it."""

    master: int
    seen: bytearray = field(default_factory=bytearray)

    def pump(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # the other side closed: the server is gone
                return
            if not chunk:
                return
            self.seen.extend(chunk)

    def wait_for_line(self, proc: subprocess.Popen[bytes]) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while b"\n" not in self.seen:
            assert proc.poll() is None, f"exited early: {self.text()}"
            assert time.monotonic() < deadline, f"no ready line: {self.text()!r}"
            time.sleep(0.02)
        return self.text().splitlines()[0]

    def text(self) -> str:
        return self.seen.decode("utf-8", "replace").replace("\r\n", "\n")


@contextmanager
def on_a_terminal(
    data_dir: Path, *args: str, stdin_tty: bool
) -> Iterator[tuple[subprocess.Popen[bytes], Terminal]]:
    master, slave = pty.openpty()
    env = {**server_env(data_dir), "WORKRAIL_LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "workrail", *args],
        cwd=ROOT,
        env=env,
        stdin=slave if stdin_tty else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    terminal = Terminal(master)
    reader = threading.Thread(target=terminal.pump, daemon=True)
    reader.start()
    try:
        yield proc, terminal
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=STOP_TIMEOUT)
        reader.join(timeout=STOP_TIMEOUT)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        os.close(master)


def _ctrl_c(proc: subprocess.Popen[bytes]) -> float:
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {STOP_TIMEOUT} s after Ctrl-C")
    return time.monotonic() - started


@pytest.mark.parametrize("stdin_tty", [True, False], ids=["stdin-terminal", "stdin-pipe"])
def test_mcp_on_stdio_says_it_is_ready_and_stops_at_ctrl_c(data_dir: Path, stdin_tty: bool) -> None:
    with on_a_terminal(data_dir, "mcp", stdin_tty=stdin_tty) as (proc, terminal):
        ready = terminal.wait_for_line(proc)
        assert ready.startswith("workrail mcp ")
        assert "ready on stdio" in ready
        assert str(data_dir) in ready
        assert "Ctrl-C" in ready
        _ctrl_c(proc)
        assert proc.returncode == 130
        assert proc.stdout is not None
        assert proc.stdout.read() == b""
    assert terminal.text().splitlines() == [ready, "workrail mcp: stopped."]


def test_serve_says_where_it_listens_and_stops_at_ctrl_c_with_a_client_connected(
    data_dir: Path,
) -> None:
    port = free_port()
    with on_a_terminal(data_dir, "serve", "--port", str(port), stdin_tty=True) as (
        proc,
        terminal,
    ):
        ready = terminal.wait_for_line(proc)
        assert f"http://127.0.0.1:{port}/mcp" in ready
        assert f"http://127.0.0.1:{port}/v1/tools/workflow-checkpoint" in ready
        with socket.create_connection(("127.0.0.1", port), timeout=5) as held:
            held.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
            _ctrl_c(proc)
        assert proc.returncode == 130
        assert proc.stdout is not None
        assert proc.stdout.read() == b""
    lines = terminal.text().splitlines()
    assert lines == [ready, "workrail serve: stopped."]


def test_without_a_terminal_the_ready_line_stays_out_of_the_way(data_dir: Path) -> None:
    """A client that spawns the server gets protocol on stdout and nothing on stderr at the
    default log level."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "workrail", "mcp"],
        cwd=ROOT,
        env={**server_env(data_dir), "WORKRAIL_LOG_LEVEL": "WARNING"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = proc.communicate(b"", timeout=START_TIMEOUT)  # EOF at once: a clean end
    assert proc.returncode == 0
    assert out == b""
    assert err == b""


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--http"]])
def test_a_port_in_use_is_one_line_and_exit_1(data_dir: Path, command: list[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "workrail", *command, "--port", str(port)],
            cwd=ROOT,
            env=server_env(data_dir),
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
        )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        f"workrail {command[0]}: port {port} on 127.0.0.1 is already in use; stop what holds "
        "it or pick another with --port.\n"
    )


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--http"]])
@pytest.mark.parametrize("where", ["pipe", "file"])
def test_an_http_server_says_it_is_ready_without_a_terminal_too(
    data_dir: Path, tmp_path: Path, command: list[str], where: str
) -> None:
    """Under nohup, a service manager or `2>log`, stderr is a pipe or a file: the ready
    line (with the console's secret link for serve) still reaches it."""
    port = free_port()
    log = tmp_path / "server.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "workrail", *command, "--port", str(port)],
            cwd=ROOT,
            env={**server_env(data_dir), "WORKRAIL_LOG_LEVEL": "WARNING"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if where == "pipe" else sink,
        )
        try:
            if where == "pipe":
                assert proc.stderr is not None
                line = proc.stderr.readline().decode()
            else:
                deadline = time.monotonic() + START_TIMEOUT
                while b"\n" not in log.read_bytes():
                    assert proc.poll() is None, log.read_text()
                    assert time.monotonic() < deadline, "no ready line"
                    time.sleep(0.05)
                line = log.read_text().splitlines()[0]
        finally:
            proc.terminate()
            proc.wait(timeout=STOP_TIMEOUT)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    assert line.startswith(f"workrail {command[0]} ")
    assert f"http://127.0.0.1:{port}/mcp" in line
    if command == ["serve"]:
        assert f"http://127.0.0.1:{port}/console/?secret=" in line
