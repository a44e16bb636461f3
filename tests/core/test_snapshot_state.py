"""A snapshot's state, read straight off its JSON, is what the full parse says."""

from __future__ import annotations

from pathlib import Path

from tests.console.scenarios import forked_blocked_looped
from tests.engine.conftest import make_engine
from tests.workflow.wf_helpers import running_doc
from workrail.core.snapshot_state import (
    INVALID,
    SnapshotState,
    _parsed,
    _quick,
    snapshot_state,
)
from workrail.store.local.backend import LocalBackend


def test_the_quick_read_says_what_the_full_parse_says(data_dir: Path) -> None:
    forked_blocked_looped(make_engine(data_dir))
    backend = LocalBackend.open(data_dir)
    refs = [
        p.name.removesuffix(".json").replace("_", ":", 1)
        for p in (data_dir / "snapshots").iterdir()
    ]
    kinds = set()
    for ref in refs:
        raw = backend.snapshots.get(ref).unwrap()
        assert _quick(raw) == _parsed(raw) == snapshot_state(raw), ref
        kinds.add(_parsed(raw).kind)
    assert {"running", "blocked"} <= kinds


def test_loop_paths_make_the_pending_step_key() -> None:
    raw = running_doc(
        [],
        [
            {"loopId": "outer", "iteration": 1, "bodyIndex": 0},
            {"loopId": "inner", "iteration": 2, "bodyIndex": 0},
        ],
        {
            "kind": "some",
            "step": {
                "stepId": "act",
                "loopPath": [
                    {"loopId": "outer", "iteration": 1},
                    {"loopId": "inner", "iteration": 2},
                ],
            },
        },
    )
    assert snapshot_state(raw) == SnapshotState("running", "outer@1/inner@2::act")
    assert _parsed(raw) == _quick(raw)


def test_odd_shapes_take_the_full_parse_and_invalid_objects_say_so() -> None:
    assert _quick({"enginePayload": {"engineState": {"kind": "weird"}}}) is None
    assert _quick([1, 2]) is None
    assert snapshot_state({"nope": 1}) == INVALID
    assert snapshot_state([1, 2]) == INVALID
    init = {
        "v": 1,
        "kind": "execution_snapshot",
        "enginePayload": {"v": 1, "engineState": {"kind": "init"}},
    }
    assert snapshot_state(init) == SnapshotState("init")
