"""Fencing external side effects: the opaque workflow checkpoint (claim / transition /
status / abandon), with an embedded SQLite backend and a Valkey/Redis backend.

Wiring: `open_fence_service` builds the service; `mcp_tool.effect_checkpoint_tool` builds
the MCP tool for `MCPServer(tools=...)`; `http.fence_routes` gives the HTTP routes;
`cli_commands.add_subcommands` adds the CLI.
"""

from workrail.fence.service import FenceService, Reply, open_fence_service, system_clock

__all__ = ["FenceService", "Reply", "open_fence_service", "system_clock"]
