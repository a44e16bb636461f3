"""Live updates: the backend's watch port as a Server-Sent Events stream.

Each stream holds one change feed, waited on in a worker thread one second at a time so
a closed tab is noticed within a second; a quiet second sends a comment line, which keeps
proxies from timing out and tells the page the stream is alive. The page's script
re-fetches what it shows when a `change` event arrives (or, when it cannot keep a stream
open, polls instead).
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

import anyio
from returns.result import Failure
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from workrail.console.deps import ConsoleDeps
from workrail.core.ids import is_session_id

WAIT_SECONDS: Final = 1.0
RETRY_MS: Final = 2000


class Streams:
    """The open live streams of one console; `stop()` ends them all within a second, so a
    server shutting down is not held open by browser tabs."""

    def __init__(self) -> None:
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()


def stream_endpoint(
    deps: ConsoleDeps, streams: Streams
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        session_id = request.query_params.get("session")
        if session_id is not None and not is_session_id(session_id):
            return PlainTextResponse("session must be a session id", status_code=400)
        subscribed = deps.backend.watch.subscribe(None if session_id is None else [session_id])
        if isinstance(subscribed, Failure):
            return PlainTextResponse(
                f"Live updates are unavailable: {subscribed.failure().message}", status_code=503
            )
        feed = subscribed.unwrap()

        async def events() -> AsyncIterator[str]:
            try:
                yield f"retry: {RETRY_MS}\nevent: ready\ndata: {{}}\n\n"
                while not streams.stopping and not await request.is_disconnected():
                    changed = await anyio.to_thread.run_sync(feed.wait, WAIT_SECONDS)
                    if isinstance(changed, Failure):
                        message = json.dumps({"message": changed.failure().message})
                        yield f"event: problem\ndata: {message}\n\n"
                        return
                    ids = changed.unwrap()
                    if ids:
                        yield f"event: change\ndata: {json.dumps(sorted(ids))}\n\n"
                    else:
                        yield ": quiet\n\n"
            finally:
                feed.close()

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    return endpoint
