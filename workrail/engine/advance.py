"""continue_workflow with intent "advance" (spec 40 §7.2–7.4).

The idempotency key is `(node, attemptId)`: an advance already recorded is answered from
the log without taking the lock (so parallel replays never fail on it), and checked again
under the lock before a first-time advance writes its one append plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from returns.result import Failure, Result, Success

from workrail.core import dedupe
from workrail.core.budgets import (
    CONTEXT_MAX_BYTES,
    NOTES_MAX_BYTES,
    TRUNCATION_MARKER,
    truncate_notes,
    utf8_len,
)
from workrail.core.canonical import (
    CanonicalJsonError,
    canonical_bytes,
    canonical_digest,
    sha256_digest,
)
from workrail.core.events import AdvanceRecorded, DomainEvent
from workrail.core.session_index import RECAP_OUTPUT_PREFIX
from workrail.core.snapshot import BlockedState, RetryableBlock
from workrail.engine.compiled import CompiledCache
from workrail.engine.context import (
    clip_path,
    exceeds_value_budget,
    json_value_problem,
    merge_context,
    too_many_values,
    validate_context,
)
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error, internal
from workrail.engine.events_builder import PlanBuilder
from workrail.engine.loaded import (
    NodeAddress,
    NodeFacts,
    load_snapshot,
    remember_snapshot,
    resolve_state,
)
from workrail.engine.needed import needed_input_error
from workrail.engine.responses import CallStyle, advance_response, step_call
from workrail.engine.store_errors import from_store
from workrail.store.ports import AppendPlan, SessionLog, SnapshotPin, WriteTxn
from workrail.tokens import AckToken
from workrail.workflow.advance import Advanced, AdvanceRequest, Blocked, decide_advance


@dataclass(frozen=True)
class AgentOutput:
    notes_markdown: str | None = None
    artifacts: tuple[Any, ...] = ()

    @property
    def present(self) -> bool:
        return self.notes_markdown is not None or bool(self.artifacts)


@dataclass(frozen=True)
class _Call:
    """One advance call as sent: the node it names, the attempt it acks, the output and
    context delta it carries, and its protocol (which the answer's nextCall follows)."""

    state: NodeAddress
    ack: AckToken
    output: AgentOutput
    context: dict[str, Any] | None
    style: CallStyle

    @property
    def key(self) -> str:
        """The idempotency key: one recorded advance per (node, attempt)."""
        return dedupe.advance_recorded(
            self.state.session_id, self.state.node_id, self.ack.attempt_id
        )


@dataclass(frozen=True)
class _Decided:
    """The workflow's verdict on the call, with the merged context it was judged on."""

    decision: Advanced | Blocked
    merged: dict[str, Any]
    retry_mode: bool
    """The call retries a blocked attempt (its node is a `blocked_attempt`)."""


@dataclass(frozen=True)
class _Move:
    """The ids the plan's events are scoped by: from which node to which, by which attempt."""

    session_id: str
    run_id: str
    from_node: str
    to_node: str
    attempt: str


def advance(
    deps: EngineDeps,
    cache: CompiledCache,
    state: NodeAddress,
    ack: AckToken,
    output: AgentOutput,
    context: dict[str, Any] | None,
    style: CallStyle = "v1",
) -> Result[dict[str, Any], EngineError]:
    """`context`, if any, was validated by the caller (the Engine facade); `style` is the
    protocol the call used, which the answer's nextCall follows."""
    artifacts_ok = _check_artifacts(output)
    if artifacts_ok is not None:
        return Failure(artifacts_ok)
    call = _Call(state, ack, output, context, style)
    pre = deps.sessions.read(state.session_id, lambda log: _replay(deps, cache, log, call))
    if isinstance(pre, Failure):
        return Failure(from_store(pre.failure(), "advance"))
    answered = pre.unwrap()
    if isinstance(answered, Failure):
        return Failure(answered.failure())
    replayed = answered.unwrap()
    if replayed is not None:
        return Success(replayed)
    written = deps.sessions.write(state.session_id, lambda txn: _first_time(deps, cache, txn, call))
    if isinstance(written, Failure):
        return Failure(from_store(written.failure(), "advance"))
    return Success(written.unwrap())


def _replay(
    deps: EngineDeps, cache: CompiledCache, log: SessionLog, call: _Call
) -> Result[dict[str, Any] | None, EngineError]:
    """The recorded answer when this (node, attempt) already advanced, else None; read
    without the lock, so parallel replays never wait on it or fail on it."""
    facts = resolve_state(log, call.state, "advance")
    if isinstance(facts, Failure):
        return Failure(facts.failure())
    recorded = _recorded(log, call.key)
    if recorded is None:
        return Success(None)
    return advance_response(deps, cache, log, recorded, call.style).map(
        lambda response: _with_truncation_warning(
            _with_replay_warning(response, log, recorded, call.output),
            log,
            recorded,
            call.output,
        )
    )


def _first_time(
    deps: EngineDeps, cache: CompiledCache, txn: WriteTxn, call: _Call
) -> Result[dict[str, Any], Any]:
    """Under the lock: a replay if a parallel call recorded the advance meanwhile, else
    the one append plan and the answer built from the log it produced."""
    again = _replay(deps, cache, txn.log, call)
    if isinstance(again, Failure) or again.unwrap() is not None:
        return again  # type: ignore[return-value]
    facts = resolve_state(txn.log, call.state, "advance").unwrap()
    plan = _plan(deps, cache, txn.log, facts, call)
    if isinstance(plan, Failure):
        return plan
    appended = txn.append(plan.unwrap())
    if isinstance(appended, Failure):
        return appended
    log = txn.log
    recorded = _recorded(log, call.key)
    assert recorded is not None
    return advance_response(deps, cache, log, recorded, call.style).map(
        lambda response: _with_truncation_warning(response, log, recorded, call.output)
    )


def _recorded(log: SessionLog, key: str) -> AdvanceRecorded | None:
    index = log.index.dedupe.get(key)
    if index is None:
        return None
    event = log.events[index]
    return event if isinstance(event, AdvanceRecorded) else None


def _check_artifacts(output: AgentOutput) -> EngineError | None:
    if exceeds_value_budget(list(output.artifacts), CONTEXT_MAX_BYTES):
        return too_many_values("output.artifacts are too large", "continue_workflow")
    problem = json_value_problem(list(output.artifacts))
    if problem is not None:
        kind, path = problem
        return error(
            "VALIDATION_ERROR",
            f"output.artifacts{clip_path(path)} is not storable JSON ({kind}).",
            "Send artifacts as plain JSON: finite numbers, integers within ±(2^53-1), "
            "at most 64 levels deep.",
        )
    try:
        size = sum(len(canonical_bytes(a)) for a in output.artifacts)
    except CanonicalJsonError as exc:
        return error(
            "VALIDATION_ERROR",
            f"output.artifacts must be JSON values: {exc}",
            "Send artifacts as plain JSON (no NaN, integers within ±2^53).",
        )
    if size > CONTEXT_MAX_BYTES:
        return error(
            "VALIDATION_ERROR",
            f"output.artifacts are too large: {size} bytes (max {CONTEXT_MAX_BYTES}).",
            "Store large artifacts elsewhere and pass a reference.",
        )
    return None


def _plan(
    deps: EngineDeps, cache: CompiledCache, log: SessionLog, facts: NodeFacts, call: _Call
) -> Result[AppendPlan, EngineError]:
    """The advance's one append plan: its outcome, what an accepted step records, the new
    node (a step, or a blocked attempt) with its edge, and the step's recap and artifacts.
    The event order, and so the ids minted for them, is part of the log's format."""
    decided = _decide(deps, cache, log, facts, call)
    if isinstance(decided, Failure):
        return Failure(decided.failure())
    verdict = decided.unwrap()
    decision = verdict.decision
    move = _Move(
        log.session_id, facts.run_id, facts.node_id, deps.mint("node"), call.ack.attempt_id
    )
    stored = deps.snapshots.put(decision.snapshot.to_json())
    if isinstance(stored, Failure):
        return Failure(from_store(stored.failure(), "advance"))
    snapshot_ref = stored.unwrap()
    remember_snapshot(snapshot_ref, decision.snapshot)
    plan = PlanBuilder(move.session_id, log.count, deps.mint)
    recorded = _add_recorded(plan, move)
    if isinstance(decision, Advanced):
        delta_merged = verdict.merged if call.context is not None else None
        _add_accepted(deps, plan, move, decision, delta_merged, retry=verdict.retry_mode)
    else:
        _add_validation(plan, move, decision)
    created = _add_node(plan, move, facts.workflow_hash, snapshot_ref, decision)
    _add_edge(plan, move, log, recorded)
    if isinstance(decision, Advanced):
        _add_outputs(plan, move, decision, call.output)
    pin = SnapshotPin(snapshot_ref, created.eventIndex, created.eventId)
    return Success(AppendPlan(tuple(plan.events), (pin,)))


def _decide(
    deps: EngineDeps, cache: CompiledCache, log: SessionLog, facts: NodeFacts, call: _Call
) -> Result[_Decided, EngineError]:
    """Judge the call's output against the node's snapshot and the run's context merged
    with the call's delta; a step that needs input the call lacks says how to send it."""
    node = facts.node
    snapshot = load_snapshot(deps, node.data.snapshotRef)
    if isinstance(snapshot, EngineError):
        return Failure(snapshot)
    if snapshot is None:
        return Failure(internal("missing_snapshot"))
    retry_mode = node.data.nodeKind == "blocked_attempt"
    if retry_mode and not (
        isinstance(snapshot.state, BlockedState)
        and isinstance(snapshot.state.blocked, RetryableBlock)
    ):
        return Failure(internal("token_scope_mismatch"))
    compiled = cache.get(deps, facts.workflow_hash)
    if isinstance(compiled, Failure):
        return Failure(compiled.failure())
    merged = merge_context(log.index.run_context(facts.run_id), call.context)
    if call.context is not None:
        # The delta was checked alone; the merged object is what gets stored.
        within = validate_context("continue_workflow", merged)
        if isinstance(within, Failure):
            return Failure(within.failure())
    request = AdvanceRequest(
        attempt_id=call.ack.attempt_id,
        context=merged,
        notes_markdown=call.output.notes_markdown,
        artifacts=call.output.artifacts,
        artifact_history=log.index.loop_control_artifacts,
    )
    decided = decide_advance(compiled.unwrap(), snapshot, request)
    if isinstance(decided, Failure):
        failure = decided.failure()
        if failure.needs is not None:
            same = _same_call(deps, log.session_id, facts, call)
            return Failure(needed_input_error(failure, same))
        return Failure(internal(failure.engine_kind))
    return Success(_Decided(decided.unwrap(), merged, retry_mode))


def _add_recorded(plan: PlanBuilder, move: _Move) -> DomainEvent:
    """`advance_recorded`: the idempotency record, first in the plan."""
    outcome = {"kind": "advanced", "toNodeId": move.to_node}
    data = {"attemptId": move.attempt, "intent": "ack_pending", "outcome": outcome}
    key = dedupe.advance_recorded(move.session_id, move.from_node, move.attempt)
    return plan.add("advance_recorded", key, data, run_id=move.run_id, node_id=move.from_node)


def _add_accepted(
    deps: EngineDeps,
    plan: PlanBuilder,
    move: _Move,
    decision: Advanced,
    merged: dict[str, Any] | None,
    *,
    retry: bool,
) -> None:
    """What an accepted step records before its node: the merged context when the call
    sent a delta, the passing validation when it retried a block, the decision trace."""
    sess, run = move.session_id, move.run_id
    if merged is not None:
        context_key = deps.mint("evt")
        plan.add(
            "context_set",
            dedupe.context_set(sess, run, context_key),
            {"contextId": deps.mint("evt"), "context": merged, "source": "agent_delta"},
            run_id=run,
        )
    if retry:
        _add_validation(plan, move, decision)
    if decision.trace:
        trace_id = deps.mint("evt")
        plan.add(
            "decision_trace_appended",
            dedupe.decision_trace_appended(sess, trace_id),
            {
                "traceId": trace_id,
                "entries": [
                    e.model_dump(mode="json", by_alias=True, exclude_none=True)
                    for e in decision.trace
                ],
            },
            run_id=run,
            node_id=move.from_node,
        )


def _add_validation(plan: PlanBuilder, move: _Move, decision: Advanced | Blocked) -> None:
    """`validation_performed`: why an attempt was blocked, or that its retry passed."""
    plan.add(
        "validation_performed",
        dedupe.validation_performed(move.session_id, move.attempt),
        {
            "validationId": f"validation_{move.attempt}",
            "attemptId": move.attempt,
            "contractRef": decision.validation.contract_ref,
            "result": decision.validation.result.model_dump(mode="json", by_alias=True),
        },
        run_id=move.run_id,
        node_id=move.from_node,
    )


def _add_node(
    plan: PlanBuilder,
    move: _Move,
    workflow_hash: str,
    snapshot_ref: str,
    decision: Advanced | Blocked,
) -> DomainEvent:
    """The node the advance leads to: the next step, or a blocked attempt to retry."""
    return plan.add(
        "node_created",
        dedupe.node_created(move.session_id, move.run_id, move.to_node),
        {
            "nodeKind": "step" if isinstance(decision, Advanced) else "blocked_attempt",
            "parentNodeId": move.from_node,
            "workflowHash": workflow_hash,
            "snapshotRef": snapshot_ref,
        },
        run_id=move.run_id,
        node_id=move.to_node,
    )


def _add_edge(plan: PlanBuilder, move: _Move, log: SessionLog, recorded: DomainEvent) -> None:
    """The acked-step edge; a second edge from the same node is a fork."""
    cause = "non_tip_advance" if log.index.edges_from.get(move.from_node) else "intentional_fork"
    plan.add(
        "edge_created",
        dedupe.acked_step_edge(move.session_id, move.run_id, move.from_node, move.to_node),
        {
            "edgeKind": "acked_step",
            "fromNodeId": move.from_node,
            "toNodeId": move.to_node,
            "cause": {"kind": cause, "eventId": recorded.eventId},
        },
        run_id=move.run_id,
    )


def _add_outputs(plan: PlanBuilder, move: _Move, decision: Advanced, output: AgentOutput) -> None:
    """The accepted step's recap (notes cut to the budget) and its artifacts."""
    outputs: list[tuple[str, str, dict[str, Any]]] = []
    if decision.record_recap and output.notes_markdown:
        notes = {"payloadKind": "notes", "notesMarkdown": truncate_notes(output.notes_markdown)}
        outputs.append((f"{RECAP_OUTPUT_PREFIX}{move.attempt}", "recap", notes))
    for output_id, payload in _artifact_payloads(move.attempt, output.artifacts):
        outputs.append((output_id, "artifact", payload))
    for output_id, channel, payload in outputs:
        plan.add(
            "node_output_appended",
            dedupe.node_output_appended(move.session_id, output_id),
            {"outputId": output_id, "outputChannel": channel, "payload": payload},
            run_id=move.run_id,
            node_id=move.from_node,
        )


def _artifact_payloads(
    attempt: str, artifacts: tuple[Any, ...]
) -> list[tuple[str, dict[str, Any]]]:
    """Each artifact as an inline artifact_ref payload under its output id, in digest
    order (then id), so the same artifacts are always recorded the same way."""
    found = []
    for i, content in enumerate(artifacts):
        encoded = canonical_bytes(content)  # once: its digest and length both come from it
        digest = sha256_digest(encoded)
        payload = {
            "payloadKind": "artifact_ref",
            "sha256": digest,
            "contentType": "application/json",
            "byteLength": len(encoded),
            "content": content,
        }
        found.append((digest, f"out_artifact_{attempt}_{i}", payload))
    return [(output_id, payload) for _, output_id, payload in sorted(found, key=lambda a: a[:2])]


def _same_call(
    deps: EngineDeps, session_id: str, facts: NodeFacts, call: _Call
) -> dict[str, Any] | None:
    """This advance again, in its own protocol, with the output and context it sent (the
    tokens are re-minted: minting is deterministic, so they are the ones the call used)."""
    node_id, attempt = facts.node_id, call.ack.attempt_id
    state_token = deps.codec.mint_state(
        session_id=session_id, node_id=node_id, workflow_hash=facts.workflow_hash
    )
    ack_token = deps.codec.mint_ack(session_id=session_id, node_id=node_id, attempt_id=attempt)
    continue_token = deps.codec.mint_continue(
        session_id=session_id, node_id=node_id, attempt_id=attempt
    )
    again = step_call(call.style, state_token, ack_token, continue_token)
    if again is None:
        return None
    sent: dict[str, Any] = {}
    if call.output.notes_markdown is not None:
        sent["notesMarkdown"] = call.output.notes_markdown
    if call.output.artifacts:
        sent["artifacts"] = list(call.output.artifacts)
    if sent:
        again["params"]["output"] = sent
    if call.context:
        again["params"]["context"] = dict(call.context)
    return again


def _with_replay_warning(
    response: dict[str, Any], log: SessionLog, recorded: AdvanceRecorded, output: AgentOutput
) -> dict[str, Any]:
    """A replay answers with the recorded outcome; if the call carried different output,
    say so instead of dropping it silently as the reference does. A blocked attempt
    recorded no output at all, so any output sent with its replay is not recorded."""
    if not output.present:
        return response
    if response.get("kind") == "blocked":
        return _warn(response, _not_recorded_warning(blocked=True))
    attempt = recorded.data.attemptId
    from_node = recorded.node_id
    recorded_notes = log.index.recap_of(from_node, attempt)
    sent_notes = None if output.notes_markdown is None else truncate_notes(output.notes_markdown)
    prefix = f"out_artifact_{attempt}_"
    recorded_artifacts = sorted(
        (o.data.outputId, canonical_digest(getattr(o.data.payload, "content", None)))
        for o in log.index.outputs.get(from_node, ())
        if o.data.outputId.startswith(prefix)
    )
    sent_artifacts = sorted(
        (f"{prefix}{i}", canonical_digest(a)) for i, a in enumerate(output.artifacts)
    )
    if recorded_notes == sent_notes and recorded_artifacts == sent_artifacts:
        return response
    return _warn(response, _not_recorded_warning(blocked=False))


def _with_truncation_warning(
    response: dict[str, Any], log: SessionLog, recorded: AdvanceRecorded, output: AgentOutput
) -> dict[str, Any]:
    """Notes over the recap budget are stored cut to it: say so, with what was kept, rather
    than let the agent believe its whole notes will come back in a rehydrate's recap."""
    notes = output.notes_markdown
    if notes is None or utf8_len(notes) <= NOTES_MAX_BYTES:
        return response
    recap = log.index.recap_of(recorded.node_id, recorded.data.attemptId)
    if recap is None or recap != truncate_notes(notes):
        return response  # nothing recorded (blocked), or other notes: OUTPUT_NOT_RECORDED
    return _warn(
        response,
        {
            "code": "NOTES_TRUNCATED",
            "message": f"output.notesMarkdown was {utf8_len(notes)} bytes; the recap keeps "
            f"the first {utf8_len(recap)} bytes (at most {NOTES_MAX_BYTES}, the cut marked "
            f"with {TRUNCATION_MARKER!r}).",
            "suggestion": "Keep notes to a summary under 4 KiB: the recap is what a "
            "rehydrate shows after a context reset. Put long material in output.artifacts "
            "or in files, and mention where it is.",
        },
    )


def _warn(response: dict[str, Any], warning: dict[str, Any]) -> dict[str, Any]:
    return {**response, "warnings": [*response.get("warnings", ()), warning]}


def _not_recorded_warning(*, blocked: bool) -> dict[str, Any]:
    if blocked:
        suggestion = (
            "This attempt was already recorded as blocked. To submit corrected output, send "
            "nextCall (it carries the retryAckToken) with your new output."
        )
    else:
        suggestion = (
            "Continue with the tokens in this response (nextCall). To record new output for "
            'the same step instead, call continue_workflow with intent "rehydrate" and that '
            "step's stateToken to get a fresh ackToken, then advance with it."
        )
    return {
        "code": "OUTPUT_NOT_RECORDED",
        "message": "This ackToken (or the continueToken that carries it) was already used: "
        "the recorded outcome is returned and the output sent with this call was NOT recorded.",
        "suggestion": suggestion,
    }
