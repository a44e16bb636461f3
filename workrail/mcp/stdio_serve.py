"""Serving MCP on stdio, answering the requests a client sends first without the SDK.

An MCP client spawns the server, waits for its answer to `initialize`, then asks for
`tools/list` (and often `prompts/list`, `resources/list`); importing the SDK and opening
the engine take most of that wait, and the SDK's server is most of an idle server's
memory. So on WorkRail's own transport the start-up goes:

1. a thread (workrail.mcp.stdio_loading) opens the engine, decides whether prompts and resources are offered
   (workrail.mcp.content), loads what a first tool call needs, then opens the fence —
   from the start when there is no MCP catalogue, else once `initialize` is answered (the
   two share one interpreter lock); it imports the SDK and builds the server only when
   asked to, which is at once when there is no catalogue;
2. meanwhile the wire is taken over and the first frame read; when it is a plain
   `initialize`, the answer is written from workrail.mcp.handshake (the SDK's bytes,
   tested so) — at once when the MCP catalogue says a workflow can be started, else once
   the engine has said whether there is content; when it is a plain request of the 2026
   era (no `initialize`, an envelope in every request's `_meta`) that the catalogue
   holds, and a workflow can be started, its answer is the catalogue's, and the
   connection is served in that era from then on (_Era);
3. the requests that follow are answered here, each plain one: `tools/list`,
   `prompts/list` and a `list_workflows` call from the SDK's own earlier answers
   (workrail.mcp.catalog_cache), `ping` with its constant, `resources/list` and
   `resources/templates/list` by WorkRail's own listing (workrail.mcp.resource_listing),
   other calls of the engine's tools by running them (workrail.mcp.early_call) — each
   the SDK's bytes, and taken off the wire — until a request is left to the SDK: only
   then is the server built (or once more than HELD_FRAMES_MAX notifications wait for it).
   A client that asks nothing else is served to its end without the SDK;
4. once the server is built, every other frame read so far is replayed into it, the
   first request (`initialize`, or the 2026-era one) and the notifications included: the
   SDK's own session state is what it would have been, and its second answer to that
   first request is dropped (workrail.mcp.stdio). When the catalogue
   on disk was made under another key, it is made again beside serving
   (workrail.mcp.catalog_gen).

Every other message, and everything whenever the handshake module is not sure of the
first `initialize`, is answered by the SDK's server, the same one `workrail mcp --http`
runs. `workrail mcp --stdio sdk` serves through the SDK's own transport from the start
(the reference, with no early answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final

import anyio

from workrail.mcp.catalog_cache import Catalogue, load_catalogue, situation_key
from workrail.mcp.handshake import (
    CONSTANT_RESULTS,
    MODERN_PROTOCOL_VERSIONS,
    RESOURCE_LISTINGS,
    SERVER_INFO_KEY,
    answer_cached_call,
    answer_initialize,
    answer_listing,
    answer_modern_cached_call,
    answer_modern_listing,
    plain_listing,
    plain_request,
)
from workrail.mcp.stdio_loading import Loading
from workrail.mcp.wire import StdioWire, open_stdio_wire

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from workrail.config import WorkrailConfig
    from workrail.engine.api import Engine
    from workrail.fence import FenceService

log = logging.getLogger("workrail.mcp")

CATALOGUE_WAIT_S: Final = 10.0
"""At the end of serving, how long a catalogue still being made may take to be written."""
HELD_FRAMES_MAX: Final = 64
"""Frames held for the SDK's server (notifications, mostly) beyond which it is built, so
that what waits for it stays bounded."""
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
    `on_ready` runs once every request can be answered without waiting for the start-up
    (on WorkRail's transport, see Loading).

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
    (the fence once a first tool call can be answered: only the SDK's server serves it).
    With `config` and a catalogue made under its key, the loading starts once
    `initialize` is answered, and the SDK's server is built only when a request needs it;
    without `config` or such a catalogue the server is built from the start (and the
    catalogue made again after start-up)."""

    def serve() -> None:
        # Plain asyncio: anyio's asyncio backend (tens of ms to import) loads on the
        # loading thread with the SDK, which runs on this same loop.
        loading = Loading(open_engine, open_fence, on_ready)
        remaking = asyncio.run(_serve(loading, config))
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


async def _serve(loading: Loading, config: WorkrailConfig | None) -> threading.Thread | None:
    """Serve; the thread remaking the catalogue, if one was started."""
    previous_interval = sys.getswitchinterval()
    # While the loading thread imports, hand the interpreter lock over quickly when the
    # client is answered from here: these answers are what the client waits for.
    sys.setswitchinterval(LOADING_SWITCH_INTERVAL_S)
    if config is None:
        loading.build()  # no catalogue to answer from: the SDK's server, at once
    try:
        wire = await open_stdio_wire()
    except BaseException:
        sys.setswitchinterval(previous_interval)
        raise
    key = None
    in_flight: set[asyncio.Task[None]] = set()
    try:
        catalogue = None
        if config is not None:
            key = situation_key(config)
            catalogue = load_catalogue(config, key)
        if catalogue is None:
            loading.build()  # the SDK answers the catalogue's requests: load it at once
        else:
            in_flight.add(asyncio.ensure_future(_restore_when_idle(loading, previous_interval)))
        answered = await _answer_early(wire, loading, catalogue, in_flight)
        if not loading.building:
            # Nothing is left for the SDK's server: stdin ended with every request answered
            # here (or the start-up failed, which `ready` raises, ending the server so).
            await _answered(in_flight)
            await loading.ready()
            wire.close()
            return None
        server, engine = await loading.server()
    except BaseException:
        wire.close()
        raise
    finally:
        sys.setswitchinterval(previous_interval)
    remaking = None
    if config is not None and (catalogue is None or situation_key(config) != key):
        remaking = _remake_catalogue(config, engine, server)
    from workrail.mcp.stdio import stdio_streams

    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async does the same
    # Once `initialize` was answered here, plain tool calls stay WorkRail's to answer; on a
    # connection opened in the 2026 era, that era's calls are (stamped as the SDK stamps).
    calls = await loading.calls()
    server_info = lowlevel.server_info_stamp
    async with stdio_streams(wire, answered=answered, calls=calls, server_info=server_info) as (
        read_stream,
        write_stream,
    ):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        await _answered(in_flight)  # early calls still running write on the same wire
    return remaking


async def _restore_when_idle(loading: Loading, interval: float) -> None:
    """The default switch interval again once the loading thread waits with nothing to
    load (a lazy server's SDK not asked for): nothing competes for the interpreter then."""
    with contextlib.suppress(BaseException):
        await loading.ready()
        if not loading.building:
            sys.setswitchinterval(interval)


async def _answered(in_flight: set[asyncio.Task[None]]) -> None:
    """Once every early call still running has written its answer."""
    if in_flight:
        await asyncio.gather(*in_flight, return_exceptions=True)


async def _answer_early(
    wire: StdioWire,
    loading: Loading,
    catalogue: Catalogue | None,
    in_flight: set[asyncio.Task[None]],
) -> tuple[int | str, bytes] | None:
    """Answer what can be answered without the server: the first frame when it is a
    plain `initialize` or a plain 2026-era request the catalogue holds (_answer_opening),
    then the plain requests _answer_one knows in that era (taken off the wire: the SDK
    never sees them). Returns (id, line) of the first frame's answer, else None, at
    stdin's end or once the server is up. Every other frame read stays the wire's, for the
    SDK's server, in order; once a request is left to it, so is every frame after it, and
    the server is asked for (`loading.build`)."""
    built = loading.future()
    answered: tuple[int | str, bytes] | None = None
    era = _Era()
    held = False
    while True:
        frame = wire.next_frame()
        either: list[asyncio.Future[Any]] = [frame, built]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not frame.done():
            return answered  # the server is up: the frame being read is the SDK's
        got = frame.result()
        if isinstance(got, EOFError):
            return answered
        if got is None:
            loading.build()  # a frame too long: the SDK's side answers its parse error
            return answered
        if not got.strip():
            _take(wire, got)  # nothing to answer, nor to hold
            continue
        if answered is None:
            opened = await _answer_opening(wire, loading, catalogue, got)
            if opened is None or catalogue is None:
                return None if opened is None else opened[0]
            answered, era = opened
            continue
        answer = None if held else await _answer_one(got, era, loading)
        if answer is None:
            held = held or not _is_notification(got)
            if held or len(wire.lead) > HELD_FRAMES_MAX:
                loading.build()
            continue
        _take(wire, got)
        if isinstance(answer, bytes):
            await wire.writer.line(answer)
            continue
        # A tool call runs beside the frames that follow, as the SDK's server runs them:
        # a ping or another call is not held behind a slow one.
        task = asyncio.ensure_future(_write_answer(wire, answer))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)


async def _write_answer(wire: StdioWire, answer: Awaitable[bytes]) -> None:
    await wire.writer.line(await answer)


def _take(wire: StdioWire, frame: bytes) -> None:
    """Take the frame just read off the wire: the SDK's server never sees it."""
    if wire.lead and wire.lead[-1] is frame:
        wire.lead.pop()


class _Era:
    """What the start-up answers from, in the era the first request opened: after a plain
    `initialize`, that revision's catalogue and constants; after a plain 2026-era request,
    the catalogue at each request's own revision, every result stamped with the server's
    identity (`server_info`, as the SDK stamps it); nothing before either."""

    def __init__(
        self,
        cached: Callable[[bytes], tuple[int | str, bytes] | None] | None = None,
        server_info: dict[str, Any] | None = None,
    ) -> None:
        self.cached = cached or (lambda frame: None)
        self.server_info = server_info

    @classmethod
    def handshake(cls, revision: str, catalogue: Catalogue) -> _Era:
        results = {**catalogue.results.get(revision, {}), **CONSTANT_RESULTS}
        calls = catalogue.calls.get(revision, {})
        return cls(lambda f: answer_listing(f, results) or answer_cached_call(f, calls))

    @classmethod
    def modern(cls, catalogue: Catalogue) -> _Era:
        """The catalogue's answers at the 2026-era revisions, each request answered at the
        revision its envelope names (a plain envelope names one of ours)."""
        results = {r: catalogue.results.get(r, {}) for r in MODERN_PROTOCOL_VERSIONS}
        calls = {r: catalogue.calls.get(r, {}) for r in MODERN_PROTOCOL_VERSIONS}
        return cls(
            lambda f: answer_modern_listing(f, results) or answer_modern_cached_call(f, calls)
        )


async def _answer_opening(
    wire: StdioWire, loading: Loading, catalogue: Catalogue | None, frame: bytes
) -> tuple[tuple[int | str, bytes], _Era] | None:
    """((id, line), era) of the answer to the first frame, written, when it is a plain
    `initialize`, or a plain 2026-era request the catalogue holds (a listing, or
    `list_workflows`, which has no effect; with a workflow to start, the catalogue's
    capabilities are the server's whatever the store holds); else None, with the server
    asked for: it answers everything. The frame stays the wire's: the SDK's server sees it
    first, so it serves the connection in the same era (its answer then is dropped)."""
    if catalogue is not None and catalogue.runnable:
        modern = _Era.modern(catalogue)
        opening = modern.cached(frame)
        if opening is not None:
            await wire.writer.line(opening[1])
            loading.start()
            # Every result of the era carries the server's identity: the calls' too.
            server_info = json.loads(opening[1])["result"]["_meta"][SERVER_INFO_KEY]
            return opening, _Era(modern.cached, server_info)
    answered = await _answer_initialize(wire, loading, catalogue, frame)
    if answered is None or catalogue is None:
        return None if answered is None else (answered, _Era())
    revision = json.loads(answered[1])["result"]["protocolVersion"]
    return answered, _Era.handshake(revision, catalogue)


async def _answer_initialize(
    wire: StdioWire, loading: Loading, catalogue: Catalogue | None, frame: bytes
) -> tuple[int | str, bytes] | None:
    """(id, line) of the answer to the first frame, written, when it is a plain
    `initialize`; else None, with the server asked for: it answers everything."""
    runnable = catalogue is not None and catalogue.runnable
    # With a workflow to start prompts are offered whatever the store holds; otherwise
    # whether a session exists decides, once the engine is open.
    offers_content = runnable or await loading.content()
    answered = answer_initialize(frame, offers_content=offers_content)
    if answered is None:
        loading.build()
        return None
    await wire.writer.line(answered[1])
    # Only now: till `initialize` was answered the interpreter was the answer's.
    loading.start()
    return answered


async def _answer_one(
    frame: bytes, era: _Era, loading: Loading
) -> bytes | Coroutine[Any, Any, bytes] | None:
    """The line answering `frame` from the catalogue, a constant or the resource listing;
    for a tool call, the coroutine that runs it and gives its line; None when it is the
    SDK's to answer."""
    cached = era.cached(frame)
    if cached is not None:
        return cached[1]
    modern = era.server_info is not None
    listing = None if modern else plain_listing(frame, RESOURCE_LISTINGS)
    if listing is not None:
        return await _answer_resources(*listing, loading)
    if plain_request(frame, "tools/call") is None:
        return None  # decided without waiting for the engine
    loading.early_begin()  # from now: the loading thread waits for it to be answered
    try:
        calls = await loading.calls()  # loaded on the loading thread, so is early_call
    except BaseException:
        loading.early_end()
        raise
    from workrail.mcp.early_call import tool_call

    call = tool_call(frame, calls, modern=modern)
    if call is None:
        loading.early_end()
        return None
    return _run_call(call, loading, era.server_info)


async def _run_call(
    call: tuple[int | str, Any, Any, dict[str, Any]],
    loading: Loading,
    server_info: dict[str, Any] | None = None,
) -> bytes:
    """The call's answer, run on a worker thread (it blocks: it fsyncs)."""
    from workrail.mcp.early_call import answer_call

    try:
        return await asyncio.to_thread(answer_call, *call, server_info)
    finally:
        loading.early_end()


async def _answer_resources(request_id: int | str, method: str, loading: Loading) -> bytes | None:
    """A plain resource listing, answered by the listing the SDK's server runs (in a
    worker thread, like a call: it reads the store); None when the server offers no
    resources (its own answer says so) or the store cannot answer."""
    with loading.early_call():
        await loading.calls()  # loaded on the loading thread, so is resource_listing
        if not await loading.content():
            return None
        engine = await loading.engine()
        from workrail.mcp.resource_listing import answer_resource_listing

        try:
            return await asyncio.to_thread(answer_resource_listing, request_id, method, engine)
        except Exception:
            # The SDK's server answers it (with its error, if it fails there too).
            log.warning("resources listed by the SDK's server instead", exc_info=True)
            return None


def _is_notification(frame: bytes) -> bool:
    try:
        message = json.loads(frame)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and "method" in message and "id" not in message


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
