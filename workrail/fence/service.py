"""The imperative shell around the core: validate, gate, replay, apply, render.

One `FenceService` serves both surfaces (MCP tool and HTTP). It owns the clock and the
fence key; the backend owns durable state. Every outcome, including a backend outage, comes
back as a `Reply` holding either the contract's output or an error envelope.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError
from returns.result import Success

from workrail.fence.backend import BackendUnavailable, FenceBackend, StoredReply
from workrail.fence.contract import INPUT_ADAPTER
from workrail.fence.errors import FenceError
from workrail.fence.identity import key_check, keyed_hex, load_or_create_fence_key, to_command
from workrail.fence.ratelimit import RateLimits
from workrail.fence.render import render, to_epoch_ms
from workrail.fence.sqlite_backend import SqliteBackend, sqlite_path

Clock = Callable[[], datetime]
FENCE_URL_ENV: Final = "WORKRAIL_FENCE_URL"
IDEMPOTENCY_KEY_RE: Final = re.compile(r"^[A-Za-z0-9._:-]{8,255}$")
POSTGRES_FENCE_SCHEMES: Final = ("postgresql://", "postgres://")
FENCE_URL_HINT: Final = (
    f"{FENCE_URL_ENV} must be empty (follow the session store), 'sqlite', a redis:// URL"
    " or a postgresql:// URL"
)
MUTATING_ACTIONS: Final = frozenset({"claim", "transition", "abandon"})
_MAX_REPORTED_ERRORS: Final = 5

log = logging.getLogger("workrail.fence")


def system_clock() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Reply:
    """One answer: HTTP-style status, JSON body, and retry advice for retryable failures."""

    status: int
    body: dict[str, Any]
    retry_after: int | None = None
    replayed: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.body.get("ok"))


def error_reply(error: FenceError) -> Reply:
    return Reply(error.http_status, error.envelope(), error.retry_after_seconds)


def _describe_validation(exc: ValidationError) -> str:
    # Location and rule only: pydantic's `input` would echo raw identifiers.
    parts = [
        f"{'.'.join(str(p) for p in err['loc']) or '(body)'}: {err['msg']}"
        for err in exc.errors(include_url=False, include_input=False)[:_MAX_REPORTED_ERRORS]
    ]
    return "Request does not match input_schema: " + "; ".join(parts)


class FenceService:
    """Executes checkpoint requests against one backend with one key and one clock."""

    def __init__(
        self,
        backend: FenceBackend,
        key: bytes,
        clock: Clock = system_clock,
        limits: RateLimits | None = None,
    ) -> None:
        self.backend = backend
        self.limits = limits or RateLimits()
        self._key = key
        self._clock = clock

    def now_ms(self) -> int:
        return to_epoch_ms(self._clock())

    def execute(
        self,
        payload: object,
        *,
        client_id: str,
        idempotency_key: str | None = None,
        require_idempotency_key: bool = False,
    ) -> Reply:
        """Run one request. `require_idempotency_key` is the HTTP surface's rule."""
        try:
            request = INPUT_ADAPTER.validate_python(payload)
        except ValidationError as exc:
            return error_reply(FenceError("INVALID_INPUT", _describe_validation(exc)))
        mutating = request.action in MUTATING_ACTIONS
        if idempotency_key is not None and not IDEMPOTENCY_KEY_RE.fullmatch(idempotency_key):
            return error_reply(
                FenceError(
                    "INVALID_INPUT",
                    "Idempotency-Key must be 8-255 characters of A-Z a-z 0-9 . _ : -.",
                )
            )
        if mutating and require_idempotency_key and idempotency_key is None:
            return error_reply(
                FenceError(
                    "INVALID_INPUT",
                    f"{request.action} needs an Idempotency-Key header; send a fresh random"
                    " key and reuse it only to retry the same request.",
                )
            )
        try:
            now_ms = self.now_ms()  # a database clock may be unreachable too
            return self._execute(request, client_id, idempotency_key if mutating else None, now_ms)
        except BackendUnavailable as exc:
            log.warning("fence backend unavailable: %s", exc)
            return error_reply(
                FenceError("DEPENDENCY_UNAVAILABLE", exc.client_message, retry_after_seconds=1)
            )

    def _execute(
        self,
        request: Any,
        client_id: str,
        idempotency_key: str | None,
        now_ms: int,
    ) -> Reply:
        gate = self.backend.gate(keyed_hex(self._key, "client", client_id), now_ms, self.limits)
        if gate == "paused":
            return error_reply(
                FenceError(
                    "TOOL_PAUSED",
                    "An operator paused the checkpoint tool; retry after it is resumed.",
                    retry_after_seconds=30,
                )
            )
        if gate != "open":
            return error_reply(
                FenceError(
                    "RATE_LIMITED",
                    f"Request budget used up; retry after {gate} s.",
                    retry_after_seconds=gate,
                )
            )
        replay_key = request_digest = None
        if idempotency_key is not None:
            replay_key = keyed_hex(self._key, "idempotency", idempotency_key)
            request_digest = keyed_hex(self._key, "request", request.model_dump(mode="json"))
            kept = self.backend.recall(replay_key, now_ms)
            if kept is not None:
                if kept.request != request_digest:
                    return error_reply(
                        FenceError(
                            "INVALID_INPUT",
                            "This Idempotency-Key was first used with a different request;"
                            " use a fresh key for a new request.",
                        )
                    )
                return Reply(kept.status, kept.body, replayed=True)
        command = to_command(self._key, request)
        decision = self.backend.apply(command, now_ms)
        if isinstance(decision, Success):
            caller = getattr(command, "holder", None)
            output = render(request.action, decision.unwrap(), caller, now_ms)
            reply = Reply(200, {"ok": True, "result": output.model_dump(mode="json")})
        else:
            reply = error_reply(decision.failure().error())
        if replay_key is not None and request_digest is not None:
            try:
                self.backend.remember(
                    replay_key, StoredReply(request_digest, reply.status, reply.body), now_ms
                )
            except BackendUnavailable as exc:
                # The decision is already committed, so the caller gets it, not "unavailable".
                # Without the kept reply a retry under this key executes again, which these
                # actions tolerate: a claim is reused, a transition's observation replays, a
                # repeated abandon answers the same.
                log.warning("Idempotency-Key reply not kept (the action was applied): %s", exc)
        return reply

    def pause(self) -> None:
        self.backend.set_paused(True)

    def resume(self) -> None:
        self.backend.set_paused(False)

    def close(self) -> None:
        self.backend.close()


def open_fence_service(
    data_dir: Path,
    url: str | None = None,
    limits: RateLimits | None = None,
    clock: Clock = system_clock,
    *,
    allow_insecure_key: bool = False,
) -> FenceService:
    """SQLite in `data_dir` by default; Valkey/Redis when `url` is a redis:// URL;
    PostgreSQL when it is a postgresql:// URL (then time is the database's clock, whatever
    `clock` says: every replica measures TTLs by the same clock).

    Contacts no backend: each request connects (and checks that the checkpoints there were
    made with this `keys/fence.key`: on Redis in every action, on SQLite when the database
    is opened), so an outage or a replaced key is a per-call DEPENDENCY_UNAVAILABLE. Raises
    ValueError for a bad setting (URL, a corrupt fence key) and OSError when the fence key
    cannot be created or is not private to this user.
    """
    key, created = load_or_create_fence_key(data_dir, allow_insecure=allow_insecure_key)
    limits = limits or RateLimits()
    if not url or url == "sqlite":
        backend = SqliteBackend(
            sqlite_path(data_dir), key_check=key_check(key), key_created=created
        )
        return FenceService(backend, key, clock, limits)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from workrail.fence.redis_backend import RedisBackend

        return FenceService(RedisBackend(url, key_check=key_check(key)), key, clock, limits)
    if url.startswith(POSTGRES_FENCE_SCHEMES):
        from workrail.fence.postgres_backend import PostgresFenceBackend

        shared = PostgresFenceBackend(url, key_check=key_check(key))
        return FenceService(shared, key, shared.clock, limits)
    raise ValueError(FENCE_URL_HINT)
