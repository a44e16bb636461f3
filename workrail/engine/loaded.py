"""Resolving a verified token against the log: the node, its run, its snapshot and the
pinned, compiled workflow — each failure mapped to the spec's code and message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from returns.result import Failure, Result, Success

from workrail.core.events import NodeCreated
from workrail.core.session_index import RunInfo
from workrail.core.snapshot import BlockedState, ExecutionSnapshot, RunningState, parse_snapshot
from workrail.core.weighted_lru import WeightedLru
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error
from workrail.engine.store_errors import from_store
from workrail.store.ports import SessionLog

Purpose = Literal["rehydrate", "advance"]


class NodeAddress(Protocol):
    """What names a node: a stateToken, or the state half of a continueToken."""

    @property
    def session_id(self) -> str: ...

    @property
    def node_id(self) -> str: ...

    def matches_workflow_hash(self, workflow_hash: str) -> bool: ...


@dataclass(frozen=True)
class NodeFacts:
    node: NodeCreated
    run: RunInfo

    @property
    def node_id(self) -> str:
        return self.node.node_id

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def workflow_hash(self) -> str:
        return self.run.started.data.workflowHash


def resolve_state(
    log: SessionLog, token: NodeAddress, purpose: Purpose
) -> Result[NodeFacts, EngineError]:
    """Spec 30 §4 durable checks: node, run, and the workflow-hash ref against both."""
    noun = "stateToken" if purpose == "rehydrate" else "token"
    node = log.index.nodes.get(token.node_id)
    if node is None:
        return Failure(
            _unknown(
                f"node state was found for this {noun} (missing node_created)",
                "Use a stateToken returned by WorkRail for an existing node.",
            )
        )
    run = log.index.runs.get(node.run_id)
    if run is None:
        return Failure(
            _unknown(
                f"run state was found for this {noun} (missing run_started)",
                "Use start_workflow to mint a new run, or use a stateToken returned by "
                "WorkRail for an existing run.",
            )
        )
    if not token.matches_workflow_hash(run.started.data.workflowHash):
        return Failure(_hash_mismatch("run"))
    if not token.matches_workflow_hash(node.data.workflowHash):
        return Failure(_hash_mismatch("node"))
    return Success(NodeFacts(node, run))


def _unknown(missing: str, suggestion: str) -> EngineError:
    return error("TOKEN_UNKNOWN_NODE", f"No durable {missing}.", suggestion)


def _hash_mismatch(of: str) -> EngineError:
    """The token was minted for another workflow version than the one the log recorded."""
    return error(
        "PRECONDITION_FAILED",
        f"workflowHash mismatch for this {of}.",
        f"Use the stateToken returned by WorkRail for this {of}.",
    )


class _ParsedSnapshots(WeightedLru[ExecutionSnapshot]):
    """Parsed snapshots by content ref (an entry can never go stale), so the response to
    an advance, and the next advance from it, neither read nor re-validate it again.
    Weighted by the completed keys each holds; only the newest snapshots are wanted (each
    session advances from its tip)."""

    MAX_ENTRIES = 512
    MAX_KEYS = 200_000

    def __init__(self) -> None:
        super().__init__(max_weight=self.MAX_KEYS, max_entries=self.MAX_ENTRIES)

    def keep(self, ref: str, snapshot: ExecutionSnapshot) -> None:
        self.put(ref, snapshot, 1 + _completed_count(snapshot))


def _completed_count(snapshot: ExecutionSnapshot) -> int:
    state = snapshot.state
    return len(state.completed.values) if isinstance(state, RunningState | BlockedState) else 0


_parsed = _ParsedSnapshots()


def remember_snapshot(ref: str, snapshot: ExecutionSnapshot) -> None:
    """Keep a parsed snapshot by its content ref for the next reads of it."""
    _parsed.keep(ref, snapshot)


def load_snapshot(deps: EngineDeps, ref: str) -> ExecutionSnapshot | None | EngineError:
    """The node's execution snapshot; None when absent; an error when unreadable."""
    known = _parsed.get(ref)
    if known is not None:
        return known
    got = deps.snapshots.get(ref)
    if isinstance(got, Failure):  # the store failed (retryable or not); None is "missing"
        return from_store(got.failure(), "rehydrate")
    raw = got.unwrap()
    if raw is None:
        return None
    parsed = parse_snapshot(raw)
    if isinstance(parsed, Failure):
        return error("INTERNAL_ERROR", f"Snapshot store error: {parsed.failure()}")
    remember_snapshot(ref, parsed.unwrap())
    return parsed.unwrap()
