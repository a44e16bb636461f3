"""Several replicas on one database, as a team runs them: `workrail serve --store URL` three
times, driven over MCP's Streamable HTTP. Real processes, a real database, no fixed sleeps:
every wait is a retry of a retryable answer, bounded in time."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from mcp import Client

from tests.mcp.conftest import advance_args, body, error_body
from tests.mcp.servers import ROOT, free_port, server_env, wait_until_accepting
from tests.services.postgres import PostgresCluster

pytestmark = pytest.mark.anyio

RETRY_FOR_SECONDS = 60.0


@dataclass
class Replica:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path


@contextmanager
def replicas(store_url: str, tmp_path: Path, count: int = 3) -> Iterator[list[Replica]]:
    """`workrail serve --store URL --port N`, `count` times, each with a data directory of
    its own (for its fence), all on one database."""
    started: list[Replica] = []
    logs = []
    try:
        for n in range(count):
            port = free_port()
            data = tmp_path / f"replica{n}"
            data.mkdir()
            log = data / "server.log"
            logs.append(log.open("wb"))
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "workrail",
                    "serve",
                    "--store",
                    store_url,
                    "--port",
                    str(port),
                ],
                env={**server_env(data), "WORKRAIL_LOG_LEVEL": "WARNING"},
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=logs[-1],
            )
            started.append(Replica(proc, f"http://127.0.0.1:{port}/mcp", log))
        for replica in started:
            wait_until_accepting(replica.proc, int(replica.url.rsplit(":", 1)[1].split("/")[0]))
        yield started
    finally:
        for replica in started:
            if replica.proc.poll() is None:
                replica.proc.terminate()
        for replica in started:
            try:
                replica.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                replica.proc.kill()
                replica.proc.wait()
        for handle in logs:
            handle.close()


@pytest.fixture
async def clients(postgres_url: str, tmp_path: Path) -> AsyncIterator[list[Client]]:
    """An MCP client on each of three replicas over one database."""
    with replicas(postgres_url, tmp_path) as servers:
        async with AsyncExitStack() as stack:
            yield [await stack.enter_async_context(Client(s.url)) for s in servers]


async def call(client: Client, tool: str, args: dict[str, Any], seen: list[str]) -> dict[str, Any]:
    """The tool's answer, retrying retryable errors (each one's code goes into `seen`)."""
    deadline = time.monotonic() + RETRY_FOR_SECONDS
    while True:
        try:
            result = await client.call_tool(tool, args)
        except Exception as exc:  # the replica went away mid-call: a transport error
            seen.append(f"transport:{type(exc).__name__}")
            raise
        answer = error_body(result) if result.is_error else body(result)
        if not result.is_error:
            return answer
        assert answer["retry"]["kind"] != "not_retryable", answer
        seen.append(answer["code"])
        assert time.monotonic() < deadline, f"still {answer['code']} after {RETRY_FOR_SECONDS}s"
        await anyio.sleep(answer["retry"].get("afterMs", 100) / 1000)


def _advances(url: str) -> list[tuple[str, str]]:
    """(session, dedupe key) of every recorded advance."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT session_id, dedupe_key FROM workrail_events "
            "WHERE convert_from(body, 'UTF8')::jsonb->>'kind' = 'advance_recorded'"
        ).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def _health(url: str, session_id: str) -> str:
    from workrail.store.postgres import open_postgres_backend

    backend = open_postgres_backend(url).unwrap()
    try:
        return backend.sessions.health(session_id).unwrap().kind
    finally:
        backend.close()


async def test_one_ack_through_three_replicas_at_once_is_one_advance(
    postgres_url: str, clients: list[Client]
) -> None:
    seen: list[str] = []
    start = await call(clients[0], "start_workflow", {"workflowId": "probe-flow"}, seen)
    args = advance_args(start, "the plan")
    answers = await asyncio.gather(*(call(c, "continue_workflow", args, seen) for c in clients))
    assert answers[0] == answers[1] == answers[2]
    assert set(seen) <= {"TOKEN_SESSION_LOCKED"}
    assert len(_advances(postgres_url)) == 1
    # and the session goes on through any of them
    nxt = await call(clients[2], "continue_workflow", advance_args(answers[0], "built"), seen)
    assert nxt["pending"]["stepId"] == "verify"
    assert len(_advances(postgres_url)) == 2


async def test_fresh_acks_through_different_replicas_fork_cleanly(
    postgres_url: str, clients: list[Client]
) -> None:
    seen: list[str] = []
    start = await call(clients[0], "start_workflow", {"workflowId": "probe-flow"}, seen)
    rehydrate = {"intent": "rehydrate", "stateToken": start["stateToken"]}
    fresh = [await call(c, "continue_workflow", rehydrate, seen) for c in clients]
    acks = {f["ackToken"] for f in fresh} | {start["ackToken"]}
    assert len(acks) == 4
    branches = await asyncio.gather(
        *(
            call(
                c,
                "continue_workflow",
                {
                    "intent": "advance",
                    "stateToken": start["stateToken"],
                    "ackToken": f["ackToken"],
                    "output": {"notesMarkdown": f"plan {n}"},
                },
                seen,
            )
            for n, (c, f) in enumerate(zip(clients, fresh, strict=True))
        )
    )
    assert len({b["stateToken"] for b in branches}) == 3
    assert set(seen) <= {"TOKEN_SESSION_LOCKED"}
    (sid,) = {s for s, _ in _advances(postgres_url)}
    assert len(_advances(postgres_url)) == 3
    assert _health(postgres_url, sid) == "healthy"
    for n, branch in enumerate(branches):  # every branch stays usable, anywhere
        done = await call(
            clients[(n + 1) % 3], "continue_workflow", advance_args(branch, "built"), seen
        )
        assert done["pending"]["stepId"] == "verify"


async def test_a_replica_killed_mid_advance_loses_nothing_acknowledged(
    postgres_url: str, tmp_path: Path
) -> None:
    with replicas(postgres_url, tmp_path, count=2) as (doomed, survivor):
        async with Client(survivor.url) as other:
            seen: list[str] = []
            sessions = [
                await call(other, "start_workflow", {"workflowId": "probe-flow"}, seen)
                for _ in range(6)
            ]
            acknowledged: dict[int, dict[str, Any]] = {}
            in_flight: dict[int, dict[str, Any]] = {}

            async def advance_through_doomed(n: int, start: dict[str, Any]) -> None:
                args = advance_args(start, f"session {n}")
                in_flight[n] = args
                try:
                    async with Client(doomed.url) as client:
                        acknowledged[n] = await call(client, "continue_workflow", args, [])
                except Exception:
                    return  # the replica died before answering: not acknowledged

            async def kill_after_first_acknowledgement() -> None:
                deadline = time.monotonic() + RETRY_FOR_SECONDS
                while not acknowledged and time.monotonic() < deadline:
                    await anyio.sleep(0.005)
                os.kill(doomed.proc.pid, signal.SIGKILL)

            async with anyio.create_task_group() as group:
                for n, start in enumerate(sessions):
                    group.start_soon(advance_through_doomed, n, start)
                group.start_soon(kill_after_first_acknowledgement)
            doomed.proc.wait(timeout=30)
            assert acknowledged, "no advance was acknowledged before the kill"
            for n, args in in_flight.items():
                answer = await call(other, "continue_workflow", args, seen)
                if n in acknowledged:
                    assert answer == acknowledged[n]  # recorded, and replayed identically
                nxt = await call(other, "continue_workflow", advance_args(answer, "on"), seen)
                assert "stateToken" in nxt
            assert set(seen) <= {"TOKEN_SESSION_LOCKED"}
            per_session: dict[str, int] = {}
            for sid, _key in _advances(postgres_url):
                per_session[sid] = per_session.get(sid, 0) + 1
            assert sorted(per_session.values()) == [2] * len(in_flight)
            assert all(_health(postgres_url, sid) == "healthy" for sid in per_session)


async def test_a_database_restart_gives_retryable_errors_then_normal_service(
    own_postgres: PostgresCluster, tmp_path: Path
) -> None:
    url = own_postgres.url(own_postgres.create_database())
    with replicas(url, tmp_path) as servers:
        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(Client(s.url)) for s in servers]
            seen: list[str] = []
            current = await call(clients[0], "start_workflow", {"workflowId": "probe-flow"}, seen)
            restarted = False
            for step in range(8):
                if step == 2:
                    await anyio.to_thread.run_sync(own_postgres.restart, "immediate")
                    restarted = True
                current = await call(
                    clients[step % 3],
                    "continue_workflow",
                    advance_args(current, f"step {step}"),
                    seen,
                )
                if current.get("isComplete"):
                    current = await call(
                        clients[step % 3], "start_workflow", {"workflowId": "probe-flow"}, seen
                    )
            assert restarted
            assert set(seen) <= {"STORE_UNAVAILABLE", "TOKEN_SESSION_LOCKED"}
            for replica in servers:
                assert replica.proc.poll() is None, "a replica exited"
            assert json.dumps(current)  # the last call answered normally
