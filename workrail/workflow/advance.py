"""Deciding an advance (40-execution §7.3): validate the output, then either move on
(Advanced) or record a blocked attempt (Blocked). Pure; the engine appends the events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from returns.result import Failure, Result, Success

from workrail.core.blockers import BlockerReport, make_blocker_report
from workrail.core.ids import next_attempt_id
from workrail.core.snapshot import (
    BlockedState,
    CompletedSet,
    ContractReason,
    ExecutionSnapshot,
    PendingSome,
    RetryableBlock,
    StepInstance,
    snapshot_of,
)
from workrail.workflow.compiler import CompiledWorkflow
from workrail.workflow.errors import WorkflowError
from workrail.workflow.interpreter import (
    InterpreterState,
    complete_pending,
    select_next,
    state_from_snapshot,
)
from workrail.workflow.outcomes import (
    VALID,
    DecisionTraceEntry,
    ValidationRecord,
    ValidationResult,
    budget_trace,
)
from workrail.workflow.requirements import (
    LEGACY_RULES,
    Requirement,
    StepRules,
    evaluate_requirement,
)
from workrail.workflow.validation_engine import validate_output

NO_CONTRACT = "none"


@dataclass(frozen=True, slots=True)
class AdvanceRequest:
    """One first-time advance.

    `context` is the merged run context (stored + this call's delta); `artifact_history`
    holds the `content` of every earlier artifact output of the session in event order.
    """

    attempt_id: str
    context: Mapping[str, Any]
    notes_markdown: str | None = None
    artifacts: Sequence[Any] = ()
    artifact_history: Sequence[Any] = ()


@dataclass(frozen=True, slots=True)
class Advanced:
    """The step completed; `snapshot` is the new node's (running with a pending step, or
    complete). `validation` is what a retry-mode advance records (contractRef `none`).
    `record_recap` says whether the notes may be stored as the recap."""

    snapshot: ExecutionSnapshot
    trace: tuple[DecisionTraceEntry, ...]
    validation: ValidationRecord
    record_recap: bool

    @property
    def is_complete(self) -> bool:
        return self.snapshot.state.kind == "complete"


@dataclass(frozen=True, slots=True)
class Blocked:
    """The output did not satisfy the step: record a blocked-attempt node with `snapshot`."""

    snapshot: ExecutionSnapshot
    blockers: BlockerReport
    validation: ValidationRecord
    requirement: Requirement = field(repr=False)


AdvanceDecision = Advanced | Blocked


def decide_advance(
    compiled: CompiledWorkflow, snapshot: ExecutionSnapshot, request: AdvanceRequest
) -> Result[AdvanceDecision, WorkflowError]:
    """Complete the pending step of `snapshot` with the request's output, or block.

    Works for a fresh node (running) and for a retry from a blocked-attempt node.
    """
    return state_from_snapshot(snapshot).bind(lambda state: _decide(compiled, state, request))


def _decide(
    compiled: CompiledWorkflow, state: InterpreterState, request: AdvanceRequest
) -> Result[AdvanceDecision, WorkflowError]:
    pending = state.pending
    if pending is None:
        return Failure(WorkflowError("NO_PENDING_STEP", "no step is pending at this node"))
    step = compiled.step(pending.step_id)
    if step is None:
        return Failure(
            WorkflowError(
                "UNKNOWN_STEP", f"pending step '{pending.step_id}' is not in the workflow"
            )
        )
    engine_result: ValidationResult | None = None
    if step.validation_criteria is not None and request.notes_markdown is not None:
        ran = validate_output(step.validation_criteria, request.notes_markdown, request.context)
        if isinstance(ran, Failure):
            return Failure(ran.failure())
        engine_result = ran.unwrap()
    requirement = evaluate_requirement(
        step,
        request.notes_markdown,
        request.artifacts,
        engine_result,
        step_rules(compiled, pending),
    )
    if requirement.blocks:
        return Success(_blocked(state, pending, requirement, request.attempt_id))
    history = [*request.artifact_history, *request.artifacts]
    recap = request.notes_markdown is not None and (
        step.validation_criteria is None or (engine_result is not None and engine_result.valid)
    )
    validation = ValidationRecord(contract_ref=NO_CONTRACT, result=engine_result or VALID)

    def advanced(selection_state: InterpreterState) -> Result[AdvanceDecision, WorkflowError]:
        fresh = len(request.artifact_history)
        return select_next(compiled, selection_state, request.context, history, fresh).map(
            lambda sel: Advanced(
                snapshot=sel.snapshot(),
                trace=tuple(budget_trace(list(sel.trace))),
                validation=validation,
                record_recap=recap,
            )
        )

    return complete_pending(state).bind(advanced)


def step_rules(compiled: CompiledWorkflow, pending: StepInstance) -> StepRules:
    """The current language's extra rules for the pending step (none for v1.4 files):
    notes unless the step, or a loop it runs in, sets `notesOptional`; assessments."""
    if not compiled.current_language:
        return LEGACY_RULES
    step = compiled.step(pending.step_id)
    optional = step is not None and step.notes_optional
    for frame in pending.loop_path:
        loop = compiled.loops.get(frame.loop_id)
        optional = optional or (loop is not None and loop.step.notes_optional)
    return StepRules(notes_required=not optional, assessments=compiled.assessments)


def _blocked(
    state: InterpreterState, pending: StepInstance, requirement: Requirement, attempt_id: str
) -> Blocked:
    ref = requirement.contract_ref or NO_CONTRACT
    missing = requirement.status == "missing"
    report = make_blocker_report(requirement.blocker_list())
    reason = ContractReason(
        kind="missing_required_output" if missing else "invalid_required_output", contract_ref=ref
    )
    blocked = BlockedState(
        completed=CompletedSet.of(state.completed),
        loop_stack=list(state.loop_stack),
        pending=PendingSome(step=pending),
        blocked=RetryableBlock(
            reason=reason,
            retry_attempt_id=next_attempt_id(attempt_id),
            validation_ref=f"validation_{attempt_id}",
            blockers=report,
        ),
    )
    return Blocked(
        snapshot=snapshot_of(blocked),
        blockers=report,
        validation=ValidationRecord(contract_ref=ref, result=requirement.validation_result()),
        requirement=requirement,
    )
