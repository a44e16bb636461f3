"""Planted symlinks, FIFOs and files of the wrong kind inside the data directory: never
written through, never waited on, and reported as a damaged session with a reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure

from tests.mcp.servers import run_workrail
from tests.store.contract import append, events_of
from tests.store.plans import Chain
from workrail.core.canonical import digest_file_name
from workrail.store.local.backend import LocalBackend

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE_BYTES = b"precious bytes outside the data directory\n"


def _grown(data_dir: Path) -> tuple[Chain, Path]:
    store = LocalBackend.open(data_dir).sessions
    chain = Chain()
    append(store, chain.sess, chain.start())
    append(store, chain.sess, chain.advance())
    return chain, data_dir / "sessions" / chain.sess


def _fresh(data_dir: Path) -> Any:
    return LocalBackend.open(data_dir).sessions


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside" / "victim.txt"
    target.parent.mkdir()
    target.write_bytes(OUTSIDE_BYTES)
    return target


def _first_segment(session_dir: Path) -> Path:
    record = json.loads((session_dir / "manifest.jsonl").read_bytes().splitlines()[0])
    return session_dir / str(record["segmentRelPath"])


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """Run `call` in a daemon thread; fail (instead of hanging the suite) if it blocks."""
    box: dict[str, Any] = {}

    def run() -> None:
        box["value"] = call()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the call blocked"
    return box["value"]


# --- writes never follow a planted link ---------------------------------------------------


def test_a_symlink_at_the_next_temp_segment_is_replaced_not_written_through(
    data_dir: Path, outside: Path
) -> None:
    chain, sdir = _grown(data_dir)
    nxt = chain.advance()
    first, last = nxt.events[0].eventIndex, nxt.events[-1].eventIndex
    planted = sdir / "events" / f"{first:08d}-{last:08d}.jsonl.tmp"
    planted.symlink_to(outside)
    store = _fresh(data_dir)
    assert append(store, chain.sess, nxt).unwrap().deduplicated is False
    assert outside.read_bytes() == OUTSIDE_BYTES
    fresh = _fresh(data_dir)
    assert fresh.health(chain.sess).unwrap().kind == "healthy"
    assert len(events_of(fresh, chain.sess)) == 9


def test_a_manifest_symlink_is_corrupt_head_and_never_appended_to(
    data_dir: Path, outside: Path
) -> None:
    chain, sdir = _grown(data_dir)
    manifest = sdir / "manifest.jsonl"
    copy = outside.with_name("manifest.jsonl")
    copy.write_bytes(manifest.read_bytes())
    manifest.unlink()
    manifest.symlink_to(copy)
    before = copy.read_bytes()
    store = _fresh(data_dir)
    health = store.health(chain.sess).unwrap()
    assert health.kind == "corrupt_head"
    assert health.reason is not None
    assert "symbolic link" in health.reason.message
    failed = append(store, chain.sess, chain.advance())
    assert failed.failure().code == "SESSION_NOT_HEALTHY"
    assert copy.read_bytes() == before


def test_a_session_directory_symlink_is_refused_for_reads_and_writes(
    data_dir: Path, tmp_path: Path
) -> None:
    chain, sdir = _grown(data_dir)
    elsewhere = tmp_path / "elsewhere"
    sdir.rename(elsewhere)
    sdir.symlink_to(elsewhere, target_is_directory=True)
    before = sorted(p.name for p in (elsewhere / "events").iterdir())
    store = _fresh(data_dir)
    health = store.health(chain.sess).unwrap()
    assert health.kind == "corrupt_head"
    assert health.reason is not None
    assert "symbolic link" in health.reason.message
    assert append(store, chain.sess, chain.advance()).failure().code == "SESSION_NOT_HEALTHY"
    assert sorted(p.name for p in (elsewhere / "events").iterdir()) == before
    assert not (elsewhere / ".lock").exists()


def test_an_events_directory_symlink_is_corrupt_and_receives_no_segment(
    data_dir: Path, tmp_path: Path
) -> None:
    chain, sdir = _grown(data_dir)
    elsewhere = tmp_path / "elsewhere-events"
    (sdir / "events").rename(elsewhere)
    (sdir / "events").symlink_to(elsewhere, target_is_directory=True)
    before = sorted(p.name for p in elsewhere.iterdir())
    store = _fresh(data_dir)
    health = store.health(chain.sess).unwrap()
    assert health.kind == "corrupt_tail"
    assert health.reason is not None
    assert "symbolic link" in health.reason.message
    assert append(store, chain.sess, chain.advance()).failure().code == "SESSION_NOT_HEALTHY"
    assert sorted(p.name for p in elsewhere.iterdir()) == before


def test_a_new_session_under_a_planted_directory_symlink_writes_nothing_there(
    data_dir: Path, tmp_path: Path
) -> None:
    chain = Chain()
    elsewhere = tmp_path / "elsewhere-new"
    elsewhere.mkdir()
    (data_dir / "sessions").mkdir()
    (data_dir / "sessions" / chain.sess).symlink_to(elsewhere, target_is_directory=True)
    failed = append(_fresh(data_dir), chain.sess, chain.start())
    assert isinstance(failed, Failure)
    assert list(elsewhere.iterdir()) == []


def test_a_snapshots_directory_symlink_receives_no_snapshot(data_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere-snapshots"
    elsewhere.mkdir()
    (data_dir / "snapshots").symlink_to(elsewhere, target_is_directory=True)
    put = LocalBackend.open(data_dir).snapshots.put({"v": 1, "kind": "probe"})
    assert isinstance(put, Failure)
    assert "symbolic link" in put.failure().message
    assert list(elsewhere.iterdir()) == []


def test_a_symlink_under_a_snapshot_name_is_refused_on_read_and_replaced_on_write(
    data_dir: Path, outside: Path
) -> None:
    snapshots = LocalBackend.open(data_dir).snapshots
    value = {"v": 1, "kind": "probe"}
    ref = snapshots.put(value).unwrap()
    path = data_dir / "snapshots" / digest_file_name(ref)
    assert path.exists()
    path.unlink()
    path.symlink_to(outside)
    fresh = LocalBackend.open(data_dir).snapshots
    got = fresh.get(ref)
    assert isinstance(got, Failure)
    assert "symbolic link" in got.failure().message
    assert fresh.put(value).unwrap() == ref
    assert not path.is_symlink()
    assert LocalBackend.open(data_dir).snapshots.get(ref).unwrap() == value
    assert outside.read_bytes() == OUTSIDE_BYTES


# --- reads never crash or hang on the wrong kind of file ------------------------------------


def test_a_directory_in_place_of_a_segment_is_corrupt_tail_with_a_reason(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir)
    segment = _first_segment(sdir)
    segment.unlink()
    segment.mkdir()
    store = _fresh(data_dir)
    health = store.health(chain.sess).unwrap()
    assert health.kind == "corrupt_tail"
    assert health.reason is not None
    assert "a directory" in health.reason.message
    prefix = store.load_prefix(chain.sess).unwrap()
    assert not prefix.complete
    assert prefix.events == ()


def test_a_directory_in_place_of_the_manifest_is_corrupt_head(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir)
    (sdir / "manifest.jsonl").unlink()
    (sdir / "manifest.jsonl").mkdir()
    store = _fresh(data_dir)
    health = store.health(chain.sess).unwrap()
    assert health.kind == "corrupt_head"
    assert health.reason is not None
    assert "a directory" in health.reason.message
    assert chain.sess in store.list_ids().unwrap()


def test_a_fifo_in_place_of_a_segment_is_corrupt_not_a_hang(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir)
    segment = _first_segment(sdir)
    segment.unlink()
    os.mkfifo(segment)
    try:
        store = _fresh(data_dir)
        health = _within(20, lambda: store.health(chain.sess).unwrap())
        assert health.kind == "corrupt_tail"
        assert health.reason is not None
        assert "a FIFO" in health.reason.message
        prefix = _within(20, lambda: store.load_prefix(chain.sess).unwrap())
        assert not prefix.complete
        failed = _within(20, lambda: append(store, chain.sess, chain.advance()))
        assert failed.failure().code == "SESSION_NOT_HEALTHY"
    finally:
        _unblock(segment)


def test_a_fifo_in_place_of_the_manifest_is_corrupt_head_not_a_hang(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir)
    manifest = sdir / "manifest.jsonl"
    manifest.unlink()
    os.mkfifo(manifest)
    try:
        store = _fresh(data_dir)
        health = _within(20, lambda: store.health(chain.sess).unwrap())
        assert health.kind == "corrupt_head"
        assert health.reason is not None
        assert "a FIFO" in health.reason.message
        failed = _within(20, lambda: append(store, chain.sess, chain.advance()))
        assert failed.failure().code == "SESSION_NOT_HEALTHY"
    finally:
        _unblock(manifest)


def _unblock(fifo: Path) -> None:
    """Release any reader still blocked on `fifo` (only if the test failed)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    os.close(fd)


def test_workrail_sessions_lists_every_session_despite_fifos_and_directories(
    data_dir: Path,
) -> None:
    fifo_chain, fifo_dir = _grown(data_dir)
    dir_chain, dir_dir = _grown(data_dir)
    fine_chain, _ = _grown(data_dir)
    seg = _first_segment(fifo_dir)
    seg.unlink()
    os.mkfifo(seg)
    seg2 = _first_segment(dir_dir)
    seg2.unlink()
    seg2.mkdir()
    try:
        done = run_workrail(data_dir, "sessions", "--json", text=True, timeout=60)
    finally:
        _unblock(seg)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    listed = json.loads(done.stdout)
    rows = listed["sessions"] if isinstance(listed, dict) else listed
    health = {
        row["sessionId"]: row["health"]["kind"]
        if isinstance(row["health"], dict)
        else row["health"]
        for row in rows
    }
    assert health == {
        fifo_chain.sess: "corrupt_tail",
        dir_chain.sess: "corrupt_tail",
        fine_chain.sess: "healthy",
    }


def test_ensure_tree_checks_every_component_and_only_inside_its_root(tmp_path: Path) -> None:
    from workrail.store.fsio import UnsafePath, ensure_tree

    root = tmp_path / "root"
    assert ensure_tree(root, root / "a" / "b") is True
    assert (root / "a" / "b").is_dir()
    assert ensure_tree(root, root / "c", create=False) is False
    (root / "link").symlink_to(root / "a", target_is_directory=True)
    with pytest.raises(UnsafePath):
        ensure_tree(root, root / "link" / "b")
    with pytest.raises(ValueError, match="is not inside"):
        ensure_tree(root, tmp_path / "rootless")


def test_a_fifo_at_the_session_index_hangs_no_read(data_dir: Path) -> None:
    """`workrail sessions`, the session listing behind resources/list and resume_session's
    candidates all open the index read-only: a FIFO planted there is refused by its type
    (never waited on), and they answer from the logs."""
    chain, _ = _grown(data_dir)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKRAIL_DATA_DIR": str(data_dir)}
    listed = run_workrail(data_dir, "sessions", "--json", text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    index = data_dir / "index" / "sessions.sqlite3"
    for leftover in index.parent.glob("sessions.sqlite3*"):
        leftover.unlink()
    os.mkfifo(index)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from workrail.store.local.backend import LocalBackend\n"
        "from workrail.store.ports import CandidateQuery, SessionFilter\n"
        "query = LocalBackend.open(Path(sys.argv[1])).query\n"
        "page = query.page(SessionFilter(archived='include')).unwrap()\n"
        "print(len(page.summaries))\n"
        "print(len(query.candidates(CandidateQuery(session_id=sys.argv[2])).unwrap()))\n"
    )
    try:
        again = run_workrail(data_dir, "sessions", "--json", text=True, timeout=60)
        direct = subprocess.run(
            [sys.executable, "-c", script, str(data_dir), chain.sess],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        _unblock(index)
    assert again.returncode == 0, again.stderr
    assert chain.sess in again.stdout
    assert direct.returncode == 0, direct.stderr
    assert direct.stdout.split() == ["1", "1"]
