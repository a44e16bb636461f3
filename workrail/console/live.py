"""Live updates: the backend's watch port as Server-Sent Events streams.

A stream holds no thread. One poller thread per console (running only while a stream is
open) looks at one change feed per thing watched — the session a page shows, or every
session for the list — and hands what changed to each stream's `anyio.Event` on the event
loop; tabs watching the same thing share one feed, so ten list tabs cost one scan, not
ten. Subscribing (which on PostgreSQL may wait for LISTEN, on files stats every session
once) runs in a worker thread of the console's own small limiter, never on the event loop
and never in the shared pool that pages and MCP tool calls use.

A request from another site (its `Origin` or `Sec-Fetch-Site`) is refused with 403 before
it is admitted, so foreign pages cannot hold the slots. At most `MAX_STREAMS` streams are
open at a time; one more is refused with 503, a
`Retry-After` and an SSE `retry:` line (the page then polls, and tries a stream again
later). A quiet second sends a comment line, which keeps proxies from timing out, tells
the page the stream is alive, and notices a closed tab within a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import anyio
from returns.result import Failure, Result, Success
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from workrail.console.security import stream_origin_ok
from workrail.core.ids import is_session_id
from workrail.engine.api import ChangeFeed, SessionWatch

log = logging.getLogger("workrail.console")

WAIT_SECONDS: Final = 1.0
"""How long a stream waits for a change before sending a comment line."""
POLL_SECONDS: Final = 0.2
"""How often the poller looks at its feeds (the files backend's own polling period)."""
RETRY_MS: Final = 2000
MAX_STREAMS: Final = 32
"""Open streams per console; a browser tab holds one while it shows a live page."""
BUSY_RETRY_S: Final = 30
"""What a refused stream is told to wait before trying again (the page polls meanwhile)."""
SUBSCRIBERS: Final = 4
"""Worker threads that may be subscribing at once (each may wait on the store)."""

Key = str | None
"""What a stream watches: one session id, or None for every session."""


@dataclass(eq=False)
class _Listener:
    """One stream's mailbox. Touched only on the event loop it was made on; the poller
    thread reaches it through `loop.call_soon_threadsafe`."""

    key: Key
    loop: asyncio.AbstractEventLoop
    changed: set[str] = field(default_factory=set)
    problem: str | None = None
    event: anyio.Event = field(default_factory=anyio.Event)

    def deliver(self, changed: frozenset[str], problem: str | None) -> None:
        self.changed |= changed
        if problem is not None:
            self.problem = problem
        self.event.set()

    async def next(self, timeout: float) -> tuple[frozenset[str], str | None]:
        """What changed (empty after `timeout` seconds of quiet) and any problem."""
        with anyio.move_on_after(timeout):
            await self.event.wait()
        changed, self.changed = frozenset(self.changed), set()
        self.event = anyio.Event()
        return changed, self.problem


class Streams:
    """The open live streams of one console and the poller that feeds them. `stop()` ends
    them all within a second, so a server shutting down is not held open by browser tabs."""

    def __init__(self, watch: SessionWatch, max_streams: int = MAX_STREAMS) -> None:
        self._watch = watch
        self.max_streams = max_streams
        self._mutex = threading.Lock()
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._listeners: set[_Listener] = set()
        self._feeds: dict[Key, ChangeFeed] = {}
        self._admitted = 0
        self._poller: threading.Thread | None = None
        self.subscribing = anyio.CapacityLimiter(SUBSCRIBERS)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    @property
    def open_count(self) -> int:
        """Streams open now."""
        return self._admitted

    @property
    def feed_count(self) -> int:
        """Change feeds open now: one per thing watched, however many streams watch it."""
        with self._mutex:
            return len(self._feeds)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        with self._mutex:
            listeners = list(self._listeners)
        for listener in listeners:
            _post(listener, frozenset(), None)

    # --- admission (event loop) -----------------------------------------------------------

    def admit(self) -> bool:
        """Count one more stream, unless the cap is reached."""
        with self._mutex:
            if self._admitted >= self.max_streams:
                return False
            self._admitted += 1
            return True

    def release(self) -> None:
        with self._mutex:
            self._admitted -= 1

    # --- subscription (a worker thread of `subscribing`) ----------------------------------

    def join(self, listener: _Listener) -> Result[None, str]:
        """Register `listener`, subscribing a feed for its key first if none is open. From
        the moment this returns, every change to what it watches reaches it."""
        with self._mutex:
            if listener.key in self._feeds:
                self._register(listener)
                return Success(None)
        subscribed = self._watch.subscribe(None if listener.key is None else [listener.key])
        if isinstance(subscribed, Failure):
            return Failure(subscribed.failure().message)
        feed = subscribed.unwrap()
        with self._mutex:
            extra = feed if listener.key in self._feeds else None
            if extra is None:
                self._feeds[listener.key] = feed
            self._register(listener)
        if extra is not None:
            extra.close()  # another stream opened the same feed meanwhile
        return Success(None)

    def leave(self, listener: _Listener) -> None:
        with self._mutex:
            self._listeners.discard(listener)
        self._wake.set()  # the poller closes a feed nobody watches any more

    def _register(self, listener: _Listener) -> None:
        """With the mutex held: add the listener and make sure the poller runs."""
        self._listeners.add(listener)
        if self._poller is None and not self.stopping:
            self._poller = threading.Thread(
                target=self._poll, name="workrail-console-live", daemon=True
            )
            self._poller.start()

    # --- the poller thread ----------------------------------------------------------------

    def _poll(self) -> None:
        while True:
            with self._mutex:
                wanted = {listener.key for listener in self._listeners}
                idle = [k for k in self._feeds if k not in wanted or self.stopping]
                closing = [self._feeds.pop(k) for k in idle]
                if not self._feeds:
                    self._poller = None
                feeds = list(self._feeds.items())
            for feed in closing:
                feed.close()
            if not feeds:
                return
            for key, feed in feeds:
                changed = feed.wait(0)
                if isinstance(changed, Failure):
                    self._fan_out(key, frozenset(), changed.failure().message)
                elif changed.unwrap():
                    self._fan_out(key, changed.unwrap(), None)
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()

    def _fan_out(self, key: Key, changed: frozenset[str], problem: str | None) -> None:
        with self._mutex:
            listeners = [listener for listener in self._listeners if listener.key == key]
        for listener in listeners:
            _post(listener, changed, problem)


def _post(listener: _Listener, changed: frozenset[str], problem: str | None) -> None:
    # RuntimeError: its event loop has closed, and the stream is gone with it
    with contextlib.suppress(RuntimeError):
        listener.loop.call_soon_threadsafe(listener.deliver, changed, problem)


class _EventStream(StreamingResponse):
    """An SSE response that gives its stream's place back however it ends (the client
    went away, the console stopped, or the response was never started)."""

    def __init__(self, content: AsyncIterator[str], on_close: Callable[[], None]) -> None:
        super().__init__(
            content,
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()


def busy_response(max_streams: int) -> Response:
    """The answer beyond the cap: 503 with when to retry, for HTTP and for EventSource."""
    message = json.dumps(
        {"message": f"Too many live streams are open ({max_streams} at most); poll instead."}
    )
    return PlainTextResponse(
        f"retry: {BUSY_RETRY_S * 1000}\nevent: busy\ndata: {message}\n\n",
        status_code=503,
        media_type="text/event-stream",
        headers={"retry-after": str(BUSY_RETRY_S), "cache-control": "no-store"},
    )


def stream_endpoint(streams: Streams) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        session_id = request.query_params.get("session")
        if session_id is not None and not is_session_id(session_id):
            return PlainTextResponse("session must be a session id", status_code=400)
        if not stream_origin_ok(
            request.headers.get("origin"),
            request.headers.get("sec-fetch-site"),
            request.headers.get("host", ""),
        ):
            return PlainTextResponse(
                "Live updates are only for pages of this console; this request came from "
                "another site, so it was refused (open the console's own URL instead).",
                status_code=403,
                headers={"cache-control": "no-store"},
            )
        if streams.stopping:
            return PlainTextResponse("The console is stopping.", status_code=503)
        if not streams.admit():
            return busy_response(streams.max_streams)
        listener = _Listener(session_id, asyncio.get_running_loop())
        try:
            joined = await anyio.to_thread.run_sync(
                streams.join, listener, limiter=streams.subscribing
            )
        except BaseException:
            streams.leave(listener)
            streams.release()
            raise
        if isinstance(joined, Failure):
            streams.release()
            return PlainTextResponse(
                f"Live updates are unavailable: {joined.failure()}", status_code=503
            )

        async def events() -> AsyncIterator[str]:
            yield f"retry: {RETRY_MS}\nevent: ready\ndata: {{}}\n\n"
            while not streams.stopping and not await request.is_disconnected():
                changed, problem = await listener.next(WAIT_SECONDS)
                if problem is not None:
                    yield f"event: problem\ndata: {json.dumps({'message': problem})}\n\n"
                    return
                if changed:
                    yield f"event: change\ndata: {json.dumps(sorted(changed))}\n\n"
                elif not streams.stopping:
                    yield ": quiet\n\n"

        def close() -> None:
            streams.leave(listener)
            streams.release()

        return _EventStream(events(), close)

    return endpoint
