"""Whether the server has prompts and resources to offer: a workflow that can be started
or a session to resume. Decided once per server, before `initialize` is answered, and
kept apart from the SDK so the start-up handshake can decide it before the SDK loads."""

from __future__ import annotations

from typing import Any

from workrail.engine.api import Engine


def runnable_workflows(engine: Engine) -> list[dict[str, Any]]:
    """Workflows that load (a null preview hash means the definition is broken)."""
    listed: list[dict[str, Any]] = engine.list_workflows().unwrap()["workflows"]
    return [w for w in listed if w.get("workflowHash")]


def has_content(engine: Engine) -> bool:
    """A workflow to start or a session to resume: then there are prompts and resources."""
    if runnable_workflows(engine):
        return True
    found = engine.any_session()
    # A store that cannot answer now may well hold sessions: keep the methods.
    return found.value_or(True)
