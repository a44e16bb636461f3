"""The MCP server: the workflow tools, session export/import and (when a fence service is
given) effect_checkpoint, served on stdio or Streamable HTTP.

Tools are registered as prebuilt SDK `Tool`s whose advertised input schema is ours and whose
argument step passes the raw arguments through, so every failure (bad input included)
reaches the agent as the spec's JSON error envelope rather than the SDK's prose.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent
from mcp_types import GetPromptResult
from mcp_types import Prompt as MCPPrompt
from mcp_types import Resource as MCPResource
from mcp_types import ResourceTemplate as MCPResourceTemplate
from pydantic import AnyUrl
from returns.result import Failure, Result

from workrail import __version__
from workrail.engine.api import Engine, EngineError, error
from workrail.mcp import catalog_surface
from workrail.mcp.bundles import BundleToolError, export_tool, import_tool
from workrail.mcp.content import has_content
from workrail.mcp.normalize import normalize_arguments
from workrail.mcp.raw_arguments import RawArguments
from workrail.mcp.resume_prompt import RESUME_PROMPT, get_resume_prompt, resume_prompt
from workrail.mcp.resume_tool import RESUME_SESSION, resume_handler
from workrail.mcp.schemas import (
    CHECKPOINT_WORKFLOW,
    CONTINUE_WORKFLOW,
    EXPORT_SESSION,
    IMPORT_SESSION,
    INSPECT_WORKFLOW,
    INSTRUCTIONS,
    LIST_WORKFLOWS,
    START_WORKFLOW,
    ToolSpec,
)
from workrail.mcp.session_resources import (
    is_session_uri,
    list_session_resources,
    read_session_resource,
    session_template,
)
from workrail.mcp.validation import validate_arguments

if TYPE_CHECKING:
    from workrail.fence import FenceService

log = logging.getLogger("workrail.mcp")

ToolFailure = EngineError | BundleToolError
"""Engine errors use the spec's closed set; bundle errors keep issue #6's own codes."""

Handler = Callable[[dict[str, Any]], Result[dict[str, Any], ToolFailure]]

WORKFLOW_ID_PLACEHOLDER = "<workflowId>"


def _text(payload: dict[str, Any]) -> list[TextContent]:
    # 2-space indent, non-ASCII kept raw: what the reference's JSON.stringify sends.
    return [TextContent(type="text", text=json.dumps(payload, indent=2, ensure_ascii=False))]


def ok_result(payload: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=_text(payload), structured_content=payload)


def error_result(err: ToolFailure) -> CallToolResult:
    """The envelope as JSON text only: `structuredContent` is what the tool's outputSchema
    describes (success), and a client checking it would refuse the envelope (docs/mcp.md,
    "Errors")."""
    return CallToolResult(content=_text(err.to_envelope()), is_error=True)


def _start_call(workflow_id: str) -> dict[str, Any]:
    return {"tool": "start_workflow", "params": {"workflowId": workflow_id}}


class WorkrailTools:
    """Argument unpacking for each tool; the engine does all the deciding."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def list_workflows(self, arguments: dict[str, Any]) -> Result[dict[str, Any], EngineError]:
        def guide(body: dict[str, Any]) -> dict[str, Any]:
            # A placeholder id fails the workflowId pattern, so a template sent verbatim is
            # rejected instead of starting something the agent did not choose.
            ids = [w["workflowId"] for w in body["workflows"] if w.get("workflowHash")]
            chosen = ids[0] if len(ids) == 1 else WORKFLOW_ID_PLACEHOLDER
            return {**body, "nextIntent": "start_workflow", "nextCall": _start_call(chosen)}

        return self.engine.list_workflows().map(guide)

    def inspect_workflow(self, arguments: dict[str, Any]) -> Result[dict[str, Any], EngineError]:
        workflow_id = arguments["workflowId"]
        found = self.engine.inspect_workflow(workflow_id, arguments.get("mode", "preview"))
        return found.map(
            lambda body: {
                **body,
                "nextIntent": "start_workflow",
                "nextCall": _start_call(workflow_id),
            }
        )

    def start_workflow(self, arguments: dict[str, Any]) -> Result[dict[str, Any], EngineError]:
        return self.engine.start_workflow(
            arguments["workflowId"], arguments.get("context"), arguments.get("workspacePath")
        )

    def continue_workflow(self, arguments: dict[str, Any]) -> Result[dict[str, Any], EngineError]:
        context = arguments.get("context")
        if "continueToken" in arguments:
            given = arguments.get("output")
            intent = arguments.get("intent") or ("advance" if given is not None else "rehydrate")
            return self.engine.continue_with(
                arguments["continueToken"],
                advance=intent == "advance",
                notes_markdown=(given or {}).get("notesMarkdown"),
                artifacts=(given or {}).get("artifacts"),
                context=context,
            )
        if arguments["intent"] == "rehydrate":
            return self.engine.rehydrate(arguments["stateToken"], context)
        output = arguments.get("output") or {}
        return self.engine.advance(
            arguments["stateToken"],
            arguments["ackToken"],
            notes_markdown=output.get("notesMarkdown"),
            artifacts=output.get("artifacts"),
            context=context,
        )

    def checkpoint_workflow(self, arguments: dict[str, Any]) -> Result[dict[str, Any], EngineError]:
        return self.engine.checkpoint(arguments["checkpointToken"])

    def export_session(self, arguments: dict[str, Any]) -> Result[dict[str, Any], ToolFailure]:
        return export_tool(self.engine, arguments)

    def import_session(self, arguments: dict[str, Any]) -> Result[dict[str, Any], ToolFailure]:
        return import_tool(self.engine, arguments)


def _validated_call(
    spec: ToolSpec, handler: Handler, arguments: dict[str, Any]
) -> Result[dict[str, Any], ToolFailure]:
    """Validation and the engine call, together in one worker thread: judging hostile
    arguments is work too, and must not hold up other clients on the event loop."""
    normalized = normalize_arguments(spec.name, arguments)
    problem = validate_arguments(spec.name, normalized.arguments, normalized.conflicts)
    if problem is not None:
        log.info("%s rejected arguments: %s", spec.name, problem.details.get("validationErrors"))
        return Failure(problem)
    answer = handler(normalized.arguments)
    if not normalized.warnings:
        return answer
    return answer.map(
        lambda body: {**body, "warnings": [*normalized.warnings, *body.get("warnings", ())]}
    )


async def run_tool(spec: ToolSpec, handler: Handler, arguments: dict[str, Any]) -> CallToolResult:
    """Validate and run the (blocking, fsync'ing) engine call off the event loop, wrap."""
    started = time.perf_counter()
    try:
        outcome = await anyio.to_thread.run_sync(
            functools.partial(_validated_call, spec, handler, arguments)
        )
    except Exception:
        # The agent still gets an envelope; the traceback stays in the server log.
        log.exception("%s failed unexpectedly", spec.name)
        return error_result(error("INTERNAL_ERROR", f"{spec.name} failed unexpectedly."))
    elapsed_ms = (time.perf_counter() - started) * 1000
    if isinstance(outcome, Failure):
        err = outcome.failure()
        log.info("%s -> %s in %.1f ms: %s", spec.name, err.code, elapsed_ms, err.message)
        return error_result(err)
    log.debug("%s ok in %.1f ms", spec.name, elapsed_ms)
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
        annotations=spec.annotations,
    )


def _prompts(engine: Engine) -> list[MCPPrompt]:
    reserved = frozenset({RESUME_PROMPT})
    return [*catalog_surface.list_prompts(engine, reserved), resume_prompt()]


def _prompt(engine: Engine, name: str, arguments: dict[str, Any] | None) -> GetPromptResult:
    if name == RESUME_PROMPT:
        return get_resume_prompt(arguments)
    return catalog_surface.get_prompt(engine, name, arguments)


def _resources(engine: Engine) -> list[MCPResource]:
    return [*catalog_surface.list_resources(engine), *list_session_resources(engine)]


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
        return [*catalog_surface.list_resource_templates(), session_template()]

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
    tools = WorkrailTools(engine)
    pairs: list[tuple[ToolSpec, Handler]] = [
        (LIST_WORKFLOWS, tools.list_workflows),
        (INSPECT_WORKFLOW, tools.inspect_workflow),
        (START_WORKFLOW, tools.start_workflow),
        (CONTINUE_WORKFLOW, tools.continue_workflow),
        (CHECKPOINT_WORKFLOW, tools.checkpoint_workflow),
        (EXPORT_SESSION, tools.export_session),
        (IMPORT_SESSION, tools.import_session),
        (RESUME_SESSION, resume_handler(engine)),
    ]
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
