"""Telling v1.4 files from current-language ones, and the rules that hang on it: notes on
every step, loop-control templates, and the v1.4 answers kept as they were."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REFERENCE
from tests.workflow.wf_helpers import compiled, make_workflow, step
from workrail.core.snapshot import LoopPathFrame, StepInstance
from workrail.workflow.advance import step_rules
from workrail.workflow.dialect import uses_current_language
from workrail.workflow.requirements import LEGACY_RULES, evaluate_requirement
from workrail.workflow.retry import retry_artifacts

V3 = Path(__file__).parent / "fixtures" / "v3" / "runtime"
LOOP_CONTROL = {"contractRef": "wr.contracts.loop_control"}


@pytest.mark.parametrize("path", sorted((REFERENCE / "workflows").glob("*.json")), ids=str)
def test_the_reference_workflows_are_v14(path: Path) -> None:
    assert not uses_current_language(json.loads(path.read_text()))


@pytest.mark.parametrize("path", sorted(V3.glob("*.json")), ids=lambda p: p.name)
def test_the_current_language_fixtures_are_current(path: Path) -> None:
    assert uses_current_language(json.loads(path.read_text()))


def loop(body: list[dict[str, Any]], **config: Any) -> dict[str, Any]:
    return {
        "id": "the-loop",
        "type": "loop",
        "title": "Loop",
        "loop": {"type": "while", "maxIterations": 3, **config},
        "body": body,
    }


@pytest.mark.parametrize(
    "definition",
    [
        make_workflow([step("one")], metricsProfile="coding"),
        make_workflow([step("one", notesOptional=True)]),
        make_workflow([step("one", requireConfirmation={"kind": "human_approval"})]),
        make_workflow([step("one", runCondition={"var": "x", "in": [1]})]),
        make_workflow([step("one", runCondition={"not": {"var": "x", "contains": "a"}})]),
        make_workflow(
            [
                loop(
                    [step("two")],
                    conditionSource={
                        "kind": "artifact_contract",
                        "contractRef": "wr.contracts.loop_control",
                    },
                )
            ]
        ),
        make_workflow([loop([step("two")], condition={"var": "x"}, unknownKnob=1)]),
        make_workflow(
            [
                {
                    "id": "par",
                    "type": "parallel",
                    "title": "P",
                    "parallelDelegations": [{"workflowId": "a.b"}],
                }
            ]
        ),
    ],
)
def test_any_current_feature_makes_a_file_current(definition: dict[str, Any]) -> None:
    assert uses_current_language(definition)


def test_v14_shapes_stay_v14() -> None:
    wf = make_workflow(
        [
            step("one", requireConfirmation={"var": "x", "equals": 1}),
            loop([step("two", outputContract=LOOP_CONTROL)], condition={"var": "again"}),
        ]
    )
    assert not uses_current_language(wf)


def test_notes_are_required_only_in_current_language_files() -> None:
    legacy = compiled(make_workflow([step("one")]))
    current = compiled(make_workflow([step("one")], metricsProfile="coding"))
    pending = StepInstance(step_id="one")
    assert step_rules(legacy, pending) is LEGACY_RULES
    rules = step_rules(current, pending)
    assert rules.notes_required
    one = current.step("one")
    assert one is not None
    requirement = evaluate_requirement(one, None, [], None, rules)
    assert requirement.status == "missing"
    assert [b.code for b in requirement.blocker_list()] == ["MISSING_REQUIRED_NOTES"]
    assert evaluate_requirement(one, "did it", [], None, rules).blocks is False
    assert evaluate_requirement(one, None, [], None, LEGACY_RULES).blocks is False


def test_a_loop_s_notes_optional_covers_its_body() -> None:
    wf = compiled(
        make_workflow(
            [
                {
                    "id": "each",
                    "type": "loop",
                    "title": "Each",
                    "notesOptional": True,
                    "loop": {"type": "forEach", "items": "xs", "maxIterations": 3},
                    "body": [step("inner")],
                }
            ]
        )
    )
    inside = StepInstance(step_id="inner", loop_path=[LoopPathFrame(loop_id="each", iteration=0)])
    assert not step_rules(wf, inside).notes_required


def test_v14_loop_control_blocks_keep_the_reference_blockers_and_no_template() -> None:
    wf = compiled(
        make_workflow(
            [loop([step("two", outputContract=LOOP_CONTROL)], condition={"var": "again"})]
        )
    )
    inside = StepInstance(step_id="two", loop_path=[LoopPathFrame(loop_id="the-loop", iteration=0)])
    two = wf.step("two")
    assert two is not None
    requirement = evaluate_requirement(two, "notes", [], None, step_rules(wf, inside))
    (blocker,) = requirement.blocker_list()
    assert blocker.message == "Missing required output (contractRef=wr.contracts.loop_control)."
    assert requirement.validation_result().issues == [
        "Missing required output for contractRef=wr.contracts.loop_control"
    ]
    assert retry_artifacts(wf, inside, "wr.contracts.loop_control") == []


def test_current_loop_control_blocks_carry_the_loop_s_template() -> None:
    wf = compiled(
        make_workflow(
            [
                loop(
                    [step("two", outputContract=LOOP_CONTROL)],
                    conditionSource={
                        "kind": "artifact_contract",
                        "contractRef": "wr.contracts.loop_control",
                    },
                )
            ]
        )
    )
    inside = StepInstance(step_id="two", loop_path=[LoopPathFrame(loop_id="the-loop", iteration=1)])
    assert retry_artifacts(wf, inside, "wr.contracts.loop_control") == [
        {"kind": "wr.loop_control", "loopId": "the-loop", "decision": "continue"}
    ]
    # A block for something else (notes) carries no artifact template.
    assert retry_artifacts(wf, inside, "wr.notes") == []


def test_a_decision_before_a_loop_is_templated_for_the_next_artifact_loop() -> None:
    source = {"kind": "artifact_contract", "contractRef": "wr.contracts.loop_control"}
    wf = compiled(
        make_workflow(
            [
                step("init", outputContract=LOOP_CONTROL),
                {**loop([step("two")], conditionSource={**source, "loopId": "named"})},
            ]
        )
    )
    assert retry_artifacts(wf, StepInstance(step_id="init"), "wr.contracts.loop_control") == [
        {"kind": "wr.loop_control", "loopId": "named", "decision": "continue"}
    ]


def test_only_the_cause_of_a_block_is_templated() -> None:
    wf = compiled(
        make_workflow(
            [
                step(
                    "judge",
                    outputContract={"contractRef": "wr.contracts.gate_verdict"},
                    assessmentRefs=["risk"],
                )
            ],
            assessments=[
                {
                    "id": "risk",
                    "purpose": "Risk",
                    "dimensions": [{"id": "blast", "purpose": "Reach", "levels": ["low", "high"]}],
                }
            ],
        )
    )
    here = StepInstance(step_id="judge")
    (verdict,) = retry_artifacts(wf, here, "wr.contracts.gate_verdict")
    assert verdict["kind"] == "wr.gate_verdict"
    (risk,) = retry_artifacts(wf, here, "wr.contracts.assessment")
    assert risk == {"kind": "wr.assessment", "assessmentId": "risk", "dimensions": {"blast": "low"}}
    assert retry_artifacts(wf, here, "wr.contracts.review_verdict") == []
