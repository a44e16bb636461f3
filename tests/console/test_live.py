"""The live streams over real sockets: a cap with a retry hint beyond it, no worker thread
held per open stream, shared feeds, and subscribing (which may wait on the store) kept off
the event loop."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import Any

from tests.console.conftest import RunningConsole, start_console
from tests.console.scenarios import started
from tests.console.test_browser import LIVE_TIMEOUT_MS
from tests.engine.helpers import ok
from tests.services.postgres import PostgresCluster
from workrail.console.live import BUSY_RETRY_S, MAX_STREAMS
from workrail.engine.api import Engine


class Stream:
    """One raw `GET /live` connection, read as it arrives."""

    def __init__(self, console: RunningConsole, query: str = "", headers: str = "") -> None:
        host, port = console.host.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.sendall(
            f"GET /live{query} HTTP/1.1\r\nHost: {console.host}\r\n{headers}"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        self.received = b""

    def read_until(self, marker: bytes) -> bytes:
        while marker not in self.received:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.received += chunk
        return self.received

    @property
    def status(self) -> int:
        head = self.read_until(b"\r\n")
        return int(head.split(b" ", 2)[1])

    def close(self) -> None:
        self.sock.close()


def _wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> bool:
    done = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if condition():
            return True
        done.wait(0.05)
    return condition()


def _open_ready(
    console: RunningConsole, count: int, stack: ExitStack, query: str = "", headers: str = ""
) -> None:
    for _ in range(count):
        stream = Stream(console, query, headers)
        stack.callback(stream.close)
        assert stream.status == 200
        assert b"event: ready" in stream.read_until(b"event: ready")


def test_streams_beyond_the_cap_are_refused_with_a_retry_hint(
    console: RunningConsole, engine: Engine
) -> None:
    sid, _ = started(engine)
    with ExitStack() as stack:
        _open_ready(console, MAX_STREAMS - 1, stack)
        last = Stream(console, f"?session={sid}")
        assert last.status == 200
        assert b"event: ready" in last.read_until(b"event: ready")
        refused = Stream(console)
        stack.callback(refused.close)
        answer = refused.read_until(b"\n\n")
        assert refused.status == 503, answer
        assert f"retry-after: {BUSY_RETRY_S}".encode() in answer.lower()
        assert f"retry: {BUSY_RETRY_S * 1000}".encode() in answer
        # pages are not streams: they still answer while every stream place is taken
        assert console.get("/").status == 200
        assert console.get(f"/sessions/{sid}").status == 200
        last.close()  # the place it held comes back once the server notices

        def admitted() -> bool:
            probe = Stream(console)
            try:
                if probe.status != 200:
                    return False
                stack.callback(probe.close)
                return True
            except OSError:
                probe.close()
                return False

        assert _wait_for(admitted), "a closed stream's place was never given back"


def _threads_waiting_on_a_feed() -> int:
    """Threads of this process blocked in a change feed's `wait` right now."""
    waiting = 0
    for frame in sys._current_frames().values():
        current: FrameType | None = frame
        while current is not None:
            code = current.f_code
            if code.co_name == "wait" and code.co_filename.endswith("watch.py"):
                waiting += 1
                break
            current = current.f_back
    return waiting


def test_open_streams_hold_no_worker_thread_and_share_feeds(
    console: RunningConsole, engine: Engine
) -> None:
    """Parked threads were the resource the streams exhausted (the shared pool of 40 that
    pages and MCP tool calls also wait for): now one poller waits for all of them, and the
    tabs that watch the same thing share one feed."""
    sid, r = started(engine)
    with ExitStack() as stack:
        _open_ready(console, 12, stack)
        _open_ready(console, 12, stack, f"?session={sid}")
        samples = []
        pause = threading.Event()
        for _ in range(20):
            samples.append(_threads_waiting_on_a_feed())
            pause.wait(0.05)
        assert max(samples) <= 1, samples
        streams = console.app.state.live_streams
        assert streams.open_count == 24
        assert streams.feed_count == 2, "one feed per thing watched, not per stream"
        # and every stream still hears of an append
        watcher = Stream(console, f"?session={sid}")
        stack.callback(watcher.close)
        watcher.read_until(b"event: ready")
        ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
        assert sid.encode() in watcher.read_until(b"event: change\ndata: ")
        assert sid.encode() in watcher.read_until(sid.encode())


def test_subscribing_never_blocks_the_event_loop(
    own_postgres: PostgresCluster, tmp_path: Path
) -> None:
    """With PostgreSQL down, subscribing waits up to 10 s for LISTEN: meanwhile the
    console (and, under `serve`, /mcp on the same loop) must go on answering."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    url = own_postgres.url(own_postgres.create_database("live"))
    console = start_console(data_dir, store_url=url)
    listeners = _listener_threads()
    try:
        own_postgres.stop("immediate")
        answered = threading.Event()
        statuses: list[int] = []

        def live() -> None:
            stream = Stream(console)
            try:
                statuses.append(stream.status)
            finally:
                answered.set()
                stream.close()

        thread = threading.Thread(target=live, daemon=True)
        thread.start()
        assert _wait_for(lambda: _listener_threads() > listeners), "no subscription began"
        assert console.get("/static/console.js").status == 200
        assert not answered.is_set(), "the page waited for the subscription to give up"
        own_postgres.start()
        thread.join(timeout=30)
        assert answered.is_set()
        assert statuses[0] in (200, 503)
    finally:
        console.stop()
        console.backend.close()


def _listener_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "workrail-pg-listen")


def test_a_page_refused_a_stream_polls_instead(
    page: Any, console: RunningConsole, engine: Engine
) -> None:
    """EventSource does not retry a 503 by itself: the page must notice and poll."""
    sid, r = started(engine)
    with ExitStack() as stack:
        _open_ready(console, MAX_STREAMS, stack)
        page.goto(f"{console.base_url}/sessions/{sid}")
        page.wait_for_function("() => document.body.dataset.liveState === 'polling'")
        ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
        page.wait_for_function(
            "() => document.querySelector('#pending-step').textContent === 'Build'",
            timeout=LIVE_TIMEOUT_MS,
        )
        assert not page.errors


FOREIGN = (
    "Origin: https://evil.example\r\n",
    "Origin: null\r\n",
    "Origin: http://127.0.0.1:1\r\n",
    "Sec-Fetch-Site: cross-site\r\nSec-Fetch-Mode: no-cors\r\n",  # no-cors sends no Origin
    "Sec-Fetch-Site: same-site\r\n",
)


def test_a_foreign_page_is_refused_a_stream_before_it_takes_a_place(
    console: RunningConsole, engine: Engine
) -> None:
    sid, _ = started(engine)
    with ExitStack() as stack:
        for _ in range(MAX_STREAMS + 1):
            for headers in FOREIGN:
                refused = Stream(console, f"?session={sid}", headers)
                stack.callback(refused.close)
                assert refused.status == 403, (headers, refused.received)
                assert b"another site" in refused.read_until(b"another site")
        # every place is still free for the console's own pages (same-origin EventSource
        # sends Sec-Fetch-Site: same-origin and no Origin; a matching Origin is fine too)
        own = f"Origin: http://{console.host}\r\nSec-Fetch-Site: same-origin\r\n"
        _open_ready(console, MAX_STREAMS - 1, stack, "", own)
        _open_ready(console, 1, stack, "", "Sec-Fetch-Site: same-origin\r\n")


FOREIGN_TABS = 3


def test_foreign_tabs_cannot_keep_a_real_console_tab_off_live_updates(
    page: Any, browser: Any, console: RunningConsole, engine: Engine
) -> None:
    """Tabs of another site (each in its own browser context) try to open more streams
    than there are places; a console tab opened next still gets its live stream, and the
    foreign streams were refused, not admitted."""
    sid, _ = started(engine)
    attack = (
        "<html><body><script>"
        f"for (let i = 0; i < {MAX_STREAMS}; i++)"
        f" new EventSource('{console.base_url}/live?session={sid}');"
        "</script></body></html>"
    )
    foreign = []
    for _ in range(FOREIGN_TABS):
        tab = browser.new_context().new_page()
        tab.route(
            "http://evil.example/**",
            lambda route: route.fulfill(status=200, content_type="text/html", body=attack),
        )
        tab.goto("http://evil.example/")
        foreign.append(tab)
    try:
        page.goto(f"{console.base_url}/sessions/{sid}")
        page.wait_for_function("() => document.body.dataset.liveState === 'live'")
        with ExitStack() as stack:  # every other place is still free
            _open_ready(console, MAX_STREAMS - 1, stack)
    finally:
        for tab in foreign:
            tab.context.close()
