"""Durable records the interpreter produces for the engine to append: validation results
(`validation_performed`) and decision-trace entries (`decision_trace_appended`)."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field

from workrail.core.budgets import (
    TRACE_MAX_ENTRIES,
    TRACE_SUMMARY_MAX_BYTES,
    TRACE_TOTAL_MAX_BYTES,
    TRUNCATION_MARKER,
    truncate_utf8,
    utf8_len,
)
from workrail.core.events import TraceKind
from workrail.core.wire import CamelWire

REVIEW_SUGGESTION: Final = "Review validation criteria and adjust output accordingly."
_SAFE_ID = r"^[a-z0-9_-]+$"


class ValidationResult(CamelWire):
    """`{valid, issues, suggestions}` as stored in `validation_performed.result`."""

    valid: bool
    issues: list[str] = Field(default_factory=list)
    suggestions: list[str] = Field(default_factory=list)


VALID: Final = ValidationResult.model_construct(valid=True)  # validated by its type; built on use


class ValidationRecord(CamelWire):
    """What the engine writes as `validation_performed` (minus ids it mints itself)."""

    contract_ref: str
    result: ValidationResult


class StepIdRef(CamelWire):
    kind: Literal["step_id"] = "step_id"
    step_id: Annotated[str, Field(pattern=_SAFE_ID)]


class LoopIdRef(CamelWire):
    kind: Literal["loop_id"] = "loop_id"
    loop_id: Annotated[str, Field(pattern=_SAFE_ID)]


class ConditionIdRef(CamelWire):
    kind: Literal["condition_id"] = "condition_id"
    condition_id: Annotated[str, Field(pattern=_SAFE_ID)]


class IterationRef(CamelWire):
    kind: Literal["iteration"] = "iteration"
    value: Annotated[int, Field(ge=0)]


TraceRef = Annotated[
    StepIdRef | LoopIdRef | ConditionIdRef | IterationRef, Field(discriminator="kind")
]


class DecisionTraceEntry(CamelWire):
    kind: TraceKind
    summary: Annotated[str, Field(min_length=1)]
    refs: Annotated[list[TraceRef], Field(max_length=10)] | None = None


def budget_trace(entries: list[DecisionTraceEntry]) -> list[DecisionTraceEntry]:
    """Apply the decision-trace budgets of 20-events §5 (25 entries, 512 B each, 8 KiB total)."""
    marker_len = utf8_len(TRUNCATION_MARKER)
    kept: list[DecisionTraceEntry] = []
    total = 0
    for entry in entries[:TRACE_MAX_ENTRIES]:
        summary = truncate_utf8(entry.summary, TRACE_SUMMARY_MAX_BYTES)
        size = utf8_len(summary)
        remaining = TRACE_TOTAL_MAX_BYTES - total
        if size > remaining:
            if remaining > marker_len + 10:
                summary = truncate_utf8(summary, remaining)
                kept.append(entry.model_copy(update={"summary": summary}))
            break
        kept.append(entry.model_copy(update={"summary": summary}))
        total += size
    return kept
