"""Assessment gates as pure rules: which artifact reports which assessment, how levels are
matched, what is reported missing or wrong, and which consequences fire."""

from __future__ import annotations

from typing import Any

import pytest

from workrail.workflow.assessments import (
    RecordedAssessment,
    RecordedDimension,
    assessment_prompt_lines,
    assessment_templates,
    canonical_level,
    check_assessments,
    triggered_followups,
)
from workrail.workflow.definition import AssessmentDefinition, AssessmentDimension, StandardStep

READINESS = AssessmentDefinition.model_validate(
    {
        "id": "readiness",
        "purpose": "Ready?",
        "dimensions": [
            {"id": "evidence", "purpose": "Grounded", "levels": ["low", "high"]},
            {"id": "coverage", "purpose": "Complete", "levels": ["low", "medium", "high"]},
            {"id": "style", "purpose": "Tidy", "levels": ["rough", "tidy"], "required": False},
        ],
    }
)
RISK = AssessmentDefinition.model_validate(
    {"id": "risk", "purpose": "Risk", "dimensions": [{"id": "blast", "levels": ["low", "large"]}]}
)
DEFS = {"readiness": READINESS, "risk": RISK}


def make_step(refs: list[str], consequences: list[dict[str, Any]] | None = None) -> StandardStep:
    return StandardStep.model_validate(
        {
            "id": "judge",
            "title": "Judge",
            "prompt": "Judge.",
            "assessmentRefs": refs,
            "assessmentConsequences": consequences or [],
        }
    )


def art(assessment_id: str | None = None, **dimensions: Any) -> dict[str, Any]:
    artifact: dict[str, Any] = {"kind": "wr.assessment", "dimensions": dimensions}
    if assessment_id is not None:
        artifact["assessmentId"] = assessment_id
    return artifact


def test_levels_match_exactly_else_by_case_when_unambiguous() -> None:
    dim = AssessmentDimension.model_validate({"id": "d", "levels": ["Low", "high", "HIGH"]})
    assert canonical_level("Low", dim) == "Low"
    assert canonical_level(" low ", dim) == "Low"
    assert canonical_level("High", dim) is None  # two levels fold to "high"
    assert canonical_level("medium", dim) is None


def test_a_step_without_refs_needs_nothing() -> None:
    assert check_assessments(StandardStep(id="x"), DEFS, []).status == "not_required"


def test_no_assessment_artifact_is_missing_with_a_hint() -> None:
    check = check_assessments(make_step(["readiness"]), DEFS, [{"kind": "other"}])
    assert check.status == "missing"
    assert "evidence (low | high)" in check.suggestions[0]


def test_a_satisfied_assessment_is_recorded_with_normalisation_notes() -> None:
    artifact = art(evidence="HIGH", coverage={"level": "medium", "rationale": "mostly"})
    check = check_assessments(make_step(["readiness"]), DEFS, [artifact])
    assert check.status == "satisfied"
    (recorded,) = check.recorded
    assert recorded.dimensions == (
        RecordedDimension("evidence", "high", True, None),
        RecordedDimension("coverage", "medium", False, "mostly"),
    )
    assert recorded.notes == ("'evidence': read 'HIGH' as 'high'.",)


@pytest.mark.parametrize(
    ("artifact", "fragment"),
    [
        (art(evidence="high"), "has no level for 'coverage'"),
        (art(evidence="high", coverage="lots"), "'lots' is not a level of 'coverage'"),
        (art(evidence="high", coverage="low", tone="calm"), "has no dimension 'tone'"),
        (art("risk", blast="low"), "No assessment artifact reports 'readiness'"),
        (art("other", evidence="high"), "is for 'other'"),
        ({"kind": "wr.assessment", "dimensions": {}}, "dimensions"),
        ({"kind": "wr.assessment", "dimensions": {"evidence": 3}}, "dimensions.evidence"),
    ],
)
def test_wrong_submissions_are_invalid_with_a_reason(artifact: Any, fragment: str) -> None:
    check = check_assessments(make_step(["readiness"]), DEFS, [artifact])
    assert check.status == "invalid"
    assert any(fragment in issue for issue in check.issues), check.issues
    assert check.suggestions


def test_several_refs_match_by_id_and_then_in_order() -> None:
    step = make_step(["readiness", "risk"])
    by_id = [art("risk", blast="large"), art("readiness", evidence="low", coverage="low")]
    in_order = [art(evidence="low", coverage="low"), art(blast="large")]
    for artifacts in (by_id, in_order):
        check = check_assessments(step, DEFS, artifacts)
        assert check.status == "satisfied"
        assert [r.assessment_id for r in check.recorded] == ["readiness", "risk"]


def test_an_undeclared_reference_cannot_pass_but_says_why() -> None:
    check = check_assessments(make_step(["ghost"]), DEFS, [art(x="y")])
    assert check.status == "invalid"
    assert "declares no assessment 'ghost'" in check.issues[0]


def recorded(assessment_id: str, **levels: str) -> RecordedAssessment:
    return RecordedAssessment(
        assessment_id, tuple(RecordedDimension(d, lv) for d, lv in levels.items())
    )


def followup(level: str, scope: str | None = None, guidance: str = "Do more.") -> dict[str, Any]:
    when: dict[str, Any] = {"anyEqualsLevel": level}
    if scope:
        when["forAssessment"] = scope
    return {"when": when, "effect": {"kind": "require_followup", "guidance": guidance}}


def test_a_consequence_fires_on_the_first_matching_dimension() -> None:
    step = make_step(["readiness"], [followup("low")])
    (fired,) = triggered_followups(step, [recorded("readiness", evidence="high", coverage="low")])
    assert (fired.assessment_id, fired.dimension_id, fired.level) == (
        "readiness",
        "coverage",
        "low",
    )
    assert (
        triggered_followups(step, [recorded("readiness", evidence="high", coverage="high")]) == ()
    )


def test_for_assessment_scopes_a_consequence_and_each_fires_on_its_own() -> None:
    step = make_step(
        ["readiness", "risk"],
        [followup("low", "risk", "Shrink it."), followup("large", None, "Split it.")],
    )
    levels = [recorded("readiness", evidence="low"), recorded("risk", blast="large")]
    fired = triggered_followups(step, levels)
    assert [(f.assessment_id, f.guidance) for f in fired] == [("risk", "Split it.")]
    both = triggered_followups(
        step, [recorded("readiness", evidence="low"), recorded("risk", blast="low")]
    )
    assert [(f.assessment_id, f.dimension_id) for f in both] == [("risk", "blast")]


def test_templates_fill_the_first_level_and_prompt_lines_list_levels() -> None:
    step = make_step(["readiness", "risk", "ghost"])
    assert assessment_templates(step, DEFS) == [
        {
            "kind": "wr.assessment",
            "assessmentId": "readiness",
            "dimensions": {"evidence": "low", "coverage": "low", "style": "rough"},
        },
        {"kind": "wr.assessment", "assessmentId": "risk", "dimensions": {"blast": "low"}},
    ]
    lines = assessment_prompt_lines(step, DEFS)
    assert "Assessment 'readiness': Ready?" in lines
    assert "  style (optional): one of rough | tidy — Tidy" in lines


def test_a_hostile_assessment_gives_a_bounded_list_of_issues() -> None:
    from workrail.workflow.requirements import MAX_ISSUES, StepRules, evaluate_requirement

    artifact = art(**{f"d{i}": "x" * 5000 for i in range(500)})
    step = make_step(["readiness"])
    requirement = evaluate_requirement(step, "notes", [artifact], None, StepRules(assessments=DEFS))
    assert requirement.status == "invalid"
    assert len(requirement.issues) == MAX_ISSUES + 1
    assert requirement.issues[-1].startswith("… and ")
    assert all(len(issue.encode()) <= 1024 for issue in requirement.issues)


def test_after_a_follow_up_templates_avoid_the_levels_that_trigger_it() -> None:
    step = make_step(["readiness", "risk"], [followup("low"), followup("large", "risk")])
    templates = assessment_templates(step, DEFS, after_followup=True)
    assert [t["dimensions"] for t in templates] == [
        {"evidence": "high", "coverage": "medium", "style": "rough"},
        {"blast": "low"},  # every level of blast triggers one: the first stays
    ]
    assert assessment_templates(step, DEFS)[0]["dimensions"]["evidence"] == "low"
