"""The stdio wire: the protocol's own descriptors, lines in and out on the event loop.

Plain asyncio and the standard library, nothing of the SDK's, so the start-up handshake
(workrail.mcp.stdio_serve) can read the first frame and answer it while the SDK loads;
workrail.mcp.stdio puts the SDK's streams on top of the same descriptors.

While serving, fd 0 reads the null device and fd 1 points at stderr, as with the SDK, so
stray reads and prints never touch the wire.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator
from contextlib import suppress
from typing import Any, Final

import anyio.to_thread

MAX_FRAME_BYTES: Final = 128 * 2**20
"""A frame longer than this is answered with a parse error and skipped (import_session
bundles are at most 64 MiB of base64)."""

Frame = bytes | None
"""A line of stdin without its newline, or None for one skipped for its length."""


class Wire:
    """The two private descriptors of the protocol and what serving did to fd 0 and 1."""

    def __init__(self) -> None:
        self.read_fd = dup_above_std(0)
        self.write_fd = dup_above_std(1)
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


def dup_above_std(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


async def pipe_reader(fd: int) -> asyncio.StreamReader | None:
    """An event-loop reader of `fd`, or None when it is not a pipe, socket or terminal
    (a regular file or the null device: epoll refuses those, after accepting them)."""
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)):
        return None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_FRAME_BYTES)
    try:
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", closefd=False)
        )
    except (OSError, ValueError):
        return None
    return reader


class Writer:
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


async def frames(reader: asyncio.StreamReader | None, fd: int) -> AsyncIterator[Frame]:
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


class StdioWire:
    """The opened wire: lines in (`lead`, the frames already read, then the rest of
    stdin) and lines out (`writer`). `close` gives fd 0 and 1 back."""

    def __init__(self, wire: Wire, writer: Writer, reader: asyncio.StreamReader | None) -> None:
        self._wire = wire
        self.writer = writer
        self._frames: AsyncIterator[Frame] = frames(reader, wire.read_fd)
        self._pending: asyncio.Future[Frame | EOFError] | None = None
        self.lead: list[Frame] = []

    def next_frame(self) -> asyncio.Future[Frame | EOFError]:
        """The next frame of stdin (EOFError at its end), read ahead: it stays in `lead`
        for `remaining` to serve."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._read_ahead())
        return self._pending

    async def _read_ahead(self) -> Frame | EOFError:
        try:
            frame = await anext(self._frames)
        except StopAsyncIteration:
            return EOFError()
        finally:
            self._pending = None
        self.lead.append(frame)
        return frame

    async def remaining(self) -> AsyncIterator[Frame]:
        """Every frame not yet served: those read ahead first, then the rest of stdin."""
        while True:
            while self.lead:
                yield self.lead.pop(0)
            if self._pending is None:
                break
            await self._pending
        async for frame in self._frames:
            yield frame

    def close(self) -> None:
        self.writer.close()
        self._wire.restore()


async def open_stdio_wire() -> StdioWire:
    """Take over fd 0 and 1 for the protocol (see the module's docstring)."""
    wire = Wire()
    try:
        writer = Writer(wire.write_fd)
        await writer.open()
        reader = await pipe_reader(wire.read_fd)
    except BaseException:
        wire.restore()
        raise
    return StdioWire(wire, writer, reader)
