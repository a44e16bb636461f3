"""The data directory layout (spec 10-storage §1). Every id, ref and digest is checked
against its pattern here, before it can become part of a path."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workrail.core.canonical import digest_file_name, is_digest
from workrail.core.ids import is_session_id


class UnsafeReference(ValueError):
    """An id or digest that does not match its pattern; it never reaches the file system."""


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    def holds_store(self) -> bool:
        """Whether a store was ever written here: its keyring or a session (a data
        directory holds both from its first start)."""
        return (self.root / "keys").is_dir() or self.sessions_dir.is_dir()

    def session_dir(self, session_id: str) -> Path:
        if not is_session_id(session_id):
            raise UnsafeReference(f"not a session id: {session_id[:60]!r}")
        return self.sessions_dir / session_id

    def snapshot_path(self, ref: str) -> Path:
        if not is_digest(ref):
            raise UnsafeReference(f"not a snapshot ref: {ref[:80]!r}")
        return self.root / "snapshots" / digest_file_name(ref)

    def pinned_path(self, workflow_hash: str) -> Path:
        if not is_digest(workflow_hash):
            raise UnsafeReference(f"not a workflow hash: {workflow_hash[:80]!r}")
        return self.root / "workflows" / "pinned" / digest_file_name(workflow_hash)
