"""The stdio start-up's loading thread (workrail.mcp.stdio_serve._Loading): a call
answered before the SDK has the interpreter to itself, the SDK's import waiting for it;
the SDK's server is built only once asked for."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest
from returns.result import Success

from tests.engine.conftest import memory_engine
from tests.mcp.servers import INITIALIZE
from workrail.fence import FenceService
from workrail.mcp import early_call, stdio_serve
from workrail.mcp.catalog_cache import Catalogue
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


def test_the_server_is_built_only_once_asked_for() -> None:
    """Everything but the SDK's server loads on its own; `on_ready` says so then, since
    every request can be answered from that moment (the server on the first that needs
    it)."""
    announced = threading.Event()
    loading = _Loading(memory_engine, lambda: None, announced.set)

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


# --- the early answers (_answer_early) --------------------------------------------------


class _Lines:
    """The wire's writer: the lines written, in order; `seen(id)` once one answers it."""

    def __init__(self) -> None:
        self.ids: list[object] = []
        self.lines: list[bytes] = []
        self.answered: dict[object, threading.Event] = {}

    async def line(self, data: bytes) -> None:
        request_id = json.loads(data)["id"]
        self.ids.append(request_id)
        self.lines.append(data)
        self.answered.setdefault(request_id, threading.Event()).set()

    def seen(self, request_id: object) -> threading.Event:
        return self.answered.setdefault(request_id, threading.Event())


class _Frames:
    """A wire that yields `frames`, then the end of stdin."""

    def __init__(self, frames: list[bytes]) -> None:
        self._frames = list(frames)
        self.lead: list[bytes] = []
        self.writer = _Lines()

    def next_frame(self) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._frames:
            frame = self._frames.pop(0)
            self.lead.append(frame)
            future.set_result(frame)
        else:
            future.set_result(EOFError())
        return future


def _wire(frames: list[bytes]) -> _Frames:
    return _Frames([json.dumps(INITIALIZE).encode(), *frames])


def _early(wire: _Frames) -> _Loading:
    """The frames after a plain `initialize`, answered as a lazy server with a catalogue
    answers them (every early call run to its end)."""
    loading = _Loading(memory_engine, lambda: None)

    async def scenario() -> None:
        in_flight: set[asyncio.Task[None]] = set()
        catalogue = Catalogue("key", True, {}, {})
        await stdio_serve._answer_early(wire, loading, catalogue, in_flight)  # type: ignore[arg-type]
        await stdio_serve._answered(in_flight)

    asyncio.run(scenario())
    return loading


def _call(request_id: int) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "list_workflows", "arguments": {"x": 1}},
        }
    ).encode()


def test_an_early_call_runs_beside_the_requests_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ping (or another call) sent while a slow call runs is answered first, as the
    SDK's server would: the early answers are not one at a time for a lazy server's life."""
    wire = _wire([_call(2), b'{"jsonrpc":"2.0","id":3,"method":"ping"}'])

    def slow(request_id: int | str, *_: Any) -> bytes:
        wire.writer.seen(3).wait(10)  # until the ping behind it is answered (bounded)
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {}}).encode()

    monkeypatch.setattr(early_call, "answer_call", slow)
    loading = _early(wire)
    assert wire.writer.ids == [1, 3, 2]
    assert not loading.building


def test_an_early_call_that_cannot_be_answered_gets_an_internal_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A payload that does not serialise: the answer is an INTERNAL_ERROR result (on
    either stdio path: the guard is answer_call's own), not a request left unanswered."""
    unwritable = Success({"value": object()})
    monkeypatch.setattr(early_call, "call_tool", lambda *_: unwritable)
    wire = _wire([_call(2)])
    _early(wire)
    assert wire.writer.ids == [1, 2]
    result = json.loads(wire.writer.lines[-1])
    assert result["id"] == 2
    assert result["result"]["isError"] is True
    assert json.loads(result["result"]["content"][0]["text"])["code"] == "INTERNAL_ERROR"


def test_a_resource_listing_that_fails_is_left_to_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing that raises does not end the server: the SDK's server answers it."""
    from workrail.mcp import resource_listing

    def boom(*_: Any) -> bytes:
        raise RuntimeError("list_workflows failed")

    monkeypatch.setattr(resource_listing, "answer_resource_listing", boom)
    monkeypatch.setattr(_Loading, "content", _offers_content)
    wire = _wire([b'{"jsonrpc":"2.0","id":2,"method":"resources/list"}'])
    loading = _early(wire)
    assert wire.writer.ids == [1]
    assert loading.building
    assert wire.lead[-1].endswith(b'"resources/list"}')


async def _offers_content(self: _Loading) -> bool:
    return True
