"""Output requirements of a step (50-workflows §8): is the agent's output enough to let the
step complete? Priority 1 is the output contract, priority 2 the validation criteria."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workrail.core.session_index import LOOP_CONTROL_KIND
from workrail.workflow.definition import LOOP_CONTROL_CONTRACT, StandardStep
from workrail.workflow.outcomes import ValidationResult

VALIDATION_CRITERIA_REF: Final = "wr.validationCriteria"
CONTRACT_SUGGESTION: Final = "Provide a valid artifact matching the contract schema"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class LoopControlMetadata(_Strict):
    reason: Annotated[str, Field(max_length=1024)] | None = None
    issuesFound: Annotated[int, Field(ge=0)] | None = None  # noqa: N815 - wire name
    iterationIndex: Annotated[int, Field(ge=0)] | None = None  # noqa: N815
    confidence: Annotated[int, Field(ge=0, le=100)] | None = None


class LoopControlArtifact(_Strict):
    """The `wr.contracts.loop_control` artifact: the agent's continue/stop decision."""

    kind: Literal["wr.loop_control"]
    loopId: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9_-]+$")]  # noqa: N815
    decision: Literal["continue", "stop"]
    metadata: LoopControlMetadata | None = None


def parse_loop_control(artifact: Any) -> LoopControlArtifact | list[str]:
    """The parsed artifact, or its issues as `<path>: <message>` strings."""
    try:
        return LoopControlArtifact.model_validate(artifact)
    except ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors(include_url=False)
        ]


def is_loop_control(artifact: Any) -> bool:
    return isinstance(artifact, dict) and artifact.get("kind") == LOOP_CONTROL_KIND


RequirementStatus = Literal["satisfied", "not_required", "missing", "invalid"]


@dataclass(frozen=True, slots=True)
class Requirement:
    status: RequirementStatus
    contract_ref: str | None = None
    issues: tuple[str, ...] = field(default=())
    suggestions: tuple[str, ...] = field(default=())

    @property
    def blocks(self) -> bool:
        return self.status in ("missing", "invalid")

    def validation_result(self) -> ValidationResult:
        """The `validation_performed.result` the reference writes for a blocked attempt."""
        if self.status == "missing":
            return ValidationResult(
                valid=False,
                issues=[f"Missing required output for contractRef={self.contract_ref}"],
            )
        return ValidationResult(
            valid=not self.blocks, issues=list(self.issues), suggestions=list(self.suggestions)
        )


def evaluate_requirement(
    step: StandardStep,
    notes: str | None,
    artifacts: Sequence[Any],
    engine_result: ValidationResult | None,
) -> Requirement:
    """Decide whether this call's output satisfies the step (only this call's artifacts)."""
    contract = step.output_contract
    if contract is not None:
        ref = contract.contract_ref
        if ref != LOOP_CONTROL_CONTRACT:
            return Requirement("missing", ref)  # unknown contracts can never be satisfied
        candidates = [a for a in artifacts if is_loop_control(a)]
        if not candidates:
            return Requirement("missing" if contract.required else "satisfied", ref)
        parsed = parse_loop_control(candidates[0])
        if isinstance(parsed, list):
            return Requirement("invalid", ref, tuple(parsed), (CONTRACT_SUGGESTION,))
        return Requirement("satisfied", ref)
    if step.validation_criteria is None:
        return Requirement("not_required")
    if notes is None:
        return Requirement("missing", VALIDATION_CRITERIA_REF)
    if engine_result is not None and not engine_result.valid:
        return Requirement(
            "invalid",
            VALIDATION_CRITERIA_REF,
            tuple(engine_result.issues),
            tuple(engine_result.suggestions),
        )
    return Requirement("satisfied", VALIDATION_CRITERIA_REF)
