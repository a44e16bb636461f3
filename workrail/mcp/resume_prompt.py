"""The `resume` MCP prompt (Claude Code offers it as `/workrail:resume`): pick up earlier
work in a new chat. Its message tells the agent to find the session with resume_session,
in the user's own words, and to go on through the nextCall that comes back.

The name is reserved: a workflow whose id is `resume` still runs through the tools, but the
prompt list offers this one under that name.
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

from workrail.engine.api import QUERY_MAX

RESUME_PROMPT: Final = "resume"


def resume_prompt() -> Prompt:
    return Prompt(
        name=RESUME_PROMPT,
        title="Resume earlier work",
        description="Find earlier WorkRail work with resume_session and continue where it "
        "left off (a new chat, a reset or compacted context).",
        arguments=[
            PromptArgument(
                name="query",
                description="Your words about the work to continue, e.g. 'the login bug from "
                "yesterday' or a session id; leave out to take the most recent work here.",
                required=False,
            )
        ],
    )


def _query(arguments: dict[str, Any] | None) -> str | None:
    query = (arguments or {}).get("query")
    if query is None:
        return None
    if not isinstance(query, str):
        raise MCPError(code=INVALID_PARAMS, message="Prompt argument 'query' must be a string.")
    # resume_session takes at most QUERY_MAX characters: keep the start of longer words.
    return " ".join(query.split())[:QUERY_MAX].strip() or None


def get_resume_prompt(arguments: dict[str, Any] | None) -> GetPromptResult:
    query = _query(arguments)
    call: dict[str, Any] = {} if query is None else {"query": query}
    about = "" if query is None else f": “{query}”"
    text = (
        f"Continue earlier WorkRail work with me{about}. Call the resume_session tool with "
        f"{json.dumps(call, ensure_ascii=False)}, adding workspacePath (the absolute path of "
        "the project you are in). Then do what its nextIntent says: rehydrate — send its "
        "nextCall right away; ask_user_which — show me the candidates' titles and snippets, "
        "ask which one to continue, then send that candidate's nextCall; start_workflow — "
        "nothing matched: tell me so and offer to start new work with list_workflows. The "
        "nextCall returns the pending step: do it, and call continue_workflow as its "
        "nextCall says (add output.notesMarkdown describing what you did). Keep going step "
        "by step until isComplete is true, instead of stopping to summarise."
    )
    return GetPromptResult(
        description="Resume earlier WorkRail work.",
        messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))],
    )
