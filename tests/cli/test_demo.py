"""`workrail demo` keeps its session and says how to look at it; `--clean` removes it."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from workrail.cli import main
from workrail.cli.demo import look_commands


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WORKRAIL_DATA_DIR", str(tmp_path / "unused"))
    monkeypatch.delenv("WORKRAIL_STORE_URL", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR


def _demo(*argv: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["demo", "--json", *argv], out=out, err=err)
    return code, json.loads(out.getvalue()), err.getvalue()


def _run(command: str) -> tuple[int, str]:
    """Run one of the printed commands (minus the program name) through `main`."""
    out = io.StringIO()
    code = main(shlex.split(command)[1:], out=out, err=io.StringIO())
    return code, out.getvalue()


def test_the_demo_keeps_its_session_and_prints_commands_that_show_it(tmp_path: Path) -> None:
    code, report, human = _demo()
    assert code == 0
    assert report["ok"]
    assert report["kept"] is True
    data_dir = Path(report["dataDir"])
    assert data_dir.parent == tmp_path / "tmp"
    assert data_dir.name.startswith("workrail-demo-")
    sid = report["sessionId"]
    assert (data_dir / "sessions" / sid).is_dir()
    listing, show = report["commands"][:2]
    assert listing.endswith(f"--data-dir {shlex.quote(str(data_dir))} sessions")
    assert show.endswith(f"sessions show {sid}")
    for command in (listing, show):
        assert command in human  # printed whole, on one line, for copying
        ran, printed = _run(command)
        assert ran == 0
        assert sid in printed


def test_clean_removes_the_demos_own_directory() -> None:
    code, report, _ = _demo("--clean")
    assert code == 0
    assert report["kept"] is False
    assert report["commands"] == []
    assert not Path(report["dataDir"]).exists()


def test_a_given_data_dir_is_used_and_never_cleaned(tmp_path: Path) -> None:
    data_dir = tmp_path / "mine"
    code, first, _ = _demo("--data-dir", str(data_dir))
    assert code == 0
    assert Path(first["dataDir"]) == data_dir
    out, err = io.StringIO(), io.StringIO()
    refused = main(["demo", "--data-dir", str(data_dir), "--clean"], out=out, err=err)
    assert refused == 2
    assert "never deletes from a --data-dir" in err.getvalue()
    assert sorted(p.name for p in (data_dir / "sessions").iterdir()) == [first["sessionId"]]


def test_the_console_command_is_offered_only_when_it_exists(tmp_path: Path) -> None:
    import importlib.util

    commands = look_commands(tmp_path, "sess_x")
    has_console = importlib.util.find_spec("workrail.cli.console") is not None
    assert any(c.endswith(" console") for c in commands) == has_console
