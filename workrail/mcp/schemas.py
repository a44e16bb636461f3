"""The tools as an agent sees them: names, titles, descriptions, input schemas and
annotations (spec 40 §2, 00 §3). Kept as plain data so `tools/list` is exactly what we
wrote, and so the same schemas drive argument validation (validation.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workrail.core.ids import SESSION_ID_RE
from workrail.mcp.instructions import INSTRUCTIONS as INSTRUCTIONS
from workrail.mcp.instructions import LOOP as _LOOP
from workrail.mcp.output_schemas import (
    CHECKPOINT_OUTPUT,
    CONTINUE_OUTPUT,
    EXPORT_OUTPUT,
    IMPORT_OUTPUT,
    INSPECT_OUTPUT,
    LIST_OUTPUT,
    START_OUTPUT,
)

# The reference forbids `.`; we allow it so namespaced bundled ids (`wr.foo`) can be
# started (spec 90 quirk). Every id the reference accepts is still accepted.
WORKFLOW_ID_PATTERN = r"^[A-Za-z0-9_.-]+$"
WORKFLOW_ID_MAX_CHARS = 64  # the workflow schema's own limit on `id`
TOKEN_MAX_CHARS = 256
"""Ours are 91-92 characters and the reference's 166-167 (recognised to say why they are
refused); anything longer is not a token, and is refused before it is parsed or echoed."""

_WORKFLOW_ID: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": WORKFLOW_ID_MAX_CHARS,
    "pattern": WORKFLOW_ID_PATTERN,
    "description": 'The workflowId exactly as list_workflows returns it, e.g. "wr.coding-task".',
}

_CONTEXT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {},
    "description": (
        "Optional JSON object of external facts the workflow branches on (e.g. "
        '{"taskComplexity": "small"}). Step prompts say which keys to set. On advance it '
        "is merged shallowly into the run's stored context; a null value deletes a key."
    ),
}


@dataclass(frozen=True)
class Hints:
    """A tool's behaviour hints (MCP `ToolAnnotations`; none of ours is destructive or
    reaches the open world). Plain data: the SDK's model is built only with the server,
    so a tool call answered before the SDK loads does not import it."""

    read_only: bool
    idempotent: bool


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    annotations: Hints
    example: dict[str, Any]
    """A correct call, sent back in VALIDATION_ERROR details as `correctTemplate`."""
    output_schema: dict[str, Any] | None = None
    """What a success answer holds (MCP `outputSchema`), every field described."""


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def _token(description: str) -> dict[str, Any]:
    """A token argument: never empty, never longer than any token could be."""
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": TOKEN_MAX_CHARS,
        "description": description,
    }


def _annotations(*, read_only: bool, idempotent: bool) -> Hints:
    return Hints(read_only=read_only, idempotent=idempotent)


LIST_WORKFLOWS = ToolSpec(
    name="list_workflows",
    title="List workflows",
    description=(
        "List the workflows WorkRail can run, with their id, name, description, version and "
        "preview hash. Call this first to choose a workflow, then call start_workflow with its "
        "workflowId (or inspect_workflow to read its first step). Read-only. " + _LOOP
    ),
    input_schema=_object({}, []),
    annotations=_annotations(read_only=True, idempotent=True),
    example={},
    output_schema=LIST_OUTPUT,
)

INSPECT_WORKFLOW = ToolSpec(
    name="inspect_workflow",
    title="Inspect a workflow",
    description=(
        'Show a workflow before starting it. mode "preview" (default) returns its compiled '
        'preview (name, description, version and the first step\'s prompt); mode "metadata" '
        "returns only the identifying fields. Read-only; starting is done with start_workflow."
    ),
    input_schema=_object(
        {
            "workflowId": _WORKFLOW_ID,
            "mode": {
                "type": "string",
                "enum": ["metadata", "preview"],
                "default": "preview",
                "description": '"preview" (default): first step included; "metadata": ids only.',
            },
        },
        ["workflowId"],
    ),
    annotations=_annotations(read_only=True, idempotent=True),
    example={"workflowId": "wr.coding-task", "mode": "preview"},
    output_schema=INSPECT_OUTPUT,
)

WORKSPACE_PATH: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": (
        "Optional absolute path of the project you are working in (e.g. the repository "
        "root). WorkRail records its git branch and commit so resume_session can find this "
        "session again from there; without it, the server's working directory is used when "
        "it is a git work tree."
    ),
}

START_WORKFLOW = ToolSpec(
    name="start_workflow",
    title="Start a workflow",
    description=(
        "Start a new run of a workflow. Returns the first pending step (title and prompt) and "
        "three opaque tokens: stateToken (where you are), ackToken (permission to complete the "
        "pending step once) and checkpointToken. Keep the tokens exactly as returned. Do the "
        "step, then call continue_workflow. " + _LOOP
    ),
    input_schema=_object(
        {"workflowId": _WORKFLOW_ID, "context": _CONTEXT, "workspacePath": WORKSPACE_PATH},
        ["workflowId"],
    ),
    annotations=_annotations(read_only=False, idempotent=False),
    example={"workflowId": "wr.coding-task", "context": {}},
    output_schema=START_OUTPUT,
)

CONTINUE_WORKFLOW = ToolSpec(
    name="continue_workflow",
    title="Continue a workflow",
    description=(
        "Move a workflow run forward or recover it. Two ways to call it:\n"
        "- Simplest: send the continueToken of the latest response, plus output to complete "
        "the pending step; without output it recovers the step instead (the intent is "
        "inferred; you may still give it).\n"
        "- Or, with separate tokens (the protocol of WorkRail v1.4, which existing clients "
        "use):\n"
        '- intent "advance": you finished the pending step. Send stateToken, ackToken and '
        "output.notesMarkdown (what you did, decisions, files touched; steps with validation "
        "criteria check these notes). Returns the next step and fresh tokens. If kind is "
        '"blocked", fix your notes as the validation issues say and send nextCall again '
        "(it carries retryAckToken). Replaying the same ackToken is safe: it returns the "
        "recorded outcome and writes nothing.\n"
        '- intent "rehydrate": you lost your place (new chat, rewound context). Send only the '
        "latest stateToken (no ackToken, no output); returns the current step, a recap of "
        "earlier notes and fresh tokens. Never writes.\n" + _LOOP
    ),
    input_schema=_object(
        {
            "continueToken": _token(
                "The continueToken of the latest WorkRail response (ct1.… or, where "
                "nothing can be advanced, st1.…): one token for the next call instead of "
                "stateToken + ackToken. Never send it with them."
            ),
            "intent": {
                "type": "string",
                "enum": ["advance", "rehydrate"],
                "description": (
                    '"advance" to complete the pending step; "rehydrate" to recover it. '
                    "Required with stateToken; with continueToken it is inferred (output "
                    'present → "advance", absent → "rehydrate").'
                ),
            },
            "stateToken": _token(
                "The stateToken from the latest WorkRail response (st1.…). "
                "Required unless you send continueToken."
            ),
            "ackToken": _token(
                "Required for advance, forbidden for rehydrate: the ackToken (ack1…) of the "
                "same response as stateToken, or its retryAckToken after a block."
            ),
            "context": _CONTEXT,
            "output": {
                "type": "object",
                "description": "Advance only: what you produced for the pending step.",
                "properties": {
                    "notesMarkdown": {
                        "type": "string",
                        "minLength": 1,
                        "description": (
                            "Markdown notes on what you did: decisions, files, commands and "
                            "results. Kept in the session and shown in later recaps."
                        ),
                    },
                    "artifacts": {
                        "type": "array",
                        "items": {},
                        "description": (
                            "Optional structured JSON results (e.g. loop-control artifacts a "
                            "step asks for)."
                        ),
                    },
                },
                "additionalProperties": False,
            },
        },
        [],
    ),
    annotations=_annotations(read_only=False, idempotent=True),
    example={
        "intent": "advance",
        "stateToken": "<stateToken from the latest response>",
        "ackToken": "<ackToken from the same response>",
        "output": {"notesMarkdown": "<what you did for this step>"},
    },
    output_schema=CONTINUE_OUTPUT,
)

CHECKPOINT_WORKFLOW = ToolSpec(
    name="checkpoint_workflow",
    title="Checkpoint a workflow",
    description=(
        "Record a durable checkpoint at the current step without advancing, e.g. before risky "
        "or long work. Send the checkpointToken from the latest response. Idempotent: the same "
        "token always returns the same checkpoint. Returns checkpointNodeId and the unchanged "
        "stateToken; then carry on with nextCall."
    ),
    input_schema=_object(
        {
            "checkpointToken": _token(
                "The checkpointToken (chk1…) from the latest WorkRail response."
            )
        },
        ["checkpointToken"],
    ),
    annotations=_annotations(read_only=False, idempotent=True),
    example={"checkpointToken": "<checkpointToken from the latest response>"},
    output_schema=CHECKPOINT_OUTPUT,
)

EXPORT_SESSION = ToolSpec(
    name="export_session",
    title="Export a session",
    description=(
        "Export one session's durable truth (events, manifest, execution snapshots, pinned "
        "workflows) as a bundle JSON object, to continue it elsewhere with import_session. "
        "No tokens are inside. Returns {bundle, summary}; summary.eventCount says how much "
        "was exported, and summary.salvage is present when the session was damaged after "
        "some point and only its validated prefix could be exported. Read-only."
    ),
    input_schema=_object(
        {
            "sessionId": {
                "type": "string",
                "pattern": SESSION_ID_RE.pattern,
                "description": "The session id (sess_…), as `workrail sessions` lists it. "
                "Give this or stateToken.",
            },
            "stateToken": _token(
                "Any stateToken of the session, e.g. from the latest response. "
                "Give this or sessionId."
            ),
        },
        [],
    ),
    annotations=_annotations(read_only=True, idempotent=True),
    example={"stateToken": "<stateToken from the latest response>"},
    output_schema=EXPORT_OUTPUT,
)

IMPORT_SESSION = ToolSpec(
    name="import_session",
    title="Import a session",
    description=(
        "Import a bundle made by export_session (or `workrail export`) as a new session. "
        "The whole bundle is validated before anything is stored; a session id already in "
        "use here is replaced by a fresh one (renamed: true), never merged. Returns the "
        "session id and, for each run, fresh stateToken / ackToken / checkpointToken and the "
        "pending step at the run's preferred tip, plus nextCall to continue. Not idempotent: "
        "importing twice makes two sessions."
    ),
    input_schema=_object(
        {
            "bundle": {
                # anyOf rather than a type list: some clients' schema subsets lack the latter.
                "anyOf": [{"type": "object"}, {"type": "string"}],
                "description": (
                    "The bundle: the `bundle` object export_session returned, unmodified, or "
                    "the bundle file's text."
                ),
            }
        },
        ["bundle"],
    ),
    annotations=_annotations(read_only=False, idempotent=False),
    example={"bundle": {"bundleSchemaVersion": 1, "...": "<the bundle from export_session>"}},
    output_schema=IMPORT_OUTPUT,
)

TOOLS: tuple[ToolSpec, ...] = (
    LIST_WORKFLOWS,
    INSPECT_WORKFLOW,
    START_WORKFLOW,
    CONTINUE_WORKFLOW,
    CHECKPOINT_WORKFLOW,
    EXPORT_SESSION,
    IMPORT_SESSION,
)
