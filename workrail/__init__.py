"""WorkRail: a workflow-enforcement MCP server with a durable, replayable event log."""

__version__ = "0.1.0"
