"""Warnings for likely slips: a condition compared with a quoted boolean or number."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from workrail.workflow.envelopes import pin_workflow
from workrail.workflow.lint import MAX_DEPTH, lint_workflow
from workrail.workflow.validate import validate_workflow


def _workflow(**step: Any) -> dict[str, Any]:
    return {
        "id": "slips",
        "name": "Slips",
        "description": "Conditions with quoted literals.",
        "version": "1.0.0",
        "steps": [
            {"id": "first", "title": "First", "prompt": "Do it."},
            {"id": "second", "title": "Second", "prompt": "Do it.", **step},
        ],
    }


def test_quoted_booleans_and_numbers_are_warned_with_the_fix() -> None:
    raw = _workflow(
        runCondition={
            "and": [
                {"var": "ready", "equals": "false"},
                {"var": "count", "not_equals": " 3 "},
                {"not": {"var": "mode", "equals": "TRUE"}},
            ]
        }
    )
    warnings = lint_workflow(raw)
    assert [(w.code, w.path) for w in warnings] == [
        ("CONDITION_QUOTED_LITERAL", "$.steps[1].runCondition.and[0].equals"),
        ("CONDITION_QUOTED_LITERAL", "$.steps[1].runCondition.and[1].not_equals"),
        ("CONDITION_QUOTED_LITERAL", "$.steps[1].runCondition.and[2].not.equals"),
    ]
    first, second, third = warnings
    assert '`ready` with the string "false"' in first.message
    assert "boolean" in first.message
    assert first.fix.startswith("write false without quotes")
    assert "number 3" in second.message
    assert second.fix.startswith("write 3 without quotes")
    assert third.fix.startswith("write true without quotes")
    assert first.to_json()["path"] == first.path
    assert "fix:" in first.line()


def test_a_warned_file_stays_valid_and_keeps_its_hash() -> None:
    raw = _workflow(runCondition={"var": "ready", "equals": "true"})
    before = copy.deepcopy(raw)
    assert lint_workflow(raw)
    assert validate_workflow(raw) == []
    assert raw == before
    assert pin_workflow(raw).workflow_hash() == pin_workflow(before).workflow_hash()


def test_every_place_a_condition_appears_is_checked() -> None:
    raw = _workflow(
        requireConfirmation={"var": "risky", "equals": "false"},
        validationCriteria=[
            {
                "type": "contains",
                "value": "done",
                "message": "Say done.",
                "condition": {"var": "strict", "equals": "true"},
            }
        ],
    )
    raw["steps"].append(
        {
            "id": "loop",
            "type": "loop",
            "title": "Loop",
            "loop": {
                "type": "while",
                "condition": {"var": "more", "equals": "1"},
                "maxIterations": 3,
            },
            "body": "first",
        }
    )
    raw["steps"][0]["when"] = {"var": "phase", "in": ["draft", "2"]}
    paths = [w.path for w in lint_workflow(raw)]
    assert paths == [
        "$.steps[0].when.in[1]",
        "$.steps[1].requireConfirmation.equals",
        "$.steps[1].validationCriteria[0].condition.equals",
        "$.steps[2].loop.condition.equals",
    ]


def test_plain_strings_and_real_literals_are_not_warned() -> None:
    raw = _workflow(
        runCondition={
            "or": [
                {"var": "mode", "equals": "fast"},
                {"var": "ready", "equals": False},
                {"var": "count", "gte": 3},
                {"var": "name", "contains": "3"},
                {"var": "version", "equals": "1.2.3"},
            ]
        },
        requireConfirmation=True,
    )
    assert lint_workflow(raw) == []


def test_hostile_nesting_is_bounded() -> None:
    cond: dict[str, Any] = {"var": "x", "equals": "false"}
    for _ in range(5 * MAX_DEPTH):
        cond = {"not": cond}
    assert lint_workflow(_workflow(runCondition=cond)) == []


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["var", "equals", "in", "and", "not", "runCondition", "condition"]),
                inner,
                max_size=4,
            )
        ),
        max_leaves=20,
    )
)
def test_any_json_is_linted_without_error(raw: Any) -> None:
    for warning in lint_workflow(raw):
        assert warning.path.startswith("$")
