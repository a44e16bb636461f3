"""Fencing external side effects: the opaque workflow checkpoint (claim / transition /
status / abandon), with an embedded SQLite backend and a Valkey/Redis backend.

This package holds the decider, its ports and the backends; `open_fence_service` builds
the service. Its surfaces live with the other transports: the MCP tool in
`workrail.mcp.fence_tool`, the HTTP routes in `workrail.mcp.fence_routes`, the command in
`workrail.cli.fence`.
"""

from workrail.fence.service import FenceService, Reply, open_fence_service, system_clock

__all__ = ["FenceService", "Reply", "open_fence_service", "system_clock"]
