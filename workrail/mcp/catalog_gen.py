"""Making the MCP catalogue (workrail.mcp.catalog_cache) from the SDK's own answers.

A built server is asked, over in-memory streams and for every protocol revision, the
requests the catalogue holds; their answers, serialized as WorkRail's stdio transport
writes them, are the catalogue. `workrail mcp` makes it after start-up whenever the one
on disk was made under another key (a first run, an upgrade, an edited schema or
workflow), so the next start-up answers from it.

`python -m workrail.mcp.catalog_gen` makes it now, for the settings of the environment
(the same as `workrail mcp`'s), e.g. after an install; it prints where it wrote it.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Final

import anyio
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from workrail.mcp.catalog_cache import (
    CATALOG_CALLS,
    CATALOG_METHODS,
    MODERN_CATALOG_METHODS,
    Catalogue,
    catalog_path,
    save_catalogue,
    situation_key,
)
from workrail.mcp.content import runnable_workflows
from workrail.mcp.handshake import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_VERSION_KEY,
)
from workrail.mcp.stdio import parse_frame, wire_bytes

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from workrail.config import WorkrailConfig
    from workrail.engine.api import Engine

_ANSWER_PREFIX: Final = b'{"jsonrpc":"2.0","id":1,"result":'


class CatalogueMismatch(RuntimeError):
    """The SDK answered a catalogue request with something other than a result."""


def sdk_answers(server: MCPServer, revision: str, methods: tuple[str, ...]) -> dict[str, bytes]:
    """The SDK's answer line to each of `methods` (each asked with id 1, no parameters but
    the 2026 era's envelope) after an `initialize` at `revision` (at a 2026-era revision,
    in a session the first of them opens)."""
    frames = [_listing_frame(m, revision) for m in methods]
    return dict(zip(methods, sdk_answer_lines(server, revision, frames), strict=True))


def sdk_answer_lines(server: MCPServer, revision: str, frames: list[bytes]) -> list[bytes]:
    """The SDK's answer line to each request in `frames`, in one session opened by an
    `initialize` at `revision` (and its `notifications/initialized`)."""
    return anyio.run(_sdk_answer_lines, server, revision, frames)


async def _sdk_answer_lines(server: MCPServer, revision: str, frames: list[bytes]) -> list[bytes]:
    """In a session opened by `initialize`, or, at a 2026-era revision, by the first of
    `frames` (each with its own envelope, see _envelope)."""
    lowlevel = server._lowlevel_server
    to_server, read_stream = create_context_streams[SessionMessage | Exception](1)
    write_stream, from_server = create_context_streams[SessionMessage](1)

    async def ask(frame: bytes) -> bytes:
        parsed = parse_frame(frame)
        assert not isinstance(parsed, dict), parsed
        await to_server.send(SessionMessage(parsed))
        with anyio.fail_after(60):
            answered = await from_server.receive()
        return wire_bytes(answered.message)

    initialize = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": "catalogue-initialize",
            "method": "initialize",
            "params": {
                "protocolVersion": revision,
                "capabilities": {},
                "clientInfo": {"name": "workrail-catalogue", "version": "1"},
            },
        }
    )
    answers: list[bytes] = []
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lowlevel.run, read_stream, write_stream, lowlevel.create_initialization_options()
            )
            if revision not in MODERN_PROTOCOL_VERSIONS:
                await ask(initialize.encode())
                initialized = parse_frame(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
                assert isinstance(initialized, types.JSONRPCNotification)
                await to_server.send(SessionMessage(initialized))
            for frame in frames:
                answers.append(await ask(frame))
            tg.cancel_scope.cancel()
    finally:
        for stream in (to_server, read_stream, write_stream, from_server):
            await stream.aclose()
    return answers


def result_of(line: bytes) -> bytes:
    """The `result` member's JSON text of an answer to id 1."""
    if not (line.startswith(_ANSWER_PREFIX) and line.endswith(b"}")):
        raise CatalogueMismatch(f"not a result: {line[:200]!r}")
    return line[len(_ANSWER_PREFIX) : -1]


def make_catalogue(config: WorkrailConfig, engine: Engine, server: MCPServer) -> Catalogue:
    """The catalogue of `server` (built over `engine` with `config`'s settings), under the
    key of the situation now. The key is taken first: a change while the answers are
    being made then makes the next start-up's key differ, never a stale catalogue match."""
    key = situation_key(config)
    runnable = bool(runnable_workflows(engine))
    methods = CATALOG_METHODS if runnable else ("tools/list",)
    results: dict[str, dict[str, bytes]] = {}
    called: dict[str, dict[str, bytes]] = {}
    for revision in (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS):
        asked = (
            (*MODERN_CATALOG_METHODS, *methods) if revision in MODERN_PROTOCOL_VERSIONS else methods
        )
        frames = [_listing_frame(m, revision) for m in asked]
        frames += [_call_frame(name, revision) for name in CATALOG_CALLS]
        lines = sdk_answer_lines(server, revision, frames)
        results[revision] = {m: result_of(line) for m, line in zip(asked, lines, strict=False)}
        answered = zip(CATALOG_CALLS, map(result_of, lines[len(asked) :]), strict=True)
        # An error is never kept: the next start-up asks the engine again.
        called[revision] = {name: r for name, r in answered if b'"isError":true' not in r}
    return Catalogue(key, runnable, results, called)


def _meta(revision: str) -> dict[str, Any]:
    """The `_meta` of a request at `revision`: the 2026 era's envelope, else none."""
    if revision not in MODERN_PROTOCOL_VERSIONS:
        return {}
    envelope = {
        PROTOCOL_VERSION_KEY: revision,
        "io.modelcontextprotocol/clientInfo": {"name": "workrail-catalogue", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"_meta": envelope}


def _listing_frame(method: str, revision: str) -> bytes:
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if meta := _meta(revision):
        request["params"] = meta
    return json.dumps(request).encode()


def _call_frame(name: str, revision: str) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": {}, **_meta(revision)}
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    ).encode()


def refresh(config: WorkrailConfig, engine: Engine, server: MCPServer) -> Catalogue:
    """Make the catalogue and write it where the next start-up reads it."""
    catalogue = make_catalogue(config, engine, server)
    save_catalogue(config, catalogue)
    return catalogue


def main() -> int:
    """Make the catalogue for this environment's settings (those of `workrail mcp`)."""
    from returns.result import Failure

    from workrail.app import build_engine, open_backend, open_fence
    from workrail.config import config_from_process
    from workrail.mcp.stdio_build import build_stdio_server

    loaded = config_from_process()
    if isinstance(loaded, Failure):
        print(f"workrail: {loaded.failure()}", file=sys.stderr)
        return 2
    config = loaded.unwrap()
    backend = open_backend(config)
    if isinstance(backend, Failure):
        print(f"workrail: {backend.failure().message}", file=sys.stderr)
        return 1
    try:
        built = build_engine(config, backend.unwrap())
        if isinstance(built, Failure):
            print(f"workrail: {built.failure().message}", file=sys.stderr)
            return 1
        engine = built.unwrap()
        opened = open_fence(config)
        fence = None if isinstance(opened, Failure) else opened.unwrap()
        try:
            refresh(config, engine, build_stdio_server(engine, fence))
        finally:
            if fence is not None:
                fence.close()
    finally:
        backend.unwrap().close()
    print(f"workrail: the MCP catalogue is in {catalog_path(config)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
