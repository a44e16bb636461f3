"""Watching for appends with LISTEN/NOTIFY.

Every append transaction calls `pg_notify(channel, session_id)`, which PostgreSQL delivers
at COMMIT — only committed appends are announced, by any replica. One background thread
per backend keeps a dedicated autocommit connection in LISTEN and hands each notification
to the feeds that watch its session. When that connection is lost (a database restart),
the thread reconnects and then reports every session whose last append is newer than the
last moment it knew it was listening, so a feed misses nothing across the gap.

LISTEN needs a connection of its own for as long as it listens: behind PgBouncer, that
connection must go through a session-mode pool or straight to PostgreSQL (docs/storage.md).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Final

import psycopg
from psycopg import sql
from returns.result import Failure, Result, Success

from workrail.store.errors import StoreError
from workrail.store.postgres.connection import Connection, connect_kwargs, one_line
from workrail.store.postgres.session_store import NOTIFY_CHANNEL

log = logging.getLogger("workrail.store.postgres")

POLL_SECONDS: Final = 0.5
"""How often the listener looks up from `notifies()` to see whether it should stop."""

RECONNECT_SECONDS: Final = (0.2, 0.5, 1.0, 2.0)
"""Back-off between reconnection attempts (the last repeats)."""

CLOCK_SKEW: Final = timedelta(seconds=5)
"""Margin when asking which sessions changed while the listener was away."""


class _Feed:
    def __init__(self, watch: PostgresWatch, ids: Collection[str] | None) -> None:
        self._watch = watch
        self.ids = None if ids is None else frozenset(ids)
        self._changed: set[str] = set()
        self._cond = threading.Condition()
        self._closed = False

    def offer(self, session_ids: Collection[str]) -> None:
        wanted = set(session_ids) if self.ids is None else self.ids.intersection(session_ids)
        if wanted:
            with self._cond:
                self._changed |= wanted
                self._cond.notify_all()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def wait(self, timeout: float) -> Result[frozenset[str], StoreError]:
        deadline = time.monotonic() + max(0.0, timeout)
        with self._cond:
            while not self._changed and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            changed, self._changed = frozenset(self._changed), set()
        if not changed and not self._watch.listening:
            return Failure(
                StoreError(
                    "STORE_UNAVAILABLE",
                    "Not receiving change notifications from PostgreSQL right now "
                    f"({self._watch.problem or 'reconnecting'}); retry shortly.",
                )
            )
        return Success(changed)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._watch.drop(self)


class PostgresWatch:
    """The SessionWatch port; starts its listener on the first subscription."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._feeds: list[_Feed] = []
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._listening = threading.Event()
        self.problem: str | None = None

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    def subscribe(self, session_ids: Collection[str] | None = None) -> Result[_Feed, StoreError]:
        """A feed from now on. The first subscription waits (briefly) for LISTEN to be in
        place, so an append committed after `subscribe` returns is never missed."""
        feed = _Feed(self, session_ids)
        with self._mutex:
            self._feeds.append(feed)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._listen, name="workrail-pg-listen", daemon=True
                )
                self._thread.start()
        if not self._listening.wait(10):
            feed.close()
            return Failure(
                StoreError(
                    "STORE_UNAVAILABLE",
                    f"Cannot listen for changes ({self.problem or 'timed out'}); retry shortly.",
                )
            )
        return Success(feed)

    def drop(self, feed: _Feed) -> None:
        with self._mutex:
            if feed in self._feeds:
                self._feeds.remove(feed)

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=POLL_SECONDS * 4)
        with self._mutex:
            feeds = list(self._feeds)
        for feed in feeds:
            feed.close()

    def _offer(self, session_ids: Collection[str]) -> None:
        with self._mutex:
            feeds = list(self._feeds)
        for feed in feeds:
            feed.offer(session_ids)

    def _listen(self) -> None:
        attempt = 0
        since: datetime | None = None  # database time at which we last knew we listened
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, **connect_kwargs(self._url)) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(NOTIFY_CHANNEL)))
                    if since is not None:
                        self._offer(_changed_since(conn, since - CLOCK_SKEW))
                    since = _now(conn)
                    self.problem = None
                    self._listening.set()
                    attempt = 0
                    while not self._stop.is_set():
                        got: set[str] = set()
                        for notify in conn.notifies(timeout=POLL_SECONDS, stop_after=256):
                            got.add(notify.payload)
                        if got:
                            self._offer(got)
                        since = _now(conn)
            except psycopg.Error as exc:
                self.problem = one_line(exc, self._url)
                log.warning("change notifications interrupted: %s", self.problem)
            finally:
                self._listening.clear()
                with self._mutex:
                    feeds = list(self._feeds)
                for feed in feeds:
                    feed.wake()
            self._stop.wait(RECONNECT_SECONDS[min(attempt, len(RECONNECT_SECONDS) - 1)])
            attempt += 1


def _now(conn: Connection) -> datetime:
    row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    value: datetime = row[0]
    return value


def _changed_since(conn: Connection, since: datetime) -> list[str]:
    rows = conn.execute(
        "SELECT session_id FROM workrail_sessions WHERE last_activity >= %s", (since,)
    ).fetchall()
    return [str(r[0]) for r in rows]
