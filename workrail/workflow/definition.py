"""Typed, read-only view of a workflow definition (the `definition` of a pinned envelope).

The pinned JSON stays the source of truth (it is what is hashed); this view only gives the
compiler and interpreter typed access. It is deliberately tolerant of fields it does not
use, because pinned definitions written by other versions must stay executable.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag
from pydantic.alias_generators import to_camel

from workrail.workflow.contracts import LOOP_CONTROL_CONTRACT as LOOP_CONTROL_CONTRACT

JsonObject = dict[str, Any]
FunctionScope = Literal["workflow", "loop", "step"]


class _View(BaseModel):
    model_config = ConfigDict(
        defer_build=True,
        extra="ignore",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
    )


class FunctionDefinition(_View):
    name: str
    definition: str
    scope: FunctionScope | None = None


class OutputContract(_View):
    contract_ref: Annotated[str, Field(min_length=1)]
    required: bool = True


class ConsequenceWhen(_View):
    any_equals_level: str
    for_assessment: str | None = None


class ConsequenceEffect(_View):
    kind: str
    guidance: str


class AssessmentConsequence(_View):
    """`assessmentConsequences[]`: a reported level that keeps the step pending."""

    when: ConsequenceWhen
    effect: ConsequenceEffect


class AssessmentDimension(_View):
    id: str
    purpose: str | None = None
    levels: tuple[str, ...]
    required: bool = True


class AssessmentDefinition(_View):
    """A workflow `assessments[]` entry: dimensions, each with its allowed levels."""

    id: str
    purpose: str | None = None
    dimensions: tuple[AssessmentDimension, ...]


class ParallelDelegation(_View):
    workflow_id: str
    goal: str | None = None
    run_condition: Any = None
    context_mapping: dict[str, str] | None = None
    args: dict[str, Any] | None = None
    model_tier: str | None = None
    allowed_tools: tuple[str, ...] = ()


class Synthesis(_View):
    prompt: str | None = None
    output_contract: OutputContract | None = None


class StandardStep(_View):
    """A step the agent performs; also a `type: parallel` step (its work is delegated)."""

    id: str
    type: str | None = None
    title: str | None = None
    prompt: str | None = None
    require_confirmation: Any = None
    run_condition: Any = None
    validation_criteria: Any = None
    output_contract: OutputContract | None = None
    function_definitions: tuple[FunctionDefinition, ...] = ()
    function_references: tuple[str, ...] = ()
    prompt_fragments: Any = None
    notes_optional: bool = False
    assessment_refs: tuple[str, ...] = ()
    assessment_consequences: tuple[AssessmentConsequence, ...] = ()
    parallel_delegations: tuple[ParallelDelegation, ...] = ()
    synthesis: Synthesis | None = None

    @property
    def contract(self) -> OutputContract | None:
        """The contract the step's output must meet (a parallel step's is its synthesis')."""
        if self.output_contract is not None or self.synthesis is None:
            return self.output_contract
        return self.synthesis.output_contract

    @property
    def is_parallel(self) -> bool:
        return self.type == "parallel"


class ArtifactContractSource(_View):
    """`loopId` may be left out: the compiler fills in the loop's own id."""

    kind: Literal["artifact_contract"]
    contract_ref: str
    loop_id: str | None = None


class ContextVariableSource(_View):
    kind: Literal["context_variable"]
    condition: Any = None


ConditionSource = Annotated[
    ArtifactContractSource | ContextVariableSource, Field(discriminator="kind")
]
LoopType = Literal["while", "until", "for", "forEach"]


class LoopConfig(_View):
    type: LoopType
    max_iterations: int | float
    condition: Any = None
    items: str | None = None
    count: int | float | str | None = None
    iteration_var: str | None = None
    item_var: str | None = None
    index_var: str | None = None
    condition_source: ConditionSource | None = None


class LoopStep(_View):
    id: str
    type: Literal["loop"]
    title: str | None = None
    loop: LoopConfig
    body: str | tuple[StandardStep, ...]
    require_confirmation: Any = None
    run_condition: Any = None
    function_definitions: tuple[FunctionDefinition, ...] = ()
    notes_optional: bool = False


Step = LoopStep | StandardStep


def _step_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "loop" if value.get("type") == "loop" else "standard"
    return "loop" if isinstance(value, LoopStep) else "standard"


AnyStep = Annotated[
    Annotated[LoopStep, Tag("loop")] | Annotated[StandardStep, Tag("standard")],
    Discriminator(_step_kind),
]


class WorkflowDefinition(_View):
    id: str
    name: str
    description: str
    version: str
    steps: Annotated[tuple[AnyStep, ...], Field(min_length=1)]
    function_definitions: tuple[FunctionDefinition, ...] = ()
    assessments: tuple[AssessmentDefinition, ...] = ()
    placeholders: bool = True
