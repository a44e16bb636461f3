"""HTTP surface: GET describes the tool, POST executes one request.

Mutating actions need an Idempotency-Key header; a retry with the same key and body within
24 h gets the first response back (marked `Idempotent-Replayed: true`). Retryable failures
carry a Retry-After header. Meant to be mounted by `workrail serve` on loopback.
"""

from __future__ import annotations

import json
from typing import Final

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from workrail.fence.describe import ENDPOINT, describe_document
from workrail.fence.errors import FenceError
from workrail.fence.render import iso_ms
from workrail.fence.service import FenceService, Reply, error_reply

MAX_BODY_BYTES: Final = 16 * 1024


def _response(reply: Reply) -> JSONResponse:
    headers: dict[str, str] = {"Cache-Control": "no-store"}
    if reply.retry_after is not None:
        headers["Retry-After"] = str(reply.retry_after)
    if reply.replayed:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(reply.body, status_code=reply.status, headers=headers)


async def _read_at_most(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as it is known to exceed `limit` (never buffered whole)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def fence_routes(service: FenceService) -> list[Route]:
    """GET/POST /v1/tools/workflow-checkpoint for `service`."""

    async def describe(request: Request) -> Response:
        doc = describe_document(
            service.limits, service.backend.name, observed_at=iso_ms(service.now_ms())
        )
        return JSONResponse(doc)

    async def execute(request: Request) -> Response:
        raw = await _read_at_most(request, MAX_BODY_BYTES)
        if raw is None:
            return _response(
                error_reply(FenceError("INVALID_INPUT", "Request body is larger than 16 KiB."))
            )
        try:
            payload = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return _response(
                error_reply(FenceError("INVALID_INPUT", "Request body is not valid JSON."))
            )
        client = request.client.host if request.client is not None else "unknown"
        key = request.headers.get("idempotency-key")
        reply = await anyio.to_thread.run_sync(
            lambda: service.execute(
                payload,
                client_id=f"http:{client}",
                idempotency_key=key,
                require_idempotency_key=True,
            )
        )
        return _response(reply)

    return [
        Route(ENDPOINT, describe, methods=["GET"]),
        Route(ENDPOINT, execute, methods=["POST"]),
    ]
