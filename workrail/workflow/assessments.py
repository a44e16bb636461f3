"""Assessment gates: a step names workflow `assessments` (`assessmentRefs`); the agent
reports a level for each dimension as a `wr.assessment` artifact; a step's
`assessmentConsequences` keep it pending (a follow-up) when a reported level matches.

Pure. Levels are matched exactly, else case-insensitively when that names exactly one
allowed level (recorded with a note), as WorkRail does. One artifact per referenced
assessment: matched by `assessmentId`, or taken in order when it names none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workrail.workflow.contracts import validation_issues
from workrail.workflow.definition import (
    AssessmentDefinition,
    AssessmentDimension,
    StandardStep,
)

ASSESSMENT_CONTRACT: Final = "wr.contracts.assessment"
ASSESSMENT_KIND: Final = "wr.assessment"


class _Strict(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, strict=True)


class DimensionSubmission(_Strict):
    level: Annotated[str, Field(min_length=1)]
    rationale: Annotated[str, Field(min_length=1, max_length=512)] | None = None


class AssessmentArtifact(_Strict):
    """`wr.assessment`: a level (or `{level, rationale}`) per dimension id."""

    kind: Literal["wr.assessment"]
    assessmentId: Annotated[str, Field(min_length=1, max_length=64)] | None = None  # noqa: N815
    dimensions: Annotated[
        dict[str, Annotated[str, Field(min_length=1)] | DimensionSubmission], Field(min_length=1)
    ]
    summary: Annotated[str, Field(max_length=1024)] | None = None


@dataclass(frozen=True, slots=True)
class RecordedDimension:
    dimension_id: str
    level: str
    normalized: bool = False
    rationale: str | None = None


@dataclass(frozen=True, slots=True)
class RecordedAssessment:
    assessment_id: str
    dimensions: tuple[RecordedDimension, ...]
    notes: tuple[str, ...] = ()


AssessmentStatus = Literal["not_required", "satisfied", "missing", "invalid"]


@dataclass(frozen=True, slots=True)
class AssessmentCheck:
    status: AssessmentStatus
    issues: tuple[str, ...] = ()
    suggestions: tuple[str, ...] = ()
    recorded: tuple[RecordedAssessment, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Followup:
    """A consequence that fired: which reported level requires which follow-up."""

    assessment_id: str
    dimension_id: str
    level: str
    guidance: str


def is_assessment(artifact: Any) -> bool:
    return isinstance(artifact, dict) and artifact.get("kind") == ASSESSMENT_KIND


def definitions_by_id(
    definitions: Sequence[AssessmentDefinition],
) -> Mapping[str, AssessmentDefinition]:
    return {d.id: d for d in definitions}


def check_assessments(
    step: StandardStep,
    definitions: Mapping[str, AssessmentDefinition],
    artifacts: Sequence[Any],
) -> AssessmentCheck:
    """Whether this call's artifacts report every assessment the step references."""
    refs = step.assessment_refs
    if not refs:
        return AssessmentCheck("not_required")
    candidates = [a for a in artifacts if is_assessment(a)]
    if not candidates:
        return AssessmentCheck(
            "missing",
            tuple(f"This step needs an assessment artifact for '{ref}'." for ref in refs),
            tuple(_submission_hint(ref, definitions.get(ref)) for ref in refs),
        )
    issues: list[str] = []
    suggestions: list[str] = []
    recorded: list[RecordedAssessment] = []
    claimed: set[int] = set()
    for index, artifact in enumerate(candidates):
        named = artifact.get("assessmentId")
        if isinstance(named, str) and named not in refs:
            claimed.add(index)
            issues.append(
                f"Assessment artifact {index + 1} is for '{named}', which this step does not "
                f"ask for (it asks for: {', '.join(refs)})."
            )
            suggestions.append(f"Set assessmentId to one of: {', '.join(refs)}.")
    for ref in refs:
        chosen = _artifact_for(ref, candidates, claimed)
        definition = definitions.get(ref)
        if definition is None:
            issues.append(f"The workflow declares no assessment '{ref}'.")
            suggestions.append("Ask the workflow's author to declare it; no output can pass.")
            continue
        if chosen is None:
            issues.append(f"No assessment artifact reports '{ref}'.")
            suggestions.append(_submission_hint(ref, definition))
            continue
        outcome = _check_one(definition, candidates[chosen])
        if isinstance(outcome, RecordedAssessment):
            recorded.append(outcome)
        else:
            issues.extend(outcome[0])
            suggestions.extend(outcome[1])
    if issues:
        return AssessmentCheck("invalid", tuple(issues), tuple(dict.fromkeys(suggestions)))
    return AssessmentCheck("satisfied", recorded=tuple(recorded))


def _artifact_for(ref: str, candidates: Sequence[Any], claimed: set[int]) -> int | None:
    for index, artifact in enumerate(candidates):
        if index not in claimed and artifact.get("assessmentId") == ref:
            claimed.add(index)
            return index
    for index, artifact in enumerate(candidates):
        if index not in claimed and artifact.get("assessmentId") is None:
            claimed.add(index)
            return index
    return None


def _check_one(
    definition: AssessmentDefinition, artifact: Any
) -> RecordedAssessment | tuple[list[str], list[str]]:
    try:
        parsed = AssessmentArtifact.model_validate(artifact)
    except ValidationError as exc:
        return (
            [f"Assessment '{definition.id}': {issue}" for issue in validation_issues(exc)],
            [_submission_hint(definition.id, definition)],
        )
    issues: list[str] = []
    suggestions: list[str] = []
    notes: list[str] = []
    dimensions: list[RecordedDimension] = []
    for dimension in definition.dimensions:
        submitted = parsed.dimensions.get(dimension.id)
        if submitted is None:
            if dimension.required:
                issues.append(f"Assessment '{definition.id}' has no level for '{dimension.id}'.")
                suggestions.append(
                    f"Report '{dimension.id}' as one of: {', '.join(dimension.levels)}."
                )
            continue
        level, rationale = (
            (submitted, None)
            if isinstance(submitted, str)
            else (submitted.level, submitted.rationale)
        )
        canonical = canonical_level(level, dimension)
        if canonical is None:
            issues.append(
                f"Assessment '{definition.id}': '{level}' is not a level of '{dimension.id}' "
                f"(allowed: {', '.join(dimension.levels)})."
            )
            suggestions.append(f"Report '{dimension.id}' as one of: {', '.join(dimension.levels)}.")
            continue
        normalized = canonical != level
        if normalized:
            notes.append(f"'{dimension.id}': read '{level}' as '{canonical}'.")
        dimensions.append(RecordedDimension(dimension.id, canonical, normalized, rationale))
    known = {d.id for d in definition.dimensions}
    for extra in parsed.dimensions:
        if extra not in known:
            issues.append(f"Assessment '{definition.id}' has no dimension '{extra}'.")
            suggestions.append(
                f"Report only these dimensions of '{definition.id}': {', '.join(sorted(known))}."
            )
    if issues:
        return issues, suggestions
    return RecordedAssessment(definition.id, tuple(dimensions), tuple(notes))


def canonical_level(level: str, dimension: AssessmentDimension) -> str | None:
    """The allowed level `level` names: itself, or the only one equal ignoring case."""
    if level in dimension.levels:
        return level
    folded = level.strip().lower()
    matches = [allowed for allowed in dimension.levels if allowed.lower() == folded]
    return matches[0] if len(matches) == 1 else None


def triggered_followups(
    step: StandardStep, recorded: Sequence[RecordedAssessment]
) -> tuple[Followup, ...]:
    """Every consequence of the step that a reported level triggers (each fires on its own
    first matching dimension, in `assessmentRefs` order; `forAssessment` narrows it)."""
    fired: dict[tuple[str, str], Followup] = {}
    for consequence in step.assessment_consequences:
        if consequence.effect.kind != "require_followup":
            continue
        wanted = consequence.when.any_equals_level
        scope = consequence.when.for_assessment
        for assessment in recorded:
            if scope is not None and assessment.assessment_id != scope:
                continue
            hit = next((d for d in assessment.dimensions if d.level == wanted), None)
            if hit is not None:
                key = (assessment.assessment_id, hit.dimension_id)
                fired.setdefault(
                    key,
                    Followup(
                        assessment.assessment_id,
                        hit.dimension_id,
                        wanted,
                        consequence.effect.guidance,
                    ),
                )
                break
    return tuple(fired.values())


def assessment_templates(
    step: StandardStep,
    definitions: Mapping[str, AssessmentDefinition],
    *,
    after_followup: bool = False,
) -> list[dict[str, Any]]:
    """One ready artifact per referenced assessment, each dimension at its first level.

    After a follow-up, each dimension is at its first level that triggers none of the
    step's consequences (when there is one): the shape of the assessment that lets the
    step complete once the follow-up is done, not the one that just blocked it again.
    """
    templates: list[dict[str, Any]] = []
    for ref in step.assessment_refs:
        definition = definitions.get(ref)
        if definition is None:
            continue
        triggers = _trigger_levels(step, ref) if after_followup else frozenset()
        dimensions = {
            d.id: next((lv for lv in d.levels if lv not in triggers), d.levels[0])
            for d in definition.dimensions
            if d.levels
        }
        templates.append({"kind": ASSESSMENT_KIND, "assessmentId": ref, "dimensions": dimensions})
    return templates


def _trigger_levels(step: StandardStep, assessment_id: str) -> frozenset[str]:
    return frozenset(
        c.when.any_equals_level
        for c in step.assessment_consequences
        if c.effect.kind == "require_followup" and c.when.for_assessment in (None, assessment_id)
    )


def assessment_prompt_lines(
    step: StandardStep, definitions: Mapping[str, AssessmentDefinition]
) -> list[str]:
    """What the step's prompt says about the assessments it asks for."""
    lines: list[str] = []
    for ref in step.assessment_refs:
        definition = definitions.get(ref)
        if definition is None:
            continue
        purpose = f": {definition.purpose}" if definition.purpose else ""
        lines.append(f"Assessment '{ref}'{purpose}")
        for dimension in definition.dimensions:
            why = f" — {dimension.purpose}" if dimension.purpose else ""
            optional = " (optional)" if not dimension.required else ""
            lines.append(f"  {dimension.id}{optional}: one of {' | '.join(dimension.levels)}{why}")
    if lines:
        lines.append(
            'Report it in output.artifacts as {"kind": "wr.assessment", "assessmentId": "<id>", '
            '"dimensions": {"<dimension>": "<level>"}} (one artifact per assessment)'
        )
    return lines


def _submission_hint(ref: str, definition: AssessmentDefinition | None) -> str:
    if definition is None:
        return f"Send a wr.assessment artifact with assessmentId '{ref}'."
    dims = ", ".join(f"{d.id} ({' | '.join(d.levels)})" for d in definition.dimensions)
    return f"Send a wr.assessment artifact with assessmentId '{ref}' and a level for: {dims}."


def step_context(recorded: Sequence[RecordedAssessment]) -> dict[str, Any]:
    """`stepContext` of the answer that completed an assessed step: the levels as recorded
    (canonical), with what was normalised, so the agent can report them exactly next time."""
    return {
        "assessments": [
            {
                "assessmentId": a.assessment_id,
                "dimensions": [
                    {"dimensionId": d.dimension_id, "level": d.level}
                    | ({"rationale": d.rationale} if d.rationale else {})
                    for d in a.dimensions
                ],
                "normalizationNotes": list(a.notes),
            }
            for a in recorded
        ]
    }
