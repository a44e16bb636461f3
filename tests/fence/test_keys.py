"""The fence key: its own file, untouched by keyring rotation, and enforced on every Redis
action so machines with different keys can never both acquire one side effect."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import redis

from tests.fence.conftest import KEY, ManualClock, RedisServer
from tests.fence.helpers import HOLDER_A, HOLDER_B, claim, fence_from_env, ok, run, status
from workrail.fence.identity import fence_key_path, key_check
from workrail.fence.ratelimit import RateLimits
from workrail.fence.redis_backend import RedisBackend
from workrail.fence.service import FenceService
from workrail.store.local.keyring import rotate_keyring

UNLIMITED = {"WORKRAIL_FENCE_CLIENT_RPM": "0", "WORKRAIL_FENCE_GLOBAL_RPM": "0"}


def _redis_env(server: RedisServer, db: int) -> dict[str, str]:
    """A database of its own on the shared server, emptied first (default key prefix)."""
    redis.Redis(host="127.0.0.1", port=server.port, db=db).flushdb()
    return {**UNLIMITED, "WORKRAIL_FENCE_URL": f"redis://127.0.0.1:{server.port}/{db}"}


def test_fence_key_is_a_private_file_created_once(tmp_path: Path) -> None:
    first = fence_from_env(tmp_path, UNLIMITED)
    path = fence_key_path(tmp_path)
    key = path.read_bytes()
    assert len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    first.close()
    fence_from_env(tmp_path, UNLIMITED).close()
    assert path.read_bytes() == key


def test_a_corrupt_fence_key_is_a_reported_setting_not_replaced(tmp_path: Path) -> None:
    path = fence_key_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"short")
    path.chmod(0o600)  # private, as a key must be: only its length is wrong
    with pytest.raises(ValueError, match="fence.key"):
        fence_from_env(tmp_path, UNLIMITED)
    assert path.read_bytes() == b"short"


def _rotation_keeps_the_fence(data_dir: Path, env: dict[str, str]) -> None:
    before = fence_from_env(data_dir, env)
    assert ok(before, claim(HOLDER_A))["generation"] == 1
    rotate_keyring(data_dir)  # `workrail keys rotate`
    after = fence_from_env(data_dir, env)  # a restarted or second server
    contender = ok(after, claim(HOLDER_B))
    assert (contender["acquired"], contender["generation"]) == (False, 1)
    assert ok(after, status())["stage"] == "claimed"
    before.close()
    after.close()


def test_keyring_rotation_does_not_break_fencing_sqlite(tmp_path: Path) -> None:
    _rotation_keeps_the_fence(tmp_path, UNLIMITED)


def test_keyring_rotation_does_not_break_fencing_redis(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    _rotation_keeps_the_fence(tmp_path, _redis_env(redis_server, db=1))


def test_another_fence_key_is_refused_on_every_redis_action(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    env = _redis_env(redis_server, db=2)
    store = redis.Redis(host="127.0.0.1", port=redis_server.port, db=2)
    machine_a = fence_from_env(tmp_path / "a", env)
    assert ok(machine_a, claim(HOLDER_A))["acquired"] is True
    # Let every setting that carries an expiry lapse, as wall time would; the record of the
    # fence key must not be one of them.
    for name in store.scan_iter(match=b"workrail:fence:setting:*"):
        if store.pttl(name) > 0:
            store.delete(name)
    machine_b = fence_from_env(tmp_path / "b", env)  # its own keys/fence.key
    for payload in (claim(HOLDER_B), status()):
        refused = run(machine_b, payload)
        error = refused.body["error"]
        assert (refused.status, error["code"], error["retryable"]) == (
            503,
            "DEPENDENCY_UNAVAILABLE",
            True,
        )
        assert "fence.key" in error["message"]
    assert ok(machine_a, claim(HOLDER_A))["reused"] is True
    machine_a.close()
    machine_b.close()


def test_the_key_check_is_made_inside_the_checkpoint_script(redis_server: RedisServer) -> None:
    prefix = "test:key-check:"
    redis.Redis(host="127.0.0.1", port=redis_server.port).delete(f"{prefix}setting:fence-key")
    clock = ManualClock()
    limits = RateLimits(client_rpm=0, global_rpm=0)
    first = FenceService(
        RedisBackend(redis_server.url, key_check=key_check(KEY), prefix=prefix), KEY, clock, limits
    )
    other_key = bytes(reversed(KEY))
    second = FenceService(
        RedisBackend(redis_server.url, key_check=key_check(other_key), prefix=prefix),
        other_key,
        clock,
        limits,
    )
    assert ok(first, claim(HOLDER_A))["acquired"] is True
    assert run(second, claim(HOLDER_B)).body["error"]["code"] == "DEPENDENCY_UNAVAILABLE"
    first.close()
    second.close()


def _refused(service: FenceService) -> None:
    for payload in (claim(HOLDER_B), status()):
        reply = run(service, payload)
        error = reply.body["error"]
        assert (reply.status, error["code"], error["retryable"]) == (
            503,
            "DEPENDENCY_UNAVAILABLE",
            True,
        ), reply.body
        assert "keys/fence.key" in error["message"]
        assert "restore" in error["message"]


def test_a_deleted_fence_key_never_lets_a_second_holder_acquire_a_live_claim_sqlite(
    tmp_path: Path,
) -> None:
    first = fence_from_env(tmp_path, UNLIMITED)
    assert ok(first, claim(HOLDER_A))["generation"] == 1
    first.close()
    path = fence_key_path(tmp_path)
    original = path.read_bytes()
    path.unlink()  # an operator "cleaning up"
    regenerated = fence_from_env(tmp_path, UNLIMITED)
    _refused(regenerated)
    regenerated.close()
    path.write_bytes(original)  # restored from a backup
    path.chmod(0o600)
    restored = fence_from_env(tmp_path, UNLIMITED)
    contender = ok(restored, claim(HOLDER_B))
    assert (contender["acquired"], contender["generation"]) == (False, 1)
    restored.close()


def test_a_replaced_fence_key_is_refused_sqlite(tmp_path: Path) -> None:
    first = fence_from_env(tmp_path, UNLIMITED)
    ok(first, claim(HOLDER_A))
    path = fence_key_path(tmp_path)
    path.write_bytes(bytes(reversed(path.read_bytes())))
    second = fence_from_env(tmp_path, UNLIMITED)  # another server, started after the swap
    _refused(second)
    assert ok(first, claim(HOLDER_A))["reused"] is True  # the running one keeps its key
    first.close()
    second.close()


def test_a_fence_database_from_before_key_checks_adopts_the_key_it_was_made_with(
    tmp_path: Path,
) -> None:
    from workrail.fence.identity import load_or_create_fence_key
    from workrail.fence.sqlite_backend import SqliteBackend, sqlite_path

    key, _ = load_or_create_fence_key(tmp_path)
    older = FenceService(
        SqliteBackend(sqlite_path(tmp_path)), key, limits=RateLimits(client_rpm=0, global_rpm=0)
    )
    assert ok(older, claim(HOLDER_A))["generation"] == 1  # no key check recorded
    older.close()
    upgraded = fence_from_env(tmp_path, UNLIMITED)
    contender = ok(upgraded, claim(HOLDER_B))
    assert (contender["acquired"], contender["generation"]) == (False, 1)
    upgraded.close()
