"""100 claim contenders in separate processes, each with its own connection, and on
PostgreSQL through three replicas with their own pools: one wins."""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.fence.conftest import KEY, RedisServer
from tests.fence.helpers import claim
from workrail.fence.backend import FenceBackend
from workrail.fence.identity import key_check
from workrail.fence.postgres_backend import PostgresFenceBackend
from workrail.fence.ratelimit import RateLimits
from workrail.fence.redis_backend import RedisBackend
from workrail.fence.service import FenceService
from workrail.fence.sqlite_backend import SqliteBackend

CONTENDERS = 100


def _open(spec: tuple[str, str, str]) -> FenceBackend:
    kind, location, prefix = spec
    if kind == "sqlite":
        return SqliteBackend(Path(location))
    if kind == "postgres":
        return PostgresFenceBackend(location, key_check=key_check(KEY), pool_size=1)
    return RedisBackend(location, key_check=key_check(KEY), prefix=prefix)


def _contend(
    spec: tuple[str, str, str],
    index: int,
    barrier: multiprocessing.synchronize.Barrier,
    results: Any,
) -> None:
    service = FenceService(_open(spec), KEY, limits=RateLimits(client_rpm=0, global_rpm=0))
    barrier.wait()
    reply = service.execute(claim(f"holder-{index:04d}-contender"), client_id=f"p{index}")
    results.put((reply.ok, reply.body.get("result", {}).get("acquired"), reply.body))
    service.close()


def _race(spec: tuple[str, str, str]) -> list[tuple[bool, bool, Any]]:
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(CONTENDERS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_contend, args=(spec, i, barrier, results)) for i in range(CONTENDERS)
    ]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    return outcomes


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "redis", "postgres"])
def test_exactly_one_of_a_hundred_contenders_acquires(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind == "sqlite":
        path = tmp_path / "fence.sqlite3"
        SqliteBackend(path).close()  # create the schema once, as a running server would
        spec = ("sqlite", str(path), "")
    elif kind == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        PostgresFenceBackend(url).is_paused()  # migrate once, as a running server would
        spec = ("postgres", url, "")
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        spec = ("redis", server.url, f"race:{uuid.uuid4().hex}:")
    outcomes = _race(spec)
    assert all(ok for ok, _, _ in outcomes), [body for ok, _, body in outcomes if not ok][:3]
    assert sum(1 for _, acquired, _ in outcomes if acquired) == 1
    generations = {body["result"]["generation"] for _, _, body in outcomes}
    assert generations == {1}


REPLICAS = 3


@pytest.mark.slow
def test_a_hundred_contenders_through_three_postgres_replicas_one_wins(postgres_url: str) -> None:
    """Three backends with their own pools stand for three replicas behind a balancer."""
    replicas = [PostgresFenceBackend(postgres_url, key_check=key_check(KEY)) for _ in range(3)]
    services = [
        FenceService(backend, KEY, backend.clock, RateLimits(client_rpm=0, global_rpm=0))
        for backend in replicas
    ]
    services[0].backend.is_paused()  # the schema, as a started server would have it
    barrier = threading.Barrier(CONTENDERS)
    outcomes: list[tuple[bool, Any]] = []

    def contend(index: int) -> None:
        service = services[index % REPLICAS]
        barrier.wait()
        reply = service.execute(claim(f"holder-{index:04d}-replica"), client_id=f"c{index}")
        outcomes.append((reply.ok, reply.body))

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(CONTENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for service in services:
        service.close()
    assert len(outcomes) == CONTENDERS
    assert all(ok for ok, _ in outcomes), [body for ok, body in outcomes if not ok][:3]
    assert sum(1 for _, body in outcomes if body["result"]["acquired"]) == 1
    assert {body["result"]["generation"] for _, body in outcomes} == {1}
