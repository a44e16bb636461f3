"""continue_workflow with intent "rehydrate" (spec 40 §7.1): a pure read that returns the
pending step with a bounded recap of the path, and fresh ack/checkpoint tokens."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from returns.result import Failure, Result, Success

from workrail.core.budgets import REHYDRATE_PROMPT_MAX_BYTES, utf8_len
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.snapshot import CompleteState, StepInstance
from workrail.engine.compiled import CompiledCache
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error
from workrail.engine.loaded import (
    NodeAddress,
    NodeFacts,
    load_snapshot,
    resolve_state,
)
from workrail.engine.responses import CallStyle, next_intent, pending_instance, step_call
from workrail.engine.store_errors import from_store
from workrail.store.ports import SessionLog
from workrail.workflow.compiler import CompiledWorkflow
from workrail.workflow.metadata import references_field
from workrail.workflow.prompts import (
    PendingPrompt,
    RecoveryContext,
    render_pending,
    render_recovery,
)

# Headings, the branch summary and function definitions around the recaps.
RECOVERY_FRAME_BYTES = 1024


def rehydrate(
    deps: EngineDeps,
    cache: CompiledCache,
    given_state_token: str | None,
    state: NodeAddress,
    context: dict[str, Any] | None,
    style: CallStyle = "v1",
) -> Result[dict[str, Any], EngineError]:
    """A pure read. `context` is validated by the caller and then ignored, as the
    reference does: rehydrating never changes the run. The answer echoes the stateToken
    it was given (the reference does), or mints the node's when it came as the state half
    of a continueToken."""
    del context
    result = deps.sessions.read(
        state.session_id, lambda log: _answer(deps, cache, log, state, given_state_token, style)
    )
    if isinstance(result, Failure):
        return Failure(from_store(result.failure(), "rehydrate"))
    return result.unwrap()


def _answer(
    deps: EngineDeps,
    cache: CompiledCache,
    log: SessionLog,
    state: NodeAddress,
    given_state_token: str | None,
    style: CallStyle,
) -> Result[dict[str, Any], EngineError]:
    """The node's pending step with its recovery recap and a fresh attempt's tokens, or
    only where the run stands when nothing is pending."""
    resolved = resolve_state(log, state, "rehydrate")
    if isinstance(resolved, Failure):
        return Failure(resolved.failure())
    facts = resolved.unwrap()
    state_token = given_state_token or deps.codec.mint_state(
        session_id=log.session_id, node_id=facts.node_id, workflow_hash=facts.workflow_hash
    )
    snapshot = load_snapshot(deps, facts.node.data.snapshotRef)
    if isinstance(snapshot, EngineError):
        return Failure(snapshot)
    if snapshot is None:
        return Failure(_no_snapshot())
    head = {"kind": "ok", "stateToken": state_token}
    preferences = dict(facts.run.preferences)
    instance = pending_instance(snapshot)
    complete = isinstance(snapshot.state, CompleteState)
    if instance is None:
        return Success(
            {
                **head,
                "isComplete": complete,
                "pending": None,
                "preferences": preferences,
                "sessionId": log.session_id,
                "nextIntent": "complete",
                "nextCall": None,
            }
        )
    compiled = cache.get(deps, facts.workflow_hash)
    if isinstance(compiled, Failure):
        return Failure(compiled.failure())
    tokens = _fresh_attempt(deps, log.session_id, facts.node_id)
    pending = _recovery_prompt(compiled.unwrap(), instance, log.index, facts)
    return Success(
        {
            **head,
            **tokens,
            "isComplete": complete,
            "pending": pending.to_json(),
            **references_field(compiled.unwrap().pinned.definition),
            "preferences": preferences,
            "sessionId": log.session_id,
            "nextIntent": next_intent(pending, complete=complete),
            "nextCall": step_call(style, state_token, tokens["ackToken"], tokens["continueToken"]),
        }
    )


def _no_snapshot() -> EngineError:
    return error(
        "TOKEN_UNKNOWN_NODE",
        "No execution snapshot was found for this node.",
        "Use a stateToken returned by WorkRail for an existing node.",
    )


def _fresh_attempt(deps: EngineDeps, session_id: str, node_id: str) -> dict[str, str]:
    """The ack, checkpoint and continue tokens of a new attempt at the node: a rehydrate
    hands out a fresh attempt, so an output sent after it is recorded as new."""
    attempt = deps.mint("attempt")
    return {
        "ackToken": deps.codec.mint_ack(session_id=session_id, node_id=node_id, attempt_id=attempt),
        "checkpointToken": deps.codec.mint_checkpoint(
            session_id=session_id, node_id=node_id, attempt_id=attempt
        ),
        "continueToken": deps.codec.mint_continue(
            session_id=session_id, node_id=node_id, attempt_id=attempt
        ),
    }


def _recovery_prompt(
    compiled: CompiledWorkflow, instance: StepInstance, index: SessionIndex, facts: NodeFacts
) -> PendingPrompt:
    """The pending step's prompt with the recaps of the path that fit beside it in the
    rehydrate budget, rendered with the context as it stood at the node."""
    context_at_node = index.context_before(facts.run_id, facts.node.eventIndex)
    base = render_pending(compiled, instance, context_at_node)
    budget = REHYDRATE_PROMPT_MAX_BYTES - utf8_len(base.prompt) - RECOVERY_FRAME_BYTES
    recovery = recovery_context(index, facts.node_id, budget)
    return render_recovery(compiled, instance, recovery, context_at_node)


def recovery_context(index: SessionIndex, node_id: str, budget: int) -> RecoveryContext:
    """Branch summary and recaps for one node, with at most `budget` bytes of recaps.

    Recaps are chosen per edge of the path (the recap written by the attempt that created
    the next node), so a fork never breaks the recap of either branch. The walk up the
    ancestry stops once the budget is spent, newest recaps first, so a rehydrate costs
    what it shows rather than the depth of the session.
    """
    try:
        children = index.edges_from.get(node_id, [])
        tip = index.best_tip_below(node_id) if children else None
        downstream: list[str] = []
        if tip is not None and tip != node_id:
            # Nodes after this one, towards the tip: their own recaps (this node's recap
            # is its own work, which the reference leaves out of the downstream section).
            # The walk stops at this node: what lies above it is not downstream.
            path: list[str] = []
            for current in index.walk_up(tip):
                if current == node_id:
                    break
                path.append(current)
            path.reverse()
            downstream = _take(_recaps_down(index, path), budget // 2)
        ancestry = _take(recaps_up(index, node_id), budget - _size(downstream))
        ancestry.reverse()  # oldest first, as the prompt reads
    except ProjectionError as exc:
        return RecoveryContext(unavailable_reason=f"projection failure: {exc}")
    return RecoveryContext(
        child_count=len(children),
        preferred_tip_node_id=tip,
        downstream_recaps=downstream,
        ancestry_recaps=ancestry,
    )


def _recap_on_edge(index: SessionIndex, parent: str, child: str) -> str | None:
    advance = index.advance_into.get(child)
    if advance is None or advance.node_id != parent:
        return None
    return index.recap_of(parent, advance.data.attemptId)


def _recaps_down(index: SessionIndex, path: list[str]) -> Iterator[str]:
    """Recaps along `path` (root side first)."""
    for parent, child in zip(path, path[1:], strict=False):
        recap = _recap_on_edge(index, parent, child)
        if recap is not None:
            yield recap


def recaps_up(index: SessionIndex, node_id: str) -> Iterator[str]:
    """Recaps on the way from `node_id` up to the root, newest first, lazily."""
    child: str | None = None
    for current in index.walk_up(node_id):
        if child is not None:
            recap = _recap_on_edge(index, current, child)
            if recap is not None:
                yield recap
        child = current


def _take(recaps: Iterator[str], budget: int) -> list[str]:
    """Recaps in the given order while they fit in `budget` bytes."""
    kept: list[str] = []
    used = 0
    for recap in recaps:
        used += utf8_len(recap) + 2  # the blank line between recaps
        if used > budget:
            break
        kept.append(recap)
    return kept


def _size(recaps: list[str]) -> int:
    return sum(utf8_len(r) + 2 for r in recaps)
