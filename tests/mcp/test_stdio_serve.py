"""The stdio start-up's early answers (workrail.mcp.stdio_serve._answer_early): a slow
call does not hold back the requests after it, an answer that cannot be written is an
error result, and a listing that fails is left to the SDK's server."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from returns.result import Success

from tests.engine.conftest import memory_engine
from tests.mcp.servers import INITIALIZE
from workrail.mcp import early_call, stdio_serve
from workrail.mcp.catalog_cache import Catalogue
from workrail.mcp.stdio_loading import Loading

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


def _early(wire: _Frames) -> Loading:
    """The frames after a plain `initialize`, answered as a lazy server with a catalogue
    answers them (every early call run to its end)."""
    loading = Loading(memory_engine, lambda: None)

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
    monkeypatch.setattr(Loading, "content", _offers_content)
    wire = _wire([b'{"jsonrpc":"2.0","id":2,"method":"resources/list"}'])
    loading = _early(wire)
    assert wire.writer.ids == [1]
    assert loading.building
    assert wire.lead[-1].endswith(b'"resources/list"}')


async def _offers_content(self: Loading) -> bool:
    return True
