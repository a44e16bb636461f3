"""The stdio start-up's loading thread: the engine and the fence opened beside the first
answers, then, only once a request needs it, the SDK's import and its server's build
(workrail.mcp.stdio_serve serves the wire meanwhile). The thread and the early answers
share one interpreter lock, so the thread waits for a call answered early before it goes
on to the fence and the SDK: the call the client waits for has the interpreter to
itself."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final, TypeVar

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from workrail.engine.api import Engine
    from workrail.fence import FenceService
    from workrail.mcp.early_call import Calls

log = logging.getLogger("workrail.mcp")
_T = TypeVar("_T")

CALL_FIRST_WAIT_S: Final = 10.0
"""How long the loading thread waits, at most, for the early calls in flight before it
goes on to the fence and the SDK (both need the one interpreter lock)."""


class Loading:
    """The engine's and the fence's opening in a thread of their own, then, once asked
    for (`build`), the SDK's import and the server's build.

    `on_ready` runs on that thread once every request can be answered without waiting for
    the start-up: when the fence is open if the server has not been asked for by then (it
    is built on the first request that needs it), else once the server is built."""

    def __init__(
        self,
        open_engine: Callable[[], Engine],
        open_fence: Callable[[], FenceService | None],
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self._opened: concurrent.futures.Future[tuple[Engine, bool]] = concurrent.futures.Future()
        self._calls: concurrent.futures.Future[Calls] = concurrent.futures.Future()
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._future: concurrent.futures.Future[tuple[MCPServer, Engine]] = (
            concurrent.futures.Future()
        )
        self._open_engine = open_engine
        self._open_fence = open_fence
        self._on_ready = on_ready
        self._thread: threading.Thread | None = None
        self._wrapped: asyncio.Future[tuple[MCPServer, Engine]] | None = None
        self._wanted = threading.Event()
        self._early = threading.Condition()
        self._early_calls = 0

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="workrail-sdk-load", daemon=True)
            self._thread.start()

    def build(self) -> None:
        """Ask for the server: it is built as soon as the fence is open."""
        self._wanted.set()
        self.start()

    @property
    def building(self) -> bool:
        """Whether the server has been asked for."""
        return self._wanted.is_set()

    def future(self) -> asyncio.Future[tuple[MCPServer, Engine]]:
        """The server (and its engine), once built: one future on the event loop, so a
        failure is retrieved where it is awaited and nowhere else."""
        if self._wrapped is None:
            self._wrapped = asyncio.wrap_future(self._future)
        return self._wrapped

    async def content(self) -> bool:
        """Whether prompts and resources are offered, once the engine is open."""
        return (await self._wait(self._opened))[1]

    async def engine(self) -> Engine:
        return (await self._wait(self._opened))[0]

    async def calls(self) -> Calls:
        """The engine's tools, by name, once the engine is open and they are loaded."""
        return await self._wait(self._calls)

    async def ready(self) -> None:
        """Once the fence is open: all but the server is loaded."""
        await self._wait(self._ready)

    async def server(self) -> tuple[MCPServer, Engine]:
        self.build()
        return await self.future()

    async def _wait(self, step: concurrent.futures.Future[_T]) -> _T:
        self.start()
        try:
            return await asyncio.wrap_future(step)
        except BaseException:
            if self._future.done():  # a failed start-up fails every step, this one first
                await self.future()  # the same failure, retrieved here, not left behind
            raise

    @contextlib.contextmanager
    def early_call(self) -> Iterator[None]:
        """Around a call answered before the SDK: the loading thread, once the call can
        run, waits for it to be answered before it opens the fence and imports the SDK, so
        the call the client waits for has the interpreter to itself."""
        self.early_begin()
        try:
            yield
        finally:
            self.early_end()

    def early_begin(self) -> None:
        """`early_call`'s start, for a call whose answer is awaited elsewhere."""
        with self._early:
            self._early_calls += 1

    def early_end(self) -> None:
        with self._early:
            self._early_calls -= 1
            self._early.notify_all()

    def _after_early_calls(self) -> None:
        with self._early:
            self._early.wait_for(lambda: self._early_calls == 0, CALL_FIRST_WAIT_S)

    def _run(self) -> None:
        try:
            engine = self._open_engine()
            from workrail.mcp.content import has_content

            offers_content = has_content(engine)
        except BaseException as exc:
            self._fail(exc)
            return
        self._opened.set_result((engine, offers_content))
        self._calls.set_result(_early_calls(engine))
        self._after_early_calls()
        try:
            fence = self._open_fence()
            announced = not self._wanted.is_set()
            if announced:
                self._announce()
        except BaseException as exc:
            self._fail(exc)
            return
        self._ready.set_result(None)
        self._wanted.wait()
        try:
            server = _build_server(engine, fence, offers_content)
            if not announced:
                self._announce()
            self._future.set_result((server, engine))
        except BaseException as exc:
            self._future.set_exception(exc)

    def _announce(self) -> None:
        if self._on_ready is not None:
            self._on_ready()

    def _fail(self, exc: BaseException) -> None:
        """Every step not yet done fails with `exc`, the server first (see _wait)."""
        for step in (self._future, self._opened, self._calls, self._ready):
            if not step.done():
                step.set_exception(exc)


def _build_server(engine: Engine, fence: FenceService | None, offers_content: bool) -> MCPServer:
    """The SDK's import and the server's build (the loading thread's longest step)."""
    from workrail.mcp.stdio_build import build_stdio_server

    server = build_stdio_server(engine, fence, offers_content=offers_content)
    import anyio._backends._asyncio  # noqa: F401 (what serving it runs on)

    return server


def _early_calls(engine: Engine) -> Calls:
    """The engine's tools by name, with what answering a first request without the SDK
    needs loaded (workrail.mcp.early_call, workrail.mcp.resource_listing); none, with a
    warning, when they cannot load (the SDK's server then answers the calls)."""
    try:
        from workrail.mcp.early_call import answer_call  # noqa: F401 (for the main thread)
        from workrail.mcp.resource_listing import answer_resource_listing  # noqa: F401
        from workrail.mcp.tool_calls import engine_tools

        return {spec.name: (spec, h) for spec, h in engine_tools(engine)}
    except Exception:
        log.warning("tool calls wait for the SDK's server", exc_info=True)
        return {}
