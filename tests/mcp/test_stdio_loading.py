"""The stdio start-up's loading thread (workrail.mcp.stdio_loading): a call answered
before the SDK has the interpreter to itself, the SDK's import waiting for it; the SDK's
server is built only once asked for."""

from __future__ import annotations

import asyncio
import threading
import time

from tests.engine.conftest import memory_engine
from workrail.fence import FenceService
from workrail.mcp.stdio_loading import Loading


def test_the_sdk_waits_for_an_early_call_in_flight() -> None:
    fence_opened = threading.Event()

    def open_fence() -> FenceService | None:
        fence_opened.set()
        return None

    loading = Loading(memory_engine, open_fence)

    async def scenario() -> bool:
        with loading.early_call():
            loading.start()
            await loading.calls()  # the call could run now
            time.sleep(0.3)  # as a call would, holding its place
            waited = not fence_opened.is_set()
        await loading.server()
        return waited

    assert asyncio.run(scenario()), "the SDK loaded while the early call was in flight"
    assert fence_opened.is_set()


def test_without_an_early_call_the_sdk_loads_at_once() -> None:
    loading = Loading(memory_engine, lambda: None)

    async def scenario() -> None:
        loading.start()
        await asyncio.wait_for(loading.server(), 120)

    asyncio.run(scenario())


def test_the_server_is_built_only_once_asked_for() -> None:
    """Everything but the SDK's server loads on its own; `on_ready` says so then, since
    every request can be answered from that moment (the server on the first that needs
    it)."""
    announced = threading.Event()
    loading = Loading(memory_engine, lambda: None, announced.set)

    async def scenario() -> tuple[bool, bool]:
        loading.start()
        await loading.ready()
        await asyncio.sleep(0.2)  # room for a build that should not happen
        built_unasked = loading.future().done()
        await asyncio.wait_for(loading.server(), 120)
        return built_unasked, announced.is_set()

    built_unasked, was_announced = asyncio.run(scenario())
    assert not built_unasked, "the server was built without being asked for"
    assert was_announced
    assert loading.building
