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
from workrail.core.events import AdvanceRecorded
from workrail.core.snapshot import BlockedState, ExecutionSnapshot, RetryableBlock
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
    CompiledCache,
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
from workrail.workflow.advance import Advanced, AdvanceRequest, decide_advance


@dataclass(frozen=True)
class AgentOutput:
    notes_markdown: str | None = None
    artifacts: tuple[Any, ...] = ()

    @property
    def present(self) -> bool:
        return self.notes_markdown is not None or bool(self.artifacts)


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
    session_id = state.session_id
    key = dedupe.advance_recorded(session_id, state.node_id, ack.attempt_id)

    def replay_or_none(log: SessionLog) -> Result[dict[str, Any] | None, EngineError]:
        facts = resolve_state(log, state, "advance")
        if isinstance(facts, Failure):
            return Failure(facts.failure())
        recorded = _recorded(log, key)
        if recorded is None:
            return Success(None)
        return advance_response(deps, cache, log, recorded, style).map(
            lambda response: _with_truncation_warning(
                _with_replay_warning(response, log, recorded, output), log, recorded, output
            )
        )

    pre = deps.sessions.read(session_id, replay_or_none)
    if isinstance(pre, Failure):
        return Failure(from_store(pre.failure(), "advance"))
    answered = pre.unwrap()
    if isinstance(answered, Failure):
        return Failure(answered.failure())
    replayed = answered.unwrap()
    if replayed is not None:
        return Success(replayed)

    def first_time(txn: WriteTxn) -> Result[dict[str, Any], Any]:
        log = txn.log
        again = replay_or_none(log)
        if isinstance(again, Failure) or again.unwrap() is not None:
            return again  # type: ignore[return-value]
        facts = resolve_state(log, state, "advance").unwrap()
        plan = _plan(deps, cache, log, facts, ack, output, context, style)
        if isinstance(plan, Failure):
            return plan
        appended = txn.append(plan.unwrap())
        if isinstance(appended, Failure):
            return appended
        log = txn.log
        recorded = _recorded(log, key)
        assert recorded is not None
        return advance_response(deps, cache, log, recorded, style).map(
            lambda response: _with_truncation_warning(response, log, recorded, output)
        )

    written = deps.sessions.write(session_id, first_time)
    if isinstance(written, Failure):
        return Failure(from_store(written.failure(), "advance"))
    return Success(written.unwrap())


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
    deps: EngineDeps,
    cache: CompiledCache,
    log: SessionLog,
    facts: NodeFacts,
    ack: AckToken,
    output: AgentOutput,
    context: dict[str, Any] | None,
    style: CallStyle = "v1",
) -> Result[AppendPlan, EngineError]:
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
    merged = merge_context(log.index.run_context(facts.run_id), context)
    if context is not None:
        # The delta was checked alone; the merged object is what gets stored.
        within = validate_context("continue_workflow", merged)
        if isinstance(within, Failure):
            return Failure(within.failure())
    attempt = ack.attempt_id
    request = AdvanceRequest(
        attempt_id=attempt,
        context=merged,
        notes_markdown=output.notes_markdown,
        artifacts=output.artifacts,
        artifact_history=log.index.loop_control_artifacts,
    )
    decided = decide_advance(compiled.unwrap(), snapshot, request)
    if isinstance(decided, Failure):
        failure = decided.failure()
        if failure.needs is not None:
            call = _same_call(deps, log.session_id, facts, ack, output, context, style)
            return Failure(needed_input_error(failure, call))
        return Failure(internal(failure.engine_kind))
    decision = decided.unwrap()

    sess, run, from_node = log.session_id, facts.run_id, node.node_id
    to_node = deps.mint("node")
    new_snapshot: ExecutionSnapshot = decision.snapshot
    stored = deps.snapshots.put(new_snapshot.to_json())
    if isinstance(stored, Failure):
        return Failure(from_store(stored.failure(), "advance"))
    snapshot_ref = stored.unwrap()
    remember_snapshot(snapshot_ref, new_snapshot)
    plan = PlanBuilder(sess, log.count, deps.mint)
    recorded = plan.add(
        "advance_recorded",
        dedupe.advance_recorded(sess, from_node, attempt),
        {
            "attemptId": attempt,
            "intent": "ack_pending",
            "outcome": {"kind": "advanced", "toNodeId": to_node},
        },
        run_id=run,
        node_id=from_node,
    )
    validation = {
        "validationId": f"validation_{attempt}",
        "attemptId": attempt,
        "contractRef": decision.validation.contract_ref,
        "result": decision.validation.result.model_dump(mode="json", by_alias=True),
    }
    advanced = isinstance(decision, Advanced)
    if advanced:
        if context is not None:
            context_key = deps.mint("evt")
            plan.add(
                "context_set",
                dedupe.context_set(sess, run, context_key),
                {"contextId": deps.mint("evt"), "context": merged, "source": "agent_delta"},
                run_id=run,
            )
        if retry_mode:
            plan.add(
                "validation_performed",
                dedupe.validation_performed(sess, attempt),
                validation,
                run_id=run,
                node_id=from_node,
            )
        assert isinstance(decision, Advanced)
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
                node_id=from_node,
            )
    else:
        plan.add(
            "validation_performed",
            dedupe.validation_performed(sess, attempt),
            validation,
            run_id=run,
            node_id=from_node,
        )
    created = plan.add(
        "node_created",
        dedupe.node_created(sess, run, to_node),
        {
            "nodeKind": "step" if advanced else "blocked_attempt",
            "parentNodeId": from_node,
            "workflowHash": facts.workflow_hash,
            "snapshotRef": snapshot_ref,
        },
        run_id=run,
        node_id=to_node,
    )
    cause = "non_tip_advance" if log.index.edges_from.get(from_node) else "intentional_fork"
    plan.add(
        "edge_created",
        dedupe.acked_step_edge(sess, run, from_node, to_node),
        {
            "edgeKind": "acked_step",
            "fromNodeId": from_node,
            "toNodeId": to_node,
            "cause": {"kind": cause, "eventId": recorded.eventId},
        },
        run_id=run,
    )
    if isinstance(decision, Advanced):
        if decision.record_recap and output.notes_markdown:
            output_id = f"out_recap_{attempt}"
            plan.add(
                "node_output_appended",
                dedupe.node_output_appended(sess, output_id),
                {
                    "outputId": output_id,
                    "outputChannel": "recap",
                    "payload": {
                        "payloadKind": "notes",
                        "notesMarkdown": truncate_notes(output.notes_markdown),
                    },
                },
                run_id=run,
                node_id=from_node,
            )
        artifacts = []
        for i, content in enumerate(output.artifacts):
            encoded = canonical_bytes(content)  # once: its digest and length both come from it
            digest = sha256_digest(encoded)
            artifacts.append(
                (
                    digest,
                    f"out_artifact_{attempt}_{i}",
                    {
                        "payloadKind": "artifact_ref",
                        "sha256": digest,
                        "contentType": "application/json",
                        "byteLength": len(encoded),
                        "content": content,
                    },
                )
            )
        for _digest, output_id, payload in sorted(artifacts, key=lambda a: (a[0], a[1])):
            plan.add(
                "node_output_appended",
                dedupe.node_output_appended(sess, output_id),
                {"outputId": output_id, "outputChannel": "artifact", "payload": payload},
                run_id=run,
                node_id=from_node,
            )
    return Success(
        AppendPlan(
            tuple(plan.events), (SnapshotPin(snapshot_ref, created.eventIndex, created.eventId),)
        )
    )


def _same_call(
    deps: EngineDeps,
    session_id: str,
    facts: NodeFacts,
    ack: AckToken,
    output: AgentOutput,
    context: dict[str, Any] | None,
    style: CallStyle,
) -> dict[str, Any] | None:
    """This advance again, in its own protocol, with the output and context it sent (the
    tokens are re-minted: minting is deterministic, so they are the ones the call used)."""
    node_id, attempt = facts.node_id, ack.attempt_id
    state_token = deps.codec.mint_state(
        session_id=session_id, node_id=node_id, workflow_hash=facts.workflow_hash
    )
    ack_token = deps.codec.mint_ack(session_id=session_id, node_id=node_id, attempt_id=attempt)
    continue_token = deps.codec.mint_continue(
        session_id=session_id, node_id=node_id, attempt_id=attempt
    )
    call = step_call(style, state_token, ack_token, continue_token)
    if call is None:
        return None
    sent: dict[str, Any] = {}
    if output.notes_markdown is not None:
        sent["notesMarkdown"] = output.notes_markdown
    if output.artifacts:
        sent["artifacts"] = list(output.artifacts)
    if sent:
        call["params"]["output"] = sent
    if context:
        call["params"]["context"] = dict(context)
    return call


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
        "message": "This ackToken was already used: the recorded outcome is returned and the "
        "output sent with this call was NOT recorded.",
        "suggestion": suggestion,
    }
