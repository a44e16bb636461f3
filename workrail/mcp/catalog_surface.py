"""MCP prompts and resources built from the workflow catalog: one prompt per workflow that
can be started (Claude Code offers them as `/workrail:<id>`) and one resource per workflow
definition (`workrail://workflows/{id}`, for @-mentions; listed by
workrail.mcp.resource_listing, read here). The `resume` prompt and the session resources
live beside it (resume_prompt.py, session_resources.py).

Both are read from the catalog on every request, so they follow the workflow files as the
tools do. Unknown names answer JSON-RPC -32602 (invalid params) with a message that says
where the valid names are listed, never a traceback.
"""

from __future__ import annotations

import json
from typing import Any, Final

from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    GetPromptResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    TextContent,
)

from workrail.engine.api import Engine
from workrail.mcp.content import runnable_workflows
from workrail.mcp.resource_listing import WORKFLOW_URI_PREFIX, WORKFLOW_URI_TEMPLATE
from workrail.mcp.validation import clip
from workrail.workflow.aliases import alias_target

GOAL_MAX_CHARS: Final = 4096


def list_prompts(engine: Engine, reserved: frozenset[str] = frozenset()) -> list[Prompt]:
    """One prompt per runnable workflow, except those named like a `reserved` prompt."""
    return [
        Prompt(
            name=w["workflowId"],
            title=w["name"],
            description=f"Start the WorkRail workflow “{w['name']}”: {w['description']}",
            arguments=[
                PromptArgument(
                    name="goal",
                    description="What you want to achieve; passed to the run as context.goal.",
                    required=False,
                )
            ],
        )
        for w in runnable_workflows(engine)
        if w["workflowId"] not in reserved
    ]


def _prompt_workflow(engine: Engine, name: str) -> dict[str, Any] | None:
    """The workflow a prompt name starts: its own id, or a former bundled id (aliases.py),
    so a saved `/workrail:coding-task` keeps working."""
    workflows = runnable_workflows(engine)
    for wanted in (name, alias_target(name)):
        found = next((w for w in workflows if w["workflowId"] == wanted), None)
        if found is not None:
            return found
    return None


def get_prompt(engine: Engine, name: str, arguments: dict[str, Any] | None) -> GetPromptResult:
    workflow = _prompt_workflow(engine, name)
    if workflow is None:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"Unknown prompt: {clip(name)}. prompts/list names one prompt per workflow "
            "that can be started, and resume.",
        )
    goal = (arguments or {}).get("goal")
    if goal is not None and not isinstance(goal, str):
        raise MCPError(code=INVALID_PARAMS, message="Prompt argument 'goal' must be a string.")
    workflow_id = str(workflow["workflowId"])
    call: dict[str, Any] = {"workflowId": workflow_id}
    if goal:
        call["context"] = {"goal": goal[:GOAL_MAX_CHARS]}
    text = (
        f"Run the WorkRail workflow “{workflow['name']}” ({workflow_id}) with me. Call the "
        f"start_workflow tool with {json.dumps(call, ensure_ascii=False)}. Then do the step "
        "it returns, and call continue_workflow as its nextCall says (add "
        "output.notesMarkdown describing what you did). Keep going step by step until "
        "isComplete is true, instead of stopping to summarise."
    )
    return GetPromptResult(
        description=f"Start the WorkRail workflow “{workflow['name']}”.",
        messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))],
    )


def read_resource(engine: Engine, uri: str) -> str:
    """The workflow definition as pretty JSON; unknown URIs are invalid params."""
    workflow_id = (
        uri.removeprefix(WORKFLOW_URI_PREFIX) if uri.startswith(WORKFLOW_URI_PREFIX) else None
    )
    definition = engine.workflow_definition(workflow_id) if workflow_id else None
    if definition is None:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"Unknown resource: {clip(uri)}. resources/list names the workflow "
            f"definitions ({WORKFLOW_URI_TEMPLATE}) and recent sessions "
            "(workrail://sessions/{sessionId}).",
            data={"uri": clip(uri)},
        )
    return json.dumps(definition, indent=2, ensure_ascii=False)
