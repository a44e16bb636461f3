"""Advance decisions: validation criteria, output contracts, blocked vs advanced."""

from __future__ import annotations

from typing import Any

import pytest
from returns.result import Failure

from tests.workflow.wf_helpers import compiled, make_workflow, step
from workrail.core.ids import next_attempt_id
from workrail.core.snapshot import BlockedState, RetryableBlock, complete_snapshot
from workrail.workflow import Advanced, AdvanceRequest, Blocked, decide_advance, start
from workrail.workflow.outcomes import ValidationResult
from workrail.workflow.validation_engine import validate_output

ATTEMPT = "attempt_klnxots3oln5nsrbniarnqfm6i"
LOOP_CONTROL = {"contractRef": "wr.contracts.loop_control"}


def first_decision(steps: list[dict[str, Any]], **request: Any) -> Advanced | Blocked:
    wf = compiled(make_workflow(steps))
    snapshot = start(wf, request.pop("start_context", {})).unwrap().snapshot()
    req = AdvanceRequest(attempt_id=ATTEMPT, context=request.pop("context", {}), **request)
    return decide_advance(wf, snapshot, req).unwrap()


@pytest.mark.parametrize(
    ("criteria", "notes", "valid", "issues"),
    [
        ([], "  ", False, ["Output is empty or invalid."]),
        ([], "text", True, []),
        (
            [{"type": "contains", "value": "DONE", "message": "need DONE"}],
            "done",
            False,
            ["need DONE"],
        ),
        (
            [{"type": "regex", "pattern": "^v\\d+$", "flags": "m", "message": "ver"}],
            "x\nv12",
            True,
            [],
        ),
        ([{"type": "length", "min": 3, "max": 4, "message": "len"}], "😀😀😀", False, ["len"]),
        ([{"type": "length", "min": 2, "message": "len"}], "😀", True, []),
        (
            [{"type": "schema", "schema": {"type": "object", "required": ["a"]}, "message": "obj"}],
            '{"a":1}',
            True,
            [],
        ),
        (
            [{"type": "schema", "schema": {"type": "object", "required": ["a"]}, "message": "obj"}],
            '"{\\"a\\":1}"',
            True,
            [],
        ),
        (
            [{"type": "schema", "schema": {"type": "object"}, "message": "obj"}],
            "not json",
            False,
            ["obj"],
        ),
        (
            [{"type": "contains", "value": "X", "message": "x", "condition": {"var": "strict"}}],
            "none",
            True,
            [],
        ),
        (
            {
                "and": [
                    {"type": "contains", "value": "OK", "message": "m"},
                    {"type": "length", "min": 3, "message": "l"},
                ]
            },
            "OK!",
            True,
            [],
        ),
        (
            {
                "or": [
                    {"type": "contains", "value": "A", "message": "a"},
                    {"type": "contains", "value": "B", "message": "b"},
                ]
            },
            "B",
            True,
            [],
        ),
        (
            {"not": {"type": "contains", "value": "TODO", "message": "t"}},
            "has TODO",
            False,
            ["Validation composition failed"],
        ),
    ],
)
def test_validation_engine(criteria: Any, notes: str, valid: bool, issues: list[str]) -> None:
    result = validate_output(criteria, notes, {}).unwrap()
    assert result.valid is valid
    assert result.issues == issues


def test_invalid_regex_is_an_engine_error() -> None:
    result = validate_output([{"type": "regex", "pattern": "(", "message": "m"}], "x", {})
    assert isinstance(result, Failure)
    assert result.failure().engine_kind == "advance_apply_failed"


def test_blocked_on_missing_notes_keeps_state_and_derives_ids() -> None:
    decision = first_decision(
        [
            step("write", validationCriteria=[{"type": "contains", "value": "A", "message": "m"}]),
            step("next"),
        ]
    )
    assert isinstance(decision, Blocked)
    state = decision.snapshot.state
    assert isinstance(state, BlockedState)
    assert state.pending_step is not None
    assert state.pending_step.step_id == "write"
    assert isinstance(state.blocked, RetryableBlock)
    assert state.blocked.retry_attempt_id == next_attempt_id(ATTEMPT)
    assert state.blocked.validation_ref == f"validation_{ATTEMPT}"
    blocker = decision.blockers.blockers[0]
    assert blocker.code == "MISSING_REQUIRED_OUTPUT"
    assert blocker.message == "Missing required output (contractRef=wr.validationCriteria)."


def test_recap_only_when_validation_passes_or_absent() -> None:
    plain = first_decision([step("a"), step("b")], notes_markdown="notes")
    assert isinstance(plain, Advanced)
    assert plain.record_recap
    silent = first_decision([step("a"), step("b")])
    assert isinstance(silent, Advanced)
    assert not silent.record_recap


def test_output_contract_missing_invalid_and_satisfied() -> None:
    steps = [step("decide", outputContract=LOOP_CONTROL), step("after")]
    missing = first_decision(steps, notes_markdown="n")
    assert isinstance(missing, Blocked)
    assert missing.validation.contract_ref == "wr.contracts.loop_control"
    invalid = first_decision(
        steps, artifacts=[{"kind": "wr.loop_control", "loopId": "Bad Id", "decision": "maybe"}]
    )
    assert isinstance(invalid, Blocked)
    assert invalid.blockers.blockers[0].code == "INVALID_REQUIRED_OUTPUT"
    assert invalid.validation.result.suggestions == [
        "Provide a valid artifact matching the contract schema"
    ]
    assert any(issue.startswith("loopId:") for issue in invalid.validation.result.issues)
    ok = first_decision(
        steps, artifacts=[{"kind": "wr.loop_control", "loopId": "any-loop", "decision": "stop"}]
    )
    assert isinstance(ok, Advanced)


def test_optional_contract_passes_without_artifact() -> None:
    steps = [step("decide", outputContract={**LOOP_CONTROL, "required": False}), step("after")]
    assert isinstance(first_decision(steps), Advanced)


def test_advancing_a_complete_snapshot_is_an_error_value() -> None:
    wf = compiled(make_workflow([step("a")]))
    result = decide_advance(wf, complete_snapshot(), AdvanceRequest(attempt_id=ATTEMPT, context={}))
    assert isinstance(result, Failure)
    assert result.failure().engine_kind == "no_pending_step"


def test_last_step_advances_to_complete_without_trace() -> None:
    decision = first_decision([step("only")])
    assert isinstance(decision, Advanced)
    assert decision.is_complete
    assert decision.trace == ()
    assert decision.validation.result == ValidationResult(valid=True)
