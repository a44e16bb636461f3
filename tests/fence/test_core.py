"""Pure-core cases that the public graph cannot reach, and backend outages."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from returns.result import Failure, Success

from tests.fence.conftest import KEY, ManualClock, free_port, running_redis
from tests.fence.helpers import HOLDER_A, claim, fence_from_env, ok, run, status, transition
from workrail.fence.backend import BackendUnavailable, StoredReply
from workrail.fence.decide import decide_transition
from workrail.fence.identity import key_check
from workrail.fence.record import (
    CheckpointRecord,
    ObservationRecord,
    TransitionCommand,
)
from workrail.fence.redis_backend import RedisBackend
from workrail.fence.render import iso_ms, to_epoch_ms
from workrail.fence.service import FenceService
from workrail.fence.sqlite_backend import SqliteBackend

NOW = 1_785_000_000_000


def record(observations: int) -> CheckpointRecord:
    return CheckpointRecord(
        workflow_hash="hmac-sha256:" + "0" * 64,
        stage="claimed",
        generation=3,
        holder="h" * 64,
        claim_expires_ms=NOW + 60_000,
        claim_ttl=60,
        state_ttl=3600,
        retry_failed=True,
        state_expires_ms=NOW + 3_600_000,
        recovery_required=False,
        evidence_type=None,
        evidence_present=False,
        observations={
            f"{i:064x}": ObservationRecord(body="x", generation=1) for i in range(observations)
        },
    )


def command(observation: str) -> TransitionCommand:
    return TransitionCommand(
        workflow_hash="hmac-sha256:" + "0" * 64,
        holder="h" * 64,
        expected_generation=3,
        from_stage="claimed",
        to_stage="failed",
        observation=observation,
        body="body",
        evidence_type=None,
        evidence_present=False,
    )


def test_thirty_third_observation_is_refused() -> None:
    assert isinstance(decide_transition(record(31), command("new"), NOW), Success)
    refused = decide_transition(record(32), command("new"), NOW)
    assert isinstance(refused, Failure)
    assert refused.failure().error().code == "CHECKPOINT_LIMIT_REACHED"
    # A replay of a recorded observation is still answered at the limit.
    full = record(32).model_copy(
        update={"observations": {"o": ObservationRecord(body="body", generation=3)}}
    )
    assert isinstance(decide_transition(full, command("o"), NOW), Success)


def test_timestamps_round_trip_in_the_contract_form() -> None:
    clock = ManualClock()
    assert iso_ms(to_epoch_ms(clock())) == "2026-07-25T12:00:00.000Z"
    assert iso_ms(NOW + 7) == "2026-07-25T17:20:00.007Z"


def test_redis_down_is_dependency_unavailable() -> None:
    backend = RedisBackend(f"redis://127.0.0.1:{free_port()}/0", key_check=key_check(KEY))
    reply = run(FenceService(backend, KEY, ManualClock()), claim())
    error = reply.body["error"]
    assert (reply.status, error["code"], error["retryable"]) == (
        503,
        "DEPENDENCY_UNAVAILABLE",
        True,
    )
    assert reply.retry_after == 1
    backend.close()


def test_locked_sqlite_is_unavailable_and_nothing_is_half_written(tmp_path: Path) -> None:
    path = tmp_path / "fence.sqlite3"
    service = FenceService(SqliteBackend(path, busy_timeout_ms=50), KEY, ManualClock())
    ok(service, claim())
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    reply = run(service, transition("claimed", "failed"))
    assert reply.body["error"]["code"] == "DEPENDENCY_UNAVAILABLE"
    blocker.execute("ROLLBACK")
    blocker.close()
    seen = ok(service, status())
    assert (seen["stage"], seen["claim_active"]) == ("claimed", True)
    assert ok(service, claim(HOLDER_A))["reused"] is True


class _ForgetfulBackend(SqliteBackend):
    """Commits decisions but cannot keep Idempotency-Key replies."""

    def remember(self, key: str, reply: StoredReply, now_ms: int) -> None:
        raise BackendUnavailable("database is locked")


def test_a_committed_decision_is_reported_even_if_its_replay_is_not_kept(
    tmp_path: Path,
) -> None:
    service = FenceService(_ForgetfulBackend(tmp_path / "fence.sqlite3"), KEY, ManualClock())
    reply = service.execute(claim(), client_id="c", idempotency_key="idem-key-0001")
    assert reply.ok, reply.body  # not "unavailable, nothing was written"
    assert (reply.body["result"]["acquired"], reply.body["result"]["generation"]) == (True, 1)
    assert ok(service, status())["stage"] == "claimed"
    again = service.execute(claim(), client_id="c", idempotency_key="idem-key-0001")
    assert again.body["result"]["reused"] is True  # re-executed, harmlessly


def test_an_unopenable_sqlite_file_is_unavailable_per_call(tmp_path: Path) -> None:
    (tmp_path / "fence").write_text("a file where the directory belongs")
    service = fence_from_env(tmp_path, {})  # builds; nothing is opened yet
    reply = run(service, status())
    assert (reply.status, reply.body["error"]["code"]) == (503, "DEPENDENCY_UNAVAILABLE")
    (tmp_path / "fence").unlink()
    assert run(service, status()).body["error"]["code"] == "CHECKPOINT_NOT_FOUND"
    service.close()


def test_redis_down_at_start_up_is_used_once_it_is_back(tmp_path: Path) -> None:
    port = free_port()
    env = {"WORKRAIL_FENCE_URL": f"redis://127.0.0.1:{port}/0"}
    service = fence_from_env(tmp_path, env, ManualClock())  # Redis is not running yet
    assert run(service, claim()).body["error"]["code"] == "DEPENDENCY_UNAVAILABLE"
    with running_redis(port, tmp_path):
        assert ok(service, claim())["acquired"] is True
    service.close()
