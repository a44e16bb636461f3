"""Output requirements of a step (50-workflows §8): is the agent's output enough to let the
step complete? Priority 1 is the output contract, priority 2 the validation criteria."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from workrail.core.blockers import (
    AssessmentDimensionPointer,
    Blocker,
    OutputContractPointer,
    WorkflowStepPointer,
    invalid_required_output,
    missing_required_output,
)
from workrail.core.budgets import (
    BLOCKER_FIX_MAX_BYTES,
    BLOCKER_MESSAGE_MAX_BYTES,
    BLOCKERS_MAX,
    truncate_utf8,
)
from workrail.workflow.assessments import (
    ASSESSMENT_CONTRACT,
    ASSESSMENT_KIND,
    Followup,
    check_assessments,
    triggered_followups,
)
from workrail.workflow.contracts import (
    LOOP_CONTROL_CONTRACT,
    ContractSpec,
    check_contract,
    contract,
)
from workrail.workflow.definition import AssessmentDefinition, StandardStep
from workrail.workflow.outcomes import ValidationResult

VALIDATION_CRITERIA_REF: Final = "wr.validationCriteria"
NOTES_REF: Final = "wr.notes"
CONTRACT_SUGGESTION: Final = "Provide a valid artifact matching the contract schema"


RequirementStatus = Literal["satisfied", "not_required", "missing", "invalid"]


@dataclass(frozen=True, slots=True)
class StepRules:
    """What the current language adds to a step's requirements (nothing for v1.4 files)."""

    notes_required: bool = False
    assessments: Mapping[str, AssessmentDefinition] = field(
        default_factory=lambda: MappingProxyType({})
    )


LEGACY_RULES: Final = StepRules()


@dataclass(frozen=True, slots=True)
class Requirement:
    """The verdict on a step's output. A blocking one carries the blockers to report;
    those of v1.4 requirements are the reference's exact blockers."""

    status: RequirementStatus
    contract_ref: str | None = None
    issues: tuple[str, ...] = field(default=())
    suggestions: tuple[str, ...] = field(default=())
    blockers: tuple[Blocker, ...] = field(default=())
    followups: tuple[Followup, ...] = field(default=())

    @property
    def blocks(self) -> bool:
        return self.status in ("missing", "invalid")

    def blocker_list(self) -> list[Blocker]:
        if self.blockers:
            return list(self.blockers)
        ref = self.contract_ref or "none"
        return [
            missing_required_output(ref)
            if self.status == "missing"
            else invalid_required_output(ref)
        ]

    def validation_result(self) -> ValidationResult:
        """The `validation_performed.result` the reference writes for a blocked attempt."""
        if self.status == "missing" and not self.issues:
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
    rules: StepRules = LEGACY_RULES,
) -> Requirement:
    """Decide whether this call's output satisfies the step (only this call's artifacts).

    Priority: the output contract (then the criteria are not looked at, as in the
    reference), else the validation criteria; then, for current-language workflows, the
    notes; then the assessments and their consequences.
    """
    first = _contract_or_criteria(step, notes, artifacts, engine_result)
    if first.blocks:
        return first
    if rules.notes_required and step.contract is None and notes is None:
        return _notes_missing(step)
    if step.assessment_refs:
        assessed = _assessed(step, artifacts, rules.assessments)
        if assessed is not None:
            return assessed
    return first


def _contract_or_criteria(
    step: StandardStep,
    notes: str | None,
    artifacts: Sequence[Any],
    engine_result: ValidationResult | None,
) -> Requirement:
    declared = step.contract
    if declared is not None:
        ref = declared.contract_ref
        spec = contract(ref)
        if spec is None:
            return Requirement("missing", ref)  # unknown contracts can never be satisfied
        check = check_contract(spec, artifacts, required=declared.required)
        legacy = ref == LOOP_CONTROL_CONTRACT
        if check.status == "missing":
            return Requirement("missing", ref) if legacy else _contract_missing(spec)
        if check.status == "invalid":
            if legacy:
                return Requirement("invalid", ref, check.issues, (CONTRACT_SUGGESTION,))
            return _contract_invalid(spec, check.issues)
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


def _contract_missing(spec: ContractSpec) -> Requirement:
    blocker = Blocker(
        code="MISSING_REQUIRED_OUTPUT",
        pointer=OutputContractPointer(contract_ref=spec.ref),
        message=f"Missing required output (contractRef={spec.ref}): no {spec.kind} artifact.",
        suggested_fix=(
            f"Send nextCall again: its output.artifacts holds a {spec.kind} artifact to complete "
            "(replace each <…> placeholder and adjust the values to your actual result)."
        ),
    )
    return Requirement(
        "missing",
        spec.ref,
        (f"This step needs a {spec.kind} artifact in output.artifacts.",),
        spec.prompt_lines,
        (blocker,),
    )


def _contract_invalid(spec: ContractSpec, issues: tuple[str, ...]) -> Requirement:
    blocker = Blocker(
        code="INVALID_REQUIRED_OUTPUT",
        pointer=OutputContractPointer(contract_ref=spec.ref),
        message=f"Invalid output for contractRef={spec.ref}: the {spec.kind} artifact does not "
        "match its contract.",
        suggested_fix=(
            f"Correct the {spec.kind} artifact as validation.issues says (nextCall's "
            "output.artifacts holds a valid one to start from), then send nextCall again."
        ),
    )
    return Requirement(
        "invalid",
        spec.ref,
        bounded(tuple(f"{spec.kind} {issue}" for issue in issues)),
        spec.prompt_lines,
        (blocker,),
    )


def _notes_missing(step: StandardStep) -> Requirement:
    blocker = Blocker(
        code="MISSING_REQUIRED_NOTES",
        pointer=WorkflowStepPointer(step_id=step.id),
        message=f"Step '{step.id}' needs notes on what you did (output.notesMarkdown).",
        suggested_fix=(
            "Send nextCall again with output.notesMarkdown: what you did, what you decided and "
            "what you found (a few lines of Markdown)."
        ),
    )
    return Requirement(
        "missing",
        NOTES_REF,
        (f"Step '{step.id}' is completed with notes: output.notesMarkdown is missing.",),
        ("Add output.notesMarkdown and send nextCall again.",),
        (blocker,),
    )


def _assessed(
    step: StandardStep,
    artifacts: Sequence[Any],
    definitions: Mapping[str, AssessmentDefinition],
) -> Requirement | None:
    check = check_assessments(step, definitions, artifacts)
    if check.status in ("missing", "invalid"):
        missing = check.status == "missing"
        blocker = Blocker(
            code="MISSING_REQUIRED_OUTPUT" if missing else "INVALID_REQUIRED_OUTPUT",
            pointer=OutputContractPointer(contract_ref=ASSESSMENT_CONTRACT),
            message=_fit(
                f"Step '{step.id}' needs a {ASSESSMENT_KIND} artifact for: "
                f"{', '.join(step.assessment_refs)}.",
                BLOCKER_MESSAGE_MAX_BYTES,
            ),
            suggested_fix=(
                "Send nextCall again: its output.artifacts holds one wr.assessment artifact per "
                "assessment, each dimension at its first allowed level; set every level to "
                "your actual judgment first."
            ),
        )
        return Requirement(
            check.status,
            ASSESSMENT_CONTRACT,
            bounded(check.issues),
            bounded(check.suggestions),
            (blocker,),
        )
    followups = triggered_followups(step, check.recorded)
    if not followups:
        return None
    blockers = tuple(
        Blocker(
            code="ASSESSMENT_FOLLOWUP_REQUIRED",
            pointer=AssessmentDimensionPointer(
                assessment_id=f.assessment_id, dimension_id=f.dimension_id
            ),
            message=_fit(
                f"Assessment '{f.assessment_id}' reports '{f.dimension_id}' as '{f.level}', "
                "which needs a follow-up: do what suggestedFix says, assess again, then send "
                "nextCall with the new assessment.",
                BLOCKER_MESSAGE_MAX_BYTES,
            ),
            suggested_fix=_fit(f.guidance, BLOCKER_FIX_MAX_BYTES),
        )
        for f in followups[:BLOCKERS_MAX]
    )
    return Requirement(
        "invalid",
        ASSESSMENT_CONTRACT,
        tuple(
            f"Follow-up required ({f.assessment_id}.{f.dimension_id} = {f.level}): {f.guidance}"
            for f in followups
        ),
        ("Do the follow-up, assess again, then send nextCall with the new assessment.",),
        blockers,
        followups,
    )


MAX_ISSUES: Final = 20


def bounded(lines: tuple[str, ...]) -> tuple[str, ...]:
    """At most MAX_ISSUES lines (each within the blocker budget), the rest counted: a
    hostile artifact must not turn into a huge validation record."""
    kept = tuple(_fit(line, BLOCKER_FIX_MAX_BYTES) for line in lines[:MAX_ISSUES])
    if len(lines) <= MAX_ISSUES:
        return kept
    return (*kept, f"… and {len(lines) - MAX_ISSUES} more like these.")


def _fit(text: str, limit: int) -> str:
    """`text` within `limit` bytes, cut with an ellipsis (a blocker is read, not parsed)."""
    return truncate_utf8(text, limit, "…")
