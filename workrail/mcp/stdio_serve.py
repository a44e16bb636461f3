"""Serving MCP on stdio, answering the first requests before the SDK has loaded.

An MCP client spawns the server, waits for its answer to `initialize`, then asks for
`tools/list` (and often `prompts/list`); importing the SDK and opening the engine take
most of that wait. So on WorkRail's own transport the start-up goes:

1. a thread opens the engine, decides whether prompts and resources are offered
   (workrail.mcp.content), loads what a first tool call needs, then opens the fence,
   imports the SDK and builds the server — from the start when there is no MCP
   catalogue, else once `initialize` is answered (the two share one interpreter lock);
2. meanwhile the wire is taken over and the first frame read; when it is a plain
   `initialize`, the answer is written from workrail.mcp.handshake (the SDK's bytes,
   tested so) — at once when the MCP catalogue says a workflow can be started, else once
   the engine has said whether there is content;
3. the catalogue's requests that follow (plain `tools/list`, `prompts/list`, a
   `list_workflows` call) are answered from the SDK's own earlier answers
   (workrail.mcp.catalog_cache), and other plain calls of
   the engine's tools by running them (workrail.mcp.early_call, the SDK's bytes too),
   and taken off the wire, until a request is left to the SDK;
4. once the server is built, every other frame read so far is replayed into it, the
   `initialize` included: the SDK's own session state is what it would have been, and its
   duplicate `initialize` answer is dropped. When the catalogue on disk was made under
   another key, it is made again beside serving (workrail.mcp.catalog_gen).

Every other message, and everything whenever the handshake module is not sure of the
first `initialize`, is answered by the SDK's server, the same one `workrail mcp --http`
runs. `workrail mcp --stdio sdk` serves through the SDK's own transport from the start
(the reference, with no early answer).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

import anyio

from workrail.mcp.catalog_cache import Catalogue, load_catalogue, situation_key
from workrail.mcp.handshake import (
    answer_cached_call,
    answer_initialize,
    answer_listing,
    plain_request,
)
from workrail.mcp.wire import StdioWire, open_stdio_wire

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from workrail.config import WorkrailConfig
    from workrail.engine.api import Engine
    from workrail.fence import FenceService
    from workrail.mcp.early_call import Calls

log = logging.getLogger("workrail.mcp")

CATALOGUE_WAIT_S: Final = 10.0
"""At the end of serving, how long a catalogue still being made may take to be written."""
CALL_FIRST_WAIT_S: Final = 10.0
"""How long the loading thread waits, at most, for the early calls in flight before it
goes on to the SDK (both need the one interpreter lock)."""
LOADING_SWITCH_INTERVAL_S: Final = 0.0005
"""The interpreter's thread switch interval while the server loads (the default is 5 ms):
the loading thread and the early answers share one interpreter lock."""


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
    if sdk:
        from workrail.mcp.server import build_server

        def run_sdk() -> None:
            server = build_server(engine, fence)
            if on_ready is not None:
                on_ready()
            server.run()

        return _exit_code(run_sdk)
    return serve_stdio_early(lambda: engine, lambda: fence, on_ready=on_ready)


def serve_stdio_early(
    open_engine: Callable[[], Engine],
    open_fence: Callable[[], FenceService | None],
    config: WorkrailConfig | None = None,
    *,
    on_ready: Callable[[], None] | None = None,
) -> int:
    """WorkRail's transport, with the engine and the fence opened on the loading thread
    beside the SDK's import (the fence once a first tool call can be answered: only the
    SDK's server serves it). With `config`, the requests the MCP catalogue holds are
    answered from it until the server is built (the loading starts once `initialize` is
    answered), and the catalogue is made again after start-up when it was made under
    another key; without `config` the loading starts at once."""

    def serve() -> None:
        # Plain asyncio: anyio's asyncio backend (tens of ms to import) loads on the
        # loading thread with the SDK, which runs on this same loop.
        remaking = asyncio.run(_serve(_Loading(open_engine, open_fence), config, on_ready))
        if remaking is not None:
            # A client that only listed and left still leaves a catalogue behind.
            remaking.join(CATALOGUE_WAIT_S)

    return _exit_code(serve)


def _exit_code(serve: Callable[[], None]) -> int:
    try:
        serve()
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
    loading: _Loading, config: WorkrailConfig | None, on_ready: Callable[[], None] | None
) -> threading.Thread | None:
    """Serve; the thread remaking the catalogue, if one was started."""
    previous_interval = sys.getswitchinterval()
    # While the loading thread imports, hand the interpreter lock over quickly when the
    # client is answered from here: these answers are what the client waits for.
    sys.setswitchinterval(LOADING_SWITCH_INTERVAL_S)
    if config is None:
        loading.start()
    try:
        wire = await open_stdio_wire()
    except BaseException:
        sys.setswitchinterval(previous_interval)
        raise
    key = None
    try:
        catalogue = None
        if config is not None:
            key = situation_key(config)
            catalogue = load_catalogue(config, key)
        if catalogue is None:
            loading.start()  # the SDK answers the catalogue's requests: load it at once
        answered = await _answer_early(wire, loading, catalogue)
        server, engine = await loading.server()
    except BaseException:
        wire.close()
        raise
    finally:
        sys.setswitchinterval(previous_interval)
    if on_ready is not None:
        on_ready()
    remaking = None
    if config is not None and (catalogue is None or situation_key(config) != key):
        remaking = _remake_catalogue(config, engine, server)
    from workrail.mcp.stdio import stdio_streams

    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async does the same
    # Once `initialize` was answered here, plain tool calls stay WorkRail's to answer.
    calls = None if answered is None else await loading.calls()
    async with stdio_streams(wire, answered=answered, calls=calls) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    return remaking


async def _answer_early(
    wire: StdioWire, loading: _Loading, catalogue: Catalogue | None
) -> tuple[int | str, bytes] | None:
    """Answer what can be answered before the server is built: the first frame when it is
    a plain `initialize`, then the catalogue's requests and plain calls of the engine's
    tools (taken off the wire: the SDK never sees them). Returns (id, line) of the
    `initialize` answer, else None. Every other frame read stays the wire's, for the SDK's
    server, in order; once a request is left to it, so is every call after it."""
    built = loading.future()
    answered: tuple[int | str, bytes] | None = None
    results: dict[str, bytes] = {}
    cached_calls: dict[str, bytes] = {}
    held = False
    while True:
        frame = wire.next_frame()
        either: list[asyncio.Future[Any]] = [frame, built]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not frame.done():
            return answered  # the server is up: the frame being read is the SDK's
        got = frame.result()
        if got is None or isinstance(got, EOFError):
            return answered
        if not got.strip():
            continue
        if answered is None:
            runnable = catalogue is not None and catalogue.runnable
            # With a workflow to start prompts are offered whatever the store holds;
            # otherwise whether a session exists decides, once the engine is open.
            offers_content = runnable or await loading.content()
            answered = answer_initialize(got, offers_content=offers_content)
            if answered is None:
                return None  # not a plain initialize: the SDK answers everything
            await wire.writer.line(answered[1])
            # Only now: till `initialize` was answered the interpreter was the answer's.
            loading.start()
            if catalogue is None:
                return answered
            revision = json.loads(answered[1])["result"]["protocolVersion"]
            results = catalogue.results.get(revision, {})
            cached_calls = catalogue.calls.get(revision, {})
            continue
        line = None if held else await _answer_one(got, results, cached_calls, loading)
        if line is None:
            held = held or not _is_notification(got)
            continue
        if wire.lead and wire.lead[-1] is got:
            wire.lead.pop()
        await wire.writer.line(line)


async def _answer_one(
    frame: bytes, results: dict[str, bytes], cached_calls: dict[str, bytes], loading: _Loading
) -> bytes | None:
    """The line answering `frame` from the catalogue or by running the call; None when it
    is the SDK's to answer."""
    cached = answer_listing(frame, results) or answer_cached_call(frame, cached_calls)
    if cached is not None:
        return cached[1]
    if plain_request(frame, "tools/call") is None:
        return None  # decided without waiting for the engine
    with loading.early_call():
        calls = await loading.calls()  # loaded on the loading thread, so is early_call
        from workrail.mcp.early_call import answer_call, tool_call

        call = tool_call(frame, calls)
        if call is None:
            return None
        return await asyncio.to_thread(answer_call, *call)


def _is_notification(frame: bytes) -> bool:
    try:
        message = json.loads(frame)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and "method" in message and "id" not in message


class _Loading:
    """The engine's and the fence's opening, the SDK's import and the server's build, in a
    thread of their own."""

    def __init__(
        self, open_engine: Callable[[], Engine], open_fence: Callable[[], FenceService | None]
    ) -> None:
        self._content: concurrent.futures.Future[bool] = concurrent.futures.Future()
        self._calls: concurrent.futures.Future[Calls] = concurrent.futures.Future()
        self._future: concurrent.futures.Future[tuple[MCPServer, Engine]] = (
            concurrent.futures.Future()
        )
        self._open_engine = open_engine
        self._open_fence = open_fence
        self._thread: threading.Thread | None = None
        self._wrapped: asyncio.Future[tuple[MCPServer, Engine]] | None = None
        self._early = threading.Condition()
        self._early_calls = 0

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="workrail-sdk-load", daemon=True)
            self._thread.start()

    def future(self) -> asyncio.Future[tuple[MCPServer, Engine]]:
        """The server (and its engine), once built: one future on the event loop, so a
        failure is retrieved where it is awaited and nowhere else."""
        if self._wrapped is None:
            self._wrapped = asyncio.wrap_future(self._future)
        return self._wrapped

    async def content(self) -> bool:
        """Whether prompts and resources are offered, once the engine is open."""
        self.start()
        try:
            return await asyncio.wrap_future(self._content)
        except BaseException:
            await self.future()  # the same failure, retrieved here rather than left behind
            raise

    async def calls(self) -> Calls:
        """The engine's tools, by name, once the engine is open and they are loaded."""
        self.start()
        try:
            return await asyncio.wrap_future(self._calls)
        except BaseException:
            await self.future()
            raise

    @contextlib.contextmanager
    def early_call(self) -> Iterator[None]:
        """Around a call answered before the SDK: the loading thread, once the call can
        run, waits for it to be answered before it imports the SDK, so the call the client
        waits for has the interpreter to itself."""
        with self._early:
            self._early_calls += 1
        try:
            yield
        finally:
            with self._early:
                self._early_calls -= 1
                self._early.notify_all()

    def _after_early_calls(self) -> None:
        with self._early:
            self._early.wait_for(lambda: self._early_calls == 0, CALL_FIRST_WAIT_S)

    async def server(self) -> tuple[MCPServer, Engine]:
        self.start()
        return await self.future()

    def _run(self) -> None:
        try:
            engine = self._open_engine()
            from workrail.mcp.content import has_content

            offers_content = has_content(engine)
        except BaseException as exc:
            self._content.set_exception(exc)
            self._calls.set_exception(exc)
            self._future.set_exception(exc)
            return
        self._content.set_result(offers_content)
        try:
            # What a first tools/call needs, before the SDK (workrail.mcp.early_call).
            from workrail.mcp.early_call import answer_call  # noqa: F401 (for the main thread)
            from workrail.mcp.tool_calls import engine_tools

            self._calls.set_result({spec.name: (spec, h) for spec, h in engine_tools(engine)})
        except Exception:
            log.warning("tool calls wait for the SDK's server", exc_info=True)
            self._calls.set_result({})
        self._after_early_calls()
        try:
            fence = self._open_fence()
            from workrail.mcp.stdio_build import build_stdio_server

            server = build_stdio_server(engine, fence, offers_content=offers_content)
            import anyio._backends._asyncio  # noqa: F401 (what serving it runs on)

            self._future.set_result((server, engine))
        except BaseException as exc:
            self._future.set_exception(exc)


def _remake_catalogue(
    config: WorkrailConfig, engine: Engine, server: MCPServer
) -> threading.Thread:
    """Make the catalogue for the next start-up, beside serving (once per changed key)."""

    def remake() -> None:
        from workrail.mcp.catalog_gen import refresh

        try:
            refresh(config, engine, server)
        except Exception:
            log.warning("could not write the MCP catalogue for the next start-up", exc_info=True)

    thread = threading.Thread(target=remake, name="workrail-catalogue", daemon=True)
    thread.start()
    return thread
