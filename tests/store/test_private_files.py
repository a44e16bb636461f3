"""The data directory is private whatever the umask, and the signing keys are used only
when no one else can read or change them (unless the operator explicitly allows it)."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from returns.result import Failure

from tests.engine.conftest import make_engine
from tests.fence.helpers import claim, ok
from tests.mcp.servers import run_workrail
from workrail.app import open_fence
from workrail.config import load_config
from workrail.fence.identity import fence_key_path
from workrail.fence.service import open_fence_service
from workrail.store.local.backend import LocalBackend
from workrail.store.local.keyring import keyring_path

NOBODY = 65534


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def test_every_directory_is_0700_and_every_file_0600_under_umask_000(
    data_dir: Path, open_umask: None
) -> None:
    root = data_dir / "fresh"
    engine = make_engine(root)
    start = engine.start_workflow("probe-flow").unwrap()
    engine.advance(start["stateToken"], start["ackToken"], notes_markdown="planned").unwrap()
    fence = open_fence_service(root, None)
    ok(fence, claim())
    fence.close()
    entries = [root, *root.rglob("*")]
    dirs = [p for p in entries if p.is_dir()]
    assert {p.relative_to(root).as_posix() for p in dirs} >= {
        ".",
        "keys",
        "sessions",
        "snapshots",
        "workflows",
        "workflows/pinned",
        "fence",
    }
    for directory in dirs:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    for path in entries:
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def _keyring(data_dir: Path) -> Path:
    LocalBackend.open(data_dir).keyring.load().unwrap()
    return keyring_path(data_dir)


@pytest.mark.parametrize(
    "how",
    [
        "readable by others",
        "readable by group",
        "owned by another user",
        "keys/ writable by others",
    ],
)
def test_a_keyring_others_can_read_or_change_is_refused(data_dir: Path, how: str) -> None:
    path = _keyring(data_dir)
    before = path.read_bytes()
    if how == "readable by others":
        path.chmod(0o604)
    elif how == "readable by group":
        path.chmod(0o640)
    elif how == "owned by another user":
        os.chown(path, NOBODY, NOBODY)
    else:
        path.parent.chmod(0o777)
    failed = LocalBackend.open(data_dir).keyring.load()
    assert isinstance(failed, Failure)
    assert failed.failure().code == "KEYRING_INSECURE"
    assert (
        str(path if how != "keys/ writable by others" else path.parent) in failed.failure().message
    )
    assert LocalBackend.open(data_dir).keyring.rotate().failure().code == "KEYRING_INSECURE"
    assert path.read_bytes() == before  # never rewritten


def test_the_server_refuses_a_shared_keyring_in_one_line_unless_allowed(data_dir: Path) -> None:
    path = _keyring(data_dir)
    os.chown(path, NOBODY, NOBODY)
    done = run_workrail(data_dir, "mcp", input="", text=True)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].startswith("KEYRING_INSECURE: "), done.stderr
    allowed = run_workrail(
        data_dir, "mcp", extra_env={"WORKRAIL_ALLOW_INSECURE_KEYS": "true"}, input="", text=True
    )
    assert allowed.returncode == 0, allowed.stderr
    assert "owned by uid 65534" in allowed.stderr  # the warning in the log


def test_allowing_insecure_keys_warns_in_the_log(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _keyring(data_dir)
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="workrail.store"):
        loaded = LocalBackend.open(data_dir, allow_insecure_keys=True).keyring.load()
    assert not isinstance(loaded, Failure)
    assert "accessible by group or others" in caplog.text


@pytest.mark.parametrize("how", ["readable by others", "owned by another user"])
def test_a_fence_key_others_can_read_or_change_disables_the_fence(data_dir: Path, how: str) -> None:
    config = load_config({"WORKRAIL_DATA_DIR": str(data_dir)}).unwrap()
    open_fence(config).unwrap().close()
    path = fence_key_path(data_dir)
    if how == "readable by others":
        path.chmod(0o644)
    else:
        os.chown(path, NOBODY, NOBODY)
    refused = open_fence(config)
    assert isinstance(refused, Failure)
    assert "keys/fence.key" in refused.failure().message or str(path) in refused.failure().message
    allowed = load_config(
        {"WORKRAIL_DATA_DIR": str(data_dir), "WORKRAIL_ALLOW_INSECURE_KEYS": "1"}
    ).unwrap()
    service = open_fence(allowed).unwrap()
    ok(service, claim())
    service.close()
