"""The set-up scripts as a new user meets them: they say what they do, skip the installer
once .venv is up to date, and name each missing service (failing under CI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("bash", "sh", "cat", "cut", "id", "ls", "rm", "sha256sum", "printf", "env")


def _bare_path(tmp_path: Path) -> str:
    """A PATH with the shell basics only: no apt-get, no sudo, no redis-server."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found is not None:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def _services(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": _bare_path(tmp_path), "HOME": str(tmp_path)}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "ci_services.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_service_that_cannot_be_installed_gets_one_line(tmp_path: Path) -> None:
    done = _services(tmp_path, None)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "redis-server" in line]
    assert len(lines) == 1
    assert "not installed and cannot be installed here" in lines[0]
    assert "the tests that need it will not run" in lines[0]
    assert "sudo apt-get install redis-server" in lines[0]


def test_under_ci_a_missing_service_fails(tmp_path: Path) -> None:
    done = _services(tmp_path, "true")
    assert done.returncode == 1
    assert "under CI every service must be present" in done.stderr


def _fake_project(tmp_path: Path) -> Path:
    """A checkout whose .venv python only records how it was called."""
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "_venv.sh", project / "scripts" / "_venv.sh")
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n')
    venv_bin = project / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("version = 3.11\n")
    python = venv_bin / "python"
    python.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/../calls"\n')
    python.chmod(0o755)
    return project


def _ensure(project: Path, extras: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f'. scripts/_venv.sh && ensure_venv "{extras}"'],
        cwd=project,
        env={**os.environ, "PYTHON": "false"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _calls(project: Path) -> list[str]:
    calls = project / ".venv" / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_the_installer_runs_once_says_so_and_is_skipped_until_pyproject_changes(
    tmp_path: Path,
) -> None:
    project = _fake_project(tmp_path)
    first = _ensure(project, "[dev]")
    assert first.returncode == 0, first.stderr
    assert "workrail: installing WorkRail with its development tools into .venv" in first.stderr
    assert "next time this step is skipped" in first.stderr
    installs = _calls(project)
    assert installs[-1] == "-m pip install --quiet --disable-pip-version-check -e .[dev]"

    again = _ensure(project, "[dev]")
    assert again.returncode == 0
    assert again.stderr == ""
    assert _calls(project) == installs
    plain = _ensure(project, "")  # scripts/run is served by the dev install
    assert plain.stderr == ""
    assert _calls(project) == installs

    with (project / "pyproject.toml").open("a") as f:
        f.write('version = "2"\n')
    changed = _ensure(project, "[dev]")
    assert "pyproject.toml changed since the last install; updating .venv" in changed.stderr
    assert len(_calls(project)) == len(installs) + 2


def test_a_failed_install_says_what_to_do_and_leaves_no_stamp(tmp_path: Path) -> None:
    project = _fake_project(tmp_path)
    python = project / ".venv" / "bin" / "python"
    python.write_text("#!/bin/sh\nexit 1\n")
    done = _ensure(project, "")
    assert done.returncode == 1
    assert "the install failed (pip's message is above)" in done.stderr
    assert not (project / ".venv" / ".installed").exists()


@pytest.mark.parametrize("script", ["run", "test", "ci_services.sh", "_venv.sh"])
def test_scripts_parse(script: str) -> None:
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / script)]).returncode == 0


def test_the_fsync_floor_replays_the_chains_the_engine_makes(tmp_path: Path) -> None:
    """`scripts/bench_fsync_floor` times bare replays of the protocol's fsync chains; they
    stand for the engine's calls only while the engine makes exactly those fsyncs."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_fsync_floor"), "--samples", "3"]
        + ["--dir", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["engineFsyncsPerCall"] == {"start": 6, "advance": 5, "checkpoint": 3}
    assert set(report["floors"]) >= {"checkpoint", "advance", "start"}


PYTHON_SCRIPTS = sorted(
    p.name
    for p in (ROOT / "scripts").iterdir()
    if p.is_file() and p.read_text(errors="replace").startswith("#!/usr/bin/env python3")
)


@pytest.mark.parametrize("script", PYTHON_SCRIPTS)
def test_a_script_started_by_a_python_without_the_dependencies_runs_on_the_venv(
    script: str,
) -> None:
    """`python3 scripts/bench_…` with a Python the project is not installed in (`-S`
    leaves out every site-packages) runs on .venv, saying so, with no traceback."""
    done = subprocess.run(
        [sys.executable, "-S", str(ROOT / "scripts" / script), "--help"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {script}")
    assert f"workrail: running {script} on " in done.stderr
    assert "Traceback" not in done.stderr


def test_a_script_re_run_on_a_venv_without_the_dependencies_stops_with_what_to_do() -> None:
    env = {**os.environ, "WORKRAIL_SCRIPT_REEXECUTED": "1"}
    done = subprocess.run(
        [sys.executable, "-S", str(ROOT / "scripts" / "bench_engine"), "--help"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 1
    assert done.stderr.strip().endswith("lacks the project's dependencies; run scripts/test once.")
    assert "Traceback" not in done.stderr
