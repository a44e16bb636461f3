"""Error values of the workflow package: closed code sets, each with a message saying what
to do. Nothing here is raised; functions return these inside `returns.Result`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ProblemCode = Literal[
    "INVALID_JSON",
    "UNREADABLE_FILE",
    "SCHEMA_VIOLATION",
    "NOT_CANONICAL_JSON",
    "DUPLICATE_STEP_ID",
    "UNSAFE_ID",
    "UNKNOWN_LOOP_BODY",
    "UNKNOWN_FUNCTION_REFERENCE",
    "INVALID_MAX_ITERATIONS",
    "RESERVED_NAMESPACE",
    "UNKNOWN_CONTRACT",
    "INVALID_REGEX",
]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a workflow source: where (JSON path), what, and how to fix it."""

    code: ProblemCode
    path: str
    message: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "path": self.path, "message": self.message, "fix": self.fix}

    def line(self) -> str:
        return f"{self.path}: {self.message} — fix: {self.fix}"


WorkflowErrorCode = Literal[
    # compiling a pinned definition into something executable
    "NOT_EXECUTABLE",
    "DUPLICATE_STEP_ID",
    "UNKNOWN_LOOP_BODY",
    "INVALID_LOOP_BODY",
    # deciding the next step
    "NO_PENDING_STEP",
    "PENDING_MISMATCH",
    "UNKNOWN_STEP",
    "INVALID_LOOP_STATE",
    "LOOP_CONDITION_UNAVAILABLE",
    "LOOP_CONTROL_ARTIFACT_MISSING",
    "FOREACH_ITEMS_NOT_ARRAY",
    "FOR_COUNT_NOT_NUMBER",
    "SELECTION_DID_NOT_SETTLE",
    "NO_ELIGIBLE_STEP",
    # evaluating output
    "VALIDATION_ENGINE_ERROR",
    # reading stored envelopes
    "INVALID_ENVELOPE",
]

EngineFailureKind = Literal[
    "advance_apply_failed", "advance_next_failed", "no_pending_step", "invariant_violation"
]

_APPLY: frozenset[str] = frozenset(
    {
        "NOT_EXECUTABLE",
        "DUPLICATE_STEP_ID",
        "UNKNOWN_LOOP_BODY",
        "INVALID_LOOP_BODY",
        "VALIDATION_ENGINE_ERROR",
        "INVALID_ENVELOPE",
    }
)


@dataclass(frozen=True, slots=True)
class WorkflowError:
    """An expected failure while compiling or running a pinned workflow."""

    code: WorkflowErrorCode
    message: str

    @property
    def engine_kind(self) -> EngineFailureKind:
        """The `INTERNAL_ERROR …<kind>` the reference reports for this failure (40 §7.2)."""
        if self.code == "NO_PENDING_STEP":
            return "no_pending_step"
        if self.code == "PENDING_MISMATCH":
            return "invariant_violation"
        if self.code in _APPLY:
            return "advance_apply_failed"
        return "advance_next_failed"
