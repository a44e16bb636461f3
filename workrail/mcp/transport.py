"""Serving the MCP server over Streamable HTTP (stdio is workrail.mcp.stdio_serve's).

Over HTTP, `workrail serve` puts the fence's plain HTTP routes on the same Starlette app as
the MCP endpoint, so one loopback port serves both and the SDK's lifespan (which runs the
MCP session manager) stays the app's own.
"""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import TYPE_CHECKING, Final, Protocol

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from workrail.config import HttpLimits
from workrail.core.errors import envelope
from workrail.engine.api import Engine
from workrail.mcp.server import build_server

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from workrail.fence import FenceService

log = logging.getLogger("workrail.mcp")

__all__ = ["build_http_app", "serve_http"]


class _StoppableServer(Protocol):
    """A uvicorn server that remembers the signal that stopped it."""

    stopped_by: int | None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None: ...


LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


def _host_of(header: str) -> str:
    if header.startswith("["):
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _loopback_only(route: Route) -> Route:
    """The SDK guards /mcp against DNS rebinding; the fence routes get the same Host check."""
    endpoint: Callable[[Request], Awaitable[Response]] = route.endpoint

    async def guarded(request: Request) -> Response:
        if _host_of(request.headers.get("host", "")) not in LOOPBACK_HOSTS:
            refused = envelope(
                "INVALID_INPUT",
                "Invalid Host header: this server answers only requests addressed to a "
                "loopback host.",
                "Send the request to 127.0.0.1 (or localhost), or start the server with --host "
                "to listen on another address.",
            )
            return JSONResponse({"ok": False, "error": refused}, status_code=421)
        return await endpoint(request)

    return Route(route.path, guarded, methods=sorted(route.methods or ()), name=route.name)


def build_http_app(
    engine: Engine,
    fence: FenceService | None = None,
    host: str = "127.0.0.1",
    console: ASGIApp | None = None,
    *,
    limits: HttpLimits,
) -> Starlette:
    """The MCP Streamable HTTP app at /mcp, plus the fence HTTP routes when `fence` is given
    and the web console at /console when `console` is (it guards itself)."""
    app = _mcp_app(build_server(engine, fence), host, limits)
    if fence is not None:
        from workrail.mcp.fence_routes import fence_routes

        routes = fence_routes(fence)
        if host in LOOPBACK_HOSTS:
            routes = [_loopback_only(r) for r in routes]
        app.router.routes.extend(routes)
    if console is not None:
        app.router.routes.append(Mount("/console", app=console))
    return app


def serve_http(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = 8000,
    fence: FenceService | None = None,
    *,
    fence_http: bool = False,
    on_ready: Callable[[], None] | None = None,
    console: ASGIApp | None = None,
    on_stop: Callable[[], None] | None = None,
    sock: socket.socket | None = None,
    limits: HttpLimits,
) -> int:
    """Streamable HTTP at http://HOST:PORT/mcp (and the fence routes when `fence_http`).
    Loopback by default; then requests whose Host header is not local are rejected
    (DNS-rebinding protection). `on_ready` runs once the port accepts connections; Ctrl-C
    stops the server within a second even while clients hold streams open. `sock`: a
    socket already listening on HOST:PORT (the CLI binds first to report a busy port).
    `limits`: the configuration's connection and session limits."""
    if fence_http:
        app = build_http_app(engine, fence, host, console, limits=limits)
    else:
        app = _mcp_app(build_server(engine, fence), host, limits)
    server = _uvicorn_server(app, host, port, limits, on_ready=on_ready, on_stop=on_stop)

    async def serve() -> None:
        import asyncio

        from workrail.mcp.http_guard import ExhaustionLogOnce

        asyncio.get_running_loop().set_exception_handler(ExhaustionLogOnce())
        await server.serve(sockets=None if sock is None else [sock])

    # uvicorn drains on SIGTERM, then re-raises the signal to the handler it found: make
    # that one return, so a drained server exits 0 instead of dying of the signal.
    previous = signal.signal(signal.SIGTERM, _drained)
    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    # Whether asyncio's runner turns uvicorn's re-raised SIGINT into KeyboardInterrupt
    # depends on whether the serving task had already finished: decide from the signal.
    return 130 if server.stopped_by == signal.SIGINT else 0


def _uvicorn_server(
    app: Starlette,
    host: str,
    port: int,
    limits: HttpLimits,
    *,
    on_ready: Callable[[], None] | None,
    on_stop: Callable[[], None] | None,
) -> _StoppableServer:
    """The uvicorn server for `app`: `on_ready` once it listens, `on_stop` at a signal."""
    import uvicorn

    from workrail.mcp.http_guard import close_notification_streams, uvicorn_options

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and on_ready is not None:
                on_ready()

        stopped_by: int | None = None

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            self.stopped_by = sig
            if on_stop is not None:
                on_stop()  # e.g. end the console's live streams so shutdown is not held
            sessions = getattr(app.state, "mcp_sessions", None)
            if sessions is not None:
                close_notification_streams(sessions)  # requests in flight are waited for
            super().handle_exit(sig, frame)

    # log_config=None: uvicorn's default config sends access logs to stdout.
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        log_level=logging.getLevelName(logging.getLogger().level).lower(),
        lifespan="on",
        timeout_graceful_shutdown=limits.in_flight_grace_s,
        **uvicorn_options(limits),
    )
    return Server(config)


def _drained(signum: int, frame: object) -> None:
    """SIGTERM once uvicorn has finished its graceful shutdown: nothing left to do."""


def _mcp_app(server: MCPServer, host: str, limits: HttpLimits) -> Starlette:
    """The Streamable HTTP app: idle sessions bounded tightly (see http_guard), and each
    POST answered with plain JSON rather than an event stream. Our tools send nothing
    before their result, and an event stream is cut off the moment the server begins to
    shut down (sse-starlette), where a JSON answer in flight is still delivered."""
    from workrail.mcp.http_guard import evict_idle_at_cap

    app = server.streamable_http_app(
        host=host,
        json_response=True,
        session_idle_timeout=limits.session_idle_s,
        max_sessions=limits.max_sessions,
    )
    evict_idle_at_cap(server.session_manager)
    app.state.mcp_sessions = server.session_manager  # for a graceful shutdown
    return app
