"""A server or command that cannot start (a damaged keyring, a full disk) says why in one
line on stderr — no traceback — and exits non-zero; one that can start keeps serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import SmallDisk
from tests.mcp.conftest import error_body
from tests.mcp.servers import ROOT, free_port, run_workrail, server_env

GOOD_KEY = "A" * 43

DAMAGE: dict[str, bytes | None] = {
    "bad json": b"{not json",
    "empty": b"",
    "truncated": b'{"current":{"alg":"hmac_sha256"',
    "short key": json.dumps(
        {"current": {"alg": "hmac_sha256", "keyBase64Url": "AAAA"}, "previous": None, "v": 1}
    ).encode(),
    "unknown field": json.dumps(
        {
            "current": {"alg": "hmac_sha256", "keyBase64Url": GOOD_KEY},
            "previous": None,
            "v": 1,
            "rotatedAt": "yesterday",
        }
    ).encode(),
    # written by the test itself below
    "a directory": None,
    "a symlink": None,
    "a FIFO": None,
}


def _damage(data_dir: Path, kind: str) -> None:
    keys = data_dir / "keys"
    keys.mkdir(parents=True)
    path = keys / "keyring.json"
    raw = DAMAGE[kind]
    if raw is not None:
        path.write_bytes(raw)
        path.chmod(0o600)
    elif kind == "a directory":
        path.mkdir()
    elif kind == "a symlink":
        target = data_dir.parent / "planted-keyring.json"
        target.write_text('{"current":{"alg":"hmac_sha256","keyBase64Url":"' + GOOD_KEY + '"}}')
        path.symlink_to(target)
    else:
        os.mkfifo(path)


def _commands(data_dir: Path) -> dict[str, list[str]]:
    bundle = data_dir.parent / "some-bundle.json"
    bundle.write_text("{}")
    return {
        "mcp": ["mcp"],
        "mcp --http": ["mcp", "--http", "--port", str(free_port())],
        "serve": ["serve", "--port", str(free_port())],
        "keys rotate": ["keys", "rotate"],
        "checkpoint resume": ["checkpoint", "resume", str(bundle), "--context", str(bundle)],
    }


def _run(data_dir: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return run_workrail(data_dir, *args, input="", text=True)


def _assert_one_clear_line(done: subprocess.CompletedProcess[str], code: str) -> None:
    assert done.returncode not in (0, None), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines, done.stderr
    assert lines[0].startswith(f"{code}: "), done.stderr
    # the reason, then at most one indented line saying what to do about it
    assert len(lines) <= 2, done.stderr
    assert all(line.startswith("  ") for line in lines[1:]), done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_the_mcp_server_refuses_every_kind_of_damaged_keyring_in_one_line(
    data_dir: Path, kind: str
) -> None:
    _damage(data_dir, kind)
    _assert_one_clear_line(_run(data_dir, ["mcp"]), "KEYRING_CORRUPT")
    assert not (data_dir / "sessions").exists()


@pytest.mark.parametrize("name", ["mcp --http", "serve", "keys rotate", "checkpoint resume"])
def test_every_other_server_and_command_refuses_a_damaged_keyring_in_one_line(
    data_dir: Path, name: str
) -> None:
    _damage(data_dir, "bad json")
    _assert_one_clear_line(_run(data_dir, _commands(data_dir)[name]), "KEYRING_CORRUPT")


@pytest.mark.parametrize("name", ["mcp", "serve", "keys rotate"])
def test_a_data_directory_that_is_a_file_is_named_in_one_line(tmp_path: Path, name: str) -> None:
    """Refused by its path, not by the keyring inside it that cannot exist (which said to
    check the keys/ folder's permissions)."""
    data_dir = tmp_path / "data"
    data_dir.write_text("not a directory")
    done = _run(data_dir, _commands(tmp_path / "elsewhere")[name])
    _assert_one_clear_line(done, "CONFIG_INVALID")
    assert f"The data directory {data_dir} is a file" in done.stderr
    assert data_dir.read_text() == "not a directory"


def test_a_server_started_on_a_full_disk_exits_in_one_line(small_disk: SmallDisk) -> None:
    data_dir = small_disk.root / "data"
    small_disk.fill()
    for args in (["mcp"], ["serve", "--port", str(free_port())]):
        _assert_one_clear_line(_run(data_dir, args), "STORAGE_FAULT")
    assert not list((data_dir / "keys").iterdir()) if (data_dir / "keys").exists() else True


@pytest.mark.anyio
async def test_a_server_with_its_keyring_keeps_serving_on_a_full_disk(
    small_disk: SmallDisk,
) -> None:
    data_dir = small_disk.root / "data"
    assert _run(data_dir, ["keys", "rotate"]).returncode == 0  # the keyring exists
    small_disk.fill()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "workrail", "mcp"],
        env=server_env(data_dir),
        cwd=str(ROOT),
    )
    async with Client(params) as client:
        listed = await client.call_tool("list_workflows", {})
        assert not listed.is_error
        started = await client.call_tool("start_workflow", {"workflowId": "probe-flow"})
        refused = error_body(started)
        assert refused["code"] == "STORE_UNAVAILABLE"
        assert refused["retry"]["kind"] == "retryable_after_ms"
        small_disk.free()
        again = await client.call_tool("start_workflow", {"workflowId": "probe-flow"})
        assert not again.is_error, again.structured_content


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
