"""The server WorkRail's stdio transport runs: the one `workrail mcp --http` runs, less the
OpenTelemetry middleware. Apart from workrail.mcp.stdio_serve, which must not import the
SDK, so that the catalogue (workrail.mcp.catalog_gen) is made from the same server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.server._otel import OpenTelemetryMiddleware

import workrail.mcp.stdio  # noqa: F401 (loaded with the server, off the event loop)
from workrail.mcp.server import build_server

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from workrail.engine.api import Engine
    from workrail.fence import FenceService


def build_stdio_server(
    engine: Engine, fence: FenceService | None, *, offers_content: bool | None = None
) -> MCPServer:
    """The server WorkRail's stdio transport runs (and whose answers the catalogue holds)."""
    server = build_server(engine, fence, offers_content=offers_content)
    # No OpenTelemetry span per message on this path: without an exporter it only costs.
    server.middleware[:] = [
        m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)
    ]
    return server
