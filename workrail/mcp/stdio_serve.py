"""Serving MCP on stdio, answering `initialize` before the SDK has loaded.

An MCP client spawns the server and waits for its answer to `initialize`; importing the
SDK's server takes most of that wait. So on WorkRail's own transport the start-up goes:

1. the engine is open (the caller did that) and decides whether prompts and resources are
   offered (workrail.mcp.content), the one fact of the answer that depends on the data;
2. the wire is taken over and the first frame read; when it is a plain `initialize`, the
   answer is written at once from workrail.mcp.handshake (the SDK's bytes, tested so);
3. meanwhile a thread imports the SDK and builds the server (with the same decision), and
   every frame read so far is replayed into it, the `initialize` included: the SDK's own
   session state is what it would have been, and its duplicate answer is dropped.

Every message after `initialize`, and `initialize` itself whenever the handshake module is
not sure of it, is answered by the SDK's server, the same one `workrail mcp --http` runs.
`workrail mcp --stdio sdk` serves through the SDK's own transport from the start (the
reference, with no early answer).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import anyio

from workrail.engine.api import Engine
from workrail.mcp.content import has_content
from workrail.mcp.handshake import answer_initialize
from workrail.mcp.wire import StdioWire, open_stdio_wire

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from workrail.fence import FenceService

log = logging.getLogger("workrail.mcp")

QUIET_CLIENT_S: Final = 0.05
"""How long the start-up waits for a first frame before loading the SDK beside it (the
load and the answer share one interpreter lock, so the answer goes first when it can)."""


def serve_stdio(
    engine: Engine,
    fence: FenceService | None = None,
    *,
    on_ready: Callable[[], None] | None = None,
    sdk: bool = False,
) -> int:
    """Serve until the client closes stdin (or stops reading stdout); exit code 0 then.
    `on_ready` runs once the server is built.

    Our transport (workrail.mcp.stdio) unless `sdk`, which serves through the SDK's own
    stdio transport and middleware, the reference the fast path is tested against.
    """
    try:
        if sdk:
            from workrail.mcp.server import build_server

            server = build_server(engine, fence)
            if on_ready is not None:
                on_ready()
            server.run()
        else:
            anyio.run(_serve, engine, fence, on_ready)
    except KeyboardInterrupt:
        return 130
    except BaseException as exc:
        if not _is_broken_pipe(exc):
            raise
        log.info("client closed the pipe; exiting")
        # Python flushes stdout at exit; a dead pipe would turn that into a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


def _is_broken_pipe(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_broken_pipe(e) for e in exc.exceptions)
    if isinstance(exc, BrokenPipeError | anyio.BrokenResourceError | anyio.ClosedResourceError):
        return True
    return isinstance(exc, OSError) and exc.errno == errno.EPIPE


async def _serve(
    engine: Engine, fence: FenceService | None, on_ready: Callable[[], None] | None
) -> None:
    offers_content = has_content(engine)
    wire = await open_stdio_wire()
    try:
        loading = _Loading(engine, fence, offers_content)
        answered = await _answer_initialize_early(wire, loading, offers_content)
        server = await loading.server()
    except BaseException:
        wire.close()
        raise
    if on_ready is not None:
        on_ready()
    from workrail.mcp.stdio import stdio_streams

    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async does the same
    async with stdio_streams(wire, answered=answered) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


async def _answer_initialize_early(
    wire: StdioWire, loading: _Loading, offers_content: bool
) -> tuple[int | str, bytes] | None:
    """Answer the first frame when it is a plain `initialize`: (its id, the line written),
    else None. Every frame read stays the wire's, for the SDK's server. A client still
    silent once the server is built is left to that server."""
    frame = wire.next_frame()
    done, _ = await asyncio.wait({frame}, timeout=QUIET_CLIENT_S)
    if not done:
        loading.start()  # a quiet client: load beside the wait
    loaded = loading.future()
    while True:
        either: list[asyncio.Future[Any]] = [frame, loaded]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not frame.done():
            return None
        got = frame.result()
        if got is not None and not isinstance(got, EOFError) and got.strip():
            answer = answer_initialize(got, offers_content=offers_content)
            if answer is not None:
                # Written before the load starts: the load would hold the interpreter lock.
                await wire.writer.line(answer[1])
            loading.start()
            return answer
        loading.start()
        if got is None or isinstance(got, EOFError):
            return None
        frame = wire.next_frame()  # a blank line: the first frame is the next one


class _Loading:
    """The SDK's import and the server's build, in a thread of their own."""

    def __init__(self, engine: Engine, fence: FenceService | None, offers_content: bool) -> None:
        self._future: concurrent.futures.Future[MCPServer] = concurrent.futures.Future()
        self._args = (engine, fence, offers_content)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="workrail-sdk-load", daemon=True)
            self._thread.start()

    def future(self) -> asyncio.Future[MCPServer]:
        """The server, once built (whether or not the build has started)."""
        return asyncio.wrap_future(self._future)

    async def server(self) -> MCPServer:
        self.start()
        return await self.future()

    def _run(self) -> None:
        try:
            self._future.set_result(_build(*self._args))
        except BaseException as exc:
            self._future.set_exception(exc)


def _build(engine: Engine, fence: FenceService | None, offers_content: bool) -> MCPServer:
    from mcp.server._otel import OpenTelemetryMiddleware

    import workrail.mcp.stdio  # noqa: F401 (loaded here too, off the event loop)
    from workrail.mcp.server import build_server

    server = build_server(engine, fence, offers_content=offers_content)
    # No OpenTelemetry span per message on this path: without an exporter it only costs.
    server.middleware[:] = [
        m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)
    ]
    return server
