"""The git file reader says what git says, for every layout it claims to know, compared
with `git rev-parse` itself on real repositories; it reuses an answer only while the files
it read are unchanged, and leaves what it does not know to git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.services import require_binary
from workrail.probes.git import GitWorkspaceProbe
from workrail.probes.git_files import UNKNOWN, GitFacts, GitFileReader

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
}


@pytest.fixture(autouse=True)
def _git_installed() -> None:
    """git is a service of these tests: missing, they fail under CI and skip elsewhere."""
    require_binary("git", "git")


def _git(path: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args],
        cwd=path,
        check=True,
        capture_output=True,
        text=True,
        env=GIT_ENV,
    )
    return done.stdout.strip()


def _commit(path: Path, name: str = "f") -> str:
    (path / name).write_text(name + str(os.urandom(4)))
    _git(path, "add", name)
    _git(path, "commit", "-q", "-m", name)
    return _git(path, "rev-parse", "HEAD")


def _repo(path: Path) -> str:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    return _commit(path)


def git_says(path: Path) -> GitFacts | None:
    """The facts as git itself gives them (what the probe asked git before)."""

    def out(*args: str) -> str | None:
        done = subprocess.run(["git", *args], cwd=path, capture_output=True, text=True, env=GIT_ENV)
        return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None

    root = out("rev-parse", "--show-toplevel")
    if root is None:
        return None
    head = out("rev-parse", "--verify", "-q", "HEAD")
    branch = out("rev-parse", "--abbrev-ref", "HEAD") if head else None
    return GitFacts(os.path.normpath(root), head, None if branch == "HEAD" else branch)


def assert_agrees(reader: GitFileReader, path: Path) -> GitFacts | None:
    read = reader.read(str(path))
    assert read is not UNKNOWN, f"the reader should know {path}"
    assert read == git_says(path)
    return read if isinstance(read, GitFacts) else None


def test_a_repository_its_subdirectories_and_new_commits(tmp_path: Path) -> None:
    reader = GitFileReader()
    _repo(tmp_path / "repo")
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    for where in ("repo", "repo/a", "repo/a/b"):
        facts = assert_agrees(reader, tmp_path / where)
        assert facts is not None
        assert facts.branch == "main"
    _commit(tmp_path / "repo", "g")
    assert_agrees(reader, tmp_path / "repo" / "a")  # the cached answer is not reused


def test_branches_and_a_detached_head(tmp_path: Path) -> None:
    reader = GitFileReader()
    repo = tmp_path / "repo"
    _repo(repo)
    _git(repo, "checkout", "-q", "-b", "feature/deep/name")
    _commit(repo, "h")
    assert assert_agrees(reader, repo) is not None
    _git(repo, "checkout", "-q", "--detach")
    detached = assert_agrees(reader, repo)
    assert detached is not None
    assert detached.branch is None
    assert detached.head_sha
    _git(repo, "checkout", "-q", "main")
    assert_agrees(reader, repo)


def test_packed_refs(tmp_path: Path) -> None:
    reader = GitFileReader()
    repo = tmp_path / "repo"
    _repo(repo)
    _git(repo, "branch", "other")
    _git(repo, "tag", "-a", "-m", "t", "v1")
    _git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert_agrees(reader, repo)
    _git(repo, "checkout", "-q", "other")
    assert_agrees(reader, repo)
    _commit(repo, "after-pack")  # a loose ref again, beside the packed one
    assert_agrees(reader, repo)


def test_an_unborn_branch(tmp_path: Path) -> None:
    reader = GitFileReader()
    (tmp_path / "empty").mkdir()
    _git(tmp_path / "empty", "init", "-q", "-b", "main")
    facts = assert_agrees(reader, tmp_path / "empty")
    assert facts is not None
    assert facts.head_sha is None
    assert facts.branch is None


def test_a_linked_worktree(tmp_path: Path) -> None:
    reader = GitFileReader()
    repo = tmp_path / "repo"
    _repo(repo)
    _git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    assert (tmp_path / "side" / ".git").is_file()
    side = assert_agrees(reader, tmp_path / "side")
    assert side is not None
    assert side.branch == "side"
    _commit(tmp_path / "side", "on-side")
    assert_agrees(reader, tmp_path / "side")
    _git(repo, "pack-refs", "--all")
    assert_agrees(reader, tmp_path / "side")
    _git(tmp_path / "side", "checkout", "-q", "--detach")
    assert_agrees(reader, tmp_path / "side")
    assert_agrees(reader, repo)


def test_a_submodule_with_a_gitdir_file(tmp_path: Path) -> None:
    reader = GitFileReader()
    _repo(tmp_path / "lib")
    repo = tmp_path / "repo"
    _repo(repo)
    _git(repo, "submodule", "add", "-q", str(tmp_path / "lib"), "vendor/lib")
    dot_git = repo / "vendor" / "lib" / ".git"
    assert dot_git.is_file()
    assert "modules" in dot_git.read_text()
    inner = assert_agrees(reader, repo / "vendor" / "lib")
    assert inner is not None
    assert inner.repo_root == str(repo / "vendor" / "lib")
    assert_agrees(reader, repo / "vendor")


def test_outside_a_work_tree_and_a_repository_made_later(tmp_path: Path) -> None:
    reader = GitFileReader()
    plain = tmp_path / "plain" / "deeper"
    plain.mkdir(parents=True)
    assert_agrees(reader, plain)
    _repo(tmp_path / "plain" / "x")
    _git(tmp_path / "plain", "init", "-q", "-b", "main")  # .git appears above
    facts = assert_agrees(reader, plain)
    assert facts is not None
    assert facts.repo_root == str(tmp_path / "plain")


def test_a_branch_named_like_a_tag_is_left_to_git(tmp_path: Path) -> None:
    """git abbreviates refs/heads/x to heads/x when a tag x exists; the reader does not
    guess: git answers (and the probe gives git's answer)."""
    repo = tmp_path / "repo"
    _repo(repo)
    _git(repo, "tag", "main")
    assert GitFileReader().read(str(repo)) is UNKNOWN
    facts = GitWorkspaceProbe(tmp_path).probe(str(repo))
    assert facts is not None
    said = git_says(repo)
    assert said is not None
    assert facts.branch == said.branch


@pytest.mark.parametrize(
    "config",
    [
        "[include]\n\tpath = other\n",
        "[core]\n\tbare = true\n",
        "[core]\n\tworktree = /somewhere/else\n",
        "[extensions]\n\trefStorage = reftable\n",
    ],
    ids=["include", "bare", "worktree elsewhere", "reftable"],
)
def test_configs_it_does_not_read_are_left_to_git(tmp_path: Path, config: str) -> None:
    repo = tmp_path / "repo"
    _repo(repo)
    with open(repo / ".git" / "config", "a") as file:
        file.write(config)
    assert GitFileReader().read(str(repo)) is UNKNOWN


def test_discovery_settings_in_the_environment_are_left_to_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _repo(repo)
    assert GitFileReader({"GIT_DIR": str(repo / ".git")}).read(str(repo)) is UNKNOWN
    assert GitFileReader({"GIT_CEILING_DIRECTORIES": str(tmp_path)}).read(str(repo)) is UNKNOWN


def test_inside_the_git_directory_is_left_to_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _repo(repo)
    assert GitFileReader().read(str(repo / ".git" / "refs")) is UNKNOWN


def test_the_probe_needs_no_git_for_what_the_reader_knows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    head = _repo(repo)
    monkeypatch.setenv("PATH", str(tmp_path / "no-binaries-here"))
    probe = GitWorkspaceProbe(tmp_path)
    facts = probe.probe(str(repo))
    assert facts is not None
    assert (facts.repo_root, facts.branch, facts.head_sha) == (str(repo), "main", head)
    assert probe.probe(None) is None  # tmp_path is not a work tree: nothing, no process


def test_a_damaged_head_is_left_to_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _repo(repo)
    (repo / ".git" / "HEAD").write_text("garbage\n")
    assert GitFileReader().read(str(repo)) is UNKNOWN
    (repo / ".git" / "HEAD").write_bytes(b"ref: refs/heads/\xff\n")
    assert GitFileReader().read(str(repo)) is UNKNOWN
