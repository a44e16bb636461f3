"""The resources and resource templates WorkRail lists, as the JSON objects the wire
carries, without the SDK.

resources/list names the workflow definitions that can be started, then the most recently
active sessions (read from the store on every request); resources/templates/list names the
two URI templates. Both are made here once: the SDK's server (workrail.mcp.server) wraps
these objects in its models, and the stdio start-up (workrail.mcp.stdio_serve) writes the
SDK's answer itself, so a client that lists resources right after connecting neither waits
for the SDK nor loads it. tests/mcp/test_resource_listing.py compares the two answers byte
for byte for every protocol revision.

Standard library, pydantic-core and the engine only: nothing of the SDK's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pydantic_core import to_json
from returns.result import Result, Success

from workrail.engine.api import Engine, EngineError
from workrail.mcp.content import runnable_workflows

if TYPE_CHECKING:
    from workrail.core.summary import SessionSummary

WORKFLOW_URI_PREFIX: Final = "workrail://workflows/"
WORKFLOW_URI_TEMPLATE: Final = WORKFLOW_URI_PREFIX + "{workflowId}"
SESSION_URI_PREFIX: Final = "workrail://sessions/"
SESSION_URI_TEMPLATE: Final = SESSION_URI_PREFIX + "{sessionId}"
LISTED_MAX: Final = 20
"""resources/list offers this many sessions; the template reaches every other one."""

Entry = dict[str, str]
"""A resource or template as the wire names its fields (`mimeType`, `uriTemplate`)."""

RESOURCE_TEMPLATES: Final[tuple[Entry, ...]] = (
    {
        "uriTemplate": WORKFLOW_URI_TEMPLATE,
        "name": "workflow",
        "title": "Workflow definition",
        "description": "A workflow's definition (JSON), by the workflowId list_workflows gives.",
        "mimeType": "application/json",
    },
    {
        "uriTemplate": SESSION_URI_TEMPLATE,
        "name": "session",
        "title": "WorkRail session",
        "description": "A session's summary, each run's recap and the rehydrate call that "
        "continues it (JSON), by its id (sess_…, or a unique start of it).",
        "mimeType": "application/json",
    },
)


def workflow_entries(engine: Engine) -> list[Entry]:
    """One resource per workflow that can be started: its definition."""
    return [
        {
            "uri": WORKFLOW_URI_PREFIX + w["workflowId"],
            "name": w["workflowId"],
            "title": w["name"],
            "description": f"The definition of the workflow “{w['name']}” (JSON).",
            "mimeType": "application/json",
        }
        for w in runnable_workflows(engine)
    ]


def session_entries(engine: Engine) -> Result[list[Entry], EngineError]:
    """The most recently active sessions, newest first; the store's failure when it
    cannot answer."""
    return engine.recent_sessions(LISTED_MAX).map(lambda found: list(map(_session_entry, found)))


def _session_entry(summary: SessionSummary) -> Entry:
    step = summary.to_json()["pendingStep"]
    where = f", at “{step['title']}”" if step else ""
    workflow = summary.workflow_name or summary.workflow_id or "no run"
    return {
        "uri": SESSION_URI_PREFIX + summary.session_id,
        "name": summary.session_id,
        "title": summary.display_title,
        "description": f"WorkRail session: {workflow}, {summary.status}{where}. Its summary, "
        "recap and the call that continues it (JSON).",
        "mimeType": "application/json",
    }


def resource_entries(engine: Engine) -> Result[list[Entry], EngineError]:
    """What resources/list names: the workflow definitions, then the recent sessions."""
    workflows = workflow_entries(engine)
    return session_entries(engine).bind(lambda sessions: Success([*workflows, *sessions]))


def answer_resource_listing(request_id: int | str, method: str, engine: Engine) -> bytes | None:
    """The answer's line to a plain `method` request (resources/list or
    resources/templates/list), as the SDK's server writes it; None when the store cannot
    list sessions (the SDK's server then answers with its error). Blocking: it reads the
    store."""
    if method == "resources/templates/list":
        result = {"resourceTemplates": [_wire_order(t) for t in RESOURCE_TEMPLATES]}
    else:
        found = resource_entries(engine)
        if not isinstance(found, Success):
            return None
        result = {"resources": [_wire_order(e) for e in found.unwrap()]}
    return to_json({"jsonrpc": "2.0", "id": request_id, "result": result})


def _wire_order(entry: Entry) -> Entry:
    """The fields in the order the SDK writes them: alphabetical, as its protocol models
    (generated from the schema) declare them."""
    return dict(sorted(entry.items()))
