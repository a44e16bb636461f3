"""resources/list and resources/templates/list answered without the SDK
(workrail.mcp.resource_listing) are the SDK's answers, byte for byte: for every protocol
revision, with workflows and sessions (non-ASCII titles included) in the store; only plain
requests are answered so, only when resources are offered, and a store that cannot list
its sessions is left to the SDK (which answers with its error)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import pytest
from mcp.server import MCPServer
from returns.result import Failure, Result

from workrail.engine.api import Engine, EngineError, error
from workrail.mcp import build_server
from workrail.mcp.catalog_gen import sdk_answer_lines
from workrail.mcp.handshake import HANDSHAKE_PROTOCOL_VERSIONS, RESOURCE_LISTINGS, plain_listing
from workrail.mcp.resource_listing import answer_resource_listing
from workrail.mcp.stdio_loading import Loading
from workrail.mcp.stdio_serve import _answer_one, _Era

IDS: list[Any] = [1, 0, -7, 2**53 - 1, "list-1", "a"]


@pytest.fixture(scope="module")
def listed(engines: dict[bool, Engine]) -> Engine:
    """The engine with workflows, and sessions whose titles need escaping or are not ASCII."""
    engine = engines[True]
    for goal in ("ship the “release” — é", 'a "quoted"\ttitle', "plain"):
        engine.start_workflow("branch-flow", {"goal": goal}, None).unwrap()
    return engine


@pytest.fixture(scope="module")
def server(listed: Engine) -> MCPServer:
    return build_server(listed)


def _frame(request_id: Any, method: str, **shape: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, **shape}).encode()


@pytest.mark.parametrize("method", RESOURCE_LISTINGS)
@pytest.mark.parametrize("revision", HANDSHAKE_PROTOCOL_VERSIONS)
def test_each_listing_is_the_sdks_answer_for_every_revision(
    listed: Engine, server: MCPServer, revision: str, method: str
) -> None:
    shapes: list[dict[str, Any]] = [{}, {"params": {}}]
    frames = [_frame(i, method, **shape) for i in IDS for shape in shapes]
    sdk = sdk_answer_lines(server, revision, frames)
    for frame, expected in zip(frames, sdk, strict=True):
        plain = plain_listing(frame, RESOURCE_LISTINGS)
        assert plain is not None, frame
        assert answer_resource_listing(*plain, listed) == expected, frame
    if method == "resources/list":
        assert sdk[0].count(b"workrail://sessions/") == 3


@pytest.mark.parametrize(
    "frame",
    [
        _frame(1, "resources/list", params={"cursor": "x"}),
        _frame(1, "resources/list", params={"_meta": {"progressToken": 1}}),
        _frame(1, "resources/list", params=None),
        _frame(None, "resources/list"),
        _frame(1.5, "resources/templates/list"),
        _frame('a"b', "resources/list"),
        _frame(1, "resources/read", params={}),
        json.dumps({"jsonrpc": "2.0", "method": "resources/list"}).encode(),
        b'{"jsonrpc":"2.0","id":1,"id":2,"method":"resources/list"}',
    ],
)
def test_a_listing_that_is_not_plain_is_left_to_the_sdk(frame: bytes) -> None:
    assert plain_listing(frame, RESOURCE_LISTINGS) is None


class _StoreDown:
    """The engine's workflows, over a store that cannot list sessions."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def list_workflows(self) -> Any:
        return self._engine.list_workflows()

    def recent_sessions(self, limit: int) -> Result[list[Any], EngineError]:
        return Failure(error("INTERNAL_ERROR", "the store is down"))


def test_a_store_that_cannot_list_sessions_is_left_to_the_sdk(listed: Engine) -> None:
    engine = cast(Engine, _StoreDown(listed))
    assert answer_resource_listing(1, "resources/list", engine) is None


def _answered_early(engine: Engine, frame: bytes) -> bytes | None:
    async def answer() -> bytes | None:
        answered = await _answer_one(frame, _Era(), Loading(lambda: engine, lambda: None))
        assert answered is None or isinstance(answered, bytes)  # a listing, not a call
        return answered

    return asyncio.run(answer())


@pytest.mark.parametrize("method", RESOURCE_LISTINGS)
def test_listings_are_answered_early_only_when_resources_are_offered(
    engines: dict[bool, Engine], method: str
) -> None:
    """Without a workflow or a session the SDK's server serves no resources: its own
    answer (method not found) is the one given."""
    frame = _frame(1, method)
    assert _answered_early(engines[True], frame) is not None
    assert _answered_early(engines[False], frame) is None
    bare = sdk_answer_lines(build_server(engines[False]), "2025-06-18", [frame])[0]
    assert json.loads(bare)["error"]["code"] == -32601
