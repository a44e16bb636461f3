"""continue_workflow with intent "rehydrate" (spec 40 §7.1): a pure read that returns the
pending step with a bounded recap of the path, and fresh ack/checkpoint tokens."""

from __future__ import annotations

from typing import Any

from returns.result import Failure, Result, Success

from workrail.core.budgets import REHYDRATE_PROMPT_MAX_BYTES, utf8_len
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.snapshot import CompleteState
from workrail.engine.context import validate_context
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error
from workrail.engine.loaded import CompiledCache, load_snapshot, resolve_state
from workrail.engine.responses import next_call, next_intent, pending_instance
from workrail.engine.store_errors import from_store
from workrail.store.ports import SessionLog
from workrail.tokens import StateToken
from workrail.workflow.prompts import RecoveryContext, render_recovery


def rehydrate(
    deps: EngineDeps,
    cache: CompiledCache,
    state_token: str,
    state: StateToken,
    context: dict[str, Any] | None,
) -> Result[dict[str, Any], EngineError]:
    if context is not None:
        checked = validate_context("continue_workflow", context)
        if isinstance(checked, Failure):
            return Failure(checked.failure())

    def answer(log: SessionLog) -> Result[dict[str, Any], EngineError]:
        resolved = resolve_state(log, state, "rehydrate")
        if isinstance(resolved, Failure):
            return Failure(resolved.failure())
        facts = resolved.unwrap()
        snapshot = load_snapshot(deps, facts.node.data.snapshotRef)
        if isinstance(snapshot, EngineError):
            return Failure(snapshot)
        if snapshot is None:
            return Failure(
                error(
                    "TOKEN_UNKNOWN_NODE",
                    "No execution snapshot was found for this node.",
                    "Use a stateToken returned by WorkRail for an existing node.",
                )
            )
        preferences = dict(facts.run.preferences)
        instance = pending_instance(snapshot)
        complete = isinstance(snapshot.state, CompleteState)
        if instance is None:
            return Success(
                {
                    "kind": "ok",
                    "stateToken": state_token,
                    "isComplete": complete,
                    "pending": None,
                    "preferences": preferences,
                    "nextIntent": "complete",
                    "nextCall": None,
                }
            )
        compiled = cache.get(deps, facts.workflow_hash)
        if isinstance(compiled, Failure):
            return Failure(compiled.failure())
        attempt = deps.mint("attempt")
        session_id, node_id = log.session_id, facts.node_id
        ack = deps.codec.mint_ack(session_id=session_id, node_id=node_id, attempt_id=attempt)
        recovery = recovery_context(log.index, node_id)
        context_at_node = log.index.context_before(facts.run_id, facts.node.eventIndex)
        pending = render_recovery(compiled.unwrap(), instance, recovery, context_at_node)
        return Success(
            {
                "kind": "ok",
                "stateToken": state_token,
                "ackToken": ack,
                "checkpointToken": deps.codec.mint_checkpoint(
                    session_id=session_id, node_id=node_id, attempt_id=attempt
                ),
                "isComplete": complete,
                "pending": pending.to_json(),
                "preferences": preferences,
                "nextIntent": next_intent(pending, complete=complete, rehydrate=True),
                "nextCall": next_call(state_token, ack),
            }
        )

    result = deps.sessions.read(state.session_id, answer)
    if isinstance(result, Failure):
        return Failure(from_store(result.failure(), "rehydrate"))
    return result.unwrap()


def recovery_context(index: SessionIndex, node_id: str) -> RecoveryContext:
    """Branch summary and recaps for one node, each list bounded by the prompt budget.

    Recaps are chosen per edge of the path (the recap written by the attempt that created
    the next node), so a fork never breaks the recap of either branch.
    """
    try:
        children = index.edges_from.get(node_id, [])
        tip = _preferred_descendant_tip(index, node_id) if children else None
        downstream: list[str] = []
        if tip is not None and tip != node_id:
            path = list(reversed(_path_until(index, tip, node_id)))
            downstream = _recaps_along(index, path)
        ancestry_path = list(reversed(index.ancestors(node_id)))
        ancestry = _recaps_along(index, ancestry_path, newest_first_budget=True)
    except ProjectionError as exc:
        return RecoveryContext(unavailable_reason=f"projection failure: {exc}")
    return RecoveryContext(
        child_count=len(children),
        preferred_tip_node_id=tip,
        downstream_recaps=downstream,
        ancestry_recaps=ancestry,
    )


def _preferred_descendant_tip(index: SessionIndex, node_id: str) -> str | None:
    """The tip below `node_id` with the latest activity (spec 70 §2 scoring)."""
    best: tuple[int, int, tuple[int, ...]] | None = None
    best_id: str | None = None
    stack = [node_id]
    while stack:
        current = stack.pop()
        edges = index.edges_from.get(current)
        if not edges:
            score = max(index.last_activity[n] for n in index.ancestors(current))
            key = (score, index.nodes[current].eventIndex, tuple(-ord(c) for c in current) + (1,))
            if best is None or key > best:
                best, best_id = key, current
            continue
        stack.extend(e.data.toNodeId for e in edges)
    return best_id


def _path_until(index: SessionIndex, start: str, stop: str) -> list[str]:
    path: list[str] = []
    for node in index.ancestors(start):
        path.append(node)
        if node == stop:
            break
    return path


def _recaps_along(
    index: SessionIndex, path: list[str], *, newest_first_budget: bool = False
) -> list[str]:
    """Recaps on consecutive edges of `path` (oldest first), within the rehydrate budget;
    when the budget binds, the newest recaps are the ones kept."""
    recaps: list[str] = []
    pairs = list(zip(path, path[1:], strict=False))
    if newest_first_budget:
        pairs.reverse()
    used = 0
    for parent, child in pairs:
        advance = index.advance_into.get(child)
        if advance is None:
            continue
        recap = index.recap_of(parent, advance.data.attemptId)
        if recap is None:
            continue
        used += utf8_len(recap)
        if used > REHYDRATE_PROMPT_MAX_BYTES:
            break
        recaps.append(recap)
    if newest_first_budget:
        recaps.reverse()
    return recaps
