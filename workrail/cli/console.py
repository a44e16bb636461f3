"""`workrail console`: the web console on a loopback port, straight over the store (no MCP
server needed). Prints its URL with this start's secret; a port already in use is one
line and a non-zero exit. Served with the connection guards `workrail serve` has."""

from __future__ import annotations

import argparse
import asyncio
import logging
import webbrowser
from collections.abc import Callable
from types import FrameType
from typing import Any

import anyio
import uvicorn
from returns.result import Failure

from workrail import __version__
from workrail.app import build_console
from workrail.cli.context import Cli, add_command, port_number
from workrail.cli.listen import bind_listener, bind_problem
from workrail.config import HttpLimits
from workrail.console.security import (
    LOOPBACK_NAMES,
    SECRET_PARAM,
    WILDCARD_HOSTS,
    Guard,
    browse_host,
)
from workrail.console.web import stop_live_streams
from workrail.core.errors import envelope
from workrail.mcp.http_guard import ExhaustionLogOnce, uvicorn_options

DEFAULT_PORT = 3456


class _ConsoleServer(uvicorn.Server):
    """uvicorn, ending the console's live streams as soon as it is asked to stop."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._on_exit()
        super().handle_exit(sig, frame)


def server_config(app: Any, limits: HttpLimits) -> uvicorn.Config:
    """uvicorn for the console with the connection hygiene `serve` has (http_guard): a
    request head must arrive within `limits.head_timeout_s` of connecting, and connections
    are capped."""
    return uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=2,
        **uvicorn_options(limits),
    )


def console_url(host: str, port: int, secret: str, path: str = "/") -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}?{SECRET_PARAM}={secret}"


def run_console(cli: Cli) -> int:

    args = cli.args
    host: str = args.host
    backend = cli.backend()
    try:
        sock = bind_listener(host, args.port)
    except OSError as exc:
        cli.err.write(bind_problem("console", host, args.port, exc) + "\n")
        return 1
    port = sock.getsockname()[1]
    guard = Guard.for_bind(host, args.allow_host or ())
    built = build_console(cli.config, backend, guard, __version__)
    if isinstance(built, Failure):
        sock.close()
        problem = built.failure()
        return cli.fail(envelope(problem.code, problem.message))
    app = built.unwrap()
    url = console_url(browse_host(host), port, guard.secret)
    out = cli.out
    out.write(f"WorkRail console for {backend.location}\n")
    out.write(f"  {url}\n")
    out.write(
        "Open this URL: it carries this start's secret, which the archive, delete and export "
        "actions need. Ctrl-C stops the console.\n"
    )
    if host in WILDCARD_HOSTS:
        out.write(
            f"Warning: listening on every address of this machine ({host or 'all'}), not only "
            f"on loopback. Other machines reach it at http://ADDRESS:{port}/ with any of its IP "
            "addresses; a host name needs --allow-host NAME.\n"
        )
    elif host not in LOOPBACK_NAMES:
        out.write(f"Warning: listening on {host}, not only on this machine's loopback.\n")
    out.flush()
    if args.open:
        webbrowser.open(url)
    logging.basicConfig(level=logging.WARNING, force=False)
    server = _ConsoleServer(server_config(app, cli.config.http), lambda: stop_live_streams(app))

    async def serve() -> None:
        asyncio.get_running_loop().set_exception_handler(ExhaustionLogOnce())
        await server.serve([sock])

    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        return 130
    finally:
        sock.close()
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    console = add_command(
        subparsers,
        common,
        "console",
        "open the web console: watch, inspect and tidy sessions in a browser",
        "Serve the web console on loopback, reading the store directly. Prints "
        "its URL, which carries this start's secret (needed for write actions).",
    )
    console.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0 = any free)",
    )
    console.add_argument(
        "--host", default="127.0.0.1", help="bind address (default 127.0.0.1, loopback only)"
    )
    console.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="also answer requests for this host name (repeatable; e.g. the machine's name "
        "when --host 0.0.0.0, which answers its IP addresses already)",
    )
    console.add_argument("--open", action="store_true", help="open the URL in a browser")
    console.set_defaults(handler=run_console)
