"""Responses built from recorded facts (spec 40 §7.4–7.6): the same log always yields the
same bytes, which is what makes a replayed call return exactly the first answer."""

from __future__ import annotations

from typing import Any, Literal

from returns.result import Failure, Result, Success

from workrail.core.events import AdvanceRecorded, ValidationPerformed
from workrail.core.ids import next_attempt_id
from workrail.core.snapshot import (
    BlockedState,
    CompleteState,
    ExecutionSnapshot,
    RetryableBlock,
    StepInstance,
)
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error
from workrail.engine.loaded import CompiledCache, load_snapshot
from workrail.store.ports import SessionLog
from workrail.workflow.compiler import CompiledWorkflow
from workrail.workflow.prompts import PendingPrompt, render_pending

NextIntent = Literal[
    "perform_pending_then_continue", "await_user_confirmation", "rehydrate_only", "complete"
]


def pending_instance(snapshot: ExecutionSnapshot) -> StepInstance | None:
    state = snapshot.state
    if isinstance(state, CompleteState) or state.kind == "init":
        return None
    return state.pending_step


def next_intent(pending: PendingPrompt | None, *, complete: bool, rehydrate: bool) -> NextIntent:
    if complete and pending is None:
        return "complete"
    if rehydrate:
        return "rehydrate_only"
    if pending is None:
        return "complete"
    if pending.require_confirmation:
        return "await_user_confirmation"
    return "perform_pending_then_continue"


def next_call(state_token: str, ack_token: str | None) -> dict[str, Any] | None:
    if ack_token is None:
        return None
    return {
        "tool": "continue_workflow",
        "params": {"intent": "advance", "stateToken": state_token, "ackToken": ack_token},
    }


def render(
    compiled: CompiledWorkflow, instance: StepInstance, context: dict[str, Any]
) -> PendingPrompt:
    try:
        return render_pending(compiled, instance, context)
    except Exception:  # rendering must never fail a recorded outcome (spec 40 §7.4 step 3)
        return PendingPrompt(
            instance.step_id, instance.step_id, f"Pending step: {instance.step_id}", False
        )


def advance_response(
    deps: EngineDeps,
    compiled_cache: CompiledCache,
    log: SessionLog,
    record: AdvanceRecorded,
) -> Result[dict[str, Any], EngineError]:
    """The response for a recorded advance, first time and replay alike."""
    outcome = record.data.outcome
    if outcome.kind != "advanced":
        return Failure(
            error("INTERNAL_ERROR", "Legacy blocked advance outcomes cannot be replayed.")
        )
    target = log.index.nodes.get(outcome.toNodeId)
    if target is None:
        return Failure(
            error(
                "INTERNAL_ERROR",
                "Advance failed due to internal invariant violation: missing_node_or_run",
            )
        )
    run = log.index.runs[target.run_id]
    snapshot = load_snapshot(deps, target.data.snapshotRef)
    if not isinstance(snapshot, ExecutionSnapshot):
        return Failure(
            snapshot
            if isinstance(snapshot, EngineError)
            else error(
                "INTERNAL_ERROR",
                "Advance failed due to internal invariant violation: missing_snapshot",
            )
        )
    compiled = compiled_cache.get(deps, run.started.data.workflowHash)
    if isinstance(compiled, Failure):
        return Failure(compiled.failure())
    session_id = log.session_id
    state_token = deps.codec.mint_state(
        session_id=session_id, node_id=target.node_id, workflow_hash=target.data.workflowHash
    )
    instance = pending_instance(snapshot)
    complete = isinstance(snapshot.state, CompleteState)
    response: dict[str, Any] = {"kind": "ok", "stateToken": state_token}
    ack: str | None = None
    pending: PendingPrompt | None = None
    if instance is not None:
        child = next_attempt_id(record.data.attemptId)
        ack = deps.codec.mint_ack(session_id=session_id, node_id=target.node_id, attempt_id=child)
        response["ackToken"] = ack
        response["checkpointToken"] = deps.codec.mint_checkpoint(
            session_id=session_id, node_id=target.node_id, attempt_id=child
        )
        context = log.index.context_before(target.run_id, target.eventIndex)
        pending = render(compiled.unwrap(), instance, context)
    response["isComplete"] = complete
    response["pending"] = None if pending is None else pending.to_json()
    response["preferences"] = dict(run.preferences)
    response["nextIntent"] = next_intent(pending, complete=complete, rehydrate=False)
    call_ack = ack
    state = snapshot.state
    if isinstance(state, BlockedState):
        response["kind"] = "blocked"
        response["blockers"] = state.blocked.blockers.model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        retryable = isinstance(state.blocked, RetryableBlock)
        response["retryable"] = retryable
        if isinstance(state.blocked, RetryableBlock):
            retry_ack = deps.codec.mint_ack(
                session_id=session_id,
                node_id=target.node_id,
                attempt_id=state.blocked.retry_attempt_id,
            )
            response["retryAckToken"] = retry_ack
            call_ack = retry_ack
        else:
            call_ack = None
        validation = _validation(log, state)
        if validation is not None:
            response["validation"] = validation
    response["nextCall"] = next_call(state_token, call_ack)
    return Success(response)


def _validation(log: SessionLog, state: BlockedState) -> dict[str, Any] | None:
    ref = state.blocked.validation_ref
    if not ref:
        return None
    attempt = ref.removeprefix("validation_")
    index = log.index.dedupe.get(f"validation_performed:{log.session_id}:{attempt}")
    if index is None:
        return None
    event = log.events[index]
    if not isinstance(event, ValidationPerformed):
        return None
    return {
        "issues": list(event.data.result.issues),
        "suggestions": list(event.data.result.suggestions),
    }
