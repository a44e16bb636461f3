"""`python -m tests.mcp.sdk_probe ARGS`: `workrail ARGS` in this process, and at its end a
report on stderr of what a test cannot see from outside the process: whether the MCP SDK
was imported at all, and the method of every message the SDK's server received, in the
order it received them (seen through the SDK's own middleware hook, added to the server
the stdio start-up builds). The report is the last line of stderr, after REPORT.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from workrail.cli import main
from workrail.mcp import stdio_loading

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from workrail.engine.api import Engine
    from workrail.fence import FenceService

REPORT = "sdk-probe:"

received: list[str] = []
_build = stdio_loading._build_server


def _observed(engine: Engine, fence: FenceService | None, offers_content: bool) -> MCPServer:
    server = _build(engine, fence, offers_content)

    async def observe(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        received.append(ctx.method)
        return await call_next(ctx)

    server.middleware.insert(0, observe)
    return server


def sdk_loaded() -> bool:
    """Any module of the SDK's (its protocol types included): the lazy start-up needs none."""
    return any(name.split(".")[0] in {"mcp", "mcp_types"} for name in sys.modules)


if __name__ == "__main__":
    stdio_loading._build_server = _observed
    code = main(sys.argv[1:])
    report = {"sdk_loaded": sdk_loaded(), "received": received}
    print(REPORT + json.dumps(report), file=sys.stderr, flush=True)
    sys.exit(code)
