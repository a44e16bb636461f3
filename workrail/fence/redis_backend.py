"""Valkey/Redis backend for several machines: every action is one atomic Lua script.

The decision runs inside Redis (`checkpoint.lua`, a port of `decide.py`), so contenders on
different machines are serialised by the server and a script either writes its whole
result or nothing. Time is passed in from the caller's clock; key TTLs only reclaim memory.

Nothing is contacted until the first request, so a server starts while Valkey/Redis is down
and answers DEPENDENCY_UNAVAILABLE per call until it is back. Every checkpoint script also
compares the caller's fence-key check digest with the one recorded (without expiry) by the
first machine, so a machine with another `keys/fence.key` is refused on every action, not
only at start-up.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from importlib import resources
from typing import Any, Final

import redis
from returns.result import Failure, Success

from workrail.fence.backend import (
    REPLAY_RETENTION_MS,
    BackendUnavailable,
    FenceKeyMismatch,
    Gate,
    StoredReply,
)
from workrail.fence.contract import MAX_GENERATIONS, MAX_OBSERVATIONS
from workrail.fence.decide import SAFETY_MARGIN_MS, Decision, Rejection
from workrail.fence.ratelimit import WINDOW_MS, RateLimits, retry_after_seconds, window_of
from workrail.fence.record import CheckpointRecord, Command, Outcome

DEFAULT_PREFIX: Final = "workrail:fence:"
_TIMEOUT_S: Final = 5.0
KEY_MISMATCH: Final = "key_mismatch"

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


@contextmanager
def _answering() -> Iterator[None]:
    """Every Valkey/Redis failure (refused, timed out, script error) is BackendUnavailable."""
    try:
        yield
    except redis.RedisError as exc:
        raise BackendUnavailable(f"Valkey/Redis did not answer: {exc}") from exc


class RedisBackend:
    """Shared backend selected by `WORKRAIL_FENCE_URL=redis://…` (Valkey speaks the same).

    `key_check` is the digest (`identity.key_check`) of the fence key the service digests
    identities with; the checkpoint script refuses to act for a different one.
    """

    name = "redis"

    def __init__(self, url: str, *, key_check: str, prefix: str = DEFAULT_PREFIX) -> None:
        self._prefix = prefix
        self._key_check = key_check
        # Connections are made on first use, so an outage at start-up is a per-call error.
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
        with _answering():
            raw = self._checkpoint(
                keys=[self._key("cp", hex_id), self._key("setting", "fence-key")],
                args=[
                    now_ms,
                    json.dumps(asdict(command)),
                    MAX_GENERATIONS,
                    MAX_OBSERVATIONS,
                    SAFETY_MARGIN_MS,
                    self._key_check,
                ],
            )
        doc: dict[str, Any] = json.loads(raw)
        if doc.get("reason") == KEY_MISMATCH:
            raise FenceKeyMismatch("the shared store records another fence key")
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
        with _answering():
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
        if answer == -1:
            return "paused"
        return "open" if answer == 0 else answer

    def is_paused(self) -> bool:
        with _answering():
            return bool(self._client.exists(self._key("setting", "paused")))

    def set_paused(self, paused: bool) -> None:
        key = self._key("setting", "paused")
        with _answering():
            if paused:
                self._client.set(key, "1")
            else:
                self._client.delete(key)

    def recall(self, key: str, now_ms: int) -> StoredReply | None:
        with _answering():
            raw = self._client.get(self._key("replay", key))
        if raw is None:
            return None
        doc = json.loads(raw)
        if doc["expires_ms"] <= now_ms:
            return None
        return StoredReply.from_doc(doc)

    def remember(self, key: str, reply: StoredReply, now_ms: int) -> None:
        doc = {**reply.doc(), "expires_ms": now_ms + REPLAY_RETENTION_MS}
        with _answering():
            self._client.set(
                self._key("replay", key), json.dumps(doc), px=REPLAY_RETENTION_MS, nx=True
            )

    def stored_bytes(self) -> bytes:
        chunks: list[bytes] = []
        with _answering():
            for name in self._client.scan_iter(match=f"{self._prefix}*"):
                chunks.append(str(name).encode())
                value = self._client.get(name)
                if value is not None:
                    chunks.append(str(value).encode())
        return b"\n".join(chunks)

    def close(self) -> None:
        self._client.close()
