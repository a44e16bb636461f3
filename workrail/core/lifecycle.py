"""What a session carries besides its event log: whether a person archived it, and the
workspace it was started in. Kept apart from the log because the reference's event set
has no place for either (spec 20 §2 is closed), and durable because the summary index
that shows them is disposable."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

LIFECYCLE_VERSION: Final = 1
MAX_WORKSPACE_PATH: Final = 4096


@dataclass(frozen=True)
class SessionLifecycle:
    archived: bool = False
    archived_at: str | None = None
    """ISO-8601 UTC time of the archive, for people."""
    workspace_path: str | None = None
    """The absolute workspace the session was started for, when one was known."""

    def __post_init__(self) -> None:
        # Bounded when built, so no record is ever written that its reader would refuse:
        # a path too long to keep, or holding a NUL (no file system path can, and
        # PostgreSQL text cannot store one), is dropped, never the archive state beside it.
        path = self.workspace_path
        if path is not None and (len(path) > MAX_WORKSPACE_PATH or "\x00" in path):
            object.__setattr__(self, "workspace_path", None)

    def archive(self, at: str) -> SessionLifecycle:
        return self if self.archived else replace(self, archived=True, archived_at=at)

    def unarchive(self) -> SessionLifecycle:
        return replace(self, archived=False, archived_at=None)

    @property
    def is_default(self) -> bool:
        return self == SessionLifecycle()

    def to_json(self) -> dict[str, Any]:
        return {
            "v": LIFECYCLE_VERSION,
            "archived": self.archived,
            "archivedAt": self.archived_at,
            "workspacePath": self.workspace_path,
        }

    @staticmethod
    def from_json(raw: object) -> SessionLifecycle | None:
        """None when `raw` is not a lifecycle record this version understands."""
        if not isinstance(raw, dict) or raw.get("v") != LIFECYCLE_VERSION:
            return None
        archived = raw.get("archived")
        at = raw.get("archivedAt")
        path = raw.get("workspacePath")
        if not isinstance(archived, bool):
            return None
        if at is not None and not isinstance(at, str):
            return None
        if path is not None and not isinstance(path, str):
            return None
        # An over-long path (written before paths were bounded) is dropped on construction.
        return SessionLifecycle(archived, at if archived else None, path or None)


DEFAULT_LIFECYCLE: Final = SessionLifecycle()
