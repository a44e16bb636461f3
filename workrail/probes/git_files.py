"""Git facts read from the repository's files, without running git.

What `git rev-parse --show-toplevel`, `--verify HEAD` and `--abbrev-ref HEAD` would say
for a directory, found the way git discovers a repository: walk up from the directory to
the first `.git` (a directory, or a file `gitdir: <path>` as linked worktrees and
submodules have; none up to a file system boundary: not a work tree), read `HEAD`, and resolve the branch it names in the loose refs, then in
`packed-refs` (both in the common directory a linked worktree's `commondir` names).

Whatever this reader does not know for sure is UNKNOWN, and the probe asks git itself:
the environment variables that change discovery, a repository owned by another user
(git's safe.directory decides), config includes, a bare or
relocated work tree, reftable refs, symbolic refs other than HEAD → refs/heads/…, a
branch name another ref makes ambiguous, anything malformed.

Each answer is kept per directory with the identity (inode, size, modification time) of
every file and directory it was read from, absent ones included, and reused while all of
them are unchanged: a commit, a checkout, a new `.git` above or below changes one of them.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from typing import Final

GIT_DISCOVERY_ENV: Final = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_COMMON_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
)
"""Settings that change how git finds a repository or reads its config: with any of them
set, git itself is asked."""
MAX_CACHED: Final = 256
_SHA: Final = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_MAX_FILE_BYTES: Final = 1 << 16
_MAX_PACKED_REFS_BYTES: Final = 64 << 20
_CONFIG_KEY: Final = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*?))?\s*$")
_SECTION: Final = re.compile(r"\s*\[\s*([A-Za-z0-9.-]+)(?:\s+\"(.*)\")?\s*\]\s*(.*)$")

_FALSE: Final = ("false", "no", "off", "0")

Identity = tuple[int, int, int] | None


@dataclass(frozen=True)
class GitFacts:
    """What git would say: the work tree's root, HEAD's commit (None on an unborn branch)
    and the branch (None when HEAD is detached or unborn)."""

    repo_root: str
    head_sha: str | None
    branch: str | None


class _Unknown(Exception):
    """A layout this reader does not know for sure: git decides."""


UNKNOWN: Final = object()
"""`read`'s answer when git itself must be asked."""


class GitFileReader:
    """Reads git facts from the files; thread-safe, with a bounded cache."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        environ = os.environ if env is None else env
        self._env_says_ask_git = any(name in environ for name in GIT_DISCOVERY_ENV)
        self._cache: dict[str, tuple[tuple[tuple[str, Identity], ...], GitFacts | None]] = {}
        self._lock = threading.Lock()

    def read(self, directory: str) -> GitFacts | None | object:
        """GitFacts inside a work tree, None outside any, UNKNOWN when git must say."""
        if self._env_says_ask_git:
            return UNKNOWN
        with self._lock:
            cached = self._cache.get(directory)
        if cached is not None:
            seen, known = cached
            if all(_identity(path) == identity for path, identity in seen):
                return known
        reading = _Reading()
        try:
            answer = reading.facts(directory)
        except (_Unknown, OSError, UnicodeError, ValueError):
            return UNKNOWN
        with self._lock:
            if len(self._cache) >= MAX_CACHED:
                self._cache.pop(next(iter(self._cache)))
            self._cache[directory] = (tuple(reading.seen.items()), answer)
        return answer


def _identity(path: str) -> Identity:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class _Reading:
    """One reading, remembering every path it looked at."""

    def __init__(self) -> None:
        self.seen: dict[str, Identity] = {}
        self._uid = os.geteuid()

    def stat(self, path: str) -> os.stat_result | None:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self.seen[path] = None
            return None
        except NotADirectoryError:
            self.seen[path] = None
            return None
        self.seen[path] = _identity(path)
        if os.path.islink(path):
            raise _Unknown  # a symlinked .git, HEAD or ref: git decides
        return st

    def text(self, path: str, limit: int = _MAX_FILE_BYTES) -> str | None:
        st = self.stat(path)
        if st is None:
            return None
        if not os.path.isfile(path) or st.st_size > limit:
            raise _Unknown
        with open(path, "rb") as file:
            data = file.read(limit + 1)
        if len(data) > limit:
            raise _Unknown
        return data.decode("utf-8")

    def facts(self, directory: str) -> GitFacts | None:
        start = os.path.realpath(directory)
        if not os.path.isdir(start):
            raise _Unknown
        here = start
        device = os.stat(here).st_dev
        while True:
            if os.path.basename(here) == ".git":
                raise _Unknown  # inside a git directory: not a work tree
            dot_git = os.path.join(here, ".git")
            st = self.stat(dot_git)
            self.stat(here)  # a .git made here later changes this directory
            if st is not None:
                return self._work_tree(here, dot_git, st)
            parent = os.path.dirname(here)
            if parent == here:
                return None
            if os.stat(parent).st_dev != device:
                return None  # git stops at a file system boundary: not a work tree
            here = parent

    def _work_tree(self, root: str, dot_git: str, st: os.stat_result) -> GitFacts:
        if st.st_uid != self._uid or os.stat(root).st_uid != self._uid:
            raise _Unknown  # git's safe.directory decides
        if os.path.isdir(dot_git):
            git_dir = dot_git
        else:
            text = self.text(dot_git)
            if text is None or not text.startswith("gitdir: "):
                raise _Unknown
            target = text[len("gitdir: ") :].strip()
            if not target or "\n" in target:
                raise _Unknown
            git_dir = os.path.normpath(os.path.join(root, target))
            if not os.path.isdir(git_dir):
                raise _Unknown
            gst = os.stat(git_dir)
            if gst.st_uid != self._uid:
                raise _Unknown
        common = git_dir
        common_file = self.text(os.path.join(git_dir, "commondir"))
        if common_file is not None:
            common = os.path.normpath(os.path.join(git_dir, common_file.strip()))
        self._check_config(git_dir, common, root)
        for needed in ("objects", "refs"):
            found = self.stat(os.path.join(common, needed))
            if found is None or not os.path.isdir(os.path.join(common, needed)):
                raise _Unknown
        if self.stat(os.path.join(common, "reftable")) is not None:
            raise _Unknown
        head = self.text(os.path.join(git_dir, "HEAD"))
        if head is None:
            raise _Unknown
        head = head.strip()
        if _SHA.fullmatch(head):
            return GitFacts(root, head, None)
        if not head.startswith("ref: refs/heads/"):
            raise _Unknown
        ref = head[len("ref: ") :].strip()
        branch = ref[len("refs/heads/") :]
        if not branch or ".." in branch or branch.endswith("/") or branch.startswith("/"):
            raise _Unknown
        sha = self._resolve(common, ref)
        if sha is None:
            return GitFacts(root, None, None)  # an unborn branch: no commit, no branch
        if self._ambiguous(git_dir, common, branch):
            raise _Unknown
        return GitFacts(root, sha, branch)

    def _resolve(self, common: str, ref: str) -> str | None:
        """The commit of `ref`: its loose file, else its line in packed-refs."""
        loose = self.text(os.path.join(common, *ref.split("/")))
        if loose is not None:
            value = loose.strip()
            if not _SHA.fullmatch(value):
                raise _Unknown  # a symbolic ref, or damage
            return value
        return self._packed(common).get(ref)

    def _packed(self, common: str) -> dict[str, str]:
        text = self.text(os.path.join(common, "packed-refs"), _MAX_PACKED_REFS_BYTES)
        refs: dict[str, str] = {}
        for line in (text or "").splitlines():
            if not line or line.startswith(("#", "^")):
                continue
            sha, _, name = line.partition(" ")
            if not _SHA.fullmatch(sha) or not name:
                raise _Unknown
            refs[name] = sha
        return refs

    def _ambiguous(self, git_dir: str, common: str, branch: str) -> bool:
        """Whether git would abbreviate refs/heads/<branch> to more than `branch`: a ref
        that the names tried before it (`<branch>`, refs/<branch>, refs/tags/<branch>)
        also find."""
        packed = self._packed(common)
        for name in (branch, f"refs/{branch}", f"refs/tags/{branch}"):
            if name in packed:
                return True
            for base in {git_dir, common}:
                path = os.path.join(base, *name.split("/"))
                if self.stat(path) is not None:
                    return True
        return False

    def _check_config(self, git_dir: str, common: str, root: str) -> None:
        """Only plain configs: no includes, not bare, no reftable, and any core.worktree
        naming this very work tree (as a submodule's does)."""
        for path in dict.fromkeys(
            (os.path.join(common, "config"), os.path.join(git_dir, "config.worktree"))
        ):
            text = self.text(path)
            if text is None:
                continue
            section = ""
            for raw in text.splitlines():
                line = raw.split("#", 1)[0].split(";", 1)[0] if '"' not in raw else raw
                if not line.strip():
                    continue
                header = _SECTION.match(line)
                if header is not None:
                    section = header.group(1).lower()
                    if section in ("include", "includeif") or header.group(3).strip():
                        raise _Unknown
                    continue
                entry = _CONFIG_KEY.match(line)
                if entry is None:
                    raise _Unknown
                key, value = entry.group(1).lower(), (entry.group(2) or "true")
                if section == "core" and key == "bare" and value.lower() not in _FALSE:
                    raise _Unknown
                if section == "core" and key == "worktree":
                    named = os.path.realpath(os.path.join(git_dir, value.strip('"')))
                    if named != root:
                        raise _Unknown
                if section == "extensions" and key == "refstorage" and value.lower() != "files":
                    raise _Unknown
