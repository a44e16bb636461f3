"""Former ids of bundled workflows, kept so existing configurations keep starting them.

The bundled workflows moved into the reserved `wr.` namespace. A client or a saved
prompt that still says `coding-task` must reach `wr.coding-task`, not a not-found error.
Runs already started are unaffected either way: they are pinned by hash.

An alias only applies when no valid workflow answers to the id itself, so a team's own
`coding-task` in a project or user directory still wins over the bundled one.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

WORKFLOW_ALIASES: Final = MappingProxyType(
    {
        "bug-investigation": "wr.bug-investigation",
        "code-review": "wr.code-review",
        "coding-task": "wr.coding-task",
    }
)
"""Former id -> current id. Listings show the current ids only."""


def alias_target(workflow_id: str) -> str | None:
    """The current id a former id stands for, or None when it is not a former id."""
    return WORKFLOW_ALIASES.get(workflow_id)
