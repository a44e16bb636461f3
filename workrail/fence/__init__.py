"""Fencing external side effects: the opaque workflow checkpoint (claim / transition /
status / abandon), with an embedded SQLite backend and a Valkey/Redis backend.

This package holds the decider, its ports and the backends; `open_fence_service` builds
the service. Its surfaces live with the other transports: the MCP tool in
`workrail.mcp.fence_tool`, the HTTP routes in `workrail.mcp.fence_routes`, the command in
`workrail.cli.fence`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Loaded on first use (PEP 562): importing `workrail.fence.ratelimit` for the
# configuration then does not start the service's backends and decider.
if TYPE_CHECKING:
    from workrail.fence.service import FenceService, Reply, open_fence_service, system_clock

__all__ = ["FenceService", "Reply", "open_fence_service", "system_clock"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("workrail.fence.service"), name)
    globals()[name] = value
    return value
