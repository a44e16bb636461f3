"""start_workflow (spec 40 §6): pin the workflow, create the session, run and root node in
one append plan, and hand back the first step with its tokens."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from returns.result import Failure, Result, Success

from workrail.core import dedupe
from workrail.core.events import DomainEvent
from workrail.core.lifecycle import SessionLifecycle
from workrail.core.snapshot import ExecutionSnapshot, StepInstance
from workrail.engine.catalog import CatalogEntry
from workrail.engine.compiled import CompiledCache, as_result
from workrail.engine.context import validate_context
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error, workflow_unavailable
from workrail.engine.events_builder import PlanBuilder
from workrail.engine.needed import needed_input_error
from workrail.engine.responses import next_call, next_intent, render
from workrail.engine.store_errors import from_store
from workrail.engine.workspace import WorkspaceFacts, observations
from workrail.store.ports import AppendPlan, SnapshotPin
from workrail.workflow import interpreter
from workrail.workflow.compiler import CompiledWorkflow
from workrail.workflow.envelopes import PinnedWorkflow, pin_workflow
from workrail.workflow.errors import WorkflowError
from workrail.workflow.metadata import references_field

DEFAULT_PREFERENCES = {"autonomy": "guided", "riskPolicy": "conservative"}

log = logging.getLogger("workrail.engine")


def remember_workspace(deps: EngineDeps, session_id: str, workspace: WorkspaceFacts) -> None:
    """Best effort: the session is already durable; a lost path only weakens search."""
    recorded = deps.lifecycle.put(session_id, SessionLifecycle(workspace_path=workspace.path))
    if isinstance(recorded, Failure):
        log.warning("workspace of %s not recorded: %s", session_id, recorded.failure().message)


def start_workflow(
    deps: EngineDeps,
    compiled_cache: CompiledCache,
    workflow_id: str,
    context: dict[str, Any] | None,
    workspace_path: str | None = None,
) -> Result[dict[str, Any], EngineError]:
    bad_input = _check_input(workspace_path, context)
    if bad_input is not None:
        return Failure(bad_input)
    entry = deps.catalog.get(workflow_id)
    if entry is None or entry.definition is None:
        return Failure(workflow_unavailable(workflow_id, entry, deps.catalog))
    if not entry.definition.get("steps"):
        return Failure(error("PRECONDITION_FAILED", "Workflow has no steps and cannot be started."))
    compiled = pin_and_compile(deps, compiled_cache, pin_workflow(entry.definition))
    if isinstance(compiled, Failure):
        return Failure(compiled.failure())
    selection = interpreter.start(compiled.unwrap(), context or {})
    if isinstance(selection, Failure):
        return Failure(_not_startable(selection.failure(), workflow_id, context, workspace_path))
    chosen = selection.unwrap()
    instance = chosen.state.pending
    assert instance is not None  # interpreter.start guarantees a pending step
    return create_session(
        deps,
        compiled.unwrap(),
        RunSource.of(entry),
        chosen.snapshot(),
        instance,
        context,
        workspace=deps.probe.probe(workspace_path),
    )


def _check_input(workspace_path: str | None, context: dict[str, Any] | None) -> EngineError | None:
    """The call's own arguments, refused before any workflow is looked up."""
    if workspace_path is not None and "\x00" in workspace_path:
        return error(
            "VALIDATION_ERROR",
            "workspacePath contains a NUL character (\\x00); no workspace path can.",
            "Send the workspace's absolute path as the file system spells it, or leave it out.",
            field="workspacePath",
        )
    if context is not None:
        checked = validate_context("start_workflow", context)
        if isinstance(checked, Failure):
            problem: EngineError = checked.failure()
            return problem
    return None


def _not_startable(
    failure: WorkflowError,
    workflow_id: str,
    context: dict[str, Any] | None,
    workspace_path: str | None,
) -> EngineError:
    """Why the first step cannot be chosen: input the workflow needs (with this call
    again, ready to fill in), or a definition that cannot start."""
    if failure.needs is not None:
        params: dict[str, Any] = {"workflowId": workflow_id}
        if context:
            params["context"] = dict(context)
        if workspace_path is not None:
            params["workspacePath"] = workspace_path
        return needed_input_error(failure, {"tool": "start_workflow", "params": params})
    return error(
        "PRECONDITION_FAILED",
        f"Workflow cannot be started: {failure.message}",
        "Fix the workflow definition (workrail validate) or supply the context it needs.",
    )


def pin_and_compile(
    deps: EngineDeps, compiled_cache: CompiledCache, pinned: PinnedWorkflow
) -> Result[CompiledWorkflow, EngineError]:
    """Store the pinned workflow a new run records (content-addressed, so once) and
    compile it through the cache."""
    stored = deps.pinned.put(pinned.to_json())
    if isinstance(stored, Failure):
        return Failure(from_store(stored.failure(), "start"))
    return as_result(compiled_cache.of_pinned(stored.unwrap(), pinned), stored.unwrap())


@dataclass(frozen=True)
class RunSource:
    workflow_id: str
    source_kind: str
    source_ref: str

    @classmethod
    def of(cls, entry: CatalogEntry) -> RunSource:
        """Where the catalog found the workflow, as `run_started` records it."""
        return cls(entry.workflow_id, entry.source_kind, entry.source_ref)


def create_session(
    deps: EngineDeps,
    compiled: CompiledWorkflow,
    source: RunSource,
    snapshot: ExecutionSnapshot,
    instance: StepInstance,
    context: dict[str, Any] | None,
    *,
    workspace: WorkspaceFacts | None = None,
) -> Result[dict[str, Any], EngineError]:
    """Write a new session whose root node holds `snapshot`, and answer like start does.

    Shared by start_workflow and the resume of a portable checkpoint record. Workspace
    facts become observation events after the other start events (spec 20 §2) and the
    workspace path a lifecycle record beside the log.
    """
    stored = deps.snapshots.put(snapshot.to_json())
    if isinstance(stored, Failure):
        return Failure(from_store(stored.failure(), "start"))
    snapshot_ref = stored.unwrap()
    session_id, run_id, root = deps.mint("sess"), deps.mint("run"), deps.mint("node")
    plan = PlanBuilder(session_id, 0, deps.mint)
    node = _add_root(plan, run_id, root, compiled.workflow_hash, source, snapshot_ref)
    _add_run_settings(deps, plan, run_id, root, context)
    if workspace is not None:
        for kind, key, data in observations(session_id, workspace):
            plan.add(kind, key, data)
    pin = SnapshotPin(snapshot_ref, node.eventIndex, node.eventId)
    append_plan = AppendPlan(tuple(plan.events), (pin,))
    written = deps.sessions.write(session_id, lambda txn: txn.append(append_plan))
    if isinstance(written, Failure):
        return Failure(from_store(written.failure(), "start"))
    if workspace is not None:
        remember_workspace(deps, session_id, workspace)
    return Success(_first_step(deps, compiled, session_id, root, instance, context))


def _add_root(
    plan: PlanBuilder,
    run_id: str,
    root: str,
    workflow_hash: str,
    source: RunSource,
    snapshot_ref: str,
) -> DomainEvent:
    """The session, its run and the run's root node; returns the root's node_created."""
    session_id = plan.session_id
    plan.add("session_created", dedupe.session_created(session_id), {})
    plan.add(
        "run_started",
        dedupe.run_started(session_id, run_id),
        {
            "workflowId": source.workflow_id,
            "workflowHash": workflow_hash,
            "workflowSourceKind": source.source_kind,
            "workflowSourceRef": source.source_ref,
        },
        run_id=run_id,
    )
    return plan.add(
        "node_created",
        dedupe.node_created(session_id, run_id, root),
        {
            "nodeKind": "step",
            "parentNodeId": None,
            "workflowHash": workflow_hash,
            "snapshotRef": snapshot_ref,
        },
        run_id=run_id,
        node_id=root,
    )


def _add_run_settings(
    deps: EngineDeps,
    plan: PlanBuilder,
    run_id: str,
    root: str,
    context: dict[str, Any] | None,
) -> None:
    """The run's default preferences, then the initial context when the call sent one."""
    session_id = plan.session_id
    change_id = deps.mint("evt")
    defaults = [{"key": key, "value": value} for key, value in DEFAULT_PREFERENCES.items()]
    plan.add(
        "preferences_changed",
        dedupe.preferences_changed(session_id, run_id, root, change_id),
        {
            "changeId": change_id,
            "source": "system",
            "delta": defaults,
            "effective": dict(DEFAULT_PREFERENCES),
        },
        run_id=run_id,
        node_id=root,
    )
    if context is not None:
        context_id = deps.mint("evt")
        plan.add(
            "context_set",
            dedupe.context_set(session_id, run_id, context_id),
            {"contextId": context_id, "context": context, "source": "initial"},
            run_id=run_id,
        )


def _first_step(
    deps: EngineDeps,
    compiled: CompiledWorkflow,
    session_id: str,
    root: str,
    instance: StepInstance,
    context: dict[str, Any] | None,
) -> dict[str, Any]:
    """The answer of a new session: its first step, with the tokens of a fresh attempt."""
    attempt = deps.mint("attempt")
    state_token = deps.codec.mint_state(
        session_id=session_id, node_id=root, workflow_hash=compiled.workflow_hash
    )
    ack = deps.codec.mint_ack(session_id=session_id, node_id=root, attempt_id=attempt)
    pending = render(compiled, instance, context or {})
    return {
        "stateToken": state_token,
        "ackToken": ack,
        "checkpointToken": deps.codec.mint_checkpoint(
            session_id=session_id, node_id=root, attempt_id=attempt
        ),
        "continueToken": deps.codec.mint_continue(
            session_id=session_id, node_id=root, attempt_id=attempt
        ),
        "isComplete": False,
        "pending": pending.to_json(),
        **references_field(compiled.pinned.definition),
        "preferences": dict(DEFAULT_PREFERENCES),
        "sessionId": session_id,
        "nextIntent": next_intent(pending, complete=False),
        "nextCall": next_call(state_token, ack),
    }
