"""The session read model: forks, checkpoints, blocked nodes, completed runs, and damaged
sessions shown with their health and validated prefix rather than crashing."""

from __future__ import annotations

from pathlib import Path

from tests.engine.conftest import make_engine
from tests.engine.helpers import ok, tree_digest
from workrail.engine.api import Engine
from workrail.engine.sessions_view import SessionView, load_session
from workrail.store.local.backend import LocalBackend


def _sid(engine: Engine, state_token: str) -> str:
    return engine.deps.codec.parse_state(state_token).unwrap().session_id


def _view(data_dir: Path, sid: str) -> SessionView:
    backend = LocalBackend.open(data_dir)
    return load_session(backend, sid)


def _forked(engine: Engine) -> str:
    """plan → build, checkpoint at build, then two advances from build (a fork)."""
    r = ok(engine.start_workflow("probe-flow", {}))
    a = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="the plan"))
    ok(engine.checkpoint(a["checkpointToken"]))
    ok(engine.advance(a["stateToken"], a["ackToken"], notes_markdown="built it"))
    again = ok(engine.rehydrate(a["stateToken"]))
    ok(engine.advance(a["stateToken"], again["ackToken"], notes_markdown="built it again"))
    return _sid(engine, r["stateToken"])


def test_fork_and_checkpoint_are_projected(data_dir: Path) -> None:
    sid = _forked(make_engine(data_dir))
    view = _view(data_dir, sid)
    assert view.is_healthy
    assert not view.prefix_only
    # the run status words of `workrail sessions`, read off the tip without a summary
    assert view.workflow_id == "probe-flow"
    assert view.status == "in_progress"
    assert view.last_activity is not None
    (run,) = view.runs
    kinds = sorted(n.kind for n in run.nodes.values())
    assert kinds == ["checkpoint", "step", "step", "step", "step"]
    (fork,) = [n for n in run.nodes.values() if len(n.children) == 3]
    assert fork.step_id == "build"
    assert fork.state == "done", "accepted outputs left it: its step is done"
    (root,) = [n for n in run.nodes.values() if n.parent is None]
    assert root.state == "done"
    assert run.nodes[run.preferred_tip or ""].state == "pending"
    child_edges = sorted(run.nodes[c].edge_kind or "" for c in fork.children)
    assert child_edges == ["acked_step", "acked_step", "checkpoint"]
    assert len(run.tips) == 3
    assert run.preferred_tip in run.tips
    assert run.roots == [n.node_id for n in run.nodes.values() if n.parent is None]
    notes = sorted(note for n in run.nodes.values() for note in n.notes)
    assert notes == ["built it", "built it again", "the plan"]
    doc = view.to_json()
    assert doc["events"] == view.event_count > 0
    assert "validatedPrefixOnly" not in doc


def test_blocked_node_is_marked(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    r = ok(engine.start_workflow("val-flow"))
    blocked = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="not yet"))
    assert blocked["kind"] == "blocked"
    (run,) = _view(data_dir, _sid(engine, r["stateToken"])).runs
    marked = [n for n in run.nodes.values() if n.state == "blocked"]
    assert marked
    assert all(n.step_id == "write" for n in marked)
    assert {n.kind for n in marked} == {"blocked_attempt"}


def test_completed_run_reports_complete(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    r = ok(engine.start_workflow("probe-flow"))
    for notes in ("planned", "built", "verified"):
        r = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown=notes))
    assert r["isComplete"] is True
    view = _view(data_dir, _sid(engine, r["stateToken"]))
    assert view.status == "complete"
    assert view.runs[0].status == "complete"
    tip = view.runs[0].nodes[view.runs[0].preferred_tip or ""]
    assert tip.state == "complete"
    assert tip.step_id is None


def test_corrupt_tail_is_listed_and_shows_its_validated_prefix(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    r = ok(engine.start_workflow("probe-flow"))
    ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    sid = _sid(engine, r["stateToken"])
    healthy = _view(data_dir, sid)
    segment = max((data_dir / "sessions" / sid / "events").iterdir())
    raw = bytearray(segment.read_bytes())
    raw[10] ^= 0x01
    segment.write_bytes(bytes(raw))
    before = tree_digest(data_dir)

    backend = LocalBackend.open(data_dir)
    listed = load_session(backend, sid)
    assert listed.status == "corrupt_tail"
    assert listed.health["reason"]["code"] == "digest_mismatch"
    view = load_session(backend, sid)
    assert view.prefix_only
    assert not view.is_healthy
    assert 0 < view.event_count < healthy.event_count
    (run,) = view.runs
    assert set(run.nodes) < set(healthy.runs[0].nodes)
    assert run.nodes[run.preferred_tip or ""].step_id == "plan"
    doc = view.to_json()
    assert doc["validatedPrefixOnly"] is True
    assert "can still be read" in doc["notice"]
    assert tree_digest(data_dir) == before, "reading never writes"


def test_corrupt_head_is_listed_with_no_runs(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    r = ok(engine.start_workflow("probe-flow"))
    sid = _sid(engine, r["stateToken"])
    manifest = data_dir / "sessions" / sid / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    manifest.write_bytes(b"{not json\n" + b"".join(lines[1:]))
    view = load_session(LocalBackend.open(data_dir), sid)
    assert view.status == "corrupt_head"
    assert view.runs == []
    assert view.event_count == 0
    assert view.workflow_id == "-"
