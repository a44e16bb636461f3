"""Blocker reports (20-events §3): why an advance was blocked and what the agent should do.

The same report is stored inside blocked execution snapshots and returned in blocked
responses, so its shape and budgets are part of the durable contract.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field, field_validator

from workrail.core.budgets import BLOCKER_FIX_MAX_BYTES, BLOCKER_MESSAGE_MAX_BYTES, BLOCKERS_MAX
from workrail.core.wire import CamelWire

BlockerCode = Literal[
    "USER_ONLY_DEPENDENCY",
    "MISSING_REQUIRED_OUTPUT",
    "INVALID_REQUIRED_OUTPUT",
    "ASSESSMENT_FOLLOWUP_REQUIRED",
    "MISSING_REQUIRED_NOTES",
    "REQUIRED_CAPABILITY_UNKNOWN",
    "REQUIRED_CAPABILITY_UNAVAILABLE",
    "INVARIANT_VIOLATION",
    "STORAGE_CORRUPTION_DETECTED",
]

_DELIMITER_SAFE = r"^[a-z0-9_-]+$"

MISSING_OUTPUT_FIX: Final = (
    "Call continue_workflow WITHOUT ackToken to rehydrate and receive a fresh ackToken, then "
    "retry with output.notesMarkdown that satisfies the step output requirements."
)
INVALID_OUTPUT_FIX: Final = (
    "Update output.notesMarkdown to satisfy validation. Then call continue_workflow WITHOUT "
    "ackToken (rehydrate) to receive a fresh ackToken, and retry advance with that new "
    "ackToken. Replaying the same ackToken is idempotent and will keep returning this "
    "blocked result."
)


class ContextKeyPointer(CamelWire):
    kind: Literal["context_key"] = "context_key"
    key: Annotated[str, Field(pattern=_DELIMITER_SAFE)]


class ContextBudgetPointer(CamelWire):
    kind: Literal["context_budget"] = "context_budget"


class OutputContractPointer(CamelWire):
    kind: Literal["output_contract"] = "output_contract"
    contract_ref: Annotated[str, Field(min_length=1)]


class CapabilityPointer(CamelWire):
    kind: Literal["capability"] = "capability"
    capability: Annotated[str, Field(min_length=1)]


class AssessmentDimensionPointer(CamelWire):
    """The dimension of an assessment whose reported level requires a follow-up."""

    kind: Literal["assessment_dimension"] = "assessment_dimension"
    assessment_id: Annotated[str, Field(min_length=1)]
    dimension_id: Annotated[str, Field(min_length=1)]


class WorkflowStepPointer(CamelWire):
    kind: Literal["workflow_step"] = "workflow_step"
    step_id: Annotated[str, Field(pattern=_DELIMITER_SAFE)]


BlockerPointer = Annotated[
    ContextKeyPointer
    | ContextBudgetPointer
    | OutputContractPointer
    | CapabilityPointer
    | AssessmentDimensionPointer
    | WorkflowStepPointer,
    Field(discriminator="kind"),
]


def _check_bytes(text: str, limit: int, what: str) -> str:
    size = len(text.encode("utf-8"))
    if not 1 <= size <= limit:
        raise ValueError(f"{what} must be 1..{limit} UTF-8 bytes, got {size}")
    return text


class Blocker(CamelWire):
    code: BlockerCode
    pointer: BlockerPointer
    message: str
    suggested_fix: str | None = None

    @field_validator("message")
    @classmethod
    def _message_budget(cls, value: str) -> str:
        return _check_bytes(value, BLOCKER_MESSAGE_MAX_BYTES, "blocker message")

    @field_validator("suggested_fix")
    @classmethod
    def _fix_budget(cls, value: str | None) -> str | None:
        return None if value is None else _check_bytes(value, BLOCKER_FIX_MAX_BYTES, "fix")


def blocker_sort_key(blocker: Blocker) -> str:
    """`code|pointer.kind|<stable field>` — the order the reference writes reports in."""
    pointer = blocker.pointer
    match pointer:
        case ContextKeyPointer():
            stable = pointer.key
        case OutputContractPointer():
            stable = pointer.contract_ref
        case CapabilityPointer():
            stable = pointer.capability
        case AssessmentDimensionPointer():
            stable = f"{pointer.assessment_id}|{pointer.dimension_id}"
        case WorkflowStepPointer():
            stable = pointer.step_id
        case ContextBudgetPointer():
            stable = ""
    return f"{blocker.code}|{pointer.kind}|{stable}"


class BlockerReport(CamelWire):
    blockers: Annotated[list[Blocker], Field(min_length=1, max_length=BLOCKERS_MAX)]

    @field_validator("blockers")
    @classmethod
    def _sorted(cls, value: list[Blocker]) -> list[Blocker]:
        keys = [blocker_sort_key(b) for b in value]
        if keys != sorted(keys):
            raise ValueError("blockers must be sorted by code|pointer.kind|stable field")
        return value


def make_blocker_report(blockers: list[Blocker]) -> BlockerReport:
    """Sort blockers the canonical way and wrap them; budgets fail fast (never truncated)."""
    return BlockerReport(blockers=sorted(blockers, key=blocker_sort_key))


def missing_required_output(contract_ref: str) -> Blocker:
    """The reference's exact MISSING_REQUIRED_OUTPUT blocker (40-execution §7.5)."""
    return Blocker(
        code="MISSING_REQUIRED_OUTPUT",
        pointer=OutputContractPointer(contract_ref=contract_ref),
        message=f"Missing required output (contractRef={contract_ref}).",
        suggested_fix=MISSING_OUTPUT_FIX,
    )


def invalid_required_output(contract_ref: str) -> Blocker:
    """The reference's exact INVALID_REQUIRED_OUTPUT blocker (40-execution §7.5)."""
    return Blocker(
        code="INVALID_REQUIRED_OUTPUT",
        pointer=OutputContractPointer(contract_ref=contract_ref),
        message=f"Invalid output for contractRef={contract_ref}.",
        suggested_fix=INVALID_OUTPUT_FIX,
    )
