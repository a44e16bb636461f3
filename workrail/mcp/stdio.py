"""Newline-delimited JSON-RPC over stdin/stdout for the SDK's server, without thread hops.

The SDK's own stdio transport reads and writes through worker threads (a hop for every
line read, two for every line written) and drops frames its parser rejects without an
answer, so a client waits out its timeout. This transport reads and writes the pipes on
the event loop and answers every frame it cannot parse with a JSON-RPC error:
`-32700 Parse error` (invalid JSON, a lone surrogate, an integer or nesting beyond the
parser's limits) or `-32600 Invalid Request` (JSON that is not a JSON-RPC message), with
the request's id when it can be recovered, else `null`. Everything else is the SDK's:
the same messages reach the same server (`workrail mcp --stdio sdk` selects the SDK's own
transport, the reference).

While serving, fd 0 reads the null device and fd 1 points at stderr, as with the SDK, so
stray reads and prints never touch the wire.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.shared._context_streams import (  # the SDK's stream type, as its own transport uses
    ContextReceiveStream,
    ContextSendStream,
    create_context_streams,
)
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
DRAIN_SECONDS: Final = 60.0
"""At stdin EOF, how long requests already read may take to be answered."""
MAX_FRAME_BYTES: Final = 128 * 2**20
"""A frame longer than this is answered with a parse error and skipped (import_session
bundles are at most 64 MiB of base64)."""

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


class _Wire:
    """The two private descriptors of the protocol and what serving did to fd 0 and 1."""

    def __init__(self) -> None:
        self.read_fd = _dup_above_std(0)
        self.write_fd = _dup_above_std(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)

    def restore(self) -> None:
        with suppress(OSError):
            os.dup2(self.read_fd, 0)
        with suppress(OSError):
            os.dup2(self.write_fd, 1)
        for fd in (self.read_fd, self.write_fd):
            with suppress(OSError):
                os.close(fd)


def _dup_above_std(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


async def _pipe_reader(fd: int) -> asyncio.StreamReader | None:
    """An event-loop reader of `fd`, or None when it is not a pipe, socket or terminal."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_FRAME_BYTES)
    try:
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", closefd=False)
        )
    except (OSError, ValueError):
        return None
    return reader


class _Writer:
    """Lines out on `fd`: through the event loop for a pipe, else plain blocking writes."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._stream: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await loop.connect_write_pipe(
                lambda: asyncio.streams.FlowControlMixin(loop=loop),
                os.fdopen(self._fd, "wb", closefd=False),
            )
        except (OSError, ValueError):
            return
        self._stream = asyncio.StreamWriter(transport, protocol, None, loop)

    async def line(self, data: bytes) -> None:
        if self._stream is None:
            view = memoryview(data + b"\n")
            while view:
                view = view[os.write(self._fd, view) :]
            return
        self._stream.write(data + b"\n")
        await self._stream.drain()

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[
    tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]
]:
    """(read_stream, write_stream) for `Server.run`, over the process's stdin/stdout."""
    wire = _Wire()
    writer = _Writer(wire.write_fd)
    try:
        await writer.open()
        reader = await _pipe_reader(wire.read_fd)
        to_server, read_stream = create_context_streams[SessionMessage | Exception](0)
        write_stream, from_server = create_context_streams[SessionMessage](0)
        out_lock = anyio.Lock()
        # Requests forwarded and not yet answered: at EOF the SDK's loop cancels whatever
        # is in flight, so the read side stays open until these are answered (bounded).
        unanswered: set[types.RequestId] = set()
        answered_all = anyio.Event()
        at_eof = False

        async def send_line(data: bytes) -> None:
            async with out_lock:
                await writer.line(data)

        async def read_frames() -> None:
            async with to_server:
                async for frame in _frames(reader, wire.read_fd):
                    if frame is not None and not frame.strip():
                        continue
                    parsed = _too_long() if frame is None else parse_frame(frame)
                    if isinstance(parsed, dict):
                        await send_line(json.dumps(parsed, separators=(",", ":")).encode())
                        continue
                    if isinstance(parsed, types.JSONRPCRequest):
                        unanswered.add(parsed.id)
                    await to_server.send(SessionMessage(parsed))
                nonlocal at_eof
                at_eof = True
                if not unanswered:
                    answered_all.set()
                with anyio.move_on_after(DRAIN_SECONDS):
                    await answered_all.wait()

        async def write_messages() -> None:
            async with from_server:
                async for session_message in from_server:
                    message = session_message.message
                    payload = message.model_dump_json(by_alias=True, exclude_unset=True)
                    await send_line(payload.encode("utf-8"))
                    if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                        unanswered.discard(message.id)
                        if at_eof and not unanswered:
                            answered_all.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_frames)
            tg.start_soon(write_messages)
            yield read_stream, write_stream
            await write_stream.aclose()  # the server is done: let the writer drain and end
    finally:
        writer.close()
        wire.restore()


async def _frames(reader: asyncio.StreamReader | None, fd: int) -> AsyncIterator[bytes | None]:
    """Lines of stdin without their newline, invalid UTF-8 replaced as the SDK does."""
    while True:
        if reader is None:
            line = await anyio.to_thread.run_sync(_blocking_readline, fd)
        else:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as partial:
                line = partial.partial
            except asyncio.LimitOverrunError:
                await _skip_line(reader)
                yield None  # skipped for its length: answered with a parse error
                continue
        if not line:
            return
        yield line.decode("utf-8", errors="replace").rstrip("\r\n").encode("utf-8")


async def _skip_line(reader: asyncio.StreamReader) -> None:
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as over:
            await reader.readexactly(over.consumed)
        except asyncio.IncompleteReadError:
            return


_stdin_file: Any = None


def _blocking_readline(fd: int) -> bytes:
    global _stdin_file
    if _stdin_file is None:
        _stdin_file = os.fdopen(fd, "rb", closefd=False)
    line: bytes = _stdin_file.readline(MAX_FRAME_BYTES)
    return line
