"""The compiler passes, one at a time and in the pipeline, and what they reject."""

from __future__ import annotations

from typing import Any

from returns.result import Failure, Success

from workrail.workflow.passes.blocks import HEADINGS
from workrail.workflow.passes.features import FEATURES
from workrail.workflow.passes.metrics import COMMITS_KEY, OUTCOME_KEY
from workrail.workflow.passes.refs import REF_TEXTS
from workrail.workflow.passes.templates import routine_template_id
from workrail.workflow.pipeline import compile_source
from workrail.workflow.validate import validate_workflow


def workflow(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "id": "team.flow",
        "name": "Flow",
        "description": "A flow.",
        "version": "1.0.0",
        "steps": list(steps),
        **top,
    }


def routine(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "id": "routine-probe",
        "name": "Probe",
        "description": "A routine.",
        "version": "1.0.0",
        "steps": list(steps),
        **top,
    }


def compiled(raw: dict[str, Any], routines: Any = None) -> dict[str, Any]:
    result = compile_source(raw, routines or {})
    assert isinstance(result, Success), result
    out = result.unwrap()
    assert isinstance(out, dict)
    return out


def problems(raw: dict[str, Any], routines: Any = None) -> list[tuple[str, str]]:
    return [(p.code, p.path) for p in validate_workflow(raw, routines=routines or {})]


def test_a_v14_definition_comes_back_as_the_same_object() -> None:
    raw = workflow({"id": "one", "title": "One", "prompt": "Do it."})
    result = compile_source(raw)
    assert isinstance(result, Success)
    assert result.unwrap() is raw


def test_blocks_render_in_a_fixed_order() -> None:
    raw = workflow(
        {
            "id": "one",
            "title": "One",
            "promptBlocks": {
                "verify": ["It works"],
                "procedure": ["First", "Second"],
                "goal": "Ship it.",
                "outputRequired": {"notes": "what changed"},
                "constraints": ["Be careful"],
            },
        }
    )
    step = compiled(raw)["steps"][0]
    assert "promptBlocks" not in step
    assert step["prompt"] == (
        f"{HEADINGS['goal']}\nShip it.\n\n{HEADINGS['constraints']}\n- Be careful\n\n"
        f"{HEADINGS['procedure']}\n1. First\n2. Second\n\n"
        f"{HEADINGS['outputRequired']}\n- **notes**: what changed\n\n"
        f"{HEADINGS['verify']}\n- It works"
    )


def test_ref_parts_become_their_text() -> None:
    goal = [
        {"kind": "text", "text": "Before. "},
        {"kind": "ref", "refId": "wr.refs.memory_usage"},
    ]
    raw = workflow({"id": "one", "title": "One", "promptBlocks": {"goal": goal}})
    prompt = compiled(raw)["steps"][0]["prompt"]
    assert prompt == f"{HEADINGS['goal']}\nBefore. {REF_TEXTS['wr.refs.memory_usage']}"


def test_features_add_to_block_steps_only() -> None:
    raw = workflow(
        {"id": "blocks", "title": "B", "promptBlocks": {"goal": "Go."}},
        {"id": "plain", "title": "P", "prompt": "Go."},
        features=["wr.features.subagent_guidance"],
    )
    out = compiled(raw)
    feature = FEATURES["wr.features.subagent_guidance"]
    assert feature.procedure[0] in out["steps"][0]["prompt"]
    assert (
        REF_TEXTS["wr.refs.parallelize_cognition_serialize_synthesis"] in out["steps"][0]["prompt"]
    )
    assert out["steps"][1]["prompt"] == "Go."


def test_bindings_take_the_extension_point_default() -> None:
    raw = workflow(
        {"id": "one", "title": "One", "prompt": "Run {{wr.bindings.review}} now."},
        extensionPoints=[{"slotId": "review", "purpose": "Review.", "default": "my-review"}],
    )
    assert compiled(raw)["steps"][0]["prompt"] == "Run my-review now."


def test_a_routine_is_expanded_with_its_args_and_guidance() -> None:
    lib = {
        routine_template_id("routine-probe"): routine(
            {"id": "look", "title": "Look at {thing}", "prompt": "Inspect {thing}, {{later}}."},
            {"id": "tell", "title": "Tell", "prompt": "Report.", "requireConfirmation": True},
            metaGuidance=["Stay calm."],
        )
    }
    raw = workflow(
        {"id": "before", "title": "B", "prompt": "b"},
        {
            "id": "probe",
            "title": "Probe",
            "templateCall": {"templateId": "wr.templates.routine.probe", "args": {"thing": "x"}},
            "runCondition": {"var": "mode", "equals": "deep"},
        },
    )
    steps = compiled(raw, lib)["steps"]
    assert [s["id"] for s in steps] == ["before", "probe__look", "probe__tell"]
    assert steps[1]["title"] == "Look at x"
    assert steps[1]["prompt"] == "Inspect x, {{later}}."
    assert steps[1]["guidance"] == ["Stay calm."]
    assert steps[2]["requireConfirmation"] is True
    assert steps[2]["runCondition"] == {"var": "mode", "equals": "deep"}


def test_metrics_footer_on_every_step_and_the_outcome_on_the_last() -> None:
    raw = workflow(
        {"id": "one", "title": "One", "prompt": "a"},
        {"id": "two", "title": "Two", "prompt": "b"},
        metricsProfile="coding",
    )
    first, last = compiled(raw)["steps"]
    assert COMMITS_KEY in first["prompt"]
    assert OUTCOME_KEY not in first["prompt"]
    assert COMMITS_KEY in last["prompt"]
    assert OUTCOME_KEY in last["prompt"]
    research = compiled({**raw, "metricsProfile": "research"})["steps"]
    assert research[0]["prompt"] == "a"
    assert OUTCOME_KEY in research[1]["prompt"]


# --- bad input: each a problem with a JSON path and a fix --------------------------------


def test_a_malformed_block_is_a_schema_problem_at_its_path() -> None:
    raw = workflow(
        {
            "id": "one",
            "title": "One",
            "promptBlocks": {"goal": [{"kind": "snippet", "refId": "x"}]},
        }
    )
    assert ("SCHEMA_VIOLATION", "$.steps[0].promptBlocks.goal") in problems(raw) or any(
        path.startswith("$.steps[0].promptBlocks.goal") for _, path in problems(raw)
    )
    empty = workflow({"id": "one", "title": "One", "promptBlocks": {"constraints": []}})
    assert problems(empty) == [("EMPTY_PROMPT_BLOCKS", "$.steps[0].promptBlocks")]


def test_an_unknown_feature_or_ref_is_named_with_a_suggestion() -> None:
    raw = workflow(
        {
            "id": "one",
            "title": "One",
            "promptBlocks": {"goal": [{"kind": "ref", "refId": "wr.refs.memory_usge"}]},
        },
        features=["wr.features.subagent_guidence"],
    )
    found = validate_workflow(raw)
    assert [(p.code, p.path) for p in found] == [
        ("UNKNOWN_FEATURE", "$.features[0]"),
        ("UNKNOWN_REF", "$.steps[0].promptBlocks.goal[0].refId"),
    ]
    assert "wr.features.subagent_guidance" in found[0].fix
    assert "wr.refs.memory_usage" in found[1].fix


def test_a_routine_that_calls_itself_is_a_cycle() -> None:
    call = {"templateId": "wr.templates.routine.probe"}
    lib = {
        routine_template_id("routine-probe"): routine(
            {"id": "again", "title": "Again", "templateCall": call}
        )
    }
    raw = workflow({"id": "probe", "title": "Probe", "templateCall": call})
    found = validate_workflow(raw, routines=lib)
    assert [(p.code, p.path) for p in found] == [
        ("ROUTINE_CYCLE", "$.steps[0].templateCall.templateId")
    ]
    assert "wr.templates.routine.probe → wr.templates.routine.probe" in found[0].message
    assert isinstance(compile_source(raw, lib), Failure)


def test_missing_args_unknown_templates_and_bindings() -> None:
    lib = {
        routine_template_id("routine-probe"): routine({"id": "a", "title": "A", "prompt": "{x}"})
    }
    raw = workflow(
        {"id": "one", "title": "One", "templateCall": {"templateId": "wr.templates.routine.probe"}},
        {"id": "two", "title": "Two", "templateCall": {"templateId": "wr.templates.routine.prob"}},
        {"id": "three", "title": "Three", "prompt": "{{wr.bindings.nope}}"},
    )
    assert problems(raw, lib) == [
        ("TEMPLATE_ARG_MISSING", "$.steps[0].templateCall.args"),
        ("UNKNOWN_TEMPLATE", "$.steps[1].templateCall.templateId"),
        ("UNKNOWN_BINDING", "$.steps[2].prompt"),
    ]


def test_an_assessment_level_outside_its_dimension() -> None:
    raw = workflow(
        {
            "id": "one",
            "title": "One",
            "prompt": "Assess.",
            "assessmentRefs": ["quality"],
            "assessmentConsequences": [
                {
                    "when": {"anyEqualsLevel": "terrible"},
                    "effect": {"kind": "require_followup", "guidance": "Redo."},
                }
            ],
        },
        assessments=[
            {
                "id": "quality",
                "purpose": "How good.",
                "dimensions": [{"id": "depth", "purpose": "Depth.", "levels": ["low", "high"]}],
            }
        ],
    )
    found = validate_workflow(raw)
    assert [(p.code, p.path) for p in found] == [
        ("UNKNOWN_ASSESSMENT_LEVEL", "$.steps[0].assessmentConsequences[0].when.anyEqualsLevel")
    ]
    assert "low, high" in found[0].fix or "high, low" in found[0].fix
    raw["steps"][0]["assessmentRefs"] = ["qualty"]
    assert ("UNKNOWN_ASSESSMENT", "$.steps[0].assessmentRefs[0]") in problems(raw)


def test_hostile_nesting_is_a_problem_not_a_crash() -> None:
    from pathlib import Path

    from workrail.workflow.catalog import FoundFile, InvalidWorkflow, WorkflowSource, load_file

    depth = 5000
    text = (
        '{"id":"deep","name":"d","description":"d","version":"1.0.0","steps":[{"id":"one",'
        '"title":"t","prompt":"p","runCondition":'
        + '{"not":' * depth
        + '{"var":"x"}'
        + "}" * depth
        + "}]}"
    )
    found = load_file(FoundFile(WorkflowSource("custom", Path(".")), Path("x.json"), text.encode()))
    assert isinstance(found, InvalidWorkflow)
    assert [p.code for p in found.problems] == ["INVALID_JSON"]
    parts = [{"kind": "text", "text": "a"}] * 20000
    wide = workflow({"id": "one", "title": "One", "promptBlocks": {"goal": parts}})
    assert compiled(wide)["steps"][0]["prompt"].endswith("a" * 20000)


def test_routine_ids_map_to_template_ids_without_namespace_or_prefix() -> None:
    assert routine_template_id("routine-context-gathering") == (
        "wr.templates.routine.context-gathering"
    )
    assert routine_template_id("wr.routine-design-review") == "wr.templates.routine.design-review"
    assert routine_template_id("team.checks") == "wr.templates.routine.checks"
