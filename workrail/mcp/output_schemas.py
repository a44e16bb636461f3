"""What each tool answers, as JSON Schema with a description on every field, so an agent
reading `tools/list` knows what each hash, token and id is for (MCP `outputSchema`).

Schemas describe success answers only (errors are the envelope of docs/mcp.md) and leave
`additionalProperties` open: answers may gain fields, never lose or change them. The SDK
client checks every structured result against them, so the test suite does too.
"""

from __future__ import annotations

from typing import Any

from workrail.core.ids import SESSION_ID_RE

NEXT_INTENTS = [
    "perform_pending_then_continue",
    "await_user_confirmation",
    "rehydrate_only",
    "complete",
]


def _nullable(schema: dict[str, Any], description: str) -> dict[str, Any]:
    # anyOf rather than a type list: some clients' schema subsets lack the latter.
    return {"anyOf": [schema, {"type": "null"}], "description": description}


def _object(properties: dict[str, Any], required: list[str], description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": required,
    }


def _typed(json_type: str, description: str) -> dict[str, Any]:
    # The key order is part of tools/list's bytes: type, then description.
    return {"type": json_type, "description": description}


def _string(description: str) -> dict[str, Any]:
    return _typed("string", description)


def _boolean(description: str) -> dict[str, Any]:
    return _typed("boolean", description)


def _integer(description: str) -> dict[str, Any]:
    return _typed("integer", description)


def _any_object(description: str) -> dict[str, Any]:
    """An object whose fields the description names (not spelt out as properties)."""
    return _typed("object", description)


SESSION_ID: dict[str, Any] = {
    "type": "string",
    "pattern": SESSION_ID_RE.pattern,
    "description": "The session this run is recorded in (sess_…): what `workrail sessions` "
    "lists and export_session takes, so a person can find this run.",
}
STATE_TOKEN: dict[str, Any] = _string(
    "Opaque stateToken (st1.…): names this point of the run. Send it with "
    "ackToken to advance, or alone with intent rehydrate to recover the step."
)
ACK_TOKEN: dict[str, Any] = _string(
    "Opaque ackToken (ack1.…): permission to complete the pending step once. "
    "Present exactly when pending is not null."
)
CHECKPOINT_TOKEN: dict[str, Any] = _string(
    "Opaque checkpointToken (chk1.…) for checkpoint_workflow at this step."
)
CONTINUE_TOKEN: dict[str, Any] = _string(
    "One opaque token for your next continue_workflow call: send "
    "{continueToken, output} to complete the pending step, or {continueToken} alone to "
    "recover it. ct1.… carries state and ack together; where nothing can be advanced it is "
    "the state-only st1.…, which rehydrates. An alternative to stateToken + ackToken."
)
PENDING: dict[str, Any] = _nullable(
    _object(
        {
            "stepId": _string("The step's id in the workflow."),
            "title": _string("The step's title."),
            "prompt": _string("What to do now, rendered for you."),
        },
        ["stepId", "title", "prompt"],
        "The step to do now.",
    ),
    "The step to do now, or null when the run is complete.",
)
NEXT_INTENT: dict[str, Any] = {
    "type": "string",
    "enum": NEXT_INTENTS,
    "description": "What to do next, matching nextCall: perform_pending_then_continue (do the "
    "step, then send nextCall with your output), await_user_confirmation (ask the user "
    "first), rehydrate_only (send nextCall, a rehydrate, before anything else), complete "
    "(nothing left; nextCall is null).",
}
NEXT_CALL: dict[str, Any] = _nullable(
    _object(
        {
            "tool": _string("The tool to call."),
            "params": _any_object("Its arguments; for an advance add your output."),
        },
        ["tool", "params"],
        "The call to make next.",
    ),
    "The call to make next, ready to send (add output.notesMarkdown to an advance); null "
    "when the run is complete.",
)
WARNINGS: dict[str, Any] = {
    "type": "array",
    "description": "Things you should know although the call succeeded, e.g. "
    "OUTPUT_NOT_RECORDED (a replay: your new output was not stored), NOTES_TRUNCATED (your "
    "notes were over 4 KiB and the recap keeps only their start) or FORK_CREATED (this "
    "advance started a second branch; otherBranch names the other branch's tip).",
    "items": _object(
        {
            "code": _string("What happened, as a fixed code."),
            "message": _string("What happened, in words."),
            "suggestion": _string("What to do about it."),
        },
        ["code", "message"],
        "One warning.",
    ),
}
PREFERENCES: dict[str, Any] = _any_object("The run's effective preferences (autonomy, riskPolicy).")

REFERENCES: dict[str, Any] = {
    "type": "array",
    "description": "Documents the workflow points you to (only when it declares some): read "
    "a document when its purpose concerns the step; follow it when authoritative is true. "
    "source is a path relative to your workspace (resolveFrom workspace) or to the package "
    "that ships the workflow (package).",
    "items": _object(
        {
            "id": _string("The reference's id in the workflow."),
            "title": _string("What the document is."),
            "source": _string("Where to find it."),
            "purpose": _string("Why it matters here."),
            "authoritative": _boolean("Follow it strictly."),
            "resolveFrom": _string("workspace or package."),
        },
        ["id", "title", "source", "purpose", "authoritative"],
        "One document reference.",
    ),
}
_ABOUT: dict[str, Any] = _string(
    "Markdown overview for people: what the workflow does and when to use it "
    "(only when it has one)."
)
_EXAMPLES: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Example goals the workflow serves (only when it lists some).",
}

_STEP_FIELDS: dict[str, Any] = {
    "sessionId": SESSION_ID,
    "stateToken": STATE_TOKEN,
    "ackToken": ACK_TOKEN,
    "checkpointToken": CHECKPOINT_TOKEN,
    "continueToken": CONTINUE_TOKEN,
    "isComplete": _boolean("True when the run has finished."),
    "pending": PENDING,
    "references": REFERENCES,
    "preferences": PREFERENCES,
    "nextIntent": NEXT_INTENT,
    "nextCall": NEXT_CALL,
    "warnings": WARNINGS,
}

START_OUTPUT = _object(
    _STEP_FIELDS,
    ["sessionId", "stateToken", "isComplete", "pending", "nextIntent", "nextCall"],
    "The new run's first step and its tokens.",
)

CONTINUE_OUTPUT = _object(
    {
        "kind": {
            "type": "string",
            "enum": ["ok", "blocked"],
            "description": "ok, or blocked when the output did not satisfy the step: fix it as "
            "validation says and send nextCall again.",
        },
        **_STEP_FIELDS,
        "blockers": _any_object(
            "Blocked only: {blockers: [{code, pointer, message, suggestedFix}]}."
        ),
        "retryable": _boolean("Blocked only: whether a retry can pass."),
        "retryAckToken": _string("Blocked only: the ackToken for the retry (nextCall carries it)."),
        "validation": _any_object(
            "Blocked only: {issues, suggestions} from the step's validation."
        ),
        "stepContext": _any_object(
            "After a step that asked for assessments: {assessments: "
            "[{assessmentId, dimensions: [{dimensionId, level, rationale?}], "
            "normalizationNotes}]}, the levels as recorded."
        ),
        "assessmentFollowup": _any_object(
            "Blocked by an assessment consequence only: {title, guidance}. "
            "Follow up, assess again and send nextCall (it carries the assessment to fill in)."
        ),
    },
    ["kind", "sessionId", "stateToken", "isComplete", "pending", "nextIntent", "nextCall"],
    "The next step (advance) or the current one (rehydrate), with fresh tokens.",
)

_PREVIEW_HASH = (
    "Hash of the workflow's preview (sha256:…), to tell versions of a definition apart. It "
    "is not the hash a run pins: start_workflow pins the compiled workflow under its own hash."
)

LIST_OUTPUT = _object(
    {
        "workflows": {
            "type": "array",
            "description": "Every workflow that can be found, sorted by workflowId.",
            "items": _object(
                {
                    "workflowId": _string("The id start_workflow and inspect_workflow take."),
                    "name": _string("Human name."),
                    "description": _string("What it is for."),
                    "version": _string("The definition's version."),
                    "kind": _string('Always "workflow".'),
                    "workflowHash": _nullable(
                        {"type": "string"},
                        _PREVIEW_HASH + " Null when the definition cannot be loaded.",
                    ),
                    "about": _ABOUT,
                    "examples": _EXAMPLES,
                    "valid": _boolean(
                        "Present, and false, only when the workflow's file fails "
                        "validation: it cannot be started until the file is fixed "
                        "(start_workflow answers WORKFLOW_INVALID with its problems)."
                    ),
                    "problems": _integer("Invalid workflows only: how many problems the file has."),
                    "path": _string("Invalid workflows only: the file that fails validation."),
                },
                ["workflowId", "workflowHash"],
                "One workflow.",
            ),
        },
        "nextIntent": _string('Always "start_workflow".'),
        "nextCall": _any_object(
            "start_workflow for the only runnable workflow, else with the "
            'placeholder "<workflowId>" (rejected if sent as is: choose one).'
        ),
    },
    ["workflows"],
    "The workflows WorkRail can run.",
)

INSPECT_OUTPUT = _object(
    {
        "workflowId": _string("The inspected workflow's id."),
        "workflowHash": {"type": "string", "description": _PREVIEW_HASH},
        "mode": _string("preview or metadata, as asked."),
        "compiled": _any_object(
            "The preview (name, description, version, first step) or, in "
            "metadata mode, only the identifying fields."
        ),
        "about": _ABOUT,
        "examples": _EXAMPLES,
        "authoringSpec": _any_object(
            "Only when the workflow says which authoring-spec version it was "
            "checked against: {validatedAgainstSpecVersion, newestKnownSpecVersion, stale, "
            "hint}; stale means its guidance may be dated."
        ),
        "nextIntent": _string('Always "start_workflow".'),
        "nextCall": _any_object("start_workflow for this workflow."),
    },
    ["workflowId", "workflowHash", "mode", "compiled"],
    "One workflow before it is started.",
)

CHECKPOINT_OUTPUT = _object(
    {
        "checkpointNodeId": _string(
            "The node (node_…) recording this checkpoint; the same token always "
            "gives the same node."
        ),
        "sessionId": SESSION_ID,
        "stateToken": {
            **STATE_TOKEN,
            "description": "The stateToken of the step you checkpointed (unchanged: a "
            "checkpoint does not advance).",
        },
        "continueToken": CONTINUE_TOKEN,
        "nextIntent": NEXT_INTENT,
        "nextCall": NEXT_CALL,
    },
    ["checkpointNodeId", "sessionId", "stateToken", "nextIntent", "nextCall"],
    "The checkpoint, and where to carry on.",
)

EXPORT_OUTPUT = _object(
    {
        "bundle": _any_object(
            "The session as a bundle: pass it unmodified to import_session. It holds no tokens."
        ),
        "summary": _object(
            {
                "sessionId": SESSION_ID,
                "bundleId": _string("This export's own id."),
                "eventCount": _integer("Events exported."),
                "complete": _boolean(
                    "False when only a damaged session's validated prefix was "
                    "exported (see salvage)."
                ),
            },
            ["sessionId", "eventCount", "complete"],
            "What the bundle holds.",
        ),
    },
    ["bundle", "summary"],
    "One session as a bundle.",
)

IMPORT_OUTPUT = _object(
    {
        "sessionId": {
            **SESSION_ID,
            "description": "The id the imported session is stored under here (a fresh one "
            "when the original was taken: see renamed).",
        },
        "originalSessionId": _string("The session id inside the bundle."),
        "renamed": _boolean("True when sessionId is a fresh id."),
        "eventCount": _integer("Events imported."),
        "runs": {
            "type": "array",
            "description": "Per run, fresh tokens for its preferred tip and its pending step "
            "(or error when the tip cannot be recovered).",
            "items": _any_object("One run: runId, nodeId, tokens, pending."),
        },
        "nextIntent": NEXT_INTENT,
        "nextCall": NEXT_CALL,
    },
    ["sessionId", "renamed", "runs", "nextIntent", "nextCall"],
    "The imported session, with fresh tokens to continue it.",
)
