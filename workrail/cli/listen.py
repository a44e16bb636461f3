"""The listening socket of an HTTP command (`serve`, `mcp --http`, `console`), bound before
anything else starts, so a port already in use is one line naming it, not a server log
line and an odd exit status after the store was opened."""

from __future__ import annotations

import errno
import socket


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port` (0 = any free port), handed to the server."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def bind_problem(command: str, host: str, port: int, exc: OSError) -> str:
    """One line for a person: which port, what holds it, what to do."""
    if exc.errno == errno.EADDRINUSE:
        return (
            f"workrail {command}: port {port} on {host} is already in use; "
            "stop what holds it or pick another with --port."
        )
    return f"workrail {command}: cannot listen on {host}:{port}: {exc.strerror or exc}."
