"""The workflow tools' calls without the SDK: argument unpacking, validation and the
engine call, and the text an answer carries. The SDK's server (workrail.mcp.server) wraps
these outcomes in its `CallToolResult`; the stdio start-up (workrail.mcp.early_call) writes
the same answer itself while the SDK is still loading."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from returns.result import Failure, Result

from workrail.engine.api import Engine, EngineError, error
from workrail.mcp.normalize import normalize_arguments
from workrail.mcp.resume_tool import RESUME_SESSION, resume_handler
from workrail.mcp.schemas import (
    CHECKPOINT_WORKFLOW,
    CONTINUE_WORKFLOW,
    EXPORT_SESSION,
    IMPORT_SESSION,
    INSPECT_WORKFLOW,
    LIST_WORKFLOWS,
    START_WORKFLOW,
    ToolSpec,
)
from workrail.mcp.validation import validate_arguments

if TYPE_CHECKING:
    from workrail.mcp.bundles import BundleToolError

log = logging.getLogger("workrail.mcp")

ToolFailure: TypeAlias = "EngineError | BundleToolError"
"""Engine errors use the spec's closed set; bundle errors keep issue #6's own codes (their
module loads with the first bundle call)."""

Handler = Callable[[dict[str, Any]], Result[dict[str, Any], ToolFailure]]

WORKFLOW_ID_PLACEHOLDER = "<workflowId>"


def tool_text(payload: dict[str, Any]) -> str:
    """An answer's text: 2-space indent, non-ASCII kept raw, what the reference's
    JSON.stringify sends."""
    return json.dumps(payload, indent=2, ensure_ascii=False)


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
        from workrail.mcp.bundles import export_tool

        return export_tool(self.engine, arguments)

    def import_session(self, arguments: dict[str, Any]) -> Result[dict[str, Any], ToolFailure]:
        from workrail.mcp.bundles import import_tool

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


def engine_tools(engine: Engine) -> list[tuple[ToolSpec, Handler]]:
    """Every engine tool with its handler, in the order `tools/list` shows them."""
    tools = WorkrailTools(engine)
    return [
        (LIST_WORKFLOWS, tools.list_workflows),
        (INSPECT_WORKFLOW, tools.inspect_workflow),
        (START_WORKFLOW, tools.start_workflow),
        (CONTINUE_WORKFLOW, tools.continue_workflow),
        (CHECKPOINT_WORKFLOW, tools.checkpoint_workflow),
        (EXPORT_SESSION, tools.export_session),
        (IMPORT_SESSION, tools.import_session),
        (RESUME_SESSION, resume_handler(engine)),
    ]


def unexpected_failure(tool_name: str) -> EngineError:
    """What a call that failed unexpectedly answers (its traceback stays in the log)."""
    return error("INTERNAL_ERROR", f"{tool_name} failed unexpectedly.")


def call_tool(
    spec: ToolSpec, handler: Handler, arguments: dict[str, Any]
) -> Result[dict[str, Any], ToolFailure]:
    """One call, blocking (it fsyncs): the tool's payload, or the failure to answer with;
    an unexpected exception becomes INTERNAL_ERROR (its traceback stays in the log)."""
    started = time.perf_counter()
    try:
        outcome = _validated_call(spec, handler, arguments)
    except Exception:
        log.exception("%s failed unexpectedly", spec.name)
        return Failure(unexpected_failure(spec.name))
    elapsed_ms = (time.perf_counter() - started) * 1000
    if isinstance(outcome, Failure):
        err = outcome.failure()
        log.info("%s -> %s in %.1f ms: %s", spec.name, err.code, elapsed_ms, err.message)
    else:
        log.debug("%s ok in %.1f ms", spec.name, elapsed_ms)
    return outcome
