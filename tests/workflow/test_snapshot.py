"""Execution snapshot model: collation of `completed` and the read-time invariants."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure

from tests.workflow.wf_helpers import running_doc
from workrail.core.snapshot import (
    LoopFrame,
    LoopPathFrame,
    StepInstance,
    collation_key,
    parse_snapshot,
    running_snapshot,
    sort_completed,
    step_instance_key,
)


def test_step_instance_key_format() -> None:
    assert step_instance_key("plan", []) == "plan"
    path = [
        LoopPathFrame(loop_id="outer", iteration=0),
        LoopPathFrame(loop_id="inner", iteration=2),
    ]
    assert step_instance_key("work", path) == "outer@0/inner@2::work"


def test_collation_examples_from_spec() -> None:
    assert sort_completed(["a1", "a-b", "a_b"]) == ["a_b", "a-b", "a1"]
    assert sort_completed(["x@2::y", "x@10::y", "x@1::y"]) == ["x@1::y", "x@10::y", "x@2::y"]
    live = [
        "start-step",
        "optional-step",
        "each-item@1::item-work",
        "confirm-step",
        "each-item",
        "each-item@0::item-work",
    ]
    assert sort_completed(live) == [
        "confirm-step",
        "each-item",
        "each-item@0::item-work",
        "each-item@1::item-work",
        "optional-step",
        "start-step",
    ]


KEY_ALPHABET = "_-:@/0123456789abcdefghijklmnopqrstuvwxyz"


@given(st.lists(st.text(alphabet=KEY_ALPHABET, min_size=1, max_size=8), max_size=20))
def test_collation_is_a_total_order_with_prefix_first(keys: list[str]) -> None:
    ordered = sort_completed(keys)
    assert ordered == sorted(set(keys), key=collation_key)
    for a, b in zip(ordered, ordered[1:], strict=False):
        assert not b.startswith(a) or len(a) < len(b)
        assert collation_key(a) < collation_key(b)


@pytest.mark.parametrize(
    "bad",
    [
        running_doc(["b", "a"], [], {"kind": "none"}),  # unsorted
        running_doc(["a", "a"], [], {"kind": "none"}),  # duplicate
        running_doc(["plan"], [], {"kind": "some", "step": {"stepId": "plan", "loopPath": []}}),
        running_doc(
            [],
            [{"loopId": "l", "iteration": 0, "bodyIndex": 0}],
            {"kind": "some", "step": {"stepId": "s", "loopPath": []}},
        ),
        running_doc(
            [],
            [
                {"loopId": "l", "iteration": 0, "bodyIndex": 0},
                {"loopId": "l", "iteration": 1, "bodyIndex": 0},
            ],
            {"kind": "none"},
        ),
        running_doc([], [{"loopId": "l", "iteration": -1, "bodyIndex": 0}], {"kind": "none"}),
        running_doc(["Bad Key"], [], {"kind": "none"}),
        {**running_doc([], [], {"kind": "none"}), "extra": 1},
    ],
)
def test_invalid_snapshots_are_rejected(bad: dict[str, Any]) -> None:
    assert isinstance(parse_snapshot(bad), Failure)


def test_running_snapshot_sorts_and_omits_nothing_required() -> None:
    snap = running_snapshot(
        ["x@2::y", "x@10::y"],
        [LoopFrame(loop_id="x", iteration=3, body_index=0)],
        StepInstance(step_id="y", loop_path=[LoopPathFrame(loop_id="x", iteration=3)]),
    )
    state = snap.to_json()["enginePayload"]["engineState"]
    assert state["completed"]["values"] == ["x@10::y", "x@2::y"]
    assert state["pending"] == {
        "kind": "some",
        "step": {"stepId": "y", "loopPath": [{"loopId": "x", "iteration": 3}]},
    }
    assert parse_snapshot(snap.to_json()).unwrap() == snap


@given(
    st.lists(st.from_regex(r"[a-z0-9_-]{1,8}", fullmatch=True), max_size=40),
    st.booleans(),
)
def test_to_json_is_the_models_own_dump_with_the_keys_copied(
    keys: list[str], in_loop: bool
) -> None:
    """The completed keys are copied into the JSON as one list, not dumped key by key:
    the JSON (so the bytes and the ref) is what the model dumps, and changing it never
    changes the snapshot."""
    path = [LoopPathFrame(loop_id="each", iteration=1)] if in_loop else []
    frames = [LoopFrame(loop_id="each", iteration=1, body_index=0)] if in_loop else []
    done = [step_instance_key(k, path) for k in keys]
    snapshot = running_snapshot(done, frames, StepInstance(step_id="next", loop_path=path))
    dumped = snapshot.to_json()
    assert dumped == snapshot.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert list(dumped["enginePayload"]["engineState"]["completed"]) == ["kind", "values"]
    dumped["enginePayload"]["engineState"]["completed"]["values"].append("changed")
    assert (
        "changed" not in snapshot.to_json()["enginePayload"]["engineState"]["completed"]["values"]
    )
