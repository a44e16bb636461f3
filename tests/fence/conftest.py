"""Fixtures for the fence: a real redis-server on loopback, a movable clock, and one
`backend` fixture parametrized over every backend so the contract suite runs on each."""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from tests.services import require_binary
from workrail.fence.backend import FenceBackend
from workrail.fence.identity import key_check
from workrail.fence.postgres_backend import PostgresFenceBackend
from workrail.fence.ratelimit import RateLimits
from workrail.fence.redis_backend import RedisBackend
from workrail.fence.service import FenceService
from workrail.fence.sqlite_backend import SqliteBackend

START = datetime(2026, 7, 25, 12, 0, 0, tzinfo=UTC)
KEY = bytes(range(32))


class ManualClock:
    """The injected clock: time moves only when a test says so."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class RedisServer:
    url: str
    port: int


def redis_binary() -> str:
    """redis-server's path; skips the test, or fails it under CI, when it is missing."""
    return require_binary("redis-server", "redis-server")


@contextmanager
def running_redis(port: int, workdir: Path) -> Iterator[RedisServer]:
    """A throwaway redis-server on 127.0.0.1:`port`, answering PING before it is yielded."""
    proc = subprocess.Popen(
        [
            redis_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if client.ping():
                    break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("redis-server did not answer PING within 10 s")
                time.sleep(0.02)
        yield RedisServer(url=f"redis://127.0.0.1:{port}/0", port=port)
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the session; tests keep apart by key prefix or database number."""
    with running_redis(free_port(), tmp_path_factory.mktemp("redis")) as server:
        yield server


BackendFactory = Callable[[], FenceBackend]


def _sqlite_factory(request: pytest.FixtureRequest, tmp_path: Path) -> BackendFactory:
    path = tmp_path / "fence" / "fence.sqlite3"
    return lambda: SqliteBackend(path)


def _redis_factory(request: pytest.FixtureRequest, tmp_path: Path) -> BackendFactory:
    server: RedisServer = request.getfixturevalue("redis_server")
    prefix = f"test:{uuid.uuid4().hex}:"
    return lambda: RedisBackend(server.url, key_check=key_check(KEY), prefix=prefix)


def _postgres_factory(request: pytest.FixtureRequest, tmp_path: Path) -> BackendFactory:
    url: str = request.getfixturevalue("postgres_url")  # a new database per test
    return lambda: PostgresFenceBackend(url, key_check=key_check(KEY))


# Add a backend here and the whole contract suite runs against it.
BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], BackendFactory]] = {
    "sqlite": _sqlite_factory,
    "redis": _redis_factory,
    "postgres": _postgres_factory,
}


@pytest.fixture(params=sorted(BACKENDS))
def backend_factory(request: pytest.FixtureRequest, tmp_path: Path) -> BackendFactory:
    """Opens a new connection to the same store each call (separate 'processes')."""
    return BACKENDS[request.param](request, tmp_path)


@pytest.fixture
def backend(backend_factory: BackendFactory) -> Iterator[FenceBackend]:
    opened = backend_factory()
    yield opened
    opened.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def service(backend: FenceBackend, clock: ManualClock) -> FenceService:
    return FenceService(backend, KEY, clock, RateLimits(client_rpm=0, global_rpm=0))
