"""Prompt rendering for `pending` and the rehydrate recovery prompt."""

from __future__ import annotations

from tests.workflow.wf_helpers import compiled, make_workflow, step
from workrail.core.snapshot import LoopPathFrame, StepInstance
from workrail.workflow import RecoveryContext, render_pending, render_recovery
from workrail.workflow.prompts import RECOVERY_BUDGET_BYTES, RECOVERY_TRUNCATION_SUFFIX


def test_plain_prompt_and_confirmation() -> None:
    wf = compiled(make_workflow([step("ask", requireConfirmation={"var": "x", "equals": 1})]))
    pending = render_pending(wf, StepInstance(step_id="ask"))
    assert pending.to_json() == {"stepId": "ask", "title": "Ask", "prompt": "Do ask."}
    assert pending.require_confirmation  # a condition object counts as true (quirk A13)


def test_composition_and_array_requirements() -> None:
    composition = {
        "and": [
            {"type": "contains", "value": "OK", "message": "m"},
            {"type": "length", "min": 3, "message": "l"},
        ]
    }
    wf = compiled(
        make_workflow(
            [
                step("two", validationCriteria=composition),
                step(
                    "arr",
                    validationCriteria=[
                        {"type": "regex", "pattern": "^a", "flags": "i", "message": "m"}
                    ],
                ),
            ]
        )
    )
    assert render_pending(wf, StepInstance(step_id="two")).prompt == (
        'Do two.\n\n**OUTPUT REQUIREMENTS:**\n- Must contain: "OK"\n- Length: ≥3 chars'
    )
    assert render_pending(wf, StepInstance(step_id="arr")).prompt.endswith(
        "- Must match pattern: ^a (flags: i)"
    )


def test_loop_control_contract_section_and_loop_context() -> None:
    body = [step("review", outputContract={"contractRef": "wr.contracts.loop_control"})]
    loop = {
        "id": "each-x",
        "type": "loop",
        "title": "Each",
        "loop": {"type": "forEach", "items": "xs", "maxIterations": 4},
        "body": body,
    }
    wf = compiled(make_workflow([loop]))
    instance = StepInstance(
        step_id="review", loop_path=[LoopPathFrame(loop_id="each-x", iteration=1)]
    )
    prompt = render_pending(wf, instance, {"xs": ["a", {"k": "b"}]}).prompt
    assert '- currentItem = {"k":"b"}' in prompt
    assert "- currentIndex = 1" in prompt
    assert prompt.endswith(
        "**OUTPUT REQUIREMENTS (System):**\n- Artifact contract: wr.contracts.loop_control\n"
        '- Provide an artifact with kind: "wr.loop_control"\n'
        '- Fields: loopId (lowercase, delimiter-safe), decision ("continue" | "stop")'
    )


def test_unknown_step_falls_back() -> None:
    wf = compiled(make_workflow([step("a")]))
    assert render_pending(wf, StepInstance(step_id="gone")).prompt == "Pending step: gone"


def test_recovery_sections_match_reference_layout() -> None:
    wf = compiled(make_workflow([step("plan"), step("build")]))
    recovery = RecoveryContext(
        child_count=1, preferred_tip_node_id="node_x", ancestry_recaps=["planned"]
    )
    assert render_recovery(wf, StepInstance(step_id="build"), recovery).prompt == (
        "Do build.\n\n## Recovery Context\n\n### Branch Summary\nThis node has 1 child. "
        "Preferred branch tip: node_x\n\n### Ancestry Recap\nplanned"
    )
    tip = render_recovery(wf, StepInstance(step_id="build"), RecoveryContext())
    assert tip.prompt == "Do build."
    down = RecoveryContext(child_count=2, preferred_tip_node_id="n", downstream_recaps=["a", "b"])
    assert (
        "This node has 2 children."
        in render_recovery(wf, StepInstance(step_id="plan"), down).prompt
    )
    assert (
        "### Downstream Recap (Preferred Branch)\na\n\nb"
        in render_recovery(wf, StepInstance(step_id="plan"), down).prompt
    )
    failed = render_recovery(
        wf,
        StepInstance(step_id="plan"),
        RecoveryContext(unavailable_reason="outputs projection failure"),
    )
    assert (
        failed.prompt
        == "Do plan.\n\n(Recovery context unavailable due to outputs projection failure)"
    )


def test_function_definitions_respect_scope_and_references() -> None:
    wf = compiled(
        make_workflow(
            [
                step(
                    "refs",
                    functionReferences=["wide()"],
                    functionDefinitions=[{"name": "local", "definition": "L"}],
                ),
                step(
                    "all",
                    functionDefinitions=[{"name": "local", "definition": "L", "scope": "step"}],
                ),
            ],
            functionDefinitions=[
                {"name": "wide", "definition": "W"},
                {"name": "hidden", "definition": "H", "scope": "step"},
            ],
        )
    )
    refs = render_recovery(wf, StepInstance(step_id="refs"), RecoveryContext()).prompt
    assert "function wide(...)\n  W" in refs
    assert "local" not in refs
    everything = render_recovery(wf, StepInstance(step_id="all"), RecoveryContext()).prompt
    assert everything.index("function local") < everything.index("function wide")
    assert "hidden" not in everything


def test_recovery_budget_truncates_at_character_boundary() -> None:
    wf = compiled(make_workflow([step("a")]))
    recovery = RecoveryContext(child_count=1, ancestry_recaps=["é" * 7000])
    prompt = render_recovery(wf, StepInstance(step_id="a"), recovery).prompt
    assert prompt.endswith(RECOVERY_TRUNCATION_SUFFIX)
    assert len(prompt.encode("utf-8")) <= RECOVERY_BUDGET_BYTES


def test_gate_objects_fire_by_their_condition_and_v14_objects_always() -> None:
    from workrail.workflow.prompts import confirmation_required

    gate = {"kind": "human_approval", "condition": {"var": "audience", "equals": "public"}}
    assert confirmation_required(gate, {"audience": "Public"})
    assert not confirmation_required(gate, {"audience": "team"})
    assert confirmation_required({"kind": "coordinator_eval"}, {})
    assert confirmation_required({"var": "never"}, {})  # v1.4: any object is true (A13)
    assert not confirmation_required(False, {})


def test_a_parallel_step_with_no_applicable_delegation_says_so() -> None:
    par = {
        "id": "fan",
        "type": "parallel",
        "title": "Fan out",
        "parallelDelegations": [{"workflowId": "a.b", "runCondition": {"var": "on"}}],
    }
    prompt = render_pending(compiled(make_workflow([par])), StepInstance(step_id="fan"), {}).prompt
    assert prompt.startswith("Delegate this step to 0 subagent(s)")
    assert "No delegation applies under the current context" in prompt
    assert "Then bring their results together in your notes for this step." in prompt
