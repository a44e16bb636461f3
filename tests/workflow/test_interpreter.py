"""Interpreter: sequential steps, skipped steps, every loop kind, errors, and properties."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from tests.workflow.wf_helpers import compiled, make_workflow, step
from workrail.core.completed import CompletedKeys
from workrail.core.snapshot import ExecutionSnapshot, parse_snapshot, running_snapshot
from workrail.workflow import (
    CompiledWorkflow,
    InterpreterState,
    Selection,
    complete_pending,
    select_next,
    start,
    state_from_snapshot,
)


def run_keys(
    wf: CompiledWorkflow,
    context: dict[str, Any],
    artifacts_per_step: Sequence[Any] = (),
    limit: int = 200,
) -> list[str]:
    """Drive a workflow to completion, returning the completed instance keys in order."""
    order: list[str] = []
    selection = start(wf, context).unwrap()
    history: list[Any] = []
    while not selection.is_complete and len(order) < limit:
        pending = selection.state.pending
        assert pending is not None
        order.append(pending.key)
        history.extend(artifacts_per_step)
        state = complete_pending(selection.state).unwrap()
        selection = select_next(wf, state, context, history).unwrap()
    return order


def test_sequential_steps_and_snapshot_complete() -> None:
    wf = compiled(make_workflow([step("one"), step("two"), step("three")]))
    assert run_keys(wf, {}) == ["one", "two", "three"]


def test_skipped_step_runs_later_when_condition_becomes_true() -> None:
    wf = compiled(
        make_workflow([step("one"), step("opt", runCondition={"var": "go"}), step("two")])
    )
    state = InterpreterState(CompletedKeys({"one"}))
    first = select_next(wf, state, {}).unwrap()
    assert first.state.pending is not None
    assert first.state.pending.step_id == "two"
    after_two = complete_pending(first.state).unwrap()
    again = select_next(wf, after_two, {"go": True}).unwrap()
    assert again.state.pending is not None
    assert again.state.pending.step_id == "opt"


def test_start_skips_a_conditional_first_step() -> None:
    wf = compiled(make_workflow([step("opt", runCondition={"var": "go"}), step("two")]))
    assert start(wf, {}).unwrap().state.pending.step_id == "two"  # type: ignore[union-attr]
    assert start(wf, {"go": 1}).unwrap().state.pending.step_id == "opt"  # type: ignore[union-attr]


def test_start_with_no_eligible_step_is_an_error_value() -> None:
    wf = compiled(make_workflow([step("opt", runCondition={"var": "go"})]))
    result = start(wf, {})
    assert isinstance(result, Failure)
    assert result.failure().code == "NO_ELIGIBLE_STEP"


def loop(loop_id: str, config: dict[str, Any], body: Any, **extra: Any) -> dict[str, Any]:
    return {"id": loop_id, "type": "loop", "title": "Loop", "loop": config, "body": body, **extra}


@pytest.mark.parametrize(
    ("config", "context", "expected_iterations"),
    [
        ({"type": "for", "count": 3, "maxIterations": 10}, {}, 3),
        ({"type": "for", "count": 0, "maxIterations": 10}, {}, 0),
        ({"type": "for", "count": 50, "maxIterations": 4}, {}, 4),
        ({"type": "for", "count": "n", "maxIterations": 10}, {"n": 2}, 2),
        ({"type": "forEach", "items": "xs", "maxIterations": 10}, {"xs": ["a", "b", "c"]}, 3),
        ({"type": "forEach", "items": "xs", "maxIterations": 2}, {"xs": ["a", "b", "c"]}, 2),
        ({"type": "forEach", "items": "xs", "maxIterations": 5}, {"xs": []}, 0),
        (
            {
                "type": "while",
                "condition": {"var": "currentIteration", "lte": 2},
                "maxIterations": 9,
            },
            {},
            2,
        ),
        (
            {
                "type": "until",
                "condition": {"var": "currentIteration", "gt": 3},
                "maxIterations": 9,
            },
            {},
            3,
        ),
        ({"type": "while", "condition": {"var": "again"}, "maxIterations": 3}, {"again": True}, 3),
        (
            {
                "type": "while",
                "condition": {"var": "ignored"},
                "conditionSource": {"kind": "context_variable", "condition": {"var": "i", "lt": 1}},
                "maxIterations": 5,
            },
            {"i": 0},
            5,
        ),
    ],
)
def test_loop_kinds(
    config: dict[str, Any], context: dict[str, Any], expected_iterations: int
) -> None:
    wf = compiled(
        make_workflow([step("before"), loop("work-loop", config, [step("body")]), step("after")])
    )
    keys = run_keys(wf, context)
    body = [k for k in keys if k.endswith("::body")]
    assert body == [f"work-loop@{i}::body" for i in range(expected_iterations)]
    assert keys[0] == "before"
    assert keys[-1] == "after"


def test_loop_variables_feed_body_conditions() -> None:
    body = [
        step("every"),
        step("even", runCondition={"var": "idx", "equals": 0}),
        step("bee", runCondition={"var": "item", "equals": "b"}),
    ]
    config = {
        "type": "forEach",
        "items": "xs",
        "itemVar": "item",
        "indexVar": "idx",
        "maxIterations": 5,
    }
    wf = compiled(make_workflow([loop("each-x", config, body)]))
    assert run_keys(wf, {"xs": ["a", "b"]}) == [
        "each-x@0::every",
        "each-x@0::even",
        "each-x@1::every",
        "each-x@1::bee",
    ]


def test_string_body_reuses_a_top_level_step_only_inside_the_loop() -> None:
    wf = compiled(
        make_workflow(
            [
                step("first"),
                loop("again", {"type": "for", "count": 2, "maxIterations": 3}, "shared"),
                step("shared"),
            ]
        )
    )
    assert run_keys(wf, {}) == ["first", "again@0::shared", "again@1::shared"]


def test_artifact_loop_newest_decision_wins() -> None:
    review = step("review", outputContract={"contractRef": "wr.contracts.loop_control"})
    wf = compiled(
        make_workflow(
            [
                step("prep"),
                loop(
                    "review-loop",
                    {"type": "while", "condition": {"var": "x"}, "maxIterations": 5},
                    [review],
                ),
                step("done"),
            ]
        )
    )
    go = {"kind": "wr.loop_control", "loopId": "review-loop", "decision": "continue"}
    stop = {"kind": "wr.loop_control", "loopId": "review-loop", "decision": "stop"}
    state = InterpreterState(CompletedKeys({"prep"}))
    entered = select_next(wf, state, {}, [go]).unwrap()
    assert entered.state.pending is not None
    assert entered.state.pending.key == "review-loop@0::review"
    kinds = [t.kind for t in entered.trace]
    assert kinds == ["evaluated_condition", "entered_loop", "selected_next_step"]
    after = complete_pending(entered.state).unwrap()
    second = select_next(wf, after, {}, [go, go]).unwrap()
    assert second.state.pending is not None
    assert second.state.pending.key == "review-loop@1::review"
    done = select_next(wf, complete_pending(second.state).unwrap(), {}, [go, go, stop]).unwrap()
    assert done.state.pending is not None
    assert done.state.pending.key == "done"
    assert "review-loop" in done.state.completed


@pytest.mark.parametrize(
    ("config", "body", "context", "artifacts", "code"),
    [
        (
            {"type": "forEach", "items": "xs", "maxIterations": 3},
            [step("b")],
            {},
            [],
            "FOREACH_ITEMS_NOT_ARRAY",
        ),
        (
            {"type": "forEach", "items": "xs", "maxIterations": 3},
            [step("b")],
            {"xs": "ab"},
            [],
            "FOREACH_ITEMS_NOT_ARRAY",
        ),
        (
            {"type": "for", "count": "n", "maxIterations": 3},
            [step("b")],
            {"n": "2"},
            [],
            "FOR_COUNT_NOT_NUMBER",
        ),
        (
            {"type": "while", "condition": {"var": "x"}, "maxIterations": 3},
            [step("b", outputContract={"contractRef": "wr.contracts.loop_control"})],
            {},
            [{"kind": "wr.loop_control", "loopId": "other-loop", "decision": "continue"}],
            "LOOP_CONTROL_ARTIFACT_MISSING",
        ),
    ],
)
def test_loop_errors_are_values(
    config: dict[str, Any], body: Any, context: dict[str, Any], artifacts: list[Any], code: str
) -> None:
    wf = compiled(make_workflow([step("first"), loop("the-loop", config, body)]))
    result = select_next(wf, InterpreterState(CompletedKeys({"first"})), context, artifacts)
    assert isinstance(result, Failure)
    assert result.failure().code == code
    assert result.failure().engine_kind == "advance_next_failed"


def test_frame_beyond_max_iterations_is_rejected() -> None:
    from workrail.core.snapshot import LoopFrame

    wf = compiled(
        make_workflow(
            [loop("the-loop", {"type": "for", "count": 9, "maxIterations": 2}, [step("b")])]
        )
    )
    state = InterpreterState(loop_stack=(LoopFrame(loop_id="the-loop", iteration=2, body_index=0),))
    result = select_next(wf, state, {})
    assert isinstance(result, Failure)
    assert result.failure().code == "INVALID_LOOP_STATE"


def test_complete_pending_requires_a_pending_step() -> None:
    result = complete_pending(InterpreterState())
    assert isinstance(result, Failure)
    assert result.failure().code == "NO_PENDING_STEP"


# --- properties -----------------------------------------------------------------------------

CONDITIONS = st.one_of(
    st.none(),
    st.builds(lambda v: {"var": v}, st.sampled_from(["a", "b", "c"])),
    st.builds(
        lambda v, n: {"var": v, "gt": n}, st.sampled_from(["a", "b", "c"]), st.integers(0, 3)
    ),
    st.builds(lambda v: {"not": {"var": v}}, st.sampled_from(["a", "b", "c"])),
)
CONTEXTS = st.fixed_dictionaries(
    {
        "a": st.integers(0, 3),
        "b": st.booleans(),
        "c": st.one_of(st.none(), st.text(max_size=2)),
        "xs": st.lists(st.integers(0, 3), max_size=6),
        "n": st.integers(0, 8),
    }
)


@st.composite
def workflows(draw: st.DrawFn) -> CompiledWorkflow:
    steps: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            kind = draw(st.sampled_from(["for", "forEach", "while", "until"]))
            config: dict[str, Any] = {"type": kind, "maxIterations": draw(st.integers(1, 6))}
            if kind == "for":
                config["count"] = draw(st.one_of(st.integers(0, 8), st.just("n")))
            elif kind == "forEach":
                config["items"] = "xs"
            else:
                config["condition"] = {"var": "currentIteration", "lte": draw(st.integers(0, 7))}
            body = [
                step(f"body-{i}-{j}", **({"runCondition": c} if (c := draw(CONDITIONS)) else {}))
                for j in range(draw(st.integers(1, 3)))
            ]
            extra = {"runCondition": c} if (c := draw(CONDITIONS)) else {}
            steps.append(loop(f"loop-{i}", config, body, **extra))
        else:
            extra = {"runCondition": c} if (c := draw(CONDITIONS)) else {}
            steps.append(step(f"step-{i}", **extra))
    return compiled(make_workflow(steps))


def drive(wf: CompiledWorkflow, context: dict[str, Any]) -> list[Selection]:
    selections: list[Selection] = []
    state = InterpreterState()
    for _ in range(500):
        result = select_next(wf, state, context)
        assert isinstance(result, Success)
        selection = result.unwrap()
        selections.append(selection)
        if selection.is_complete:
            return selections
        state = complete_pending(selection.state).unwrap()
    raise AssertionError("workflow did not complete")


@settings(max_examples=150, deadline=None)
@given(workflows(), CONTEXTS)
def test_pending_is_never_completed_and_iterations_stay_bounded(
    wf: CompiledWorkflow, context: dict[str, Any]
) -> None:
    for selection in drive(wf, context):
        state = selection.state
        if state.pending is not None:
            assert state.pending.key not in state.completed
            assert [(f.loop_id, f.iteration) for f in state.pending.loop_path] == [
                (f.loop_id, f.iteration) for f in state.loop_stack
            ]
        for frame in state.loop_stack:
            assert frame.iteration < wf.loops[frame.loop_id].step.loop.max_iterations
        snapshot: ExecutionSnapshot = selection.snapshot()
        assert snapshot.snapshot_ref().startswith("sha256:")
    for key in drive(wf, context)[-1].state.completed:
        if "@" in key:
            loop_id, rest = key.split("@", 1)
            assert int(rest.split("::")[0]) < wf.loops[loop_id].step.loop.max_iterations


@settings(max_examples=100, deadline=None)
@given(workflows(), CONTEXTS)
def test_selection_is_deterministic(wf: CompiledWorkflow, context: dict[str, Any]) -> None:
    first = drive(wf, context)
    second = drive(wf, dict(reversed(list(context.items()))))
    assert [s.snapshot().snapshot_ref() for s in first] == [
        s.snapshot().snapshot_ref() for s in second
    ]
    assert [s.trace for s in first] == [s.trace for s in second]


@settings(max_examples=150, deadline=None)
@given(workflows(), st.lists(CONTEXTS, min_size=1, max_size=4))
def test_incremental_state_selects_what_a_state_read_back_from_disk_selects(
    wf: CompiledWorkflow, contexts: list[dict[str, Any]]
) -> None:
    """The completed set carried from advance to advance (with its remembered scan
    position) chooses exactly what the same state parsed from its snapshot JSON chooses,
    and its snapshot has the same bytes, also when the context changes between steps so
    that a step skipped earlier becomes eligible."""
    state = InterpreterState()
    for i in range(500):
        context = contexts[i % len(contexts)]
        carried = select_next(wf, state, context).unwrap()
        snapshot = state.to_snapshot()
        reread = parse_snapshot(json.loads(snapshot.canonical_bytes())).unwrap()
        fresh = select_next(wf, state_from_snapshot(reread).unwrap(), context).unwrap()
        assert carried.snapshot().canonical_bytes() == fresh.snapshot().canonical_bytes()
        assert carried.trace == fresh.trace
        plain = running_snapshot(
            sorted(set(carried.state.completed)),
            carried.state.loop_stack,
            carried.state.pending,
        )
        if not carried.is_complete:
            assert carried.snapshot().canonical_bytes() == plain.canonical_bytes()
        if carried.is_complete:
            return
        state = complete_pending(carried.state).unwrap()
    raise AssertionError("workflow did not complete")


# --- loops decided by artifacts alone (the current language) --------------------------------

ARTIFACT_ONLY = {
    "type": "while",
    "maxIterations": 4,
    "conditionSource": {"kind": "artifact_contract", "contractRef": "wr.contracts.loop_control"},
}


def _artifact_only_flow(**config: Any) -> CompiledWorkflow:
    body = [step("pass", outputContract={"contractRef": "wr.contracts.loop_control"})]
    return compiled(
        make_workflow(
            [step("first"), loop("the-loop", {**ARTIFACT_ONLY, **config}, body), step("done")]
        )
    )


def _decision(value: str, loop_id: str = "the-loop") -> dict[str, Any]:
    return {"kind": "wr.loop_control", "loopId": loop_id, "decision": value}


def test_an_artifact_only_loop_is_entered_without_a_decision() -> None:
    wf = _artifact_only_flow()
    entered = select_next(wf, InterpreterState(CompletedKeys({"first"})), {}, []).unwrap()
    assert entered.state.pending is not None
    assert entered.state.pending.key == "the-loop@0::pass"
    # A decision for another loop is no decision for this one.
    other = select_next(
        wf, InterpreterState(CompletedKeys({"first"})), {}, [_decision("stop", "elsewhere")]
    ).unwrap()
    assert other.state.pending is not None
    assert other.state.pending.step_id == "pass"


def test_an_artifact_only_loop_follows_the_newest_decision() -> None:
    wf = _artifact_only_flow()
    state = select_next(wf, InterpreterState(CompletedKeys({"first"})), {}, []).unwrap().state
    history = [_decision("continue")]
    second = select_next(wf, complete_pending(state).unwrap(), {}, history).unwrap()
    assert second.state.pending is not None
    assert second.state.pending.key == "the-loop@1::pass"
    history += [_decision("stop")]
    done = select_next(wf, complete_pending(second.state).unwrap(), {}, history).unwrap()
    assert done.state.pending is not None
    assert done.state.pending.step_id == "done"


def test_an_until_loop_without_condition_and_an_explicit_loop_id() -> None:
    source = {**ARTIFACT_ONLY["conditionSource"], "loopId": "named"}  # type: ignore[dict-item]
    wf = _artifact_only_flow(type="until", conditionSource=source)
    state = select_next(wf, InterpreterState(CompletedKeys({"first"})), {}, []).unwrap().state
    stop = select_next(wf, complete_pending(state).unwrap(), {}, [_decision("stop", "named")])
    selection = stop.unwrap()
    assert selection.state.pending is not None
    assert selection.state.pending.step_id == "done"


def test_a_loop_with_a_condition_still_asks_for_its_decision() -> None:
    wf = _artifact_only_flow(condition={"var": "again"})
    result = select_next(wf, InterpreterState(CompletedKeys({"first"})), {}, [])
    assert isinstance(result, Failure)
    assert result.failure().code == "LOOP_CONTROL_ARTIFACT_MISSING"
    assert result.failure().needs is not None
    assert result.failure().needs.key == "the-loop"


def test_entering_an_artifact_only_loop_ignores_a_stop_from_an_earlier_pass() -> None:
    wf = _artifact_only_flow()
    state = InterpreterState(CompletedKeys({"first"}))
    stale = [_decision("stop")]  # e.g. the stop that ended this loop in an outer iteration
    again = select_next(wf, state, {}, stale, fresh_from=len(stale)).unwrap()
    assert again.state.pending is not None
    assert again.state.pending.step_id == "pass"
    # A stop sent with this very call (a step before the loop deciding to skip it) counts.
    skipped = select_next(wf, state, {}, [*stale, _decision("stop")], fresh_from=1).unwrap()
    assert skipped.state.pending is not None
    assert skipped.state.pending.step_id == "done"
