"""checkpoint_workflow (spec 40 §8): record a checkpoint node under the token's node.
Idempotent per checkpoint token: a replay returns the same answer and writes nothing."""

from __future__ import annotations

from typing import Any

from returns.result import Failure, Result, Success

from workrail.core import dedupe
from workrail.core.events import NodeCreated
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error
from workrail.engine.events_builder import PlanBuilder
from workrail.engine.loaded import load_snapshot
from workrail.engine.responses import next_call, pending_instance
from workrail.engine.store_errors import from_store
from workrail.store.ports import AppendPlan, SessionLog, SnapshotPin, WriteTxn
from workrail.tokens import CheckpointToken


def _unknown() -> EngineError:
    return error(
        "TOKEN_UNKNOWN_NODE",
        "No durable node state found for this checkpointToken. Use a checkpointToken "
        "returned by WorkRail.",
        "Use the checkpointToken from the latest WorkRail response, or rehydrate to get one.",
    )


def checkpoint(deps: EngineDeps, token: CheckpointToken) -> Result[dict[str, Any], EngineError]:
    session_id = token.session_id
    pre = deps.sessions.read(session_id, lambda log: _replay(deps, log, token))
    if isinstance(pre, Failure):
        return Failure(from_store(pre.failure(), "checkpoint"))
    answered = pre.unwrap()
    if isinstance(answered, Failure) or answered.unwrap() is not None:
        return answered  # type: ignore[return-value]

    def write(txn: WriteTxn) -> Result[dict[str, Any], Any]:
        again = _replay(deps, txn.log, token)
        if isinstance(again, Failure) or again.unwrap() is not None:
            return again  # type: ignore[return-value]
        node = txn.log.index.nodes[token.node_id]
        checkpoint_id = deps.mint("node")
        appended = txn.append(_plan(deps, txn.log, node, checkpoint_id, token))
        if isinstance(appended, Failure):
            return appended
        return _response(deps, txn.log, node, checkpoint_id, token)

    written = deps.sessions.write(session_id, write)
    if isinstance(written, Failure):
        return Failure(from_store(written.failure(), "checkpoint"))
    return Success(written.unwrap())


def _replay(
    deps: EngineDeps, log: SessionLog, token: CheckpointToken
) -> Result[dict[str, Any] | None, EngineError]:
    """The recorded answer when this checkpoint token was already used, else None."""
    node = log.index.nodes.get(token.node_id)
    if node is None:
        return Failure(_unknown())
    key = dedupe.checkpoint_edge(token.session_id, node.run_id, node.node_id, token.attempt_id)
    if key not in log.index.dedupe:
        return Success(None)
    index = log.index.dedupe.get(f"checkpoint_node:{key}")
    created = log.events[index] if index is not None else None
    checkpoint_id = created.node_id if isinstance(created, NodeCreated) else "unknown"
    return _response(deps, log, node, checkpoint_id, token)


def _plan(
    deps: EngineDeps,
    log: SessionLog,
    node: NodeCreated,
    checkpoint_id: str,
    token: CheckpointToken,
) -> AppendPlan:
    """The checkpoint node under the token's node (same snapshot) and the edge to it."""
    session_id, run, parent = token.session_id, node.run_id, node.node_id
    plan = PlanBuilder(session_id, log.count, deps.mint)
    created = plan.add(
        "node_created",
        dedupe.checkpoint_node(session_id, run, parent, token.attempt_id),
        {
            "nodeKind": "checkpoint",
            "parentNodeId": parent,
            "workflowHash": node.data.workflowHash,
            "snapshotRef": node.data.snapshotRef,
        },
        run_id=run,
        node_id=checkpoint_id,
    )
    plan.add(
        "edge_created",
        dedupe.checkpoint_edge(session_id, run, parent, token.attempt_id),
        {
            "edgeKind": "checkpoint",
            "fromNodeId": parent,
            "toNodeId": checkpoint_id,
            "cause": {"kind": "checkpoint_created", "eventId": created.eventId},
        },
        run_id=run,
    )
    pin = SnapshotPin(node.data.snapshotRef, created.eventIndex, created.eventId)
    return AppendPlan(tuple(plan.events), (pin,))


def _response(
    deps: EngineDeps, log: SessionLog, node: NodeCreated, checkpoint_id: str, token: CheckpointToken
) -> Result[dict[str, Any], EngineError]:
    """`{checkpointNodeId, stateToken}` plus where to go next: the same step, with the ack
    token of the same attempt (re-minted, so it is the one the agent already holds)."""
    session_id = log.session_id
    state_token = deps.codec.mint_state(
        session_id=session_id, node_id=node.node_id, workflow_hash=node.data.workflowHash
    )
    snapshot = load_snapshot(deps, node.data.snapshotRef)
    pending = (
        pending_instance(snapshot)
        if snapshot is not None and not isinstance(snapshot, EngineError)
        else None
    )
    ack = (
        deps.codec.mint_ack(
            session_id=session_id, node_id=node.node_id, attempt_id=token.attempt_id
        )
        if pending is not None
        else None
    )
    body: dict[str, Any] = {
        "checkpointNodeId": checkpoint_id,
        "stateToken": state_token,
        "sessionId": session_id,
    }
    if ack is not None:
        body["continueToken"] = deps.codec.mint_continue(
            session_id=session_id, node_id=node.node_id, attempt_id=token.attempt_id
        )
    return Success(
        {
            **body,
            "nextIntent": "perform_pending_then_continue" if pending is not None else "complete",
            "nextCall": next_call(state_token, ack),
        }
    )
