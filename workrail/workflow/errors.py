"""Error values of the workflow package: closed code sets, each with a message saying what
to do. Nothing here is raised; functions return these inside `returns.Result`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

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
    "MISSING_PROMPT",
    "EMPTY_PROMPT_BLOCKS",
    "UNKNOWN_FEATURE",
    "UNKNOWN_REF",
    "UNKNOWN_BINDING",
    "UNKNOWN_TEMPLATE",
    "ROUTINE_CYCLE",
    "ROUTINE_INVALID",
    "TEMPLATE_ARG_MISSING",
    "UNKNOWN_ASSESSMENT",
    "UNKNOWN_ASSESSMENT_LEVEL",
    # warnings: the file loads, but something deserves a look
    "FUNCTION_NOT_DEFINED",
    "JS_INCOMPATIBLE_REGEX",
    "STALE_SPEC_VERSION",
    # warnings (workflow.lint): valid as written, most likely not what was meant
    "CONDITION_QUOTED_LITERAL",
]
Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a workflow source: where (JSON path), what, and how to fix it."""

    code: ProblemCode
    path: str
    message: str
    fix: str
    severity: Severity = "error"
    """A warning does not stop the file from loading (`workrail validate` still shows it)."""

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
class NeededInput:
    """A value the agent controls that a loop needs and the call did not supply (or
    supplied with the wrong type): where it goes, what type, and a placeholder for it.

    `source` is `context` (then `key` is the context key) or `artifact` (then `key` is the
    loop id a `wr.loop_control` artifact must name)."""

    source: Literal["context", "artifact"]
    key: str
    expected: str
    problem: str
    needed_by: str
    placeholder: Any

    def path(self) -> str:
        return f"context.{self.key}" if self.source == "context" else "output.artifacts"

    def to_json(self) -> dict[str, Any]:
        return {
            "in": self.source,
            "key": self.key,
            "expectedType": self.expected,
            "problem": self.problem,
            "neededBy": self.needed_by,
        }


def needed_context(key: str, expected: str, value: Any, needed_by: str, what: str) -> NeededInput:
    """A context value `needed_by` reads as `expected`: unset, or `value` of another type."""
    problem = "it is not set" if value is _UNSET else f"it is {describe_value(value)}"
    return NeededInput("context", key, expected, problem, needed_by, f"<{expected}: {what}>")


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


_UNSET: Final = _Unset()
UNSET: Final[Any] = _UNSET
"""Marks a context key that is absent (as opposed to set to null)."""


def describe_value(value: Any) -> str:
    """`a string`, `null`, `an object`… for people (JSON's names, not Python's)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "not JSON"


@dataclass(frozen=True, slots=True)
class WorkflowError:
    """An expected failure while compiling or running a pinned workflow. `needs` is set
    when the agent can fix it by supplying a value (it is then never an internal error)."""

    code: WorkflowErrorCode
    message: str
    needs: NeededInput | None = None

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
