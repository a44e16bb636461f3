from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure

from tests.bundle.helpers import SESSIONS, export, tree_fingerprint, truth
from tests.store.plans import fresh_session_id
from workrail.bundle.export import bundle_bytes
from workrail.bundle.import_ import import_bundle
from workrail.bundle.rename import rename_session
from workrail.core.events import ArtifactRefPayload, EdgeCreated, NodeOutputAppended
from workrail.core.ids import make_id
from workrail.core.snapshot import parse_snapshot
from workrail.store.local.backend import LocalBackend
from workrail.workflow.advance import AdvanceRequest, decide_advance
from workrail.workflow.compiler import compile_pinned
from workrail.workflow.envelopes import parse_pinned

FIXED_NEW_ID = make_id("sess", bytes(range(16)))


def _session_files(data: Path, sid: str) -> dict[str, bytes]:
    root = data / "sessions" / sid
    # `.lock` is the store's flock file; its presence means nothing (store/local/lock.py)
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


@pytest.mark.parametrize("sid", SESSIONS)
def test_import_into_empty_dir_keeps_id_and_rebuilds_identical_files(
    reference_data: Path, data_dir: Path, sid: str
) -> None:
    raw = bundle_bytes(export(LocalBackend.open(reference_data), sid))
    result = import_bundle(
        LocalBackend.open(data_dir), raw, mint_session_id=fresh_session_id
    ).unwrap()
    assert result.session_id == sid
    assert result.renamed is False
    # same append plans → the reference's manifest and segments, byte for byte
    assert _session_files(data_dir, sid) == _session_files(reference_data, sid)
    for kind in ("snapshots", "workflows/pinned"):
        ours = {p.name: p.read_bytes() for p in (data_dir / kind).iterdir()}
        theirs = {p.name: p.read_bytes() for p in (reference_data / kind).iterdir()}
        assert ours.items() <= theirs.items()
        assert ours
    again = bundle_bytes(export(LocalBackend.open(data_dir), sid))
    assert again == raw


@pytest.mark.parametrize("sid", SESSIONS)
def test_collision_imports_as_new_session(reference_data: Path, sid: str) -> None:
    backend = LocalBackend.open(reference_data)
    original = export(backend, sid)
    before = _session_files(reference_data, sid)
    result = import_bundle(backend, bundle_bytes(original), mint_session_id=lambda: FIXED_NEW_ID)
    imported = result.unwrap()
    assert imported.renamed is True
    assert imported.session_id == FIXED_NEW_ID
    assert imported.original_session_id == sid
    assert _session_files(reference_data, sid) == before  # never merged, never touched
    reexported = export(LocalBackend.open(reference_data), FIXED_NEW_ID)
    assert reexported.session.sessionId == FIXED_NEW_ID
    events = reexported.session_json()["events"]
    assert all(e["sessionId"] == FIXED_NEW_ID for e in events)
    assert all(sid not in e["dedupeKey"] for e in events)
    assert all(FIXED_NEW_ID in e["dedupeKey"] for e in events)
    assert [e["eventId"] for e in events] == [e.eventId for e in original.session.events]
    # identical truth modulo the session id; renaming back gives the original bytes
    assert truth(reexported, as_session=sid) == truth(original)
    assert bundle_bytes(rename_session(reexported, sid)) == bundle_bytes(original)
    assert reexported.session.snapshots == original.session.snapshots
    assert reexported.session.pinnedWorkflows == original.session.pinnedWorkflows


def test_second_collision_mints_again(reference_data: Path) -> None:
    backend = LocalBackend.open(reference_data)
    raw = bundle_bytes(export(backend, SESSIONS[0]))
    ids = iter([FIXED_NEW_ID, make_id("sess", bytes(range(1, 17)))])
    first = import_bundle(backend, raw, mint_session_id=lambda: FIXED_NEW_ID).unwrap()
    second = import_bundle(backend, raw, mint_session_id=lambda: next(ids))
    assert isinstance(second, Failure)  # the minter offered a taken id: refused, not merged
    assert second.failure().code == "IMPORT_SESSION_STORE_ERROR"
    third = import_bundle(backend, raw, mint_session_id=fresh_session_id).unwrap()
    assert len({SESSIONS[0], first.session_id, third.session_id}) == 3


def test_import_reports_runs_and_preferred_tips(reference_data: Path, data_dir: Path) -> None:
    source = LocalBackend.open(reference_data)
    for sid in SESSIONS:
        expected = source.sessions.read(
            sid,
            lambda log: {
                r: (log.index.preferred_tip(r), info.started.data.workflowHash)
                for r, info in log.index.runs.items()
            },
        ).unwrap()
        result = import_bundle(
            LocalBackend.open(data_dir),
            bundle_bytes(export(source, sid)),
            mint_session_id=fresh_session_id,
        )
        runs = {r.run_id: (r.preferred_tip_node_id, r.workflow_hash) for r in result.unwrap().runs}
        assert runs == expected
        assert json.loads(json.dumps(result.unwrap().to_json()))["runs"]


def _next_step(backend: LocalBackend, sid: str) -> list[Any]:
    """What continuing each run would do: the preferred tip's pending step and the pure
    advance decision for a fixed output."""

    def decide(log: Any) -> list[Any]:
        out = []
        for run_id, run in log.index.runs.items():
            tip = log.index.preferred_tip(run_id)
            node = log.index.nodes[tip]
            snapshot = parse_snapshot(
                backend.snapshots.get(node.data.snapshotRef).unwrap()
            ).unwrap()
            pinned = parse_pinned(backend.pinned.get(run.started.data.workflowHash).unwrap())
            compiled = compile_pinned(pinned.unwrap()).unwrap()
            history = [
                e.data.payload.content
                for e in log.events
                if isinstance(e, NodeOutputAppended)
                and isinstance(e.data.payload, ArtifactRefPayload)
            ]
            request = AdvanceRequest(
                attempt_id=make_id("attempt", b"\x07" * 16),
                context=log.index.run_context(run_id),
                notes_markdown="Done: the step's work is complete.",
                artifact_history=history,
            )
            decision = decide_advance(compiled, snapshot, request).unwrap()
            out.append(
                (
                    run_id,
                    tip,
                    snapshot.to_json(),
                    type(decision).__name__,
                    decision.snapshot.to_json(),
                )
            )
        return out

    return backend.sessions.read(sid, decide).unwrap()


@pytest.mark.parametrize("sid", SESSIONS)
def test_continuing_after_import_gives_the_same_next_step(
    reference_data: Path, data_dir: Path, sid: str
) -> None:
    source = LocalBackend.open(reference_data)
    raw = bundle_bytes(export(source, sid))
    renamed = import_bundle(source, raw, mint_session_id=fresh_session_id).unwrap()
    fresh = import_bundle(
        LocalBackend.open(data_dir), raw, mint_session_id=fresh_session_id
    ).unwrap()
    expected = _next_step(source, sid)
    assert expected
    assert all(step[3] in ("Advanced", "Blocked") for step in expected)
    assert _next_step(source, renamed.session_id) == expected
    assert _next_step(LocalBackend.open(data_dir), fresh.session_id) == expected


def test_checkpoints_survive_the_round_trip(reference_data: Path, data_dir: Path) -> None:
    source = LocalBackend.open(reference_data)
    for sid in SESSIONS:
        raw = bundle_bytes(export(source, sid))
        result = import_bundle(
            LocalBackend.open(data_dir), raw, mint_session_id=fresh_session_id
        ).unwrap()

        def checkpoints(log: Any) -> list[str]:
            return [
                e.data.toNodeId
                for e in log.events
                if isinstance(e, EdgeCreated) and e.data.edgeKind == "checkpoint"
            ]

        original = source.sessions.read(sid, checkpoints).unwrap()
        assert original
        assert (
            LocalBackend.open(data_dir).sessions.read(result.session_id, checkpoints).unwrap()
            == original
        )


def test_imported_session_accepts_further_appends(reference_data: Path, data_dir: Path) -> None:
    """The import leaves a normal, healthy session: the store takes the next append."""
    from tests.store.plans import advance_plan

    raw = bundle_bytes(export(LocalBackend.open(reference_data), SESSIONS[0]))
    backend = LocalBackend.open(data_dir)
    result = import_bundle(backend, raw, mint_session_id=fresh_session_id).unwrap()
    run = result.runs[0]
    count = backend.sessions.read(result.session_id, lambda log: log.count).unwrap()
    plan = advance_plan(
        result.session_id,
        run.run_id,
        count,
        run.preferred_tip_node_id or "",
        make_id("node", b"\x01" * 16),
        make_id("attempt", b"\x02" * 16),
    )
    appended = backend.sessions.write(result.session_id, lambda txn: txn.append(plan))
    assert appended.unwrap().deduplicated is False
    assert backend.sessions.health(result.session_id).unwrap().is_healthy


def test_failed_import_writes_nothing(reference_data: Path) -> None:
    raw = bytearray(bundle_bytes(export(LocalBackend.open(reference_data), SESSIONS[1])))
    position = raw.index(b'"eventIndex":7')
    raw[position + len(b'"eventIndex":')] = ord("8")
    before = tree_fingerprint(reference_data)
    result = import_bundle(
        LocalBackend.open(reference_data), bytes(raw), mint_session_id=fresh_session_id
    )
    assert isinstance(result, Failure)
    assert result.failure().code.startswith("BUNDLE_")
    assert tree_fingerprint(reference_data) == before
