"""HTTP surface: GET describes the tool, POST executes one request.

Mutating actions need an Idempotency-Key header; a retry with the same key and body within
24 h gets the first response back (marked `Idempotent-Replayed: true`). Retryable failures
carry a Retry-After header. Meant to be mounted by `workrail serve` on loopback.

Browsers are kept out as `/mcp` keeps them out: a request whose `Origin` is neither a
loopback origin nor this server's own is refused (403), and a POST must say
`Content-Type: application/json` (415), which a page cannot send cross-site without a CORS
preflight this server never grants. Both refusals come before the rate limiter, so a web
page can neither call the tool nor spend the budget of a real local client.
"""

from __future__ import annotations

import json
from typing import Final
from urllib.parse import urlsplit

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from workrail.fence.describe import ENDPOINT, describe_document
from workrail.fence.errors import FenceError
from workrail.fence.render import iso_ms
from workrail.fence.service import FenceService, Reply, error_reply
from workrail.http_body import read_at_most

MAX_BODY_BYTES: Final = 16 * 1024
LOOPBACK_ORIGIN_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1"})


def _foreign_origin(request: Request) -> str | None:
    """The `Origin` header when it names a site other than a loopback one or this server
    (no `Origin`: not a browser's cross-site request, so allowed)."""
    origin = request.headers.get("origin")
    if origin is None:
        return None
    try:
        parts = urlsplit(origin)
        host = parts.hostname
    except ValueError:
        return origin
    if parts.scheme in ("http", "https") and host is not None:
        if host in LOOPBACK_ORIGIN_HOSTS:
            return None
        if parts.netloc == request.headers.get("host", ""):
            return None
    return origin


def _refused(request: Request, *, post: bool) -> Response | None:
    """403 for a foreign Origin, 415 for a POST that is not JSON; None to go on."""
    origin = _foreign_origin(request)
    if origin is not None:
        reply = error_reply(
            FenceError(
                "INVALID_INPUT",
                f"Cross-origin request refused (Origin {origin[:100]!r}): call this API from a "
                "local program (no Origin header) or a page of this server, not a web site.",
            )
        )
        return _response(Reply(403, reply.body))
    content_type = request.headers.get("content-type", "")
    if post and not content_type.lower().startswith("application/json"):
        reply = error_reply(
            FenceError("INVALID_INPUT", "POST needs Content-Type: application/json.")
        )
        return _response(Reply(415, reply.body))
    return None


def _response(reply: Reply) -> JSONResponse:
    headers: dict[str, str] = {"Cache-Control": "no-store"}
    if reply.retry_after is not None:
        headers["Retry-After"] = str(reply.retry_after)
    if reply.replayed:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(reply.body, status_code=reply.status, headers=headers)


def fence_routes(service: FenceService) -> list[Route]:
    """GET/POST /v1/tools/workflow-checkpoint for `service`."""

    async def describe(request: Request) -> Response:
        refused = _refused(request, post=False)
        if refused is not None:
            return refused
        doc = describe_document(
            service.limits, service.backend.name, observed_at=iso_ms(service.now_ms())
        )
        return JSONResponse(doc)

    async def execute(request: Request) -> Response:
        refused = _refused(request, post=True)
        if refused is not None:
            return refused
        raw = await read_at_most(request, MAX_BODY_BYTES)
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
