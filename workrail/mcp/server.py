"""The MCP server: the workflow tools, session export/import and (when a fence service is
given) effect_checkpoint, served on stdio or Streamable HTTP.

Tools are registered as prebuilt SDK `Tool`s whose advertised input schema is ours and whose
argument step passes the raw arguments through, so every failure (bad input included)
reaches the agent as the spec's JSON error envelope rather than the SDK's prose.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent
from mcp_types import GetPromptResult, ToolAnnotations
from mcp_types import Prompt as MCPPrompt
from mcp_types import Resource as MCPResource
from mcp_types import ResourceTemplate as MCPResourceTemplate
from pydantic import AnyUrl
from returns.result import Failure

from workrail import __version__
from workrail.engine.api import Engine
from workrail.mcp import catalog_surface
from workrail.mcp.content import has_content
from workrail.mcp.raw_arguments import RawArguments
from workrail.mcp.resource_listing import RESOURCE_TEMPLATES, resource_entries
from workrail.mcp.resume_prompt import RESUME_PROMPT, get_resume_prompt, resume_prompt
from workrail.mcp.schemas import INSTRUCTIONS, ToolSpec
from workrail.mcp.session_resources import is_session_uri, listing_error, read_session_resource
from workrail.mcp.tool_calls import Handler, ToolFailure, call_tool, engine_tools, tool_text

if TYPE_CHECKING:
    from workrail.fence import FenceService


def _text(payload: dict[str, Any]) -> list[TextContent]:
    return [TextContent(type="text", text=tool_text(payload))]


def ok_result(payload: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=_text(payload), structured_content=payload)


def error_result(err: ToolFailure) -> CallToolResult:
    """The envelope as JSON text only: `structuredContent` is what the tool's outputSchema
    describes (success), and a client checking it would refuse the envelope (docs/mcp.md,
    "Errors")."""
    return CallToolResult(content=_text(err.to_envelope()), is_error=True)


async def run_tool(spec: ToolSpec, handler: Handler, arguments: dict[str, Any]) -> CallToolResult:
    """Validate and run the (blocking, fsync'ing) engine call off the event loop, wrap."""
    outcome = await anyio.to_thread.run_sync(functools.partial(call_tool, spec, handler, arguments))
    if isinstance(outcome, Failure):
        return error_result(outcome.failure())
    return ok_result(outcome.unwrap())


def _tool(spec: ToolSpec, handler: Handler) -> Tool:
    async def call(arguments: dict[str, Any]) -> CallToolResult:
        return await run_tool(spec, handler, arguments)

    call.__name__ = spec.name
    return Tool(
        fn=call,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=spec.input_schema,
        fn_metadata=RawArguments(arg_model=ArgModelBase, output_schema=spec.output_schema),
        is_async=True,
        annotations=ToolAnnotations(
            read_only_hint=spec.annotations.read_only,
            destructive_hint=False,
            idempotent_hint=spec.annotations.idempotent,
            open_world_hint=False,
        ),
    )


def _prompts(engine: Engine) -> list[MCPPrompt]:
    reserved = frozenset({RESUME_PROMPT})
    return [*catalog_surface.list_prompts(engine, reserved), resume_prompt()]


def _prompt(engine: Engine, name: str, arguments: dict[str, Any] | None) -> GetPromptResult:
    if name == RESUME_PROMPT:
        return get_resume_prompt(arguments)
    return catalog_surface.get_prompt(engine, name, arguments)


def _resources(engine: Engine) -> list[MCPResource]:
    """What the stdio start-up answers without the SDK, too (workrail.mcp.resource_listing)."""
    found = resource_entries(engine)
    if isinstance(found, Failure):
        raise listing_error(found.failure())
    return [MCPResource.model_validate(entry) for entry in found.unwrap()]


def _resource(engine: Engine, uri: str) -> str:
    if is_session_uri(uri):
        return read_session_resource(engine, uri)
    return catalog_surface.read_resource(engine, uri)


class WorkrailServer(MCPServer):
    """MCPServer whose prompts and resources are read from the workflow catalog and the
    session store on every request, off the event loop like the tools: one prompt per
    workflow plus `resume`, workflow definitions and sessions as resources."""

    def __init__(self, engine: Engine, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._engine = engine

    async def list_prompts(self) -> list[MCPPrompt]:
        return await anyio.to_thread.run_sync(_prompts, self._engine)

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Any, Any] | None = None,
    ) -> GetPromptResult:
        return await anyio.to_thread.run_sync(_prompt, self._engine, name, arguments)

    async def list_resources(self) -> list[MCPResource]:
        return await anyio.to_thread.run_sync(_resources, self._engine)

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:
        return [MCPResourceTemplate.model_validate(t) for t in RESOURCE_TEMPLATES]

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> list[ReadResourceContents]:
        text = await anyio.to_thread.run_sync(_resource, self._engine, str(uri))
        return [ReadResourceContents(content=text, mime_type="application/json")]


_CATALOG_METHODS = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
)


def build_server(
    engine: Engine, fence: FenceService | None = None, *, offers_content: bool | None = None
) -> MCPServer:
    """An MCPServer exposing the WorkRail tools over `engine`, plus `effect_checkpoint`
    when a fence service is given (the caller owns it and closes it). `offers_content` is
    `has_content(engine)` when the caller has already decided it (the stdio start-up
    answers `initialize` with it before the server is built)."""
    pairs = engine_tools(engine)
    prebuilt = [_tool(spec, handler) for spec, handler in pairs]
    if fence is not None:
        from workrail.mcp.fence_tool import effect_checkpoint_tool

        prebuilt.append(effect_checkpoint_tool(fence))
    # subscriptions=False: WorkRail never publishes list or resource changes (prompts and
    # resources are re-read on every list instead), so it serves no subscriptions/listen;
    # at 2026-07-28 the SDK derives listChanged and resources.subscribe from that handler
    # alone, and would otherwise advertise notifications that never come.
    server = WorkrailServer(
        engine,
        name="workrail",
        version=__version__,
        instructions=INSTRUCTIONS,
        tools=prebuilt,
        subscriptions=False,
    )
    if not (has_content(engine) if offers_content is None else offers_content):
        # Advertise only capabilities with content: without a workflow or a session there
        # is no prompt and no resource, so the methods (and thus the capabilities) are not
        # served.
        handlers = server._lowlevel_server._request_handlers
        for method in _CATALOG_METHODS:
            handlers.pop(method, None)
    return server
