"""The git workspace probe: facts from a real repository, nothing (never an error) from
anything else."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.services import require_binary
from workrail.engine.workspace import observations, root_hash
from workrail.probes.git import GitWorkspaceProbe


@pytest.fixture(autouse=True)
def _git_installed() -> None:
    """git is a service of these tests: missing, they fail under CI and skip elsewhere."""
    require_binary("git", "git")


def _git(path: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _repo(path: Path) -> str:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    (path / "f").write_text("x")
    _git(path, "add", "f")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "c")
    return _git(path, "rev-parse", "HEAD")


def test_a_repository_subdirectory_reports_its_root_branch_and_head(tmp_path: Path) -> None:
    head = _repo(tmp_path / "repo")
    (tmp_path / "repo" / "sub").mkdir()
    facts = GitWorkspaceProbe(tmp_path).probe(str(tmp_path / "repo" / "sub"))
    assert facts is not None
    assert facts.path == str(tmp_path / "repo" / "sub")
    assert facts.repo_root == str(tmp_path / "repo")
    assert (facts.branch, facts.head_sha) == ("main", head)
    assert facts.repo_root_hash == root_hash(str(tmp_path / "repo"))
    keys = [data["key"] for _, _, data in observations("sess_x", facts)]
    assert keys == ["git_branch", "git_head_sha", "repo_root_hash"]


def test_detached_head_and_unborn_branch(tmp_path: Path) -> None:
    head = _repo(tmp_path / "repo")
    _git(tmp_path / "repo", "checkout", "-q", "--detach")
    facts = GitWorkspaceProbe(tmp_path).probe(str(tmp_path / "repo"))
    assert facts is not None
    assert facts.branch is None
    assert facts.head_sha == head
    (tmp_path / "empty").mkdir()
    _git(tmp_path / "empty", "init", "-q")
    unborn = GitWorkspaceProbe(tmp_path).probe(str(tmp_path / "empty"))
    assert unborn is not None
    assert unborn.head_sha is None
    assert unborn.branch is None
    assert [d["key"] for _, _, d in observations("sess_x", unborn)] == ["repo_root_hash"]


def test_not_a_repository_and_the_default_directory(tmp_path: Path) -> None:
    probe = GitWorkspaceProbe(tmp_path)
    plain = probe.probe(str(tmp_path))
    assert plain is not None
    assert plain.repo_root is None
    assert probe.probe(None) is None  # the server's directory only when it is a work tree
    assert probe.probe(str(tmp_path / "missing")) is not None
    _repo(tmp_path / "repo")
    assert GitWorkspaceProbe(tmp_path / "repo").probe(None) is not None
    relative = GitWorkspaceProbe(tmp_path).probe("repo")
    assert relative is not None
    assert relative.path == str(tmp_path / "repo")


def test_a_long_branch_name_is_not_recorded(tmp_path: Path) -> None:
    _repo(tmp_path / "repo")
    _git(tmp_path / "repo", "checkout", "-q", "-b", "b" * 90)
    facts = GitWorkspaceProbe(tmp_path).probe(str(tmp_path / "repo"))
    assert facts is not None
    assert facts.branch == "b" * 90
    assert "git_branch" not in [d["key"] for _, _, d in observations("sess_x", facts)]
