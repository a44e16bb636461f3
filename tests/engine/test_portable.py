"""Portable checkpoint records: export, strict parsing, and fail-closed resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.engine.conftest import make_engine
from tests.engine.helpers import err, ok, tree_digest
from workrail.core.canonical import canonical_bytes


def _record_at_build(data_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    engine = make_engine(data_dir)
    r = ok(engine.start_workflow("probe-flow", {"ticket": "T-1"}))
    a = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="secret notes"))
    return ok(engine.export_checkpoint_record(a["checkpointToken"])), a


def test_record_holds_only_the_plan_fingerprint_and_progress(data_dir: Path) -> None:
    record, _ = _record_at_build(data_dir)
    assert set(record) == {
        "format",
        "workflowId",
        "workflowHash",
        "completed",
        "loopStack",
        "loopDecisions",
        "contextDigest",
    }
    assert record["completed"] == ["plan"]
    assert (
        record["workflowHash"]
        == "sha256:5355dac5bead5f869d68b02723ceaef551e0acd397d6973e14fc7959d7110c09"
    )
    text = json.dumps(record)
    assert "secret" not in text
    assert "T-1" not in text
    assert "st1." not in text


def test_resume_continues_at_the_first_unfinished_step(data_dir: Path, tmp_path: Path) -> None:
    record, original = _record_at_build(data_dir)
    other = make_engine(tmp_path / "elsewhere")
    resumed = ok(other.resume_checkpoint_record(canonical_bytes(record), {"ticket": "T-1"}))
    assert resumed["pending"] == original["pending"]
    done = ok(other.advance(resumed["stateToken"], resumed["ackToken"], notes_markdown="built"))
    assert done["pending"]["stepId"] == "verify"


def test_resume_by_node_id(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    r = ok(engine.start_workflow("probe-flow"))
    node = engine.deps.codec.parse_state(r["stateToken"]).unwrap().node_id
    record = ok(engine.export_checkpoint_record(node))
    assert record["completed"] == []


def test_mismatches_fail_closed_and_write_nothing(data_dir: Path, tmp_path: Path) -> None:
    record, _ = _record_at_build(data_dir)
    target = tmp_path / "elsewhere"
    other = make_engine(target)
    before = tree_digest(target)
    wrong_ctx = err(other.resume_checkpoint_record(canonical_bytes(record), {"ticket": "T-2"}))
    assert wrong_ctx.code == "CHECKPOINT_CONTEXT_MISMATCH"
    changed = {**record, "workflowHash": "sha256:" + "0" * 64}
    assert (
        err(other.resume_checkpoint_record(canonical_bytes(changed), {"ticket": "T-1"})).code
        == "CHECKPOINT_PLAN_MISMATCH"
    )
    assert tree_digest(target) == before


def test_parsing_is_strict_and_bounded(data_dir: Path) -> None:
    record, _ = _record_at_build(data_dir)
    engine = make_engine(data_dir)
    cases = [
        {**record, "extra": 1},
        {**record, "format": "workrail.checkpoint.v2"},
        {**record, "completed": ["Plan"]},
        {**record, "completed": ["b", "a"]},
        {**record, "completed": ["x"] * 2},
        {**record, "completed": [f"s{i}" for i in range(1025)]},
        {k: v for k, v in record.items() if k != "contextDigest"},
    ]
    for case in cases:
        assert (
            err(engine.resume_checkpoint_record(json.dumps(case).encode(), {})).code
            == "CHECKPOINT_RECORD_INVALID"
        )
    big = json.dumps(record).encode() + b" " * (16 * 1024)
    assert err(engine.resume_checkpoint_record(big, {})).code == "CHECKPOINT_RECORD_INVALID"
    assert err(engine.resume_checkpoint_record(b"not json", {})).code == "CHECKPOINT_RECORD_INVALID"


def test_resume_inside_an_artifact_driven_loop(data_dir: Path, tmp_path: Path) -> None:
    engine = make_engine(data_dir)
    control = {"kind": "wr.loop_control", "loopId": "review-loop", "decision": "continue"}
    r = ok(engine.start_workflow("loopctl-flow"))
    prep = ok(
        engine.advance(r["stateToken"], r["ackToken"], notes_markdown="ready", artifacts=[control])
    )
    first = ok(
        engine.advance(
            prep["stateToken"], prep["ackToken"], notes_markdown="again", artifacts=[control]
        )
    )
    assert first["pending"]["stepId"] == "review"
    record = ok(engine.export_checkpoint_record(first["checkpointToken"]))
    assert record["loopDecisions"] == {"review-loop": "continue"}
    assert record["loopStack"] == [{"loopId": "review-loop", "iteration": 1, "bodyIndex": 0}]
    other = make_engine(tmp_path / "elsewhere")
    resumed = ok(other.resume_checkpoint_record(canonical_bytes(record), {}))
    assert resumed["pending"] == first["pending"]
    stop = {**control, "decision": "stop"}
    done = ok(
        other.advance(
            resumed["stateToken"], resumed["ackToken"], notes_markdown="enough", artifacts=[stop]
        )
    )
    assert done["pending"]["stepId"] == "done"
