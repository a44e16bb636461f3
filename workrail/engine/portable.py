"""Portable checkpoint records: a small, data-only restart point for hosts that do not
want to ship a whole session (notes may be private).

A record holds only the format version, the plan fingerprint (`workflowHash`), the workflow
id, the completed step-instance keys, the loop stack, and the sha256 of the run's merged
context at that node — no notes, no tokens, no context values. It is data, not authority:
the host must keep it in storage it trusts. Resuming recompiles the workflow from the
current sources and fails closed unless both fingerprints match.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from returns.result import Failure, Result, Success

from workrail.core.canonical import CanonicalJsonError, canonical_bytes, canonical_digest
from workrail.core.events import ArtifactRefPayload, NodeOutputAppended
from workrail.core.snapshot import (
    BlockedState,
    CompletedKeys,
    CompleteState,
    LoopFrame,
    RunningState,
    sort_completed,
)
from workrail.engine.catalog import CatalogEntry
from workrail.engine.compiled import CompiledCache
from workrail.engine.context import validate_context
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error
from workrail.engine.loaded import load_snapshot
from workrail.engine.start import RunSource, create_session, pin_and_compile
from workrail.engine.store_errors import from_store
from workrail.store.ports import SessionLog
from workrail.workflow.contracts import LoopControlArtifact, is_loop_control, parse_loop_control
from workrail.workflow.envelopes import PinnedWorkflow, pin_workflow
from workrail.workflow.interpreter import InterpreterState, select_next

FORMAT: Final = "workrail.checkpoint.v1"
MAX_RECORD_BYTES: Final = 16 * 1024
MAX_COMPLETED: Final = 1024
_KEY_PATTERN: Final = r"^[a-z0-9_-]+(@[0-9]+(/[a-z0-9_-]+@[0-9]+)*::[a-z0-9_-]+)?$"


class RecordLoopFrame(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, strict=True)

    loopId: Annotated[str, Field(pattern=r"^[a-z0-9_-]+$", max_length=128)]
    iteration: Annotated[int, Field(ge=0, le=1_000_000)]
    bodyIndex: Annotated[int, Field(ge=0, le=10_000)]


class CheckpointRecord(BaseModel):
    """The record's closed schema: unknown fields and malformed keys are rejected."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, strict=True)

    format: Literal["workrail.checkpoint.v1"]
    workflowId: Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_.-]+$")]
    workflowHash: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
    completed: Annotated[
        list[Annotated[str, Field(pattern=_KEY_PATTERN, max_length=512)]],
        Field(max_length=MAX_COMPLETED),
    ]
    loopStack: Annotated[list[RecordLoopFrame], Field(max_length=32)]
    # The newest continue/stop decision per artifact-driven loop: a while/until loop driven
    # by wr.loop_control artifacts cannot continue without it.
    loopDecisions: Annotated[
        dict[
            Annotated[str, Field(pattern=r"^[a-z0-9_-]+$", max_length=64)],
            Literal["continue", "stop"],
        ],
        Field(max_length=32),
    ] = {}
    contextDigest: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]

    @field_validator("completed")
    @classmethod
    def _sorted_unique(cls, values: list[str]) -> list[str]:
        if values != sort_completed(values):
            raise ValueError("completed must be unique and in collation order")
        return values

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _invalid(message: str) -> EngineError:
    return error(
        "CHECKPOINT_RECORD_INVALID",
        f"Checkpoint record rejected: {message}",
        "Use a record produced by `workrail checkpoint export`, unmodified.",
    )


def parse_record(raw: bytes) -> Result[CheckpointRecord, EngineError]:
    """Strict, bounded parsing: size first, then JSON, then the closed schema."""
    if len(raw) > MAX_RECORD_BYTES:
        return Failure(_invalid(f"{len(raw)} bytes is over the {MAX_RECORD_BYTES}-byte limit"))
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return Failure(_invalid(f"not JSON: {exc}"))
    if isinstance(value, dict) and value.get("format") not in (None, FORMAT):
        return Failure(_invalid(f"unsupported format {value.get('format')!r}; expected {FORMAT}"))
    try:
        return Success(CheckpointRecord.model_validate(value))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return Failure(_invalid(f"{where}: {first['msg']}"))


def export_record(
    deps: EngineDeps, session_id: str, node_id: str
) -> Result[CheckpointRecord, EngineError]:
    """The record for one node of a session (read-only)."""

    def build(log: SessionLog) -> Result[CheckpointRecord, EngineError]:
        node = log.index.nodes.get(node_id)
        if node is None:
            return Failure(
                error(
                    "TOKEN_UNKNOWN_NODE",
                    f"No node {node_id} in session {session_id}.",
                    "Check the id.",
                )
            )
        run = log.index.runs[node.run_id]
        snapshot = load_snapshot(deps, node.data.snapshotRef)
        if snapshot is None or isinstance(snapshot, EngineError):
            return Failure(error("INTERNAL_ERROR", "The node's execution snapshot is unreadable."))
        state = snapshot.state
        if isinstance(state, CompleteState):
            return Failure(
                error("PRECONDITION_FAILED", "The run is complete; there is nothing to resume.")
            )
        if not isinstance(state, RunningState | BlockedState):
            return Failure(error("INTERNAL_ERROR", "The node has no resumable state."))
        context = log.index.context_before(node.run_id, node.eventIndex)
        record = CheckpointRecord(
            format=FORMAT,
            workflowId=run.started.data.workflowId,
            workflowHash=run.started.data.workflowHash,
            completed=list(state.completed.values),
            loopStack=[
                RecordLoopFrame(loopId=f.loop_id, iteration=f.iteration, bodyIndex=f.body_index)
                for f in state.loop_stack
            ],
            loopDecisions=_loop_decisions(log, node.eventIndex),
            contextDigest=canonical_digest(context),
        )
        if len(canonical_bytes(record.to_json())) > MAX_RECORD_BYTES:
            return Failure(error("PRECONDITION_FAILED", "The record would exceed 16 KiB."))
        return Success(record)

    result = deps.sessions.read(session_id, build)
    if isinstance(result, Failure):
        return Failure(from_store(result.failure(), "rehydrate"))
    return result.unwrap()


def _loop_decisions(log: SessionLog, before: int) -> dict[str, Literal["continue", "stop"]]:
    """The newest valid loop-control decision per loop among artifacts recorded before
    event `before` (an export-time scan; exports are rare)."""
    decisions: dict[str, Literal["continue", "stop"]] = {}
    for event in log.events[:before]:
        if not isinstance(event, NodeOutputAppended):
            continue
        payload = event.data.payload
        if isinstance(payload, ArtifactRefPayload) and is_loop_control(payload.content):
            parsed = parse_loop_control(payload.content)
            if isinstance(parsed, LoopControlArtifact):
                decisions[parsed.loopId] = parsed.decision
    return dict(sorted(decisions.items())[:32])


def resume_record(
    deps: EngineDeps, cache: CompiledCache, record: CheckpointRecord, context: Any
) -> Result[dict[str, Any], EngineError]:
    """Start a new session at the record's point, only if plan and context both match.

    The first unfinished step is selected again, so an interrupted step is never marked
    done. Writes nothing on any mismatch.
    """
    checked = validate_context("checkpoint resume", context)
    if isinstance(checked, Failure):
        return Failure(checked.failure())
    matched = _matching_plan(deps, record)
    if isinstance(matched, Failure):
        return Failure(matched.failure())
    entry, pinned = matched.unwrap()
    mismatch = _context_mismatch(record, context)
    if mismatch is not None:
        return Failure(mismatch)
    compiled = pin_and_compile(deps, cache, pinned)
    if isinstance(compiled, Failure):
        return Failure(compiled.failure())
    state, history = _record_state(record)
    selection = select_next(compiled.unwrap(), state, context, history)
    if isinstance(selection, Failure):
        return Failure(
            error(
                "CHECKPOINT_RECORD_INVALID",
                f"The record's state does not fit the workflow: {selection.failure().message}",
                "Export a new record from the session.",
            )
        )
    chosen = selection.unwrap()
    if chosen.is_complete or chosen.state.pending is None:
        return Failure(error("PRECONDITION_FAILED", "Nothing is left to do at this checkpoint."))
    return create_session(
        deps,
        compiled.unwrap(),
        RunSource.of(entry),
        chosen.snapshot(),
        chosen.state.pending,
        context,
    )


def _matching_plan(
    deps: EngineDeps, record: CheckpointRecord
) -> Result[tuple[CatalogEntry, PinnedWorkflow], EngineError]:
    """The record's workflow from the current sources, pinned, when it is still the
    very plan the record was exported from (the same workflowHash)."""
    entry = deps.catalog.get(record.workflowId)
    if entry is None or entry.definition is None:
        return Failure(
            error(
                "CHECKPOINT_PLAN_MISMATCH",
                f"Workflow {record.workflowId} is not available from the current sources.",
                "Install the same workflow version the record was exported from.",
            )
        )
    pinned = pin_workflow(entry.definition)
    if pinned.workflow_hash() != record.workflowHash:
        return Failure(
            error(
                "CHECKPOINT_PLAN_MISMATCH",
                f"The current definition of {record.workflowId} hashes to "
                f"{pinned.workflow_hash()}, not the record's {record.workflowHash}.",
                "Resume with the exact workflow version the record was exported from.",
            )
        )
    return Success((entry, pinned))


def _context_mismatch(record: CheckpointRecord, context: Any) -> EngineError | None:
    """Why the supplied context is not the one the record was taken with, if it is not."""
    try:
        digest = canonical_digest(context)
    except CanonicalJsonError as exc:
        return _invalid(str(exc))
    if digest != record.contextDigest:
        return error(
            "CHECKPOINT_CONTEXT_MISMATCH",
            "The supplied context does not match the record's context digest.",
            "Supply the run context exactly as it was at the checkpoint.",
        )
    return None


def _record_state(record: CheckpointRecord) -> tuple[InterpreterState, list[dict[str, Any]]]:
    """The interpreter state the record describes, and its loop decisions as the
    loop-control artifact history the interpreter reads."""
    state = InterpreterState(
        completed=CompletedKeys(record.completed),
        loop_stack=tuple(
            LoopFrame(loop_id=f.loopId, iteration=f.iteration, body_index=f.bodyIndex)
            for f in record.loopStack
        ),
    )
    history = [
        {"kind": "wr.loop_control", "loopId": loop_id, "decision": decision}
        for loop_id, decision in record.loopDecisions.items()
    ]
    return state, history
