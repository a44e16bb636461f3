"""The schema accepts WorkRail's current language beside v1.4's and still rejects the rest."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from workrail.workflow.validate import validate_workflow


def current_language() -> dict[str, Any]:
    """One definition using every construct of the current language at least once."""
    return {
        "id": "team.everything",
        "name": "Everything",
        "description": "Uses every construct.",
        "version": "1.0.0",
        "about": "## Everything\nA tour.",
        "examples": ["Tour every construct of the language"],
        "metricsProfile": "coding",
        "validatedAgainstSpecVersion": 3,
        "modelTier": "mid",
        "placeholders": True,
        "features": ["wr.features.subagent_guidance"],
        "references": [
            {
                "id": "guide",
                "title": "Guide",
                "source": "docs/guide.md",
                "purpose": "House rules.",
                "authoritative": True,
                "resolveFrom": "workspace",
            }
        ],
        "extensionPoints": [{"slotId": "review", "purpose": "Review pass.", "default": "r1"}],
        "assessments": [
            {
                "id": "quality",
                "purpose": "How good is it.",
                "dimensions": [{"id": "depth", "purpose": "Depth.", "levels": ["low", "high"]}],
            }
        ],
        "steps": [
            {
                "id": "blocks",
                "title": "Blocks",
                "promptBlocks": {
                    "goal": "Do the thing.",
                    "constraints": [
                        [{"kind": "text", "text": "Be "}, {"kind": "ref", "refId": "x"}]
                    ],
                    "procedure": ["First", "Second"],
                    "outputRequired": {"notes": "what you did"},
                    "verify": ["It works"],
                },
                "promptFragments": [
                    {"id": "deep", "when": {"var": "mode", "in": ["deep"]}, "text": "Go deep."}
                ],
                "assessmentRefs": ["quality"],
                "assessmentConsequences": [
                    {
                        "when": {"anyEqualsLevel": "low", "forAssessment": "quality"},
                        "effect": {"kind": "require_followup", "guidance": "Dig deeper."},
                    }
                ],
                "notesOptional": True,
                "modelTier": "heavy",
                "audit": {"prompt": "Check it.", "rubric": ["complete"]},
                "verification": {"command": "make test", "prompt": "Run it."},
                "requireConfirmation": {"kind": "human_approval"},
                "runCondition": {"var": "tags", "contains": "x"},
            },
            {
                "id": "call",
                "title": "Call",
                "templateCall": {"templateId": "wr.templates.routine.r1"},
            },
            {
                "id": "fan-out",
                "type": "parallel",
                "title": "Fan out",
                "parallelDelegations": [
                    {"workflowId": "r1", "goal": "Look.", "contextMapping": {"a": "b"}}
                ],
                "synthesis": {"prompt": "Merge."},
            },
            {
                "id": "loop",
                "type": "loop",
                "title": "Loop",
                "loop": {
                    "type": "while",
                    "maxIterations": 3,
                    "conditionSource": {
                        "kind": "artifact_contract",
                        "contractRef": "wr.contracts.loop_control",
                    },
                },
                "body": [
                    {
                        "id": "decide",
                        "title": "Decide",
                        "prompt": "Decide.",
                        "outputContract": {"contractRef": "wr.contracts.loop_control"},
                    }
                ],
            },
        ],
    }


def schema_problems(raw: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p.code, p.path) for p in validate_workflow(raw) if p.code == "SCHEMA_VIOLATION"]


def test_the_current_language_is_accepted_by_the_schema() -> None:
    assert schema_problems(current_language()) == []


@pytest.mark.parametrize(
    ("where", "path"),
    [
        (lambda d: d, "$.extra"),
        (lambda d: d["steps"][0], "$.steps[0].extra"),
        (lambda d: d["steps"][0]["promptBlocks"], "$.steps[0].promptBlocks.extra"),
        (lambda d: d["steps"][2], "$.steps[2].extra"),
        (lambda d: d["assessments"][0], "$.assessments[0].extra"),
        (lambda d: d["references"][0], "$.references[0].extra"),
    ],
)
def test_unknown_properties_stay_errors(where: Any, path: str) -> None:
    raw = copy.deepcopy(current_language())
    where(raw)["extra"] = 1
    assert ("SCHEMA_VIOLATION", path) in schema_problems(raw)


def test_a_step_needs_one_way_of_saying_what_to_do() -> None:
    raw = current_language()
    del raw["steps"][0]["promptBlocks"]
    raw["steps"][1] = {"id": "call", "title": "Call", "prompt": "x", "promptBlocks": {"goal": "y"}}
    found = [(p.code, p.path) for p in validate_workflow(raw)]
    assert ("MISSING_PROMPT", "$.steps[0]") in found
    assert ("MISSING_PROMPT", "$.steps[1].promptBlocks") in found


def test_a_metrics_profile_outside_the_set_is_rejected() -> None:
    raw = current_language()
    raw["metricsProfile"] = "sales"
    assert ("SCHEMA_VIOLATION", "$.metricsProfile") in schema_problems(raw)


def test_the_fast_validator_agrees_with_jsonschema() -> None:
    """The catalogue trusts jsonschema-rs's "valid"; it must never accept what jsonschema
    rejects (nor the other way round) on any file the suite holds."""
    import json
    from pathlib import Path

    from workrail.workflow.schema import schema_accepts, workflow_validator

    tests = Path(__file__).resolve().parents[1]
    files = [
        *(tests / "fixtures" / "broken_workflows").glob("*.json"),
        *(tests / "workflow" / "fixtures" / "v3").rglob("*.json"),
        *(tests.parent / "workflows").glob("*.json"),
    ]
    checked = 0
    for path in files:
        try:
            raw = json.loads(path.read_text())
        except ValueError:
            continue
        slow = workflow_validator().is_valid(raw)
        assert schema_accepts(raw) is slow, path.name
        checked += 1
    variants = [current_language()]
    mutations: list[Callable[[dict[str, Any]], Any]] = [
        lambda d: d.update(extra=1),
        lambda d: d["steps"][0].update(prompt=""),
        lambda d: d["steps"][3]["loop"].pop("conditionSource"),
        lambda d: d["steps"][2].update(parallelDelegations=[]),
        lambda d: d.update(version="1.0"),
        lambda d: d["steps"][0]["promptBlocks"].update(goal=[{"kind": "ref"}]),
    ]
    for mutate in mutations:
        raw = current_language()
        mutate(raw)
        variants.append(raw)
    for raw in variants:
        assert schema_accepts(raw) is workflow_validator().is_valid(raw)
    assert checked > 20
