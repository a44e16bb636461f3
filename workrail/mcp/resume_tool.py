"""The `resume_session` MCP tool: find the session to continue when the agent has no token
(a new chat, a reset context). Read-only and idempotent; the engine ranks (see
workrail/core/resume_rank.py), this module only describes the tool and unpacks arguments."""

from __future__ import annotations

from typing import Any

from returns.result import Result

from workrail.core.ids import SESSION_ID_RE
from workrail.core.resume_rank import WHY_MATCHED
from workrail.engine.api import QUERY_MAX, Engine, EngineError, ResumeRequest
from workrail.mcp.output_schemas import NEXT_CALL, SESSION_ID, STATE_TOKEN
from workrail.mcp.schemas import ToolSpec, _annotations, _object

_STRING_OR_NULL = [{"type": "string"}, {"type": "null"}]

RESUME_OUTPUT: dict[str, Any] = {
    "type": "object",
    "description": "The sessions the user may mean, best first, and what to do next.",
    "required": ["candidates", "message", "nextIntent", "nextCall"],
    "properties": {
        "candidates": {
            "type": "array",
            "maxItems": 5,
            "description": "At most 5 runs, best match first; empty when nothing matches.",
            "items": {
                "type": "object",
                "description": "One run to continue, at its preferred tip.",
                "required": [
                    "sessionId",
                    "runId",
                    "workflowId",
                    "title",
                    "status",
                    "whyMatched",
                    "confidence",
                    "snippet",
                    "stateToken",
                    "nextCall",
                ],
                "properties": {
                    "sessionId": SESSION_ID,
                    "runId": {"type": "string", "description": "The run within the session."},
                    "workflowId": {"type": "string", "description": "The run's workflow id."},
                    "workflowName": {"type": "string", "description": "The workflow's name."},
                    "title": {
                        "type": "string",
                        "description": "What the session is about (its goal, or first notes).",
                    },
                    "status": {
                        "type": "string",
                        "enum": ["in_progress", "blocked", "complete", "complete_with_gaps"],
                        "description": "The run's status at its preferred tip.",
                    },
                    "pendingStep": {
                        "anyOf": [
                            {
                                "type": "object",
                                "description": "The step waiting to be done.",
                                "properties": {
                                    "stepId": {"type": "string", "description": "Its id."},
                                    "title": {"type": "string", "description": "Its title."},
                                },
                            },
                            {"type": "null"},
                        ],
                        "description": "The step waiting to be done; null when finished.",
                    },
                    "lastActivity": {
                        "anyOf": _STRING_OR_NULL,
                        "description": "When the session was last written (ISO-8601 UTC).",
                    },
                    "gitBranch": {
                        "anyOf": _STRING_OR_NULL,
                        "description": "The git branch it was started on, when recorded.",
                    },
                    "whyMatched": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(WHY_MATCHED)},
                        "description": "Which signals matched, strongest first.",
                    },
                    "confidence": {
                        "type": "string",
                        "enum": ["strong", "medium", "weak"],
                        "description": "strong: continue it; otherwise confirm with the user.",
                    },
                    "snippet": {
                        "type": "string",
                        "description": "The newest notes of the run (at most 1 KiB).",
                    },
                    "stateToken": STATE_TOKEN,
                    "nextCall": NEXT_CALL,
                },
            },
        },
        "message": {"type": "string", "description": "What to do with the candidates."},
        "nextIntent": {
            "type": "string",
            "enum": ["rehydrate", "ask_user_which", "start_workflow"],
            "description": "rehydrate: send nextCall; ask_user_which: let the user pick a "
            "candidate first; start_workflow: nothing matched.",
        },
        "nextCall": NEXT_CALL,
    },
}

RESUME_SESSION = ToolSpec(
    name="resume_session",
    title="Resume a session",
    description=(
        "Find earlier WorkRail work to continue when the user wants to pick up where they "
        "left off and you have no stateToken (a new chat, a reset or compacted context). Send "
        "the user's own words about the work as query (and workspacePath, the project you "
        "are in); sessionId/runId when the user gave one. Returns up to 5 candidates, best "
        "first, each with why it matched, a confidence, a snippet of its latest notes, a "
        "fresh stateToken and a ready nextCall (continue_workflow, rehydrate). If the first "
        "is strong, send its nextCall; otherwise ask the user which one. Only healthy, "
        "unarchived, unfinished sessions unless asked (includeCompleted). Read-only: never "
        "writes."
    ),
    input_schema=_object(
        {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": QUERY_MAX,
                "description": "The user's words about the work to continue, e.g. 'the "
                "login bug from yesterday'.",
            },
            "sessionId": {
                "type": "string",
                "pattern": SESSION_ID_RE.pattern,
                "description": "A session id the user named (sess_…).",
            },
            "runId": {
                "type": "string",
                "minLength": 1,
                "maxLength": 64,
                "description": "A run id the user named (run_…).",
            },
            "workspacePath": {
                "type": "string",
                "minLength": 1,
                "maxLength": 4096,
                "description": "Absolute path of the project you are in; its git branch and "
                "commit help find the session (the server's directory otherwise).",
            },
            "gitBranch": {
                "type": "string",
                "minLength": 1,
                "maxLength": 255,
                "description": "The current git branch, if you know it better than the "
                "workspace does.",
            },
            "gitHeadSha": {
                "type": "string",
                "pattern": "^[0-9a-fA-F]{40}$",
                "description": "The current git commit (40 hex).",
            },
            "sameWorkspaceOnly": {
                "type": "boolean",
                "description": "Only sessions started in this workspace.",
            },
            "includeCompleted": {
                "type": "boolean",
                "description": "Also offer finished runs (default: only unfinished ones).",
            },
        },
        [],
    ),
    annotations=_annotations(read_only=True, idempotent=True),
    example={"query": "the parser refactor", "workspacePath": "/home/me/project"},
    output_schema=RESUME_OUTPUT,
)


def resume_handler(engine: Engine) -> Any:
    def handle(arguments: dict[str, Any]) -> Result[dict[str, Any], EngineError]:
        request = ResumeRequest(
            query=arguments.get("query"),
            session_id=arguments.get("sessionId"),
            run_id=arguments.get("runId"),
            workspace_path=arguments.get("workspacePath"),
            git_branch=arguments.get("gitBranch"),
            git_head_sha=arguments.get("gitHeadSha"),
            same_workspace_only=bool(arguments.get("sameWorkspaceOnly", False)),
            include_completed=bool(arguments.get("includeCompleted", False)),
        )
        return engine.resume_session(request).map(lambda found: found.to_json())

    return handle
