"""Responses built from recorded facts (spec 40 §7.4–7.6): the same log always yields the
same bytes, which is what makes a replayed call return exactly the first answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from returns.result import Failure, Result, Success

from workrail.core.blockers import INVALID_OUTPUT_FIX, MISSING_OUTPUT_FIX
from workrail.core.events import (
    AdvanceRecorded,
    ArtifactRefPayload,
    NodeCreated,
    ValidationPerformed,
)
from workrail.core.ids import next_attempt_id
from workrail.core.session_index import RunInfo
from workrail.core.snapshot import (
    BlockedState,
    CompleteState,
    ExecutionSnapshot,
    RetryableBlock,
    StepInstance,
)
from workrail.engine.compiled import CompiledCache
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error
from workrail.engine.loaded import load_snapshot
from workrail.store.ports import SessionLog
from workrail.workflow.assessments import check_assessments, step_context
from workrail.workflow.compiler import CompiledWorkflow
from workrail.workflow.metadata import references_field
from workrail.workflow.prompts import PendingPrompt, render_pending
from workrail.workflow.retry import retry_artifacts

CallStyle = Literal["v1", "continue"]
"""The protocol a continue_workflow call used: the reference's v1.4 fields (intent,
stateToken, ackToken) or one continueToken. An answer's nextCall follows its call's."""

NextIntent = Literal[
    "perform_pending_then_continue", "await_user_confirmation", "rehydrate_only", "complete"
]


def pending_instance(snapshot: ExecutionSnapshot) -> StepInstance | None:
    state = snapshot.state
    if isinstance(state, CompleteState) or state.kind == "init":
        return None
    return state.pending_step


def next_intent(pending: PendingPrompt | None, *, complete: bool) -> NextIntent:
    """What the agent should do next, in words that match the `nextCall` it is given.

    Unlike the reference, a rehydrate answer does not say `rehydrate_only` while handing
    over an advance `nextCall`: having recovered, the agent's next move is the pending
    step. `rehydrate_only` is kept for answers whose only way on is a rehydrate.
    """
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


def rehydrate_call(state_token: str, style: CallStyle = "v1") -> dict[str, Any]:
    if style == "continue":
        return {"tool": "continue_workflow", "params": {"continueToken": state_token}}
    return {
        "tool": "continue_workflow",
        "params": {"intent": "rehydrate", "stateToken": state_token},
    }


def step_call(
    style: CallStyle, state_token: str, ack_token: str | None, continue_token: str | None
) -> dict[str, Any] | None:
    """The advance nextCall in the call's own protocol (None when nothing can advance)."""
    if style == "continue" and continue_token is not None and ack_token is not None:
        return {"tool": "continue_workflow", "params": {"continueToken": continue_token}}
    return next_call(state_token, ack_token)


# The reference's fixes predate retryAckToken and tell the agent to rehydrate for a fresh
# ackToken, while the same answer's nextCall already carries the retry token: ours wins.
RETRY_FIXES: dict[str, str] = {
    MISSING_OUTPUT_FIX: (
        "Send nextCall again (it already carries retryAckToken) with output.notesMarkdown "
        "that satisfies the step's output requirements; no rehydrate is needed."
    ),
    INVALID_OUTPUT_FIX: (
        "Update output.notesMarkdown as validation.issues says, then send nextCall again (it "
        "already carries retryAckToken); no rehydrate is needed. Replaying the same ackToken "
        "keeps returning this blocked result."
    ),
}


def agreeing_blockers(blockers: dict[str, Any], *, retryable: bool) -> dict[str, Any]:
    """The stored blocker report with the reference's retry advice replaced by advice that
    matches this answer's `nextCall` (the stored snapshot itself stays as recorded)."""
    if not retryable:
        return blockers
    return {
        **blockers,
        "blockers": [
            {**b, "suggestedFix": RETRY_FIXES.get(b.get("suggestedFix", ""), b.get("suggestedFix"))}
            if "suggestedFix" in b
            else b
            for b in blockers.get("blockers", [])
        ],
    }


def fork_warning(
    deps: EngineDeps, log: SessionLog, from_node: str, to_node: str
) -> dict[str, Any] | None:
    """`FORK_CREATED` when this advance gave `from_node` a second branch: another step
    node had already been reached from it before `to_node` was created. Decided from the
    log before `to_node`, so a replay repeats the same warning forever."""
    index = log.index
    created = index.nodes[to_node].eventIndex
    latest: NodeCreated | None = None
    for edge in index.edges_from.get(from_node, ()):
        sibling = edge.data.toNodeId
        if edge.data.edgeKind != "acked_step" or sibling == to_node:
            continue
        stack = [sibling]
        while stack:
            node = index.nodes.get(stack.pop())
            if node is None or node.eventIndex > created:
                continue
            if node.data.nodeKind == "step" and (
                latest is None or node.eventIndex > latest.eventIndex
            ):
                latest = node
            stack.extend(e.data.toNodeId for e in index.edges_from.get(node.node_id, ()))
    if latest is None:
        return None
    other_state = deps.codec.mint_state(
        session_id=log.session_id,
        node_id=latest.node_id,
        workflow_hash=latest.data.workflowHash,
    )
    return {
        "code": "FORK_CREATED",
        "message": f"This advance started a new branch from node {from_node}: that step had "
        f"already been completed once, on a branch whose tip is node {latest.node_id}. Both "
        "branches are kept; this response continues the new one.",
        "suggestion": "If you meant to continue where you were, rehydrate the other branch "
        "(otherBranch.stateToken) and carry on from there. If the fork was intended, carry "
        "on with nextCall.",
        "otherBranch": {"tipNodeId": latest.node_id, "stateToken": other_state},
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


@dataclass(frozen=True)
class _Reached:
    """The node a recorded advance created, with what its answer is rendered from."""

    node: NodeCreated
    run: RunInfo
    snapshot: ExecutionSnapshot
    compiled: CompiledWorkflow


def advance_response(
    deps: EngineDeps,
    compiled_cache: CompiledCache,
    log: SessionLog,
    record: AdvanceRecorded,
    style: CallStyle = "v1",
) -> Result[dict[str, Any], EngineError]:
    """The response for a recorded advance, first time and replay alike. Its keys come in
    a fixed order: the answer is the same bytes every time it is given."""
    reached = _reached(deps, compiled_cache, log, record)
    if isinstance(reached, Failure):
        return Failure(reached.failure())
    to = reached.unwrap()
    session_id, node_id = log.session_id, to.node.node_id
    state_token = deps.codec.mint_state(
        session_id=session_id, node_id=node_id, workflow_hash=to.node.data.workflowHash
    )
    instance = pending_instance(to.snapshot)
    complete = isinstance(to.snapshot.state, CompleteState)
    response: dict[str, Any] = {"kind": "ok", "stateToken": state_token}
    ack: str | None = None
    call_attempt: str | None = None
    pending: PendingPrompt | None = None
    if instance is not None:
        call_attempt = next_attempt_id(record.data.attemptId)
        ack = deps.codec.mint_ack(session_id=session_id, node_id=node_id, attempt_id=call_attempt)
        response["ackToken"] = ack
        response["checkpointToken"] = deps.codec.mint_checkpoint(
            session_id=session_id, node_id=node_id, attempt_id=call_attempt
        )
        context = log.index.context_before(to.node.run_id, to.node.eventIndex)
        pending = render(to.compiled, instance, context)
    response["isComplete"] = complete
    response["pending"] = None if pending is None else pending.to_json()
    response.update(references_field(to.compiled.pinned.definition))
    response["preferences"] = dict(to.run.preferences)
    response["sessionId"] = session_id
    response["nextIntent"] = next_intent(pending, complete=complete)
    state = to.snapshot.state
    if isinstance(state, BlockedState):
        ack, call_attempt = _add_block(deps, log, node_id, state, response)
    _add_next_call(deps, log, node_id, (ack, call_attempt), style, response)
    if isinstance(state, BlockedState) and instance is not None:
        _with_retry_template(response, to.compiled, instance, state)
    if ack is None and not complete:
        # Nothing can be advanced from here: the state-only token is the way on.
        response["continueToken"] = state_token
        response["nextIntent"] = "rehydrate_only"
        response["nextCall"] = rehydrate_call(state_token, style)
    if not isinstance(state, BlockedState):
        assessed = _assessed_step_context(deps, log, record, to.compiled)
        if assessed is not None:
            response["stepContext"] = assessed
    fork = fork_warning(deps, log, record.node_id, node_id)
    if fork is not None:
        response["warnings"] = [fork]
    return Success(response)


def _reached(
    deps: EngineDeps, compiled_cache: CompiledCache, log: SessionLog, record: AdvanceRecorded
) -> Result[_Reached, EngineError]:
    """The recorded advance's new node, its run, snapshot and compiled workflow; a log
    that lacks one of them breaks an invariant."""
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
    return Success(_Reached(target, run, snapshot, compiled.unwrap()))


def _add_block(
    deps: EngineDeps, log: SessionLog, node_id: str, state: BlockedState, response: dict[str, Any]
) -> tuple[str | None, str | None]:
    """A blocked answer's blockers (with advice that matches its nextCall), the retry ack
    of a retryable block and the failed validation. Returns the (ack, attempt) the nextCall
    retries with, or (None, None) when the block is terminal."""
    response["kind"] = "blocked"
    retryable = isinstance(state.blocked, RetryableBlock)
    response["blockers"] = agreeing_blockers(
        state.blocked.blockers.model_dump(mode="json", by_alias=True, exclude_none=True),
        retryable=retryable,
    )
    response["retryable"] = retryable
    retry: tuple[str | None, str | None] = (None, None)
    if isinstance(state.blocked, RetryableBlock):
        attempt = state.blocked.retry_attempt_id
        retry_ack = deps.codec.mint_ack(
            session_id=log.session_id, node_id=node_id, attempt_id=attempt
        )
        response["retryAckToken"] = retry_ack
        retry = (retry_ack, attempt)
    validation = _validation(log, state)
    if validation is not None:
        response["validation"] = validation
    return retry


def _add_next_call(
    deps: EngineDeps,
    log: SessionLog,
    node_id: str,
    call: tuple[str | None, str | None],
    style: CallStyle,
    response: dict[str, Any],
) -> None:
    """The continueToken of the attempt the answer hands over, and the nextCall that
    advances with it in the call's own protocol (None when nothing can advance)."""
    ack, attempt = call
    continue_token: str | None = None
    if ack is not None and attempt is not None:
        continue_token = deps.codec.mint_continue(
            session_id=log.session_id, node_id=node_id, attempt_id=attempt
        )
        response["continueToken"] = continue_token
    response["nextCall"] = step_call(style, response["stateToken"], ack, continue_token)


def _assessed_step_context(
    deps: EngineDeps, log: SessionLog, record: AdvanceRecorded, compiled: CompiledWorkflow
) -> dict[str, Any] | None:
    """The assessments the advance recorded, read back from its artifact outputs (so a
    replay answers the same), when the step it completed asks for assessments."""
    if not compiled.assessments:
        return None
    source = log.index.nodes.get(record.node_id)
    snapshot = None if source is None else load_snapshot(deps, source.data.snapshotRef)
    if not isinstance(snapshot, ExecutionSnapshot):
        return None
    done = pending_instance(snapshot)
    step = None if done is None else compiled.step(done.step_id)
    if step is None or not step.assessment_refs:
        return None
    prefix = f"out_artifact_{record.data.attemptId}_"
    sent: list[tuple[int, Any]] = []
    for output in log.index.outputs.get(record.node_id, ()):
        output_id = output.data.outputId
        payload = output.data.payload
        if output_id.startswith(prefix) and isinstance(payload, ArtifactRefPayload):
            position = output_id.removeprefix(prefix)
            sent.append((int(position) if position.isdigit() else 0, payload.content))
    ordered = [content for _, content in sorted(sent, key=lambda pair: pair[0])]
    check = check_assessments(step, compiled.assessments, ordered)
    return step_context(check.recorded) if check.recorded else None


def _with_retry_template(
    response: dict[str, Any],
    compiled: CompiledWorkflow,
    instance: StepInstance,
    state: BlockedState,
) -> None:
    """A block caused by an artifact: nextCall carries ready artifacts to send (see
    workflow.retry), and an assessment follow-up is also spelt out as `assessmentFollowup`."""
    call = response.get("nextCall")
    reason = state.blocked.reason
    ref = getattr(reason, "contract_ref", None)
    followups = [
        b
        for b in response.get("blockers", {}).get("blockers", [])
        if b.get("code") == "ASSESSMENT_FOLLOWUP_REQUIRED"
    ]
    if isinstance(call, dict) and isinstance(ref, str):
        templates = retry_artifacts(compiled, instance, ref, after_followup=bool(followups))
        if templates:
            call["params"]["output"] = {"artifacts": templates}
    if followups:
        response["assessmentFollowup"] = {
            "title": followups[0]["message"],
            "guidance": followups[0].get("suggestedFix", ""),
        }


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
