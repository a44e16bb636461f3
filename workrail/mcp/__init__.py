"""The WorkRail MCP server (spec 40): tool schemas, the error envelope, transports.

`build_server` is loaded on first use, so that the stdio start-up path can import the
modules it needs from this package (the handshake, the wire) without the SDK."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workrail.mcp.server import build_server

__all__ = ["build_server"]


def __getattr__(name: str) -> Any:
    if name == "build_server":
        from workrail.mcp.server import build_server

        return build_server
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
