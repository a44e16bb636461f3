"""The WorkRail MCP server (spec 40): tool schemas, the error envelope, transports."""

from workrail.mcp.server import build_server

__all__ = ["build_server"]
