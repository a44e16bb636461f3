"""The interpreter (50-workflows §6): from the current state, pick the next step instance.

Pure: the same compiled workflow, state, context and artifacts always give the same
selection and trace. Expected failures (a forEach over a missing list, a loop without its
control artifact, an inconsistent state) are WorkflowError values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.core.session_index import LOOP_CONTROL_KIND
from workrail.core.snapshot import (
    BlockedState,
    CompletedKeys,
    CompleteState,
    ExecutionSnapshot,
    InitState,
    LoopFrame,
    LoopPathFrame,
    RetryableBlock,
    RunningState,
    StepInstance,
    complete_snapshot,
    running_snapshot,
    step_instance_key,
)
from workrail.workflow.compiler import CompiledLoop, CompiledWorkflow
from workrail.workflow.conditions import evaluate_condition, is_missing, non_numeric_operands
from workrail.workflow.contracts import is_loop_control, parse_loop_control
from workrail.workflow.definition import ArtifactContractSource, LoopStep
from workrail.workflow.errors import UNSET, NeededInput, WorkflowError, needed_context
from workrail.workflow.jsvalues import is_number
from workrail.workflow.outcomes import (
    DecisionTraceEntry,
    IterationRef,
    LoopIdRef,
    StepIdRef,
)

MAX_SELECTION_ROUNDS: Final = 10_000
DEFAULT_ITERATION_VAR: Final = "currentIteration"
DEFAULT_ITEM_VAR: Final = "currentItem"
DEFAULT_INDEX_VAR: Final = "currentIndex"


_NO_KEYS: Final = CompletedKeys()


@dataclass(frozen=True, slots=True)
class InterpreterState:
    """`completed` keys, the loop stack and the pending step instance (if any).

    `completed` may be given as any set of keys; it is held as a CompletedKeys, so every
    advance adds to it in O(log n) and its snapshot is built without re-sorting.
    """

    completed: CompletedKeys = _NO_KEYS
    loop_stack: tuple[LoopFrame, ...] = ()
    pending: StepInstance | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.completed, CompletedKeys):
            object.__setattr__(self, "completed", CompletedKeys(self.completed))

    def to_snapshot(self) -> ExecutionSnapshot:
        return running_snapshot(self.completed, self.loop_stack, self.pending)


@dataclass(frozen=True, slots=True)
class Selection:
    """The outcome of selecting: a new state with a pending step, or completion."""

    state: InterpreterState
    trace: tuple[DecisionTraceEntry, ...] = field(default=())

    @property
    def is_complete(self) -> bool:
        return self.state.pending is None

    def snapshot(self) -> ExecutionSnapshot:
        return complete_snapshot() if self.is_complete else self.state.to_snapshot()


def state_from_snapshot(snapshot: ExecutionSnapshot) -> Result[InterpreterState, WorkflowError]:
    """The interpreter state of a node that can be advanced (running or retryable block)."""
    state = snapshot.state
    match state:
        case RunningState() | BlockedState():
            if isinstance(state, BlockedState) and not isinstance(state.blocked, RetryableBlock):
                return Failure(
                    WorkflowError(
                        "PENDING_MISMATCH", "a terminal block cannot be retried; start a new run"
                    )
                )
            return Success(
                InterpreterState(
                    completed=state.completed.keys(),
                    loop_stack=tuple(state.loop_stack),
                    pending=state.pending_step,
                )
            )
        case CompleteState() | InitState():
            return Failure(
                WorkflowError("NO_PENDING_STEP", "the run is complete; there is no step to advance")
            )


def complete_pending(state: InterpreterState) -> Result[InterpreterState, WorkflowError]:
    """Record the pending step instance as completed and clear `pending`."""
    if state.pending is None:
        return Failure(WorkflowError("NO_PENDING_STEP", "no step is pending at this node"))
    return Success(
        InterpreterState(
            completed=state.completed.with_key(state.pending.key),
            loop_stack=state.loop_stack,
            pending=None,
        )
    )


def select_next(
    compiled: CompiledWorkflow,
    state: InterpreterState,
    context: Mapping[str, Any],
    artifacts: Sequence[Any] = (),
    fresh_from: int | None = None,
) -> Result[Selection, WorkflowError]:
    """Choose the next step instance, or completion.

    `artifacts` are all artifact values of the session in event order, this call's last;
    `fresh_from` is where this call's begin (None: unknown, all count as fresh).
    """
    return _Selector(compiled, context, artifacts, fresh_from).run(state)


def start(
    compiled: CompiledWorkflow, context: Mapping[str, Any]
) -> Result[Selection, WorkflowError]:
    """The first pending step of a new run, chosen by the normal selection rules.

    Deviation (90-quirks A12): the reference pins `steps[0]` unconditionally; selecting
    normally makes a conditional or loop first step behave like any other step and gives
    the same snapshot for workflows whose first step is a plain unconditional step.
    """
    return select_next(compiled, InterpreterState(), context).bind(_require_pending)


def _require_pending(selection: Selection) -> Result[Selection, WorkflowError]:
    if selection.is_complete:
        return Failure(
            WorkflowError(
                "NO_ELIGIBLE_STEP",
                "no step is eligible under the given context; check the runConditions of the "
                "workflow or start it with the context they expect",
            )
        )
    return Success(selection)


def projected_context(
    loop: CompiledLoop, iteration: int, context: Mapping[str, Any]
) -> dict[str, Any]:
    """The merged context plus the loop variables of `iteration` (0-based)."""
    config = loop.step.loop
    projected = dict(context)
    projected[config.iteration_var or DEFAULT_ITERATION_VAR] = iteration + 1
    if config.type == "forEach":
        items = context.get(config.items) if config.items is not None else None
        if isinstance(items, list) and iteration < len(items):
            projected[config.item_var or DEFAULT_ITEM_VAR] = items[iteration]
        projected[config.index_var or DEFAULT_INDEX_VAR] = iteration
    return projected


class _Selector:
    """One selection run; accumulates the decision trace as it goes."""

    def __init__(
        self,
        compiled: CompiledWorkflow,
        context: Mapping[str, Any],
        artifacts: Sequence[Any],
        fresh_from: int | None = None,
    ) -> None:
        self._wf = compiled
        self._context = context
        self._artifacts = artifacts
        self._fresh: Sequence[Any] = artifacts if fresh_from is None else artifacts[fresh_from:]
        self._trace: list[DecisionTraceEntry] = []
        self._completed: CompletedKeys = _NO_KEYS

    def run(self, state: InterpreterState) -> Result[Selection, WorkflowError]:
        self._completed = state.completed
        stack = list(state.loop_stack)
        steps, ids = self._wf.selectable, self._wf.selectable_ids
        for _ in range(MAX_SELECTION_ROUNDS):
            if stack:
                chosen = self._drive_top(stack)
                if isinstance(chosen, WorkflowError):
                    return Failure(chosen)
                if chosen is not None:
                    return Success(self._done(stack, chosen))
                continue
            pushed = False
            completed = self._completed
            # Steps before the first one not completed cannot be chosen: skip them without
            # looking (remembered across advances, so a long run does not rescan its past).
            for i in range(completed.first_missing(ids), len(steps)):
                step = steps[i]
                if step.id in completed:
                    continue
                if not evaluate_condition(step.run_condition, self._context):
                    continue
                if isinstance(step, LoopStep):
                    stack.append(LoopFrame(loop_id=step.id, iteration=0, body_index=0))
                    pushed = True
                    break
                return Success(self._done(stack, StepInstance(step_id=step.id)))
            if not pushed:
                return Success(Selection(InterpreterState(completed), tuple(self._trace)))
        return Failure(
            WorkflowError("SELECTION_DID_NOT_SETTLE", "step selection did not settle; check loops")
        )

    def _done(self, stack: list[LoopFrame], chosen: StepInstance) -> Selection:
        self._trace.append(
            DecisionTraceEntry(
                kind="selected_next_step",
                summary=f"Selected next step '{chosen.step_id}'.",
                refs=[StepIdRef(step_id=chosen.step_id)],
            )
        )
        return Selection(
            InterpreterState(self._completed, tuple(stack), chosen), tuple(self._trace)
        )

    def _drive_top(self, stack: list[LoopFrame]) -> StepInstance | None | WorkflowError:
        frame = stack[-1]
        loop = self._wf.loops.get(frame.loop_id)
        if loop is None:
            return WorkflowError("UNKNOWN_STEP", f"loop '{frame.loop_id}' is not in the workflow")
        limit = loop.step.loop.max_iterations
        n = len(loop.body)
        if (
            not float(limit).is_integer()
            or n < 1
            or frame.iteration >= limit
            or frame.body_index > n
        ):
            return WorkflowError(
                "INVALID_LOOP_STATE",
                f"loop '{loop.id}' frame (iteration {frame.iteration}, body index "
                f"{frame.body_index}) is outside its bounds (maxIterations {limit}, body {n})",
            )
        iteration, start_index = frame.iteration, frame.body_index
        enter = self._should_enter(loop, iteration)
        if isinstance(enter, WorkflowError):
            return enter
        if not enter:
            self._exit(loop, stack, iteration)
            return None
        if iteration == 0:
            self._entered(loop, 0)
        outer = [LoopPathFrame(loop_id=f.loop_id, iteration=f.iteration) for f in stack[:-1]]
        while True:
            path = [*outer, LoopPathFrame(loop_id=loop.id, iteration=iteration)]
            scoped = projected_context(loop, iteration, self._context)
            completed = self._completed
            for j in range(start_index, n):
                body_step = loop.body[j]
                if step_instance_key(body_step.id, path) in completed:
                    continue
                if not evaluate_condition(body_step.run_condition, scoped):
                    continue
                stack[-1] = LoopFrame(loop_id=loop.id, iteration=iteration, body_index=j)
                return StepInstance(step_id=body_step.id, loop_path=path)
            following = iteration + 1
            if following >= limit:
                self._exit(loop, stack, following)
                return None
            enter = self._should_enter(loop, following)
            if isinstance(enter, WorkflowError):
                return enter
            if not enter:
                self._exit(loop, stack, following)
                return None
            iteration, start_index = following, 0
            stack[-1] = LoopFrame(loop_id=loop.id, iteration=iteration, body_index=0)
            self._entered(loop, iteration)

    def _entered(self, loop: CompiledLoop, iteration: int) -> None:
        self._trace.append(
            DecisionTraceEntry(
                kind="entered_loop",
                summary=f"Entered loop '{loop.id}' at iteration {iteration}.",
                refs=[LoopIdRef(loop_id=loop.id), IterationRef(value=iteration)],
            )
        )

    def _exit(self, loop: CompiledLoop, stack: list[LoopFrame], ran: int) -> None:
        stack.pop()
        self._completed = self._completed.with_key(loop.id)
        self._trace.append(
            DecisionTraceEntry(
                kind="exited_loop",
                summary=f"Exited loop '{loop.id}': Condition no longer met after {ran} "
                "iteration(s).",
                refs=[LoopIdRef(loop_id=loop.id)],
            )
        )

    def _should_enter(self, loop: CompiledLoop, iteration: int) -> bool | WorkflowError:
        config = loop.step.loop
        if config.type == "for":
            return self._for_enters(loop, iteration)
        if config.type == "forEach":
            return self._for_each_enters(loop, iteration)
        source = loop.condition_source
        if source is None:
            return WorkflowError(
                "LOOP_CONDITION_UNAVAILABLE", f"loop '{loop.id}' has no condition source"
            )
        if isinstance(source, ArtifactContractSource):
            enter = self._artifact_enters(loop, iteration, source)
            label = "artifact"
        else:
            enter = self._condition_enters(loop, iteration, source.condition)
            label = "context" if loop.condition_origin == "explicit" else "legacy"
        if isinstance(enter, WorkflowError):
            return enter
        verdict = "continue" if enter else "exit"
        self._trace.append(
            DecisionTraceEntry(
                kind="evaluated_condition",
                summary=f"Evaluated {label} condition for loop '{loop.id}' at iteration "
                f"{iteration}: {verdict}.",
                refs=[LoopIdRef(loop_id=loop.id), IterationRef(value=iteration)],
            )
        )
        return enter

    def _for_enters(self, loop: CompiledLoop, iteration: int) -> bool | WorkflowError:
        """A `for` loop runs while the iteration is below its count (a number or a context key)."""
        count: Any = loop.step.loop.count
        if isinstance(count, str):
            key = count
            count = self._context.get(key, UNSET)
            if not is_number(count):
                needs = needed_context(
                    key,
                    "number",
                    count,
                    f"loop '{loop.id}' (for)",
                    f"how many times loop '{loop.id}' runs",
                )
                return WorkflowError(
                    "FOR_COUNT_NOT_NUMBER",
                    f"loop '{loop.id}' needs context.{key} to be a number ({needs.problem}); "
                    "set it via context before this loop",
                    needs,
                )
        if not is_number(count):
            return WorkflowError("FOR_COUNT_NOT_NUMBER", f"loop '{loop.id}' has no count")
        return bool(iteration < count)

    def _for_each_enters(self, loop: CompiledLoop, iteration: int) -> bool | WorkflowError:
        """A `forEach` loop runs once per item of the context array it names."""
        items_key = loop.step.loop.items
        if items_key is None:
            return WorkflowError(
                "FOREACH_ITEMS_NOT_ARRAY", f"loop '{loop.id}' names no items to iterate over"
            )
        items = self._context.get(items_key, UNSET)
        if not isinstance(items, list):
            needs = needed_context(
                items_key,
                "array",
                items,
                f"loop '{loop.id}' (forEach)",
                f"the items loop '{loop.id}' iterates over",
            )
            return WorkflowError(
                "FOREACH_ITEMS_NOT_ARRAY",
                f"loop '{loop.id}' needs context.{items_key} to be an array "
                f"({needs.problem}); set it via context before this loop",
                needs,
            )
        return iteration < len(items)

    def _artifact_enters(
        self, loop: CompiledLoop, iteration: int, source: ArtifactContractSource
    ) -> bool | WorkflowError:
        """A loop decided by a wr.loop_control artifact runs again on `continue`."""
        loop_id = source.loop_id or loop.id
        if loop.enters_without_decision and iteration == 0:
            # Entering: only a decision sent with this call counts, so a stop that ended
            # an earlier pass of this loop (inside an outer loop) does not skip it now.
            decision = self._loop_decision(loop_id, self._fresh)
            if decision is None:
                decision = "continue"  # no decision yet: the loop runs (WorkRail ≥ 1.17.1)
        else:
            decision = self._loop_decision(loop_id)
        if decision is None:
            return WorkflowError(
                "LOOP_CONTROL_ARTIFACT_MISSING",
                f"loop '{loop.id}' needs a wr.loop_control artifact with loopId "
                f"'{loop_id}' (decision continue|stop) before it is entered",
                NeededInput(
                    "artifact",
                    loop_id,
                    "wr.loop_control artifact",
                    "no artifact with this loopId was sent",
                    f"loop '{loop.id}' ({loop.step.loop.type}, decided by artifact)",
                    {
                        "kind": LOOP_CONTROL_KIND,
                        "loopId": loop_id,
                        "decision": "<continue or stop>",
                    },
                ),
            )
        return decision == "continue"

    def _condition_enters(
        self, loop: CompiledLoop, iteration: int, condition: Any
    ) -> bool | WorkflowError:
        """A `while` loop runs while its context condition holds, an `until` loop until it does."""
        loop_type = loop.step.loop.type
        scoped = projected_context(loop, iteration, self._context)
        unusable = non_numeric_operands(condition, scoped)
        if unusable:
            key, value = unusable[0]
            needs = needed_context(
                key,
                "number",
                UNSET if is_missing(value) else value,
                f"loop '{loop.id}' ({loop_type} condition)",
                f"the value loop '{loop.id}' compares to decide whether to run again",
            )
            return WorkflowError(
                "LOOP_CONDITION_UNAVAILABLE",
                f"loop '{loop.id}' compares context.{key} as a number, but "
                f"{needs.problem}; set it via context (a number) before this loop",
                needs,
            )
        holds = evaluate_condition(condition, scoped)
        return not holds if loop_type == "until" else holds

    def _loop_decision(self, loop_id: str, among: Sequence[Any] | None = None) -> str | None:
        """The newest valid loop-control decision for `loop_id`.

        Deviation (90-quirks A3): the reference uses the oldest matching artifact, so a
        later `stop` is never seen; newest-wins lets the agent actually end the loop and is
        identical whenever only one artifact exists.
        """
        for artifact in reversed(self._artifacts if among is None else among):
            if not is_loop_control(artifact):
                continue
            parsed = parse_loop_control(artifact)
            if not isinstance(parsed, list) and parsed.loopId == loop_id:
                return parsed.decision
        return None
