"""`workrail mcp` and `workrail serve`: the MCP server on stdio or Streamable HTTP, and
the one-port HTTP server with the effect-checkpoint API."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from returns.result import Failure

from workrail.app import open_fence
from workrail.cli.context import Cli

if TYPE_CHECKING:
    from workrail.engine.api import Engine
    from workrail.fence import FenceService

log = logging.getLogger("workrail.cli")


@contextmanager
def _serving(cli: Cli) -> Iterator[tuple[Engine, FenceService | None]]:
    """Logging, the engine and the fence service for a server command. A fence that
    cannot start leaves the workflow tools up, with a warning; the fence is closed when
    the server stops."""
    from workrail.mcp.transport import configure_logging

    configure_logging(cli.config.log)
    engine = cli.engine()
    opened = open_fence(cli.config)
    fence = None
    if isinstance(opened, Failure):
        log.warning("effect_checkpoint is disabled: %s", opened.failure().message)
    else:
        fence = opened.unwrap()
    try:
        yield engine, fence
    finally:
        if fence is not None:
            fence.close()


def run_mcp(cli: Cli) -> int:
    """Serve MCP; stdio unless --http. Nothing but protocol is written to stdout."""
    from workrail.mcp.transport import serve_http, serve_stdio

    args = cli.args
    with _serving(cli) as (engine, fence):
        if args.http:
            return serve_http(engine, args.host, args.port, fence)
        return serve_stdio(engine, fence)


def run_serve(cli: Cli) -> int:
    """MCP at /mcp and the fence's HTTP routes, on one loopback port."""
    from workrail.mcp.transport import serve_http

    args = cli.args
    with _serving(cli) as (engine, fence):
        return serve_http(engine, args.host, args.port, fence, fence_http=True)


def _server_flags(parser: argparse.ArgumentParser) -> None:
    """Bind address, port and logging, shared by mcp and serve."""
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default loopback)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        type=str.upper,
        default=None,
        help="log level (default $WORKRAIL_LOG_LEVEL or WARNING)",
    )
    parser.add_argument("--log-file", metavar="FILE", default=None, help="log here, not stderr")


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    mcp = subparsers.add_parser(
        "mcp",
        parents=[common],
        help="serve the MCP tools (stdio, or Streamable HTTP with --http)",
        description="Serve WorkRail's MCP tools. Logs go to stderr or --log-file, never stdout.",
    )
    mcp.add_argument("--http", action="store_true", help="serve Streamable HTTP at /mcp")
    _server_flags(mcp)
    mcp.set_defaults(handler=run_mcp)

    serve = subparsers.add_parser(
        "serve",
        parents=[common],
        help="serve MCP (Streamable HTTP) and the effect checkpoint HTTP API on one port",
        description="One HTTP server: the MCP endpoint at /mcp and GET/POST "
        "/v1/tools/workflow-checkpoint. Binds to loopback unless --host says otherwise.",
    )
    _server_flags(serve)
    serve.set_defaults(handler=run_serve)
