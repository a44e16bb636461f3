"""Finding, following and tidying sessions through the engine: id prefixes, listing, the
event cursor, workspace signals, archive, delete and prune with mark-and-sweep."""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REFERENCE
from tests.engine.conftest import engine_over
from tests.engine.helpers import err, sid_of, tree_digest
from tests.engine.hold_lock_child import writer_in_another_process
from tests.services import require_binary
from workrail.engine.api import Engine
from workrail.engine.lifecycle import PruneRequest
from workrail.engine.sessions import ListRequest
from workrail.probes.git import GitWorkspaceProbe
from workrail.store.local.backend import LocalBackend


def counting_entropy() -> Any:
    """Ids that share a long common start, so prefixes can be ambiguous."""
    counter = itertools.count(1)
    return lambda n: b"\x00" * (n - 4) + next(counter).to_bytes(4, "big")


def _start(engine: Engine, goal: str = "a goal", **kw: Any) -> str:
    r = engine.start_workflow("probe-flow", {"goal": goal}, **kw).unwrap()
    return str(sid_of(engine, r["stateToken"]))


@pytest.fixture
def sequential(data_dir: Path) -> Engine:
    return engine_over(LocalBackend.open(data_dir), entropy=counting_entropy())


def test_ids_are_taken_by_unique_prefix(sequential: Engine) -> None:
    a, b = _start(sequential), _start(sequential)
    common = next(i for i in range(len(a)) if a[i] != b[i])
    assert sequential.resolve_session(a).unwrap() == a
    assert sequential.resolve_session(b[: common + 1]).unwrap() == b
    assert sequential.resolve_session(b[5 : common + 1]).unwrap() == b  # without sess_
    ambiguous = err(sequential.resolve_session(a[:common]))
    assert ambiguous.code == "VALIDATION_ERROR"
    assert sorted(ambiguous.details["details"]["matches"]) == sorted([a, b])
    assert err(sequential.resolve_session("sess_" + "q" * 26)).code == "NOT_FOUND"
    assert err(sequential.resolve_session("../etc")).code == "VALIDATION_ERROR"
    assert err(sequential.archive([a, a[:common]])).code == "VALIDATION_ERROR"
    assert not sequential.session_summary(a).unwrap().archived  # nothing was archived


def test_listing_pages_with_cursors_and_rejects_bad_input(engine: Engine) -> None:
    ids = {_start(engine, f"goal {n}") for n in range(5)}
    seen: list[str] = []
    cursor = None
    while True:
        page = engine.list_sessions(ListRequest(limit=2, cursor=cursor)).unwrap()
        seen.extend(s.session_id for s in page.summaries)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids)
    assert len(seen) == 5
    typo = err(engine.list_sessions(ListRequest(statuses=("in_progres",))))
    assert typo.code == "VALIDATION_ERROR"
    assert typo.details["details"]["didYouMean"] == "in_progress"
    assert err(engine.list_sessions(ListRequest(cursor="p1.garbage"))).code == "VALIDATION_ERROR"
    assert err(engine.list_sessions(ListRequest(limit=0))).code == "VALIDATION_ERROR"
    found = engine.list_sessions(ListRequest(text="goal 3")).unwrap().summaries
    assert [s.title for s in found] == ["goal 3"]


def test_prune_and_list_refuse_an_unknown_status_alike(engine: Engine, data_dir: Path) -> None:
    _start(engine)
    pruned = err(engine.prune(PruneRequest(older_than=timedelta(days=1), statuses=("complet",))))
    listed = err(engine.list_sessions(ListRequest(statuses=("complet",))))
    assert pruned.code == listed.code == "VALIDATION_ERROR"
    assert pruned.message == listed.message == "Unknown status 'complet'."
    assert pruned.details["details"]["didYouMean"] == "complete"
    assert listed.details == pruned.details


def test_events_since_pages_and_reports_gaps(engine: Engine, data_dir: Path) -> None:
    sid = _start(engine)
    page = engine.events_since(sid, 0, 2).unwrap()
    assert [e.eventIndex for e in page.events] == [0, 1]
    assert page.next_cursor == 2
    rest = engine.events_since(sid[:12], page.next_cursor, 100).unwrap()
    assert rest.events[0].eventIndex == 2
    assert rest.at_end
    past = engine.events_since(sid, 999, 10).unwrap()
    assert past.events == ()
    assert past.next_cursor == 999
    for bad in (-1, "3", 1.5, True, None):
        assert err(engine.events_since(sid, bad)).code == "VALIDATION_ERROR"
    assert err(engine.events_since(sid, 0, 0)).code == "VALIDATION_ERROR"
    # damage the newest append: the readable prefix, then an explicit error
    r = engine.start_workflow("probe-flow").unwrap()
    damaged = sid_of(engine, r["stateToken"])
    engine.advance(r["stateToken"], r["ackToken"], notes_markdown="x").unwrap()
    segment = max((data_dir / "sessions" / damaged / "events").iterdir())
    raw = bytearray(segment.read_bytes())
    raw[len(raw) // 2] ^= 1
    segment.write_bytes(bytes(raw))
    fresh = engine_over(LocalBackend.open(data_dir))
    head = fresh.events_since(damaged, 0, 100).unwrap()
    assert head.health.kind == "corrupt_tail"
    assert head.next_cursor == head.event_count
    gap = err(fresh.events_since(damaged, head.next_cursor))
    assert gap.code == "SESSION_NOT_HEALTHY"
    assert gap.details["details"]["firstUnreadableIndex"] == head.event_count
    assert gap.details["details"]["firstReadableIndex"] == 0
    engine.delete_sessions([sid]).unwrap()
    assert err(engine.events_since(sid, 0)).code == "NOT_FOUND"


def _git_repo(path: Path) -> str:
    path.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, text=True)

    run("init", "-q", "-b", "feature/resume")
    (path / "f.txt").write_text("x")
    run("add", "f.txt")
    run("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "one")
    return run("rev-parse", "HEAD").stdout.strip()


def test_start_records_git_observations_and_the_workspace(data_dir: Path, tmp_path: Path) -> None:
    require_binary("git", "git")
    head = _git_repo(tmp_path / "repo")
    backend = LocalBackend.open(data_dir)
    base = engine_over(backend)
    probe = GitWorkspaceProbe(tmp_path / "elsewhere")
    engine = Engine(dataclasses.replace(base.deps, probe=probe))
    sid = _start(engine, workspace_path=str(tmp_path / "repo"))
    events = backend.sessions.read(sid, lambda log: list(log.events)).unwrap()
    observed = [e for e in events if e.kind == "observation_recorded"]
    assert [e.data.key for e in observed] == ["git_branch", "git_head_sha", "repo_root_hash"]
    assert all("scope" not in e.to_json() for e in observed)  # spec 20: no scope key
    assert observed[0].dedupeKey == f"observation_recorded:{sid}:git_branch"
    summary = engine.session_summary(sid).unwrap()
    assert (summary.git_branch, summary.git_head_sha) == ("feature/resume", head)
    assert summary.workspace_path == str(tmp_path / "repo")
    inside = str(tmp_path / "repo")
    assert [
        s.session_id for s in engine.list_sessions(ListRequest(workspace=inside)).unwrap().summaries
    ] == [sid]
    assert engine.list_sessions(ListRequest(branch="feature/resume")).unwrap().summaries
    # not a repository: the path only; no path and a cwd outside any repo: nothing
    plain = _start(engine, workspace_path=str(tmp_path))
    assert engine.session_summary(plain).unwrap().git_branch is None
    assert engine.session_summary(plain).unwrap().workspace_path == str(tmp_path)
    bare = _start(engine)
    assert engine.session_summary(bare).unwrap().workspace_path is None


def test_a_start_never_fails_for_want_of_git(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    probe = GitWorkspaceProbe(tmp_path)
    base = engine_over(LocalBackend.open(data_dir))
    engine = Engine(dataclasses.replace(base.deps, probe=probe))
    sid = _start(engine, workspace_path=str(tmp_path / "missing"))
    assert engine.session_summary(sid).unwrap().git_head_sha is None


def test_archive_unarchive_and_delete(engine: Engine) -> None:
    a, b = _start(engine), _start(engine)
    done = engine.archive([a, b[:20]]).unwrap()
    assert set(done.changed) == {a, b}
    assert engine.archive([a]).unwrap().unchanged == (a,)
    assert engine.list_sessions(ListRequest()).unwrap().summaries == ()
    assert len(engine.list_sessions(ListRequest(archived="include")).unwrap().summaries) == 2
    assert engine.unarchive([a]).unwrap().changed == (a,)
    assert engine.delete_sessions([b]).unwrap().changed == (b,)
    assert err(engine.session_summary(b)).code == "NOT_FOUND"


def test_a_session_being_written_is_kept(engine: Engine, data_dir: Path) -> None:
    sid = _start(engine)
    with writer_in_another_process(data_dir)(sid):
        result = engine.delete_sessions([sid]).unwrap()
        assert result.busy == (sid,)
        assert result.changed == ()
        assert engine.archive([sid]).unwrap().busy == (sid,)
    assert engine.session_summary(sid).unwrap().event_count == 5


def durable_digest(data_dir: Path) -> str:
    """The data directory's digest without the disposable summary index."""
    return "".join(
        tree_digest(data_dir / d) for d in ("sessions", "snapshots", "workflows", "keys")
    )


def _age(data_dir: Path, session_id: str, days: int) -> None:
    """Make a session last active `days` ago (its manifest's mtime is its last append)."""
    import os
    import time

    manifest = data_dir / "sessions" / session_id / "manifest.jsonl"
    then = time.time() - days * 86400
    os.utime(manifest, (then, then))


def _at(engine: Engine, offset: timedelta) -> Engine:
    later = engine.deps.clock() + offset
    return Engine(dataclasses.replace(engine.deps, clock=lambda: later))


def test_prune_deletes_old_sessions_then_collects_unreferenced_content(
    engine: Engine, data_dir: Path
) -> None:
    old = _start(engine)
    val = engine.start_workflow("val-flow").unwrap()
    val_sid = sid_of(engine, val["stateToken"])
    snapshots_before = {r.ref for r in engine.deps.snapshots.list_refs().unwrap()}
    _age(data_dir, old, 40)
    _age(data_dir, val_sid, 40)
    later = engine
    assert err(later.prune(PruneRequest(older_than=timedelta(0)))).code == "VALIDATION_ERROR"
    digest = durable_digest(data_dir)
    dry = later.prune(
        PruneRequest(
            older_than=timedelta(days=30),
            statuses=("blocked", "in_progress"),
            dry_run=True,
            grace=timedelta(0),
        )
    ).unwrap()
    assert {s.session_id for s in dry.selected} == {old, val_sid}
    assert len(dry.collected.snapshots) == len(snapshots_before)
    assert durable_digest(data_dir) == digest  # a dry run changes nothing durable
    kept = _start(engine)  # probe-flow again: shares its first snapshot and workflow
    report = later.prune(PruneRequest(older_than=timedelta(days=30), grace=timedelta(0))).unwrap()
    assert kept not in report.deleted
    assert set(report.deleted) >= {old, val_sid}
    left = {r.ref for r in engine.deps.snapshots.list_refs().unwrap()}
    pins = engine.deps.sessions.read(
        kept, lambda log: {n.data.snapshotRef for n in log.index.nodes.values()}
    ).unwrap()
    assert pins <= left
    assert left == pins
    hashes = {r.ref for r in engine.deps.pinned.list_refs().unwrap()}
    assert len(hashes) == 1  # val-flow's pinned workflow went with its session
    (node,) = pins_nodes(engine, kept)
    token = engine.deps.codec.mint_state(
        session_id=kept, node_id=node, workflow_hash=next(iter(hashes))
    )
    assert engine.rehydrate(token).unwrap()["pending"]["stepId"] == "plan"  # still whole


def pins_nodes(engine: Engine, sid: str) -> list[str]:
    return engine.deps.sessions.read(sid, lambda log: list(log.index.nodes)).unwrap()


def test_nothing_is_collected_while_a_session_does_not_validate(
    engine: Engine, data_dir: Path
) -> None:
    old = _start(engine)
    r = engine.start_workflow("probe-flow").unwrap()
    broken = sid_of(engine, r["stateToken"])
    engine.advance(r["stateToken"], r["ackToken"], notes_markdown="x").unwrap()
    segment = max((data_dir / "sessions" / broken / "events").iterdir())
    segment.write_bytes(segment.read_bytes()[:-5] + b"xxxxx")
    before = {r.ref for r in engine.deps.snapshots.list_refs().unwrap()}
    _age(data_dir, old, 40)
    report = (
        engine_over(LocalBackend.open(data_dir))
        .prune(
            PruneRequest(
                older_than=timedelta(days=30), statuses=("in_progress",), grace=timedelta(0)
            )
        )
        .unwrap()
    )
    assert old in report.deleted
    assert report.collected.skipped_reason is not None
    assert broken in report.collected.skipped_reason
    assert {r.ref for r in engine.deps.snapshots.list_refs().unwrap()} == before


def test_recently_stored_content_is_spared(engine: Engine) -> None:
    fresh = engine.deps.snapshots.put({"about": "to be pinned"}).unwrap()
    report = (
        _at(engine, timedelta(minutes=5))
        .prune(PruneRequest(older_than=timedelta(days=30)))
        .unwrap()
    )
    assert fresh not in report.collected.snapshots
    assert engine.deps.snapshots.get(fresh).unwrap() is not None


LONG_FLOW = {
    "id": "long-flow",
    "name": "Long flow",
    "version": "1.0.0",
    "description": "Many steps, for a writer that keeps writing.",
    "steps": [{"id": f"step-{n}", "title": f"Step {n}", "prompt": "Do it."} for n in range(80)],
}


def test_prune_never_collects_from_under_a_concurrent_writer(tmp_path: Path) -> None:
    """A writer in another process keeps advancing (each advance stores a snapshot, then
    pins it) while prune deletes old sessions and collects, again and again."""
    import json
    import os
    import sys
    import time

    data_dir, workflows = tmp_path / "data", tmp_path / "workflows"
    workflows.mkdir()
    (workflows / "long-flow.json").write_text(json.dumps(LONG_FLOW))
    shutil.copy(REFERENCE / "workflows" / "probe-flow.json", workflows)
    engine = engine_over(LocalBackend.open(data_dir), workflows)
    doomed = [_start(engine, f"old {n}") for n in range(3)]
    garbage = engine.deps.snapshots.put({"unreferenced": True}).unwrap()
    old = time.time() - 3 * 3600
    for sid in doomed:
        _age(data_dir, sid, 40)
    snapshot_dir = data_dir / "snapshots"
    for path in snapshot_dir.iterdir():
        os.utime(path, (old, old))
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.advance_child", str(data_dir), str(workflows), "60"],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        started = child.stdout.readline().split()
        assert started[0] == "STARTED"
        writer = started[1]
        collected: set[str] = set()
        deleted: set[str] = set()
        running = True
        while running:  # at least once, however fast the writer finishes
            running = child.poll() is None
            report = engine.prune(PruneRequest(older_than=timedelta(days=30))).unwrap()
            assert report.collected.skipped_reason is None
            collected |= set(report.collected.snapshots)
            deleted |= set(report.deleted)
        assert child.stdout.readline().split() == ["DONE", writer]
    finally:
        child.wait(timeout=120)
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == 0
    assert deleted == set(doomed)
    assert garbage in collected
    fresh = engine_over(LocalBackend.open(data_dir), workflows)
    summary = fresh.session_summary(writer).unwrap()
    assert summary.is_healthy
    assert summary.primary is not None
    assert summary.primary.steps_done == 60
    refs = fresh.deps.sessions.read(
        writer, lambda log: {n.data.snapshotRef for n in log.index.nodes.values()}
    ).unwrap()
    assert all(fresh.deps.snapshots.get(ref).unwrap() is not None for ref in refs)
