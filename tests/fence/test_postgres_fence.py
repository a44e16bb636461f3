"""On a PostgreSQL store every replica fences through the same table, by the database's
clock: two replicas with their own data directories never both acquire one workflow."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from returns.result import Failure

from tests.fence.helpers import HOLDER_A, HOLDER_B, claim, ok
from workrail.app import open_fence
from workrail.config import WorkrailConfig, load_config
from workrail.fence.service import FenceService, open_fence_service

UNLIMITED = {"WORKRAIL_FENCE_RPM_PER_CLIENT": "0", "WORKRAIL_FENCE_RPM_GLOBAL": "0"}


def _config(env: dict[str, str], data_dir: Path) -> WorkrailConfig:
    loaded = load_config({**UNLIMITED, **env, "WORKRAIL_DATA_DIR": str(data_dir)})
    assert not isinstance(loaded, Failure), loaded
    return loaded.unwrap()


def _replica(env: dict[str, str], data_dir: Path) -> FenceService:
    opened = open_fence(_config(env, data_dir))
    assert not isinstance(opened, Failure), opened
    return opened.unwrap()


def _share_fence_key(source: Path, target: Path) -> None:
    keys = target / "keys"
    keys.mkdir(parents=True, mode=0o700)
    (keys / "fence.key").write_bytes((source / "keys" / "fence.key").read_bytes())
    (keys / "fence.key").chmod(0o600)
    target.chmod(0o700)


def test_replicas_of_a_postgres_store_share_one_fence_by_default(
    postgres_url: str, tmp_path: Path
) -> None:
    env = {"WORKRAIL_STORE_URL": postgres_url}
    first = _replica(env, tmp_path / "r1")
    _share_fence_key(tmp_path / "r1", tmp_path / "r2")  # as README's team set-up says
    second = _replica(env, tmp_path / "r2")
    try:
        assert first.backend.name == second.backend.name == "postgresql"
        won = ok(first, claim(HOLDER_A))
        assert won["acquired"] is True
        assert won["generation"] == 1
        lost = ok(second, claim(HOLDER_B))
        assert lost["acquired"] is False
        assert lost["held_by_caller"] is False
        assert lost["generation"] == 1
        assert not (tmp_path / "r1" / "fence" / "fence.sqlite3").exists()
    finally:
        first.close()
        second.close()


def test_ttls_are_measured_by_the_database_clock_not_the_replicas(
    postgres_url: str, tmp_path: Path
) -> None:
    """Replica clocks two hours apart: by either one the other's claim is long over or
    not begun, yet the database's clock says it is live."""
    real = datetime.now(UTC)
    behind = open_fence_service(tmp_path, postgres_url, clock=lambda: real - timedelta(hours=2))
    ahead = open_fence_service(tmp_path, postgres_url, clock=lambda: real + timedelta(hours=2))
    try:
        won = ok(behind, claim(HOLDER_A, claim_ttl=120))
        assert won["acquired"] is True
        observed = datetime.fromisoformat(won["observed_at"].replace("Z", "+00:00"))
        assert abs(observed - real) < timedelta(minutes=10)  # neither replica's clock
        lost = ok(ahead, claim(HOLDER_B, claim_ttl=120))
        assert lost["acquired"] is False
        assert lost["generation"] == 1
    finally:
        behind.close()
        ahead.close()


def test_a_local_fence_on_a_postgres_store_is_only_by_explicit_choice(
    postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"WORKRAIL_STORE_URL": postgres_url, "WORKRAIL_FENCE_URL": "sqlite"}
    with caplog.at_level(logging.WARNING, logger="workrail.fence"):
        local = _replica(env, tmp_path / "r1")
    try:
        assert local.backend.name == "sqlite"
        (warning,) = [r.getMessage() for r in caplog.records if r.name == "workrail.fence"]
        assert "WORKRAIL_FENCE_URL=sqlite" in warning
        assert "replicas" in warning
    finally:
        local.close()


def test_the_fence_url_may_name_a_postgres_database_and_refuses_anything_else(
    postgres_url: str, tmp_path: Path
) -> None:
    named = _config({"WORKRAIL_FENCE_URL": postgres_url}, tmp_path)
    assert named.fence_url == postgres_url
    assert not named.uses_postgres
    assert _config({}, tmp_path).fence_url is None  # files: SQLite in the data directory
    bad = load_config({"WORKRAIL_FENCE_URL": "mysql://x"})
    assert isinstance(bad, Failure)
    assert "postgresql://" in bad.failure().message
    assert "redis://" in bad.failure().message


def test_an_unreachable_postgres_fence_is_a_retryable_answer_per_call(tmp_path: Path) -> None:
    service = open_fence_service(tmp_path, "postgresql://nobody:x@127.0.0.1:1/none")
    try:
        reply = service.execute(claim(HOLDER_A), client_id="test")
        assert reply.body["error"]["code"] == "DEPENDENCY_UNAVAILABLE"
        assert reply.retry_after == 1
    finally:
        service.close()
