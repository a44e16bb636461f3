"""The files backend's snapshot state index: recorded when a snapshot is stored, a cache
whose loss or damage costs reading the snapshots again, never a wrong or failed answer."""

from __future__ import annotations

import json
import logging
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.engine.helpers import tree_digest
from workrail.core.canonical import canonical_bytes, digest_file_name, sha256_digest
from workrail.core.snapshot_state import SnapshotState, _parsed
from workrail.engine.sessions_view import load_session, node_state
from workrail.store.local.backend import LocalBackend
from workrail.store.local.snapshot_states import STATES_RELPATH


def _snapshot(step: str) -> dict[str, Any]:
    state = {
        "kind": "running",
        "completed": {"kind": "set", "values": []},
        "loopStack": [],
        "pending": {"kind": "some", "step": {"stepId": step, "loopPath": []}},
    }
    return {"v": 1, "kind": "execution_snapshot", "enginePayload": {"v": 1, "engineState": state}}


def _stored(data_dir: Path, n: int = 3) -> dict[str, SnapshotState]:
    snapshots = LocalBackend.open(data_dir).snapshots
    return {
        snapshots.put(_snapshot(f"s{i}")).unwrap(): SnapshotState("running", f"s{i}")
        for i in range(n)
    }


def _damage_snapshots(data_dir: Path, refs: Any) -> None:
    for ref in refs:
        path = data_dir / "snapshots" / digest_file_name(ref)
        path.write_bytes(path.read_bytes() + b" ")


def test_states_are_recorded_in_a_private_index_and_looking_them_up_writes_nothing(
    data_dir: Path,
) -> None:
    stored = _stored(data_dir)
    index = data_dir / STATES_RELPATH
    assert stat.S_IMODE(index.stat().st_mode) == 0o600
    before = tree_digest(data_dir)
    assert LocalBackend.open(data_dir).snapshots.states(list(stored)).unwrap() == stored
    assert tree_digest(data_dir) == before


def test_a_lost_index_is_answered_from_the_snapshots_and_recorded_again(data_dir: Path) -> None:
    stored = _stored(data_dir)
    (data_dir / STATES_RELPATH).unlink()
    assert LocalBackend.open(data_dir).snapshots.states(list(stored)).unwrap() == stored
    _damage_snapshots(data_dir, stored)
    fresh = LocalBackend.open(data_dir).snapshots
    assert fresh.states(list(stored)).unwrap() == stored, "recorded while reading them"


@pytest.mark.parametrize("damage", ["garbage", "other schema"])
def test_a_damaged_index_is_thrown_away_and_made_afresh(
    data_dir: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    stored = _stored(data_dir)
    index = data_dir / STATES_RELPATH
    if damage == "garbage":
        index.write_bytes(b"this is not a database" * 100)
    else:
        with sqlite3.connect(index) as conn:
            conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
            conn.execute("UPDATE states SET kind = 'complete'")
    with caplog.at_level(logging.WARNING):
        assert LocalBackend.open(data_dir).snapshots.states(list(stored)).unwrap() == stored
    with sqlite3.connect(index) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("1",)
        assert conn.execute("SELECT count(*) FROM states").fetchone() == (len(stored),)


def test_a_symlinked_index_directory_is_never_written(data_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere-index"
    elsewhere.mkdir()
    (data_dir / "index").symlink_to(elsewhere, target_is_directory=True)
    stored = _stored(data_dir)
    assert LocalBackend.open(data_dir).snapshots.states(list(stored)).unwrap() == stored
    assert list(elsewhere.iterdir()) == []


def test_an_unwritable_index_still_answers_from_the_snapshots(data_dir: Path) -> None:
    stored = _stored(data_dir, 1)
    index = data_dir / STATES_RELPATH
    index.unlink()
    index.mkdir()  # not a file: nothing can be recorded there
    snapshots = LocalBackend.open(data_dir).snapshots
    assert snapshots.states(list(stored)).unwrap() == stored
    assert snapshots.put(_snapshot("later")).unwrap() is not None


def test_a_store_from_before_the_index_is_answered_right_and_the_index_filled_lazily(
    reference_data: Path,
) -> None:
    """The reference's data directory (no state index: written by another version), then
    that version adding a snapshot and removing one behind the index's back."""
    assert not (reference_data / STATES_RELPATH).exists()
    sessions = sorted(p.name for p in (reference_data / "sessions").iterdir())
    backend = LocalBackend.open(reference_data)
    for sid in sessions:
        view = load_session(backend, sid)
        nodes = [node for run in view.runs for node in run.nodes.values()]
        assert nodes, sid
        for node in nodes:
            raw = json.loads(
                (reference_data / "snapshots" / digest_file_name(node.snapshot_ref)).read_bytes()
            )
            # `done` is a pending snapshot an accepted output has left
            said = "pending" if node.state == "done" else node.state
            assert (said, node.step_id) == node_state(_parsed(raw)), node.node_id
    files = {
        "sha256:" + p.name.removeprefix("sha256_").removesuffix(".json"): p
        for p in (reference_data / "snapshots").iterdir()
    }
    with sqlite3.connect(reference_data / STATES_RELPATH) as conn:
        recorded = {ref for (ref,) in conn.execute("SELECT ref FROM states")}
    assert recorded, "filled with what was read"
    assert recorded <= set(files), "filled with what was read"

    removed = sorted(recorded)[0]
    files.pop(removed).unlink()
    added = _snapshot("added-by-another-version")
    data = canonical_bytes(added)
    (reference_data / "snapshots" / digest_file_name(sha256_digest(data))).write_bytes(data)
    expected = {ref: _parsed(json.loads(path.read_bytes())) for ref, path in files.items()} | {
        sha256_digest(data): SnapshotState("running", "added-by-another-version")
    }
    asked = [*expected, removed]
    assert backend.snapshots.states(asked).unwrap() == expected, "this process remembered it"
    assert LocalBackend.open(reference_data).snapshots.states(asked).unwrap() == expected
    for sid in sessions:
        view = load_session(LocalBackend.open(reference_data), sid)
        for node in (n for run in view.runs for n in run.nodes.values()):
            if node.snapshot_ref == removed:
                assert node.state == "missing_snapshot"
