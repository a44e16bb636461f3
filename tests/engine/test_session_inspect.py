"""Inspecting one session: a node's prompt, notes, artifacts, context, validation,
blockers and decision trace, read without writing; damaged sessions from their prefix."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.console.scenarios import damage_tail, forked_blocked_looped, started
from tests.engine.conftest import make_engine
from tests.engine.helpers import ok, tree_digest
from workrail.engine.session_inspect import inspect_session
from workrail.store.local.backend import LocalBackend


def test_node_detail_of_a_forked_blocked_looped_session(data_dir: Path) -> None:
    sid = forked_blocked_looped(make_engine(data_dir))
    backend = LocalBackend.open(data_dir)
    before = tree_digest(data_dir)
    overview = inspect_session(backend, sid)
    (run,) = overview.view.runs
    assert len(overview.events) == overview.view.event_count > 0
    blocked_id = next(n.node_id for n in run.nodes.values() if n.kind == "blocked_attempt")
    prep_id = run.roots[0]

    prep = inspect_session(backend, sid, prep_id).node
    assert prep is not None
    assert prep.step_id == "prep"
    assert prep.parent is None
    assert prep.prompt is not None
    assert prep.prompt.text.startswith("Prepare.")
    assert prep.notes == ["Prepared the review.", "A second take on the prep."]
    assert len(prep.artifacts) == 2
    assert '"decision": "continue"' in (prep.artifacts[0].content_json or "")
    assert prep.context == {"goal": "review the parser"}
    assert {t.kind for t in prep.trace} >= {
        "evaluated_condition",
        "entered_loop",
        "selected_next_step",
    }
    assert len(prep.children) == 2

    blocked = inspect_session(backend, sid, blocked_id).node
    assert blocked is not None
    assert blocked.state == "blocked"
    assert blocked.kind == "blocked_attempt"
    assert blocked.block is not None
    assert blocked.block.retryable
    assert blocked.block.reason == "missing_required_output"
    (blocker,) = blocked.block.blockers
    assert blocker.code == "MISSING_REQUIRED_OUTPUT"
    assert blocker.fix
    assert blocked.entry_validation is not None
    assert not blocked.entry_validation.valid
    assert blocked.entered_by_attempt == blocked.entry_validation.attempt_id
    assert blocked.prompt is not None
    assert "Review and decide." in blocked.prompt.text
    assert [v.valid for v in blocked.validations] == [True], "the retry from it passed"

    missing = inspect_session(backend, sid, "node_" + "a" * 26)
    assert missing.node is None
    assert not missing.node_known
    assert tree_digest(data_dir) == before, "inspecting never writes"


def test_a_damaged_session_is_inspected_from_its_prefix(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    sid, r = started(engine)
    ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    damage_tail(data_dir, sid)
    inspection = inspect_session(LocalBackend.open(data_dir), sid)
    assert inspection.view.prefix_only
    assert not inspection.view.is_healthy
    (run,) = inspection.view.runs
    node = inspect_session(LocalBackend.open(data_dir), sid, run.roots[0]).node
    assert node is not None
    assert node.step_id == "plan"
    assert node.prompt is not None


def test_a_pinned_workflow_that_could_not_be_read_is_read_again_next_time(
    data_dir: Path, tmp_path: Path
) -> None:
    """A store failure or a missing object is not a fact about the content: once the
    pinned workflow can be read again, the node's prompt is shown (only what the content
    itself says, that it does not parse or compile, may be remembered)."""
    flows = tmp_path / "flows"
    flows.mkdir()
    unique = os.urandom(8).hex()  # a workflow hash no other test has compiled
    (flows / "once.json").write_text(
        json.dumps(
            {
                "id": "once-flow",
                "name": "Once",
                "description": "A workflow of its own.",
                "version": "1.0.0",
                "steps": [{"id": "only", "title": "Only", "prompt": f"Do it {unique}."}],
            }
        )
    )
    engine = make_engine(data_dir, flows)
    sid, r = started(engine, "once-flow")
    node_id = engine.deps.codec.parse_state(r["stateToken"]).unwrap().node_id
    (pinned,) = (data_dir / "workflows" / "pinned").iterdir()
    aside = tmp_path / "aside.json"

    def prompt_or_problem() -> str | None:
        node = inspect_session(LocalBackend.open(data_dir), sid, node_id).node
        assert node is not None
        return node.prompt.text if node.prompt is not None else node.prompt_problem

    shutil.move(pinned, aside)
    pinned.mkdir()  # not a file: the store cannot read it
    assert "cannot be read" in (prompt_or_problem() or "")
    pinned.rmdir()  # now missing
    assert "missing" in (prompt_or_problem() or "")
    shutil.move(aside, pinned)
    assert f"Do it {unique}." in (prompt_or_problem() or "")
