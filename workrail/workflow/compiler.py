"""Compiler (50-workflows §4): pinned definition → the executable form the interpreter runs.

Derived from the pinned definition at every use, like the reference, so the workflowHash
stays the plain v1_pinned hash and nothing compiled is ever stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from pydantic import ValidationError
from returns.result import Failure, Result, Success

from workrail.workflow.definition import (
    LOOP_CONTROL_CONTRACT,
    ArtifactContractSource,
    AssessmentDefinition,
    ContextVariableSource,
    FunctionDefinition,
    LoopStep,
    StandardStep,
    Step,
    WorkflowDefinition,
)
from workrail.workflow.dialect import uses_current_language
from workrail.workflow.envelopes import PinnedWorkflow, pin_workflow
from workrail.workflow.errors import WorkflowError

ConditionOrigin = Literal["explicit", "artifact", "legacy", "none"]


@dataclass(frozen=True, slots=True)
class CompiledLoop:
    step: LoopStep
    body: tuple[StandardStep, ...]
    condition_source: ArtifactContractSource | ContextVariableSource | None
    condition_origin: ConditionOrigin
    # A while/until loop decided by artifacts alone (no `condition`, a current-language
    # form): no decision yet means enter, WorkRail's rule since v1.17.1. Loops that also
    # have a `condition` (v1.4's form) keep asking for the artifact.
    enters_without_decision: bool = False

    @property
    def id(self) -> str:
        return self.step.id


@dataclass(frozen=True, slots=True)
class CompiledWorkflow:
    """A pinned workflow plus lookups: steps by id, loops, and ids that only run in loops."""

    pinned: PinnedWorkflow
    definition: WorkflowDefinition
    steps_by_id: Mapping[str, StandardStep]
    top_level_by_id: Mapping[str, Step]
    loops: Mapping[str, CompiledLoop]
    loop_body_ids: frozenset[str]
    # Top-level steps the selector may choose (loop bodies run only inside their loop),
    # in definition order, and their ids (one tuple, so a scan position can be remembered).
    selectable: tuple[Step, ...] = ()
    selectable_ids: tuple[str, ...] = ()
    # The definition uses WorkRail's current language (workrail.workflow.dialect).
    current_language: bool = False
    assessments: Mapping[str, AssessmentDefinition] = field(
        default_factory=lambda: MappingProxyType({})
    )

    @property
    def workflow_hash(self) -> str:
        return self.pinned.workflow_hash()

    @property
    def steps(self) -> tuple[Step, ...]:
        return self.definition.steps

    @property
    def functions(self) -> tuple[FunctionDefinition, ...]:
        return self.definition.function_definitions

    def step(self, step_id: str) -> StandardStep | None:
        """A standard step (top-level or inline loop body) by id."""
        return self.steps_by_id.get(step_id)


def compile_pinned(pinned: PinnedWorkflow) -> Result[CompiledWorkflow, WorkflowError]:
    """Compile a pinned envelope; structural problems are WorkflowError values."""
    definition = _executable(pinned)
    if isinstance(definition, WorkflowError):
        return Failure(definition)
    top: dict[str, Step] = {}
    for step in definition.steps:
        if step.id in top:
            return Failure(_duplicate(step.id))
        top[step.id] = step
    seen = set(top)
    by_id: dict[str, StandardStep] = {
        s.id: s for s in definition.steps if isinstance(s, StandardStep)
    }
    loops: dict[str, CompiledLoop] = {}
    body_ids: set[str] = set()
    for step in definition.steps:
        if not isinstance(step, LoopStep):
            continue
        body = _loop_body(step, top, seen, by_id)
        if isinstance(body, WorkflowError):
            return Failure(body)
        body_ids.update(s.id for s in body)
        source, origin = _condition_source(step, body)
        artifact_only = isinstance(source, ArtifactContractSource) and step.loop.condition is None
        loops[step.id] = CompiledLoop(step, body, source, origin, artifact_only)
    selectable = tuple(s for s in definition.steps if s.id not in body_ids)
    return Success(
        CompiledWorkflow(
            pinned=pinned,
            definition=definition,
            steps_by_id=MappingProxyType(by_id),
            top_level_by_id=MappingProxyType(top),
            loops=MappingProxyType(loops),
            loop_body_ids=frozenset(body_ids),
            selectable=selectable,
            selectable_ids=tuple(s.id for s in selectable),
            current_language=uses_current_language(pinned.definition),
            assessments=MappingProxyType({a.id: a for a in definition.assessments}),
        )
    )


def compile_definition(definition: dict[str, Any]) -> Result[CompiledWorkflow, WorkflowError]:
    """Pin a (schema-valid) source definition and compile it in one go."""
    return compile_pinned(pin_workflow(definition))


def _executable(pinned: PinnedWorkflow) -> WorkflowDefinition | WorkflowError:
    """The pinned definition as the typed model, or why it cannot run."""
    try:
        return WorkflowDefinition.model_validate(pinned.definition)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        return WorkflowError(
            "NOT_EXECUTABLE", f"pinned definition is not executable: {where}: {first['msg']}"
        )


def _loop_body(
    step: LoopStep, top: Mapping[str, Step], seen: set[str], by_id: dict[str, StandardStep]
) -> tuple[StandardStep, ...] | WorkflowError:
    """A loop's body: the top-level step it names, or its inline steps (added to `seen` and
    `by_id`, each id once across the workflow)."""
    if isinstance(step.body, str):
        target = top.get(step.body)
        if not isinstance(target, StandardStep):
            return WorkflowError(
                "UNKNOWN_LOOP_BODY",
                f"loop '{step.id}' body '{step.body}' is not a top-level standard step",
            )
        return (target,)
    for inner in step.body:
        if inner.id in seen:
            return _duplicate(inner.id)
        seen.add(inner.id)
        by_id[inner.id] = inner
    return step.body


def _duplicate(step_id: str) -> WorkflowError:
    return WorkflowError("DUPLICATE_STEP_ID", f"step id '{step_id}' is defined more than once")


def _condition_source(
    loop: LoopStep, body: tuple[StandardStep, ...]
) -> tuple[ArtifactContractSource | ContextVariableSource | None, ConditionOrigin]:
    """Where a while/until loop reads its decision from (50-workflows §4 rule 3)."""
    config = loop.loop
    if config.type not in ("while", "until"):
        return None, "none"
    explicit = config.condition_source
    if explicit is not None:
        if isinstance(explicit, ArtifactContractSource) and explicit.loop_id is None:
            explicit = explicit.model_copy(update={"loop_id": loop.id})
        return explicit, "explicit"
    uses_contract = any(
        s.contract is not None and s.contract.contract_ref == LOOP_CONTROL_CONTRACT for s in body
    )
    if uses_contract:
        source = ArtifactContractSource(
            kind="artifact_contract", contract_ref=LOOP_CONTROL_CONTRACT, loop_id=loop.id
        )
        return source, "artifact"
    if config.condition is not None:
        return ContextVariableSource(kind="context_variable", condition=config.condition), "legacy"
    return None, "none"
