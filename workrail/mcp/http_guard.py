"""Connection hygiene for the HTTP servers (uvicorn, h11).

uvicorn arms its keep-alive timer only after a first chunk of data and re-arms it on
every chunk, so a socket that connects and says nothing, or trickles a request head a
byte at a time, is held forever: ~1,000 idle loopback sockets once exhausted the file
descriptors. Here every connection must deliver a complete request head within
`head_timeout_s` of connecting (and of finishing its previous response); the server takes
at most `max_connections` connections at a time (503 beyond); running out of descriptors
is logged once, not once per failed accept; and on SIGTERM (or Ctrl-C) every request in
flight is still answered before the process exits: uvicorn's graceful shutdown waits up to
`in_flight_grace_s` for them, and the MCP sessions' notification streams (GET, open for as
long as a client likes) are closed at the signal, so they cannot hold the process. The
limits are the configuration's (`workrail.config.HttpLimits`, defaults below).

MCP sessions are capped at `max_sessions`; at the cap a new client's `initialize` does
not get 503 (which let one local process lock every client out for five minutes): the
least recently used idle session is dropped instead. Its client gets 404 on its next
request and initializes again; its tokens carry all workflow state and still work.
The SDK offers no hook for either, so both reach into its session manager's registry
(`_server_instances`, each transport's in-flight count and idle scope); the tests in
tests/mcp/test_http_guard.py fail if an SDK upgrade moves them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar, Final

from uvicorn.protocols.http.h11_impl import H11Protocol

from workrail.config import HttpLimits

DEFAULTS: Final = HttpLimits()
"""Streamable HTTP sessions: an abandoned one is dropped after five idle minutes (the SDK
holds one for 30 minutes, up to 10,000 at ~40 KB each), at most 512 at a time. A client
whose session expired gets 404 and starts a new one; our tokens carry all workflow state,
so nothing is lost. A request head is due within 10 s, and a stopping server waits 30 s
for the requests in flight."""

log = logging.getLogger("workrail.http")


def _sessions(manager: Any) -> dict[str, Any]:
    registry: dict[str, Any] = manager._server_instances
    return registry


def evict_idle_at_cap(manager: Any) -> None:
    """Make `manager` (the SDK's StreamableHTTPSessionManager) drop its least recently
    used idle session when a new one would exceed `max_sessions`, instead of refusing
    the newcomer; only when every session is busy is a new one refused (503)."""
    admit = manager._admit_session

    def admit_evicting(requestor: Any) -> Any:
        sessions = _sessions(manager)
        if manager.max_sessions is not None and len(sessions) >= manager.max_sessions:
            idle = [
                (transport.idle_scope.deadline, session_id)
                for session_id, transport in sessions.items()
                if transport.idle_scope is not None and not transport._requests_in_flight
            ]
            if idle:
                _, oldest = min(idle)
                transport = sessions.pop(oldest)
                manager._session_owners.pop(oldest, None)
                transport.idle_scope.cancel()  # its server task ends and terminates it
                log.info("session cap reached: dropped the least recently used idle session")
        return admit(requestor)

    manager._admit_session = admit_evicting


def close_notification_streams(manager: Any) -> None:
    """At shutdown: end every session's GET notification stream (the client reconnects
    elsewhere), so only real requests are waited for."""
    for transport in list(_sessions(manager).values()):
        transport.close_standalone_sse_stream()


class GuardedH11Protocol(H11Protocol):
    """h11 with a deadline for each request head (see the module docstring)."""

    head_timeout_s: ClassVar[float] = DEFAULTS.head_timeout_s

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm_head_deadline()  # a request is being served: its head arrived

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_deadline()  # the next request's head gets the same deadline

    def _arm_head_deadline(self) -> None:
        self._disarm_head_deadline()
        self._head_deadline = self.loop.call_later(self.head_timeout_s, self._head_too_slow)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # serving a request: never cut it off
        self.transport.close()


class ExhaustionLogOnce:
    """An asyncio exception handler that reports running out of descriptors (or memory)
    once per episode, with what to do, instead of a traceback for every failed accept."""

    def __init__(self) -> None:
        self._reported = False

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _EXHAUSTION:
            if not self._reported:
                self._reported = True
                log.error(
                    "out of system resources accepting connections (%s); new connections "
                    "wait until some close. Raise the open-files limit (ulimit -n) or "
                    "find the client holding idle connections. Not logged again.",
                    exc.strerror,
                )
            return
        loop.default_exception_handler(context)


_EXHAUSTION: Final = frozenset({24, 23, 12, 105})  # EMFILE, ENFILE, ENOMEM, ENOBUFS


def uvicorn_options(limits: HttpLimits) -> dict[str, Any]:
    """The uvicorn.Config keywords that apply `limits` to each connection (uvicorn makes
    its protocol from a class, so the head deadline is a class of its own)."""

    class Guarded(GuardedH11Protocol):
        head_timeout_s = limits.head_timeout_s

    return {
        "http": Guarded,
        "timeout_keep_alive": limits.keep_alive_s,
        "limit_concurrency": limits.max_connections,
    }
