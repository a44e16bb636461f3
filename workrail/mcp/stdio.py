"""Newline-delimited JSON-RPC over stdin/stdout for the SDK's server, without thread hops.

The SDK's own stdio transport reads and writes through worker threads (a hop for every
line read, two for every line written) and drops frames its parser rejects without an
answer, so a client waits out its timeout. This transport reads and writes the pipes on
the event loop and answers every frame it cannot parse with a JSON-RPC error:
`-32700 Parse error` (invalid JSON, a lone surrogate, an integer or nesting beyond the
parser's limits) or `-32600 Invalid Request` (JSON that is not a JSON-RPC message), with
the request's id when it can be recovered, else `null`. A plain call of a workflow tool
is answered here by the engine, as the stdio start-up answers it before the SDK has loaded
(workrail.mcp.early_call writes the SDK's bytes; tests/mcp/test_early_call.py compares
them), without the SDK's request machinery. Everything else is the SDK's: the same
messages reach the same server (`workrail mcp --stdio sdk` selects the SDK's own
transport, the reference).

The descriptors and the line framing are workrail.mcp.wire's; a wire opened before the
SDK loaded (see workrail.mcp.stdio_serve) is served from its first unserved frame on, and
the SDK's answer to an `initialize` already answered at start-up is not sent twice.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final, Literal

import anyio
import mcp_types as types
from mcp.shared._context_streams import (  # the SDK's stream type, as its own transport uses
    ContextReceiveStream,
    ContextSendStream,
    create_context_streams,
)
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from workrail.mcp.early_call import Calls, answer_call, tool_call
from workrail.mcp.handshake import opens_modern_era
from workrail.mcp.wire import MAX_FRAME_BYTES, StdioWire, open_stdio_wire

log = logging.getLogger("workrail.mcp")

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
DRAIN_SECONDS: Final = 60.0
"""At stdin EOF, how long requests already read may take to be answered."""

_ID_RE: Final = re.compile(rb'"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,256}")\s*[,}]')


def parse_frame(frame: bytes) -> types.JSONRPCMessage | dict[str, Any]:
    """The JSON-RPC message in `frame` as the SDK parses it, or the error to answer."""
    if len(frame) > MAX_FRAME_BYTES:
        return _too_long()
    try:
        message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_json(
            frame, by_name=False
        )
        return message
    except ValidationError as exc:
        invalid_json = [e["msg"] for e in exc.errors() if e["type"] == "json_invalid"]
    request_id = _id_of(frame)
    if invalid_json:
        return _error(request_id, PARSE_ERROR, f"Parse error: {invalid_json[0][:200]}")
    return _error(
        request_id,
        INVALID_REQUEST,
        "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
    )


def wire_bytes(message: types.JSONRPCMessage) -> bytes:
    """A message as this transport writes it (without the newline)."""
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")


def _too_long() -> dict[str, Any]:
    return _error(None, PARSE_ERROR, f"Parse error: frame over {MAX_FRAME_BYTES} bytes")


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _id_of(frame: bytes) -> Any:
    """The request id of a refused frame: from the JSON when the standard library reads
    it, else from the start of the text when it says so plainly; None when unknown."""
    try:
        parsed: Any = json.loads(frame)
    except (ValueError, RecursionError):
        match = _ID_RE.search(frame[:4096])
        if match is None:
            return None
        try:
            parsed = {"id": json.loads(match.group(1))}
        except ValueError:
            return None
    if isinstance(parsed, dict):
        value = parsed.get("id")
        if (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str):
            return value
    return None


@asynccontextmanager
async def stdio_streams(
    opened: StdioWire | None = None,
    *,
    answered: tuple[types.RequestId, bytes] | None = None,
    calls: Calls | None = None,
    server_info: dict[str, Any] | None = None,
) -> AsyncIterator[
    tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]
]:
    """(read_stream, write_stream) for `Server.run`, over the process's stdin/stdout, or
    over `opened` (which this then owns). `answered` is (id, line) of an answer already
    written for the first request: the server's answer to that request is dropped.
    A plain call of one of `calls` is answered here, as before the SDK had loaded
    (workrail.mcp.early_call: the SDK's bytes, without its request machinery): after the
    `initialize` answered at start-up (`answered`), or, given `server_info` (the server's
    stamp of its identity), on a connection its first request opened in the 2026 era."""
    wire = opened if opened is not None else await open_stdio_wire()
    try:
        to_server, read_stream = create_context_streams[SessionMessage | Exception](0)
        write_stream, from_server = create_context_streams[SessionMessage](0)
        async with anyio.create_task_group() as tg:
            pump = _Pump(wire, answered, calls, tg, server_info)
            tg.start_soon(pump.read_frames, to_server)
            tg.start_soon(pump.write_messages, from_server)
            yield read_stream, write_stream
            await write_stream.aclose()  # the server is done: let the writer drain and end
    finally:
        wire.close()


class _Pump:
    """Frames from the wire to the server, and the server's messages to the wire."""

    def __init__(
        self,
        wire: StdioWire,
        answered: tuple[types.RequestId, bytes] | None,
        calls: Calls | None,
        tasks: anyio.abc.TaskGroup,
        server_info: dict[str, Any] | None = None,
    ) -> None:
        self._wire = wire
        self._calls = calls
        self._server_info = server_info
        # Which calls are answered here, as the connection's first request decides its era
        # for the SDK (see handshake.opens_modern_era): plain ones after the `initialize`
        # answered at start-up, the 2026 era's after a first request of that era, none
        # otherwise (None: not decided yet).
        self._era: Literal["handshake", "modern", "sdk"] | None = None
        self._answered_early = answered is not None
        self._tasks = tasks
        self._out_lock = anyio.Lock()
        # Requests forwarded and not yet answered: at EOF the SDK's loop cancels whatever
        # is in flight, so the read side stays open until these are answered (bounded).
        self._unanswered: set[types.RequestId] = set()
        self._answered_all = anyio.Event()
        self._at_eof = False
        self._sent_already = answered
        # The id the opening request already answered reaches the SDK under: its answer is
        # then told apart from the answer to a later request that reuses the client's id.
        self._replayed_id = f"workrail-replayed-{secrets.token_hex(8)}"

    async def _send_line(self, data: bytes) -> None:
        async with self._out_lock:
            await self._wire.writer.line(data)

    async def read_frames(self, to_server: ContextSendStream[SessionMessage | Exception]) -> None:
        async with to_server:
            async for frame in self._wire.remaining():
                if frame is not None and not frame.strip():
                    continue
                call = None if frame is None else self._call(frame)
                if call is not None:
                    self._unanswered.add(call[0])
                    self._tasks.start_soon(self._answer_call, call)
                    continue
                parsed = _too_long() if frame is None else parse_frame(frame)
                if isinstance(parsed, dict):
                    await self._send_line(json.dumps(parsed, separators=(",", ":")).encode())
                    continue
                if isinstance(parsed, types.JSONRPCRequest):
                    if self._era is None:
                        self._era = self._opened(parsed)
                        if self._sent_already is not None:  # answered at start-up
                            parsed = parsed.model_copy(update={"id": self._replayed_id})
                    self._unanswered.add(parsed.id)
                await to_server.send(SessionMessage(parsed))
            self._at_eof = True
            if not self._unanswered:
                self._answered_all.set()
            with anyio.move_on_after(DRAIN_SECONDS):
                await self._answered_all.wait()

    def _opened(self, request: types.JSONRPCRequest) -> Literal["handshake", "modern", "sdk"]:
        """The era the connection's first request opens, as far as calls are concerned."""
        if opens_modern_era(request.method, request.params):
            return "modern" if self._server_info is not None else "sdk"
        if request.method == "initialize" and self._answered_early:
            return "handshake"
        return "sdk"

    def _call(self, frame: bytes) -> tuple[int | str, Any, Any, dict[str, Any]] | None:
        """The call `frame` makes when it is one answered here, else None."""
        if not self._calls or self._era not in ("handshake", "modern"):
            return None
        return tool_call(frame, self._calls, modern=self._era == "modern")

    async def _answer_call(self, call: tuple[int | str, Any, Any, dict[str, Any]]) -> None:
        server_info = self._server_info if self._era == "modern" else None
        line = await anyio.to_thread.run_sync(answer_call, *call, server_info)
        await self._send_line(line)
        self._answered(call[0])

    def _answered(self, request_id: types.RequestId | None) -> None:
        self._unanswered.discard(request_id)
        if self._at_eof and not self._unanswered:
            self._answered_all.set()

    async def write_messages(self, from_server: ContextReceiveStream[SessionMessage]) -> None:
        async with from_server:
            async for session_message in from_server:
                message = session_message.message
                data = wire_bytes(message)
                if not self._is_duplicate(message, data):
                    await self._send_line(data)
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                    self._answered(message.id)

    def _is_duplicate(self, message: types.JSONRPCMessage, payload: bytes) -> bool:
        """Whether `message` is the SDK's answer to the replayed opening request (dropped:
        the client has had it). Its bytes, under the client's id, are checked against the
        answer sent at start-up."""
        if self._sent_already is None or not isinstance(
            message, types.JSONRPCResponse | types.JSONRPCError
        ):
            return False
        if message.id != self._replayed_id:
            return False
        request_id, line = self._sent_already
        self._sent_already = None
        if wire_bytes(message.model_copy(update={"id": request_id})) != line:
            log.error(
                "The answer sent at start-up to the first request differs from the SDK's;"
                " the SDK's: %s",
                payload[:2000].decode("utf-8", errors="replace"),
            )
        return True
