"""Reading an HTTP request body with a size limit, shared by the HTTP transports (the
console's forms and the effect fence's JSON): a body is refused as soon as it is known to
be too big, by its Content-Length or while it streams in (a chunked body has none), so a
client can never make the server buffer more than the limit."""

from __future__ import annotations

from starlette.requests import Request


async def read_at_most(request: Request, limit: int) -> bytes | None:
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
