"""`workrail fence pause|resume|status` flips the flag a running service reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fence.helpers import fence_from_env, status
from workrail.cli import main


def run_cli(argv: list[str], env: dict[str, str]) -> int:
    return main(argv, env=env)


def test_pause_from_the_cli_pauses_a_running_service(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"WORKRAIL_DATA_DIR": str(tmp_path)}
    server = fence_from_env(tmp_path, env)
    assert run_cli(["fence", "pause"], env) == 0
    assert server.execute(status(), client_id="x").body["error"]["code"] == "TOOL_PAUSED"
    assert run_cli(["fence", "--json", "status"], env) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report == {
        "backend": "sqlite",
        "paused": True,
        "client_requests_per_minute": 30,
        "global_requests_per_minute": 120,
    }
    assert run_cli(["fence", "resume"], env) == 0
    assert server.execute(status(), client_id="x").body["error"]["code"] == "CHECKPOINT_NOT_FOUND"
    server.close()


def test_bad_settings_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = {"WORKRAIL_FENCE_URL": "mysql://nope", "WORKRAIL_FENCE_CLIENT_RPM": "5"}
    assert run_cli(["fence", "--data-dir", str(tmp_path), "status"], env) == 2
    assert "WORKRAIL_FENCE_URL" in capsys.readouterr().err


def test_env_overrides_rate_limits(tmp_path: Path) -> None:
    env = {"WORKRAIL_FENCE_CLIENT_RPM": "0", "WORKRAIL_FENCE_GLOBAL_RPM": "7"}
    service = fence_from_env(tmp_path, env)
    assert (service.limits.client_rpm, service.limits.global_rpm) == (0, 7)
    service.close()
    with pytest.raises(ValueError, match="must be a whole number"):
        fence_from_env(tmp_path, {"WORKRAIL_FENCE_GLOBAL_RPM": "-1"})


def test_data_dir_from_the_environment_expands_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    elsewhere.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(elsewhere)
    env = {"WORKRAIL_DATA_DIR": "~/x"}
    assert run_cli(["fence", "pause"], env) == 0
    assert (home / "x" / "fence" / "fence.sqlite3").exists()
    assert not (elsewhere / "~").exists()
    service = fence_from_env(home / "x", env)
    assert service.backend.is_paused()
    service.close()
