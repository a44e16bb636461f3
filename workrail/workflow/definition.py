"""Typed, read-only view of a workflow definition (the `definition` of a pinned envelope).

The pinned JSON stays the source of truth (it is what is hashed); this view only gives the
compiler and interpreter typed access. It is deliberately tolerant of fields it does not
use, because pinned definitions written by other versions must stay executable.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag
from pydantic.alias_generators import to_camel

JsonObject = dict[str, Any]
FunctionScope = Literal["workflow", "loop", "step"]
LOOP_CONTROL_CONTRACT = "wr.contracts.loop_control"


class _View(BaseModel):
    model_config = ConfigDict(
        extra="ignore", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class FunctionDefinition(_View):
    name: str
    definition: str
    scope: FunctionScope | None = None


class OutputContract(_View):
    contract_ref: Annotated[str, Field(min_length=1)]
    required: bool = True


class StandardStep(_View):
    id: str
    title: str | None = None
    prompt: str | None = None
    require_confirmation: Any = None
    run_condition: Any = None
    validation_criteria: Any = None
    output_contract: OutputContract | None = None
    function_definitions: tuple[FunctionDefinition, ...] = ()
    function_references: tuple[str, ...] = ()
    prompt_fragments: Any = None


class ArtifactContractSource(_View):
    kind: Literal["artifact_contract"]
    contract_ref: str
    loop_id: str


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
    placeholders: bool = True
