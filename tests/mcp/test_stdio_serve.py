"""The stdio start-up's loading thread (workrail.mcp.stdio_serve._Loading): a call
answered before the SDK has the interpreter to itself, the SDK's import waiting for it."""

from __future__ import annotations

import asyncio
import threading
import time

from tests.engine.conftest import memory_engine
from workrail.fence import FenceService
from workrail.mcp.stdio_serve import _Loading


def test_the_sdk_waits_for_an_early_call_in_flight() -> None:
    fence_opened = threading.Event()

    def open_fence() -> FenceService | None:
        fence_opened.set()
        return None

    loading = _Loading(memory_engine, open_fence)

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
    loading = _Loading(memory_engine, lambda: None)

    async def scenario() -> None:
        loading.start()
        await asyncio.wait_for(loading.server(), 120)

    asyncio.run(scenario())
