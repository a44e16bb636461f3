"""The workspace probe: the git facts of the workspace, read from the repository's files
(workrail.probes.git_files, no process), else from `git rev-parse` with a timeout.

Anything that goes wrong (git not installed, not a repository, a hung filesystem, an
unborn branch) means "no facts", never an error: a start must not fail because of it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

from workrail.engine.workspace import WorkspaceFacts
from workrail.probes.git_files import UNKNOWN, GitFacts, GitFileReader

TIMEOUT_SECONDS: Final = 2.0


class GitWorkspaceProbe:
    def __init__(
        self, cwd: Path, *, timeout: float = TIMEOUT_SECONDS, read_files: bool = True
    ) -> None:
        self._cwd = cwd
        self._timeout = timeout
        self._git = shutil.which("git")
        self._files = GitFileReader() if read_files else None

    def probe(self, path: str | None) -> WorkspaceFacts | None:
        """A given path is always a workspace (absolute); the server's working directory
        only when it is inside a git work tree."""
        given = path is not None
        where = Path(path).expanduser() if path is not None else self._cwd
        if not where.is_absolute():
            where = self._cwd / where
        workspace = os.path.normpath(str(where))
        read = self._files.read(workspace) if self._files is not None else UNKNOWN
        if isinstance(read, GitFacts):
            return WorkspaceFacts(workspace, read.repo_root, read.branch, read.head_sha)
        if read is None:
            return WorkspaceFacts(workspace) if given else None
        return self._ask_git(workspace, given)

    def _ask_git(self, workspace: str, given: bool) -> WorkspaceFacts | None:
        """The same facts from git itself, for layouts the file reader does not know."""
        root = self._git_out(workspace, "rev-parse", "--show-toplevel")
        if root is None:
            return WorkspaceFacts(workspace) if given else None
        head = self._git_out(workspace, "rev-parse", "--verify", "-q", "HEAD")
        branch = self._git_out(workspace, "rev-parse", "--abbrev-ref", "HEAD") if head else None
        return WorkspaceFacts(
            path=workspace,
            repo_root=os.path.normpath(root),
            branch=None if branch in (None, "HEAD") else branch,
            head_sha=head.lower() if head else None,
        )

    def _git_out(self, cwd: str, *args: str) -> str | None:
        if self._git is None or not os.path.isdir(cwd):
            return None
        try:
            done = subprocess.run(
                [self._git, *args],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=self._timeout,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"},
            )
        except (OSError, subprocess.SubprocessError, UnicodeError):
            return None
        out = done.stdout.strip()
        return out if done.returncode == 0 and out else None
