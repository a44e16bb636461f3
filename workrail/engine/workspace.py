"""Workspace signals: which git branch and commit a session was started on, recorded as
`observation_recorded` events in the reference's format (spec 20 §2), so resume_session
can find the session again from where the user is working.

The probe is a port: the shell runs git (with a timeout) and the engine never fails a
start because git is missing or the path is not a repository — no facts, no events.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final, Protocol

from workrail.core import dedupe
from workrail.core.events import is_git_sha1, short_string_problem


@dataclass(frozen=True)
class WorkspaceFacts:
    """What the probe found at a path. `repo_root` is None outside a git work tree."""

    path: str
    repo_root: str | None = None
    branch: str | None = None
    head_sha: str | None = None

    @property
    def repo_root_hash(self) -> str | None:
        return None if self.repo_root is None else root_hash(self.repo_root)


def root_hash(repo_root: str) -> str:
    """`sha256:<hex>` of the repository root's absolute path: the workspace key the log
    carries (the path itself stays out of the portable log)."""
    return "sha256:" + hashlib.sha256(repo_root.encode("utf-8")).hexdigest()


class WorkspaceProbe(Protocol):
    def probe(self, path: str | None) -> WorkspaceFacts | None:
        """Facts about `path` (None: the server's working directory, only when it is a
        git work tree); None when there is nothing to say. Never raises."""
        ...


class _NoProbe:
    def probe(self, path: str | None) -> WorkspaceFacts | None:
        return None if path is None else WorkspaceFacts(path)


NO_PROBE: Final[WorkspaceProbe] = _NoProbe()


def observations(session_id: str, facts: WorkspaceFacts) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, dedupeKey, data) of the observation events for `facts`, in the reference's
    order (branch, head sha) and then the repository root's hash."""
    out: list[tuple[str, str, dict[str, Any]]] = []

    def add(key: str, kind: str, value: str) -> None:
        out.append(
            (
                "observation_recorded",
                dedupe.observation_recorded(session_id, key),
                {"key": key, "value": {"type": kind, "value": value}, "confidence": "high"},
            )
        )

    branch = facts.branch  # one the log could not hold (too long, odd bytes) is left out
    if branch and branch != "HEAD" and short_string_problem(branch) is None:
        add("git_branch", "short_string", branch)
    sha = facts.head_sha
    if sha and is_git_sha1(sha):
        add("git_head_sha", "git_sha1", sha)
    if facts.repo_root_hash is not None:
        add("repo_root_hash", "sha256", facts.repo_root_hash)
    return out
