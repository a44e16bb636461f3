"""Differential test: the Lua script decides exactly like the pure Python core.

Random sequences of claims, transitions, abandons, status reads and clock moves run on both;
every decision (rejection reason, or record and flags) must be identical.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.result import Success

from tests.fence.conftest import RedisServer
from workrail.fence.contract import STAGES
from workrail.fence.decide import Decision, decide
from workrail.fence.record import (
    AbandonCommand,
    CheckpointRecord,
    ClaimCommand,
    Command,
    StatusCommand,
    TransitionCommand,
)
from workrail.fence.redis_backend import RedisBackend

WF = "hmac-sha256:" + "c" * 64
HOLDERS = ["holder-a", "holder-b"]
EVIDENCE = ["both", "none", "type", "fp"]


def draw_step(data: st.DataObject, stored: CheckpointRecord | None, retry: bool) -> Any:
    """One step, usually aimed at the current state so deep paths are reached often."""
    kind = data.draw(
        st.sampled_from(["claim", "transition", "transition", "abandon", "status", "time"])
    )
    aimed = stored is not None and data.draw(st.integers(0, 3)) > 0
    holder = stored.holder if aimed and stored else data.draw(st.sampled_from(HOLDERS))
    generation = stored.generation if aimed and stored else data.draw(st.integers(1, 3))
    if kind == "time":
        return data.draw(st.sampled_from([1, 5, 46, 61, 130, 700]))
    if kind == "claim":
        ttl = data.draw(st.sampled_from([60, 60, 60, 60, 120]))
        return ClaimCommand(WF, data.draw(st.sampled_from(HOLDERS)), ttl, 600, retry)
    if kind == "abandon":
        return AbandonCommand(WF, holder, generation)
    if kind == "status":
        return StatusCommand(WF)
    from_stage = stored.stage if aimed and stored else data.draw(st.sampled_from(STAGES))
    to_stage = data.draw(st.sampled_from(STAGES))
    evidence = data.draw(st.sampled_from(EVIDENCE))
    observation = f"obs-{data.draw(st.integers(0, 40))}"
    return TransitionCommand(
        WF,
        holder,
        generation,
        from_stage,
        to_stage,
        observation,
        f"{holder}|{generation}|{from_stage}|{to_stage}|{evidence}",
        "manual_review" if evidence in ("both", "type") else None,
        evidence in ("both", "fp"),
    )


def summary(decision: Decision) -> Any:
    if isinstance(decision, Success):
        outcome = decision.unwrap()
        return ("ok", outcome.record.model_dump(), outcome)
    return ("rejected", decision.failure().reason)


@pytest.mark.slow
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), retry=st.booleans(), length=st.integers(1, 40))
def test_lua_and_python_decide_alike(
    redis_server: RedisServer, data: st.DataObject, retry: bool, length: int
) -> None:
    redis_backend = RedisBackend(
        redis_server.url, key_check="differential", prefix=f"diff:{uuid.uuid4().hex}:"
    )
    stored: CheckpointRecord | None = None
    now = 1_785_000_000_000
    try:
        for _ in range(length):
            step = draw_step(data, stored, retry)
            if isinstance(step, int):
                now += step * 1000
                continue
            command: Command = step
            expected = decide(stored, command, now)
            actual = redis_backend.apply(command, now)
            assert summary(actual) == summary(expected), command
            if isinstance(expected, Success) and expected.unwrap().changed:
                stored = expected.unwrap().record
    finally:
        redis_backend.close()
