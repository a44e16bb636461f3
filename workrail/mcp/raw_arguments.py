"""Tools that judge their own arguments: the SDK's argument model is bypassed, so every
bad argument reaches the agent as our error envelope, never as the SDK's message."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata


class RawArguments(FuncMetadata):
    """Passes the arguments through untouched, for the tool's own validation."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"arguments": dict(arguments_to_validate)}
