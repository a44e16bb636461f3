"""Connections to PostgreSQL, and psycopg's exceptions turned into `StoreError` values.

Every connection is in autocommit mode (a write opens its own transaction, a read is one
statement and needs none) and never prepares statements (`prepare_threshold=None`), so the
store works behind PgBouncer in transaction mode, where consecutive transactions of one
client may run on different server connections. Nothing here holds session-level state
on a server connection: no session advisory locks, no SET, no temporary tables.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout
from returns.result import Failure, Result, Success

from workrail.core.urls import redact_url
from workrail.store.errors import StoreError

T = TypeVar("T")

CONNECT_TIMEOUT_SECONDS: Final = 5
"""How long one connection attempt may take before the database counts as unreachable."""

POOL_WAIT_SECONDS: Final = 5.0
"""How long a call waits for a pooled connection before it answers STORE_UNAVAILABLE."""

DEFAULT_POOL_SIZE: Final = 20
"""Connections per server process. A write holds one for its whole transaction and may need
a second meanwhile (a snapshot it stores), so at most half the pool writes at once."""

WRITE_IDLE_SECONDS: Final = 60
"""How long a write's transaction may wait on its client (a frozen or cut-off process)
before the server ends it, which frees the session for other writers."""

LOCK_WAIT_SECONDS: Final = 10
"""How long a statement of a write may wait for a row lock another transaction holds (a
second writer that slipped past the session lock) before it fails, retryable."""

KEEPALIVES: Final[dict[str, int]] = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}
"""TCP keepalives, so a connection to a server that vanished (network cut, host down) is
found dead in about a minute instead of hanging a call; libpq ignores them on sockets."""

Connection = psycopg.Connection[Any]


def connect_kwargs(url: str) -> dict[str, Any]:
    """What every connection is opened with (pool, listener, migrations). A keepalive
    setting the URL spells out itself wins over ours."""
    try:
        given = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        given = {}
    keepalives = {key: value for key, value in KEEPALIVES.items() if key not in given}
    return {
        "autocommit": True,
        "prepare_threshold": None,
        "connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "application_name": "workrail",
        **keepalives,
    }


WRITE_BOUNDS: Final = (
    "set_config('idle_in_transaction_session_timeout', %s, true), "
    "set_config('lock_timeout', %s, true)"
)
"""The settings a write's transaction runs under, for the select list of its first
statement (no extra round trip; local to the transaction, so nothing outlives it on a
connection PgBouncer may hand to another client). Its parameters: `Database.write_bounds`."""


def write_bounds(idle_seconds: float) -> tuple[str, str]:
    return f"{max(1, round(idle_seconds * 1000))}ms", f"{LOCK_WAIT_SECONDS * 1000}ms"


def one_line(exc: BaseException, url: str | None = None) -> str:
    """psycopg's (often multi-line) message on one line, never with the password."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = text.removeprefix("connection failed: ")
    if url is not None:
        password = _password(url)
        if password:
            text = text.replace(password, "***")
    return text


def _password(url: str) -> str | None:
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return None
    value = info.get("password")
    return str(value) if value else None


def connect_failure(exc: BaseException, url: str) -> StoreError:
    """One line for a person whose server would not even open: what is wrong and what to
    check, with the URL's password hidden. Wrong credentials or a missing database are
    CONFIG_INVALID (the URL must change: retrying cannot help); anything else may be a
    server that is not up yet, the retryable STORE_UNAVAILABLE."""
    where = redact_url(url)
    detail = one_line(exc, url)
    lowered = detail.lower()
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return StoreError(
            "CONFIG_INVALID",
            f"PostgreSQL refused the credentials in {where} ({detail}); fix the user or password.",
        )
    if "does not exist" in lowered and "database" in lowered:
        return StoreError(
            "CONFIG_INVALID",
            f"The database named in {where} does not exist ({detail}); create it "
            "(createdb) or fix the URL.",
        )
    return StoreError(
        "STORE_UNAVAILABLE",
        f"Cannot reach PostgreSQL at {where} ({detail}); check that the server is running "
        "and the host and port are right.",
    )


def unavailable(exc: BaseException, url: str | None = None) -> StoreError:
    return StoreError(
        "STORE_UNAVAILABLE",
        f"The PostgreSQL store is unavailable ({one_line(exc, url)}); retry shortly.",
    )


def store_error(exc: BaseException, url: str | None = None) -> StoreError:
    """Any psycopg failure as a value: lost or refused connections, timeouts, a server
    shutting down, deadlocks and serialization failures are retryable STORE_UNAVAILABLE;
    anything else (missing table, permission denied) is an I/O error a person must fix."""
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout)):
        return unavailable(exc, url)
    return StoreError("SESSION_STORE_IO_ERROR", f"PostgreSQL error: {one_line(exc, url)}")


def is_connection_lost(exc: BaseException) -> bool:
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))


class Database:
    """The pool every store of one backend shares."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        wait: float = POOL_WAIT_SECONDS,
        write_idle: float = WRITE_IDLE_SECONDS,
    ) -> None:
        self.url = url
        self.wait = wait
        self.write_bounds = write_bounds(write_idle)
        self.size = max(2, pool_size)
        self.pool: ConnectionPool[Connection] = ConnectionPool(
            url,
            min_size=1,
            max_size=self.size,
            kwargs=connect_kwargs(url),
            open=False,
            timeout=wait,
            reconnect_timeout=0,  # never give up: a database that comes back is used again
            name="workrail",
        )
        self._checking = threading.Lock()

    def open(self) -> None:
        self.pool.open(wait=False)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        with self.pool.connection() as conn:
            yield conn

    def discard_broken(self) -> None:
        """After a lost connection (a server restart breaks every pooled one): test the
        idle connections and replace the dead ones, one thread at a time."""
        if self._checking.acquire(blocking=False):
            try:
                self.pool.check()
            except psycopg.Error:
                pass
            finally:
                self._checking.release()

    def run(self, fn: Callable[[Connection], T], *, repeat: bool = True) -> Result[T, StoreError]:
        """`fn` on a pooled connection. With `repeat` (`fn` is a read, or idempotent) a
        connection that turns out to be dead is replaced and `fn` tried once more."""
        for attempt in (1, 2) if repeat else (2,):
            try:
                with self.pool.connection() as conn:
                    return Success(fn(conn))
            except PoolTimeout as exc:
                return Failure(unavailable(exc, self.url))
            except psycopg.Error as exc:
                if attempt == 1 and is_connection_lost(exc):
                    self.discard_broken()
                    continue
                return Failure(store_error(exc, self.url))
        raise AssertionError("unreachable")
