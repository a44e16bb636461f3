"""Valkey/Redis backend for several machines: every action is one atomic Lua script.

The decision runs inside Redis (`checkpoint.lua`, a port of `decide.py`), so contenders on
different machines are serialised by the server and a script either writes its whole
result or nothing. Time is passed in from the caller's clock; key TTLs only reclaim memory.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from importlib import resources
from typing import Any, Final

import redis
from returns.result import Failure, Success

from workrail.fence.backend import (
    REPLAY_RETENTION_MS,
    BackendUnavailable,
    Gate,
    StoredReply,
)
from workrail.fence.contract import MAX_GENERATIONS, MAX_OBSERVATIONS, MAX_STATE_TTL_SECONDS
from workrail.fence.decide import SAFETY_MARGIN_MS, Decision, Rejection
from workrail.fence.ratelimit import WINDOW_MS, RateLimits, retry_after_seconds, window_of
from workrail.fence.record import CheckpointRecord, Command, Outcome

DEFAULT_PREFIX: Final = "workrail:fence:"
_TIMEOUT_S: Final = 5.0
KEY_CHECK_TTL_MS: Final = MAX_STATE_TTL_SECONDS * 1000

_GATE_LUA: Final = """
-- KEYS: paused flag, client counter, global counter
-- ARGV: client limit, global limit, retry-after seconds, counter ttl ms
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
local client_limit, global_limit = tonumber(ARGV[1]), tonumber(ARGV[2])
if client_limit > 0 and tonumber(redis.call('GET', KEYS[2]) or '0') >= client_limit then
  return tonumber(ARGV[3])
end
if global_limit > 0 and tonumber(redis.call('GET', KEYS[3]) or '0') >= global_limit then
  return tonumber(ARGV[3])
end
for i = 2, 3 do
  redis.call('INCR', KEYS[i])
  redis.call('PEXPIRE', KEYS[i], ARGV[4])
end
return 0
"""


def _checkpoint_lua() -> str:
    return resources.files("workrail.fence").joinpath("checkpoint.lua").read_text("utf-8")


class RedisBackend:
    """Shared backend selected by `WORKRAIL_FENCE_URL=redis://…` (Valkey speaks the same)."""

    name = "redis"

    def __init__(self, url: str, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._prefix = prefix
        self._client = redis.Redis.from_url(
            url,
            socket_timeout=_TIMEOUT_S,
            socket_connect_timeout=_TIMEOUT_S,
            decode_responses=True,
        )
        self._checkpoint = self._client.register_script(_checkpoint_lua())
        self._gate = self._client.register_script(_GATE_LUA)

    def _key(self, kind: str, name: str) -> str:
        return f"{self._prefix}{kind}:{name}"

    def apply(self, command: Command, now_ms: int) -> Decision:
        hex_id = command.workflow_hash.removeprefix("hmac-sha256:")
        try:
            raw = self._checkpoint(
                keys=[self._key("cp", hex_id)],
                args=[
                    now_ms,
                    json.dumps(asdict(command)),
                    MAX_GENERATIONS,
                    MAX_OBSERVATIONS,
                    SAFETY_MARGIN_MS,
                ],
            )
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Valkey/Redis did not answer: {exc}") from exc
        doc: dict[str, Any] = json.loads(raw)
        if "reason" in doc:
            return Failure(Rejection(str(doc["reason"])))
        flags: dict[str, bool] = doc["flags"]
        return Success(
            Outcome(
                record=CheckpointRecord.model_validate(doc["record"]),
                changed=flags["changed"],
                acquired=flags["acquired"],
                recovered=flags["recovered"],
                reused=flags["reused"],
                transitioned=flags["transitioned"],
                observation_replayed=flags["observation_replayed"],
                abandoned=flags["abandoned"],
            )
        )

    def gate(self, client: str, now_ms: int, limits: RateLimits) -> Gate:
        window = window_of(now_ms)
        try:
            answer = int(
                self._gate(
                    keys=[
                        self._key("setting", "paused"),
                        self._key("budget", f"{client}:{window}"),
                        self._key("budget", f"global:{window}"),
                    ],
                    args=[
                        limits.client_rpm,
                        limits.global_rpm,
                        retry_after_seconds(now_ms),
                        2 * WINDOW_MS,
                    ],
                )
            )
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Valkey/Redis did not answer: {exc}") from exc
        if answer == -1:
            return "paused"
        return "open" if answer == 0 else answer

    def is_paused(self) -> bool:
        try:
            return bool(self._client.exists(self._key("setting", "paused")))
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Valkey/Redis did not answer: {exc}") from exc

    def set_paused(self, paused: bool) -> None:
        key = self._key("setting", "paused")
        try:
            if paused:
                self._client.set(key, "1")
            else:
                self._client.delete(key)
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Valkey/Redis did not answer: {exc}") from exc

    def recall(self, key: str, now_ms: int) -> StoredReply | None:
        try:
            raw = self._client.get(self._key("replay", key))
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Valkey/Redis did not answer: {exc}") from exc
        if raw is None:
            return None
        doc = json.loads(raw)
        if doc["expires_ms"] <= now_ms:
            return None
        return StoredReply(request=doc["request"], status=doc["status"], body=doc["body"])

    def remember(self, key: str, reply: StoredReply, now_ms: int) -> None:
        doc = {
            "request": reply.request,
            "status": reply.status,
            "body": reply.body,
            "expires_ms": now_ms + REPLAY_RETENTION_MS,
        }
        try:
            self._client.set(
                self._key("replay", key), json.dumps(doc), px=REPLAY_RETENTION_MS, nx=True
            )
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Valkey/Redis did not answer: {exc}") from exc

    def agree_on_key(self, check: str) -> bool:
        """Record the fence-key check digest once; False if another machine uses another key."""
        key = self._key("setting", "key-check")
        try:
            # Expires with the longest state lifetime, so a keyring rotated on every machine
            # is accepted again once no checkpoint digested with the old key can be live.
            self._client.set(key, check, nx=True, px=KEY_CHECK_TTL_MS)
            return self._client.get(key) == check
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Valkey/Redis did not answer: {exc}") from exc

    def stored_bytes(self) -> bytes:
        chunks: list[bytes] = []
        try:
            for name in self._client.scan_iter(match=f"{self._prefix}*"):
                chunks.append(str(name).encode())
                value = self._client.get(name)
                if value is not None:
                    chunks.append(str(value).encode())
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Valkey/Redis did not answer: {exc}") from exc
        return b"\n".join(chunks)

    def close(self) -> None:
        self._client.close()
