"""The engine's use cases end to end over a real data directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.conftest import make_engine
from tests.engine.helpers import as_bytes, err, looped, ok, sid_of, tree_digest
from workrail.engine.api import Engine
from workrail.store.local.backend import LocalBackend
from workrail.store.local.keyring import rotate_keyring


def _events(data_dir: Path, sid: str) -> list[Any]:
    return LocalBackend.open(data_dir).sessions.read(sid, lambda log: list(log.events)).unwrap()


def test_start_writes_the_start_plan(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("probe-flow", {"ticket": "T-1", "n": 1}))
    assert r["pending"] == {
        "stepId": "plan",
        "title": "Plan",
        "prompt": "Write a plan for the task.",
    }
    assert r["isComplete"] is False
    assert "kind" not in r
    assert r["nextIntent"] == "perform_pending_then_continue"
    assert r["nextCall"]["params"] == {
        "intent": "advance",
        "stateToken": r["stateToken"],
        "ackToken": r["ackToken"],
    }
    kinds = [e.kind for e in _events(data_dir, sid_of(engine, r["stateToken"]))]
    assert kinds == [
        "session_created",
        "run_started",
        "node_created",
        "preferences_changed",
        "context_set",
    ]
    # the initial snapshot is the reference's golden one
    node = _events(data_dir, sid_of(engine, r["stateToken"]))[2]
    assert (
        node.data.snapshotRef
        == "sha256:4748bddf79af5c179e3c59cbcb86d35ab387c10362eff5b085dd62039384027e"
    )
    assert (
        node.data.workflowHash
        == "sha256:5355dac5bead5f869d68b02723ceaef551e0acd397d6973e14fc7959d7110c09"
    )


def test_tokens_are_short(engine: Engine) -> None:
    r = ok(engine.start_workflow("probe-flow"))
    assert max(len(r[k]) for k in ("stateToken", "ackToken", "checkpointToken")) <= 100


def test_advance_to_completion_and_replay_is_byte_identical(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("probe-flow"))
    a = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    assert a["kind"] == "ok"
    assert a["pending"]["stepId"] == "build"
    sid = sid_of(engine, r["stateToken"])
    before = tree_digest(data_dir)
    again = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    assert as_bytes(again) == as_bytes(a)
    fresh = ok(
        make_engine(data_dir).advance(r["stateToken"], r["ackToken"], notes_markdown="planned")
    )
    assert as_bytes(fresh) == as_bytes(a)
    assert tree_digest(data_dir) == before
    b = ok(engine.advance(a["stateToken"], a["ackToken"], notes_markdown="built"))
    c = ok(engine.advance(b["stateToken"], b["ackToken"], notes_markdown="verified"))
    assert c == {
        "kind": "ok",
        "stateToken": c["stateToken"],
        "isComplete": True,
        "pending": None,
        "preferences": {"autonomy": "guided", "riskPolicy": "conservative"},
        "sessionId": sid,
        "nextIntent": "complete",
        "nextCall": None,
    }
    events = _events(data_dir, sid)
    assert len({e.dedupeKey for e in events}) == len(events)
    recaps = [e.data.payload.notesMarkdown for e in events if e.kind == "node_output_appended"]
    assert recaps == ["planned", "built", "verified"]


def test_replay_with_different_output_warns_and_records_nothing(
    engine: Engine, data_dir: Path
) -> None:
    r = ok(engine.start_workflow("probe-flow"))
    a = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    before = tree_digest(data_dir)
    b = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="something else"))
    assert tree_digest(data_dir) == before
    assert [w["code"] for w in b.pop("warnings")] == ["OUTPUT_NOT_RECORDED"]
    assert b == a


def test_rehydrate_writes_nothing_and_recovers(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("probe-flow"))
    a = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    before = tree_digest(data_dir)
    h = ok(engine.rehydrate(a["stateToken"]))
    assert tree_digest(data_dir) == before
    assert h["stateToken"] == a["stateToken"]
    # The next move after recovering is the pending step, as the advance nextCall says.
    assert h["nextIntent"] == "perform_pending_then_continue"
    assert h["nextCall"]["params"]["intent"] == "advance"
    assert h["pending"]["prompt"].startswith("Build what the plan says.\n\n## Recovery Context")
    assert "### Ancestry Recap\nplanned" in h["pending"]["prompt"]
    assert h["ackToken"] != a["ackToken"]  # a fresh attempt each time


def test_checkpoint_is_idempotent_and_does_not_advance(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("probe-flow"))
    c = ok(engine.checkpoint(r["checkpointToken"]))
    assert c["stateToken"] == r["stateToken"]
    before = tree_digest(data_dir)
    assert as_bytes(ok(engine.checkpoint(r["checkpointToken"]))) == as_bytes(c)
    assert tree_digest(data_dir) == before
    kinds = [
        (e.kind, getattr(e.data, "nodeKind", None))
        for e in _events(data_dir, sid_of(engine, r["stateToken"]))
    ]
    assert kinds[-2:] == [("node_created", "checkpoint"), ("edge_created", None)]
    # the agent's ack token still advances the step; the edge records a non-tip advance
    a = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    assert a["pending"]["stepId"] == "build"
    edge = _events(data_dir, sid_of(engine, r["stateToken"]))[-2]
    assert edge.kind == "edge_created"
    assert edge.data.cause.kind == "non_tip_advance"


def test_fork_keeps_both_branches_and_their_recaps(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("probe-flow"))
    first = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="plan A"))
    fresh = ok(engine.rehydrate(r["stateToken"]))
    second = ok(engine.advance(r["stateToken"], fresh["ackToken"], notes_markdown="plan B"))
    assert first["stateToken"] != second["stateToken"]
    sid = sid_of(engine, r["stateToken"])
    edges = [e for e in _events(data_dir, sid) if e.kind == "edge_created"]
    assert [e.data.cause.kind for e in edges] == ["intentional_fork", "non_tip_advance"]
    a = ok(engine.rehydrate(first["stateToken"]))["pending"]["prompt"]
    b = ok(engine.rehydrate(second["stateToken"]))["pending"]["prompt"]
    assert "plan A" in a
    assert "plan B" not in a
    assert "plan B" in b
    assert "plan A" not in b
    # both branches stay usable
    ok(engine.advance(first["stateToken"], first["ackToken"], notes_markdown="built A"))
    ok(engine.advance(second["stateToken"], second["ackToken"], notes_markdown="built B"))


def test_blocked_outcome_then_retry(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("val-flow"))
    blocked = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="not yet"))
    assert blocked["kind"] == "blocked"
    assert blocked["retryable"] is True
    assert blocked["retryAckToken"] == blocked["ackToken"]
    assert blocked["blockers"]["blockers"][0]["code"] == "INVALID_REQUIRED_OUTPUT"
    assert blocked["validation"]["issues"] == ["Notes must contain DONE"]
    assert blocked["pending"]["stepId"] == "write"
    missing = ok(engine.advance(blocked["stateToken"], blocked["retryAckToken"]))
    assert missing["kind"] == "blocked"
    assert missing["blockers"]["blockers"][0]["code"] == "MISSING_REQUIRED_OUTPUT"
    done = ok(
        engine.advance(missing["stateToken"], missing["retryAckToken"], notes_markdown="DONE now")
    )
    assert done["kind"] == "ok"
    assert done["pending"]["stepId"] == "write-two"
    sid = sid_of(engine, r["stateToken"])
    kinds = [e.kind for e in _events(data_dir, sid)]
    assert kinds.count("validation_performed") == 3  # two blocked + one retry-mode success


def test_context_merge_budget_and_reserved_keys(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("probe-flow", {"ticket": "T-1", "n": 1}))
    before = tree_digest(data_dir)
    big = err(engine.advance(r["stateToken"], r["ackToken"], context={"blob": "x" * 300_000}))
    assert big.code == "VALIDATION_ERROR"
    assert big.details["details"]["measuredBytes"] > big.details["details"]["maxBytes"] == 262144
    reserved = err(engine.advance(r["stateToken"], r["ackToken"], context={"__proto__": 1}))
    assert reserved.code == "VALIDATION_ERROR"
    nan = err(engine.start_workflow("probe-flow", {"x": float("nan")}))
    assert nan.code == "VALIDATION_ERROR"
    assert tree_digest(data_dir) == before
    ok(
        engine.advance(
            r["stateToken"], r["ackToken"], notes_markdown="p", context={"ticket": None, "m": 2}
        )
    )
    sets = [
        e for e in _events(data_dir, sid_of(engine, r["stateToken"])) if e.kind == "context_set"
    ]
    assert sets[-1].data.context == {"n": 1, "m": 2}
    assert sets[-1].data.source == "agent_delta"


def test_token_errors(engine: Engine, data_dir: Path, tmp_path: Path) -> None:
    r = ok(engine.start_workflow("probe-flow"))
    st, ack, chk = r["stateToken"], r["ackToken"], r["checkpointToken"]
    flipped = st[:10] + ("A" if st[10] != "A" else "B") + st[11:]
    assert err(engine.rehydrate(flipped)).code in ("TOKEN_BAD_SIGNATURE", "TOKEN_INVALID_FORMAT")
    assert err(engine.rehydrate(st[:-5])).code == "TOKEN_INVALID_FORMAT"
    assert err(engine.rehydrate("")).code == "TOKEN_INVALID_FORMAT"
    assert err(engine.rehydrate(ack)).code == "TOKEN_INVALID_FORMAT"
    assert err(engine.advance(ack, ack)).code == "TOKEN_INVALID_FORMAT"
    assert err(engine.advance(st, st)).code == "TOKEN_INVALID_FORMAT"
    assert err(engine.advance(st, chk)).code == "TOKEN_INVALID_FORMAT"
    assert err(engine.checkpoint(st)).code == "TOKEN_INVALID_FORMAT"
    other = make_engine(tmp_path / "other")
    assert err(other.rehydrate(st)).code == "TOKEN_BAD_SIGNATURE"
    r2 = ok(engine.start_workflow("probe-flow"))
    assert err(engine.advance(st, r2["ackToken"])).code == "TOKEN_SCOPE_MISMATCH"


def test_unknown_node_in_an_empty_session(engine: Engine, tmp_path: Path) -> None:
    other = make_engine(tmp_path / "other")
    r = ok(other.start_workflow("probe-flow"))
    # same keyring: copy it so the signature verifies but the session does not exist here
    import shutil

    keys = tmp_path / "third" / "keys"
    keys.mkdir(parents=True)
    shutil.copy(tmp_path / "other" / "keys" / "keyring.json", keys / "keyring.json")
    third = make_engine(tmp_path / "third")
    assert err(third.rehydrate(r["stateToken"])).code == "TOKEN_UNKNOWN_NODE"
    assert err(third.checkpoint(r["checkpointToken"])).code == "TOKEN_UNKNOWN_NODE"
    assert not (tmp_path / "third" / "sessions").exists()


def test_rotation_keeps_previous_tokens_until_next_rotation(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    r = ok(engine.start_workflow("probe-flow"))
    rotate_keyring(data_dir)
    rotated = make_engine(data_dir)
    a = ok(rotated.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    assert a["pending"]["stepId"] == "build"
    rotate_keyring(data_dir)
    assert err(make_engine(data_dir).rehydrate(r["stateToken"])).code == "TOKEN_BAD_SIGNATURE"
    ok(make_engine(data_dir).rehydrate(a["stateToken"]))


def test_unhealthy_session_refuses_writes(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("probe-flow"))
    sid = sid_of(engine, r["stateToken"])
    seg = next((data_dir / "sessions" / sid / "events").glob("*.jsonl"))
    raw = bytearray(seg.read_bytes())
    raw[5] ^= 1
    seg.write_bytes(bytes(raw))
    fresh = make_engine(data_dir)
    e1 = err(fresh.advance(r["stateToken"], r["ackToken"], notes_markdown="x"))
    assert e1.code == "SESSION_NOT_HEALTHY"
    assert (
        e1.details["details"]["health"]["kind"] == "corrupt_head"
        or e1.details["details"]["health"]["kind"] == "corrupt_tail"
    )
    assert err(fresh.checkpoint(r["checkpointToken"])).code == "SESSION_NOT_HEALTHY"
    assert LocalBackend.open(data_dir).sessions.load_prefix(sid).unwrap().complete is False


def test_unknown_workflow(engine: Engine) -> None:
    e = err(engine.start_workflow("nope"))
    assert e.code == "NOT_FOUND"
    assert e.message == "Workflow not found: nope"
    assert err(engine.inspect_workflow("nope")).code == "NOT_FOUND"
    assert "didYouMean" not in str(e.details)  # nothing close: the reference's answer


@pytest.mark.parametrize("call", ["start_workflow", "inspect_workflow"])
def test_a_misspelt_workflow_id_is_told_the_id_it_most_likely_meant(
    engine: Engine, call: str
) -> None:
    e = err(getattr(engine, call)("probe-flwo"))
    assert e.code == "NOT_FOUND"
    assert e.message == "Workflow not found: probe-flwo"
    assert e.details["details"]["didYouMean"] == "probe-flow"
    assert e.details["suggestion"].startswith("Did you mean 'probe-flow'? Use list_workflows")


def test_inspect_preview_hash(engine: Engine) -> None:
    r = ok(engine.inspect_workflow("probe-flow"))
    assert (
        r["workflowHash"]
        == "sha256:de1b4bc829f5c23adcbe3ffd858b21f220e9ebecb550a76075875dbeaae14e54"
    )
    assert r["compiled"]["preview"]["stepId"] == "plan"
    m = ok(engine.inspect_workflow("probe-flow", "metadata"))
    assert m["compiled"] == {
        "schemaVersion": 1,
        "sourceKind": "v1_preview",
        "workflowId": "probe-flow",
    }


def test_artifact_driven_loop_runs_until_stop(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("loopctl-flow"))
    prep = looped(engine, r, "ready", "continue")
    assert prep["pending"]["stepId"] == "review"
    first = looped(engine, prep, "again", "continue")
    assert first["pending"]["stepId"] == "review"
    stop = looped(engine, first, "enough", "stop")
    assert stop["pending"]["stepId"] == "done"
    artifacts = [
        e
        for e in _events(data_dir, sid_of(engine, r["stateToken"]))
        if getattr(e.data, "outputChannel", None) == "artifact"
    ]
    assert [a.data.payload.content["decision"] for a in artifacts] == [
        "continue",
        "continue",
        "stop",
    ]


def test_loop_step_without_its_contract_artifact_is_blocked(engine: Engine) -> None:
    r = ok(engine.start_workflow("loopctl-flow"))
    prep = looped(engine, r, "ready", "continue")
    blocked = ok(engine.advance(prep["stateToken"], prep["ackToken"], notes_markdown="no artifact"))
    assert blocked["kind"] == "blocked"
    assert blocked["blockers"]["blockers"][0]["code"] == "MISSING_REQUIRED_OUTPUT"


def test_replaying_a_blocked_attempt_with_new_output_warns(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("val-flow"))
    blocked = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="not yet"))
    before = tree_digest(data_dir)
    again = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="DONE now"))
    assert tree_digest(data_dir) == before
    assert [w["code"] for w in again.pop("warnings")] == ["OUTPUT_NOT_RECORDED"]
    assert again == blocked
    # the same request without output is a plain, byte-identical replay
    assert as_bytes(ok(engine.advance(r["stateToken"], r["ackToken"]))) == as_bytes(blocked)


def test_merged_context_is_bounded_too(engine: Engine, data_dir: Path) -> None:
    r = ok(engine.start_workflow("probe-flow", {"a": "x" * 200_000}))
    before = tree_digest(data_dir)
    big = err(
        engine.advance(
            r["stateToken"], r["ackToken"], notes_markdown="p", context={"b": "y" * 100_000}
        )
    )
    assert big.code == "VALIDATION_ERROR"
    assert big.details["details"]["kind"] == "context_budget_exceeded"
    assert tree_digest(data_dir) == before
    ok(
        engine.advance(
            r["stateToken"],
            r["ackToken"],
            notes_markdown="p",
            context={"a": None, "b": "y" * 100_000},
        )
    )


def test_rehydrate_recap_keeps_the_newest_notes_within_the_budget(tmp_path: Path) -> None:
    import json as _json

    workflows = tmp_path / "wf"
    workflows.mkdir()
    steps = [{"id": f"s{i}", "title": f"S{i}", "prompt": f"Do {i}."} for i in range(12)]
    (workflows / "long.json").write_text(
        _json.dumps(
            {"id": "long", "name": "Long", "description": "d", "version": "1", "steps": steps}
        )
    )
    engine = make_engine(tmp_path / "data", workflows)
    current = ok(engine.start_workflow("long"))
    for i in range(10):
        note = f"NOTE-{i} " + "é" * 1500  # 3000+ bytes each
        current = ok(
            engine.advance(current["stateToken"], current["ackToken"], notes_markdown=note)
        )
    prompt = ok(engine.rehydrate(current["stateToken"]))["pending"]["prompt"]
    assert len(prompt.encode()) <= 12288
    assert "NOTE-9" in prompt
    assert "NOTE-0" not in prompt
    assert "[TRUNCATED]" not in prompt  # recaps were chosen to fit, not cut mid-way


def test_a_regenerated_keyring_is_logged_and_old_tokens_say_how_to_recover(
    data_dir: Path, caplog: Any
) -> None:
    import logging

    started = ok(make_engine(data_dir).start_workflow("probe-flow"))
    (data_dir / "keys" / "keyring.json").unlink()
    with caplog.at_level(logging.WARNING, logger="workrail.store"):
        engine = make_engine(data_dir)
    assert "keyring.json was missing" in caplog.text
    assert "no longer verify" in caplog.text
    failure = err(engine.rehydrate(started["stateToken"])).to_envelope()
    assert failure["code"] == "TOKEN_BAD_SIGNATURE"
    suggestion = failure["details"]["suggestion"]
    assert "signing key has changed" in suggestion
    assert "import_session" in suggestion
