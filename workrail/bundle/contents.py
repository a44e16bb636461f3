"""What a bundle means, checked before anything is written (pure).

Integrity entries prove only that a bundle was not changed after it was sealed, and anyone
can seal one. So an import also requires that every pinned workflow is stored under its
own hash and compiles, that every node runs its run's workflow, that every snapshot fits
the workflow its node runs (pending step, loop frames, block kind), and that the current
step of every tip can be rendered and decided exactly as rehydrate and advance would —
an agent's missing input (`WorkflowError.needs`) aside, which the agent can supply. A
bundle that fails any of these is refused with `BUNDLE_INVALID_FORMAT` and the path of
the offending value, never stored to fail later with an internal error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.bundle.errors import BundleError, pointer
from workrail.bundle.models import Bundle
from workrail.core.canonical import CanonicalJsonError, canonical_bytes, sha256_digest
from workrail.core.events import NodeCreated
from workrail.core.ids import make_id
from workrail.core.session_index import SessionIndex
from workrail.core.snapshot import (
    BlockedState,
    ExecutionSnapshot,
    RetryableBlock,
    RunningState,
    parse_snapshot,
)
from workrail.workflow.advance import AdvanceRequest, decide_advance
from workrail.workflow.compiler import CompiledWorkflow, compile_pinned
from workrail.workflow.envelopes import parse_pinned
from workrail.workflow.errors import WorkflowError
from workrail.workflow.jsvalues import compile_js_regex
from workrail.workflow.prompts import render_pending

_REEXPORT: Final = "Re-export the session from its source; a bundle must not be edited by hand."
DRY_RUN_ATTEMPT: Final = make_id("attempt", bytes(16))
DRY_RUN_NOTES: Final = "A dry run of the step at import: notes, so output rules run too."


def _fail(message: str, path: str) -> Failure[BundleError]:
    return Failure(BundleError("BUNDLE_INVALID_FORMAT", f"{message}. {_REEXPORT}", path))


def check_contents(
    bundle: Bundle, index: SessionIndex
) -> Result[dict[str, CompiledWorkflow], BundleError]:
    """Every check of the module docstring; the compiled workflows by hash on success."""
    compiled = _compile_all(bundle.session.pinnedWorkflows)
    if isinstance(compiled, Failure):
        return compiled
    workflows = compiled.unwrap()
    snapshots: dict[str, ExecutionSnapshot] = {}
    for i, event in enumerate(bundle.session.events):
        if not isinstance(event, NodeCreated):
            continue
        where = pointer("session", "events", i)
        run = index.runs.get(event.run_id)
        run_hash = run.started.data.workflowHash if run is not None else None
        if event.data.workflowHash != run_hash:
            return _fail(
                f"Node {event.node_id} runs workflow {event.data.workflowHash}, but its run "
                f"was started with {run_hash}",
                pointer(where, "data", "workflowHash"),
            )
        ref = event.data.snapshotRef
        snapshot = snapshots.get(ref)
        if snapshot is None:
            parsed = parse_snapshot(bundle.session.snapshots[ref])
            if isinstance(parsed, Failure):  # checked by the schema pass; kept total here
                return _fail(f"Snapshot {ref} is not valid", pointer("session", "snapshots", ref))
            snapshot = snapshots[ref] = parsed.unwrap()
        problem = _misfit(workflows[event.data.workflowHash], snapshot, event.data.nodeKind)
        if problem is not None:
            return _fail(
                f"Snapshot {ref} of node {event.node_id} does not fit its workflow: {problem}",
                pointer("session", "snapshots", ref),
            )
    for run_id, run_info in index.runs.items():
        compiled_run = workflows[run_info.started.data.workflowHash]
        for tip in index.tips(run_id):
            node = index.nodes[tip]
            dry = _dry_run(compiled_run, snapshots[node.data.snapshotRef], index, run_id, node)
            if dry is not None:
                return _fail(
                    f"The current step of run {run_id} (node {tip}) cannot be continued: {dry}",
                    pointer("session", "events", node.eventIndex),
                )
    return Success(workflows)


def _compile_all(
    table: Mapping[str, dict[str, Any]],
) -> Result[dict[str, CompiledWorkflow], BundleError]:
    workflows: dict[str, CompiledWorkflow] = {}
    for key, value in table.items():
        where = pointer("session", "pinnedWorkflows", key)
        try:
            own_hash = sha256_digest(canonical_bytes(value))
        except CanonicalJsonError as exc:
            return _fail(f"{where} is not canonical JSON: {exc}", where)
        if own_hash != key:
            return _fail(f"{where} holds a workflow whose hash is {own_hash}", where)
        pinned = parse_pinned(value)
        if isinstance(pinned, Failure):
            return _fail(f"{where} is not a pinned workflow: {pinned.failure().message}", where)
        compiled = compile_pinned(pinned.unwrap())
        if isinstance(compiled, Failure):
            return _fail(f"{where} does not compile: {compiled.failure().message}", where)
        for step in compiled.unwrap().steps:
            bad = _bad_regex(getattr(step, "validation_criteria", None))
            if bad is not None:
                return _fail(
                    f"{where}: step '{step.id}' has an invalid regular expression in its "
                    f"validationCriteria ({bad})",
                    where,
                )
        workflows[key] = compiled.unwrap()
    return Success(workflows)


def _bad_regex(criteria: Any) -> str | None:
    """The first regex rule anywhere in `criteria` that cannot compile (behind a condition
    or not: an advance would fail on it as soon as that rule is reached)."""
    stack = [criteria]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if node.get("type") == "regex":
                pattern, flags = node.get("pattern"), node.get("flags", "")
                if not (
                    isinstance(pattern, str)
                    and isinstance(flags, str)
                    and compile_js_regex(pattern, flags) is not None
                ):
                    return f"/{str(pattern)[:60]}/{str(flags)[:10]}"
            stack.extend(v for k, v in node.items() if k in ("and", "or", "not"))
    return None


def _misfit(compiled: CompiledWorkflow, snapshot: ExecutionSnapshot, node_kind: str) -> str | None:
    """Why `snapshot` cannot be the state of a `node_kind` node of `compiled`, or None."""
    state = snapshot.state
    if node_kind == "blocked_attempt" and not isinstance(state, BlockedState):
        return f"a blocked_attempt node holds a {state.kind} state"
    if not isinstance(state, RunningState | BlockedState):
        return None
    for frame in state.loop_stack:
        loop = compiled.loops.get(frame.loop_id)
        if loop is None:
            return f"loop '{frame.loop_id}' is not in the workflow"
        limit = loop.step.loop.max_iterations
        if frame.iteration >= limit or frame.body_index > len(loop.body):
            return (
                f"loop '{frame.loop_id}' is at iteration {frame.iteration}, body index "
                f"{frame.body_index}, outside its bounds (maxIterations {limit}, body "
                f"{len(loop.body)})"
            )
    pending = state.pending_step
    if pending is None:
        if isinstance(state, BlockedState) and isinstance(state.blocked, RetryableBlock):
            return "a retryable block has no pending step"
        return None
    if compiled.step(pending.step_id) is None:
        return f"pending step '{pending.step_id}' is not in the workflow"
    if pending.loop_path:
        innermost = compiled.loops[pending.loop_path[-1].loop_id]
        if pending.step_id not in {s.id for s in innermost.body}:
            return f"step '{pending.step_id}' is not in the body of loop '{innermost.id}'"
    elif pending.step_id not in compiled.selectable_ids:
        return f"step '{pending.step_id}' belongs to a loop but is pending outside it"
    return None


def _dry_run(
    compiled: CompiledWorkflow,
    snapshot: ExecutionSnapshot,
    index: SessionIndex,
    run_id: str,
    node: NodeCreated,
) -> str | None:
    """Render and decide the tip's pending step as rehydrate and advance would; the
    problem, or None when it works (or only needs input the agent can supply)."""
    state = snapshot.state
    if not isinstance(state, RunningState | BlockedState) or state.pending_step is None:
        return None
    if isinstance(state, BlockedState) and not isinstance(state.blocked, RetryableBlock):
        return None  # a terminal block: answered as such, nothing to continue
    context = index.context_before(run_id, node.eventIndex)
    render_pending(compiled, state.pending_step, context)
    for notes in (None, DRY_RUN_NOTES):
        request = AdvanceRequest(
            attempt_id=DRY_RUN_ATTEMPT,
            context=index.run_context(run_id),
            notes_markdown=notes,
            artifacts=(),
            artifact_history=index.loop_control_artifacts,
        )
        decided = decide_advance(compiled, snapshot, request)
        if isinstance(decided, Failure):
            failure: WorkflowError = decided.failure()
            if failure.needs is None:
                return failure.message
    return None
