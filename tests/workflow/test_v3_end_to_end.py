"""Each construct of the current language this side compiles or renders, driven end to end
over MCP by the scripted agent, which reads only the answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scripted_agent import Output, ScriptedAgent, scripted, tool_answer, workrail_client
from workrail.workflow.passes.blocks import HEADINGS
from workrail.workflow.passes.features import FEATURES
from workrail.workflow.passes.metrics import COMMITS_KEY, OUTCOME_KEY
from workrail.workflow.passes.refs import REF_TEXTS

V3 = Path(__file__).parent / "fixtures" / "v3"
pytestmark = pytest.mark.anyio


async def test_a_block_prompt_with_refs_and_features(tmp_path: Path) -> None:
    async with workrail_client(tmp_path, [V3]) as client:
        run = await ScriptedAgent(client).run("v3.blocks")
    assert run.complete
    assert run.steps == ["plan", "write-up"]
    plan = run.prompts["plan"][0]
    assert plan.startswith(f"{HEADINGS['goal']}\nPlan the change to the parser.")
    assert "1. Read the parser.\n2. List the edge cases." in plan
    assert REF_TEXTS["wr.refs.notes_first_durability"] in plan
    assert REF_TEXTS["wr.refs.memory_usage"] in plan  # memory_context feature
    assert FEATURES["wr.features.subagent_guidance"].verify[0] in plan
    assert run.prompts["write-up"] == ["Write the plan down."]  # raw prompts: no features


async def test_metrics_footer_and_catalogue_metadata(tmp_path: Path) -> None:
    script = scripted(
        {
            "change": Output(notes="Changed.", context={COMMITS_KEY: ["abc123"]}),
            "ship": Output(notes="Shipped.", context={OUTCOME_KEY: "success"}),
        }
    )
    async with workrail_client(tmp_path, [V3]) as client:
        listed = await tool_answer(client, "list_workflows", {})
        row = next(w for w in listed["workflows"] if w["workflowId"] == "v3.metrics")
        assert row["about"].startswith("## Metrics probe")
        assert row["examples"] == ["Fix the flaky login test and open a pull request"]
        plain = next(w for w in listed["workflows"] if w["workflowId"] == "v3.fragments")
        assert "about" not in plain
        assert "examples" not in plain
        inspected = await tool_answer(client, "inspect_workflow", {"workflowId": "v3.metrics"})
        assert inspected["about"] == row["about"]
        assert inspected["authoringSpec"]["stale"] is True
        assert inspected["authoringSpec"]["validatedAgainstSpecVersion"] == 3
        run = await ScriptedAgent(client, script).run("v3.metrics")
    assert run.complete
    first, last = run.prompts["change"][0], run.prompts["ship"][0]
    assert COMMITS_KEY in first
    assert OUTCOME_KEY not in first
    assert COMMITS_KEY in last
    assert OUTCOME_KEY in last


@pytest.mark.parametrize(
    ("depth", "shown", "hidden"), [("deep", "DEEP", "QUICK"), ("fast", "QUICK", "DEEP")]
)
async def test_fragments_follow_the_context_both_ways(
    tmp_path: Path, depth: str, shown: str, hidden: str
) -> None:
    script = scripted({"choose": Output(notes="Chosen.", context={"depth": depth})})
    async with workrail_client(tmp_path, [V3]) as client:
        run = await ScriptedAgent(client, script).run("v3.fragments")
    assert run.complete
    assert run.prompts["choose"][0] == "Say how deep to go.\n\nBe brief."
    work = run.prompts["work"][0]
    assert shown in work
    assert hidden not in work


async def test_a_routine_is_run_as_the_callers_steps(tmp_path: Path) -> None:
    async with workrail_client(tmp_path, [V3]) as client:
        listed = await tool_answer(client, "list_workflows", {})
        run = await ScriptedAgent(client).run("v3.routine-call")
    assert "routine-e2e-check" not in {w["workflowId"] for w in listed["workflows"]}
    assert run.complete
    assert run.steps == ["start", "check__inspect", "check__report", "finish"]
    assert run.prompts["check__inspect"] == ["Inspect the parser for defects."]
    first_answer = next(
        t.answer
        for t in run.turns
        if (t.answer.get("pending") or {}).get("stepId") == "check__inspect"
    )
    assert first_answer["pending"]["title"] == "Inspect the parser"


async def test_references_come_with_every_step(tmp_path: Path) -> None:
    async with workrail_client(tmp_path, [V3]) as client:
        run = await ScriptedAgent(client).run("v3.references")
        plain = await ScriptedAgent(client).run("v3.fragments")
    assert run.complete
    step_answers = [t.answer for t in run.turns if t.answer.get("pending")]
    assert len(step_answers) == 2
    for answer in step_answers:
        assert answer["references"] == [
            {
                "id": "style",
                "title": "Style guide",
                "source": "docs/style.md",
                "purpose": "How code is written here.",
                "authoritative": True,
                "resolveFrom": "workspace",
            }
        ]
    assert all("references" not in t.answer for t in plain.turns)


async def test_placeholders_are_filled_when_known_and_kept_otherwise(tmp_path: Path) -> None:
    context = {"ticket": {"id": "T-7"}, "files": ["a.py", "b.py"]}
    async with workrail_client(tmp_path, [V3]) as client:
        on = await ScriptedAgent(client).run("v3.placeholders", context)
        off = await ScriptedAgent(client).run("v3.placeholders-off", context)
    assert on.complete
    assert off.complete
    assert on.prompts["intro"][0] == "Working on T-7 for {{owner}}."
    reviews = [p.split("\n")[0] for p in on.prompts["review-file"]]
    assert reviews == ["Review a.py (0).", "Review b.py (1)."]
    assert off.prompts["intro"][0] == "Working on {{ticket.id}} for {{owner}}."
    assert off.prompts["review-file"][0].startswith("Review {{currentItem}} ({{currentIndex}}).")


async def test_a_python_only_regex_is_honoured(tmp_path: Path) -> None:
    script = scripted(
        {"answer": [Output(notes="not yet"), Output(notes="STATUS: DONE, all good.")]}
    )
    async with workrail_client(tmp_path, [V3]) as client:
        run = await ScriptedAgent(client, script).run("v3.regex")
    assert run.complete
    assert run.blocked == ["answer"]  # the first notes fail the rule, the second pass it


async def test_a_function_reference_without_definition_runs(tmp_path: Path) -> None:
    async with workrail_client(tmp_path, [V3]) as client:
        run = await ScriptedAgent(client).run("v3.function-not-defined")
    assert run.complete


async def test_a_library_workflow_runs_with_the_bundled_rights(tmp_path: Path) -> None:
    library = tmp_path / "library"
    (library / "routines").mkdir(parents=True)
    raw = json.loads((V3 / "routine-call.json").read_text())
    (library / "wr.checked.json").write_text(json.dumps({**raw, "id": "wr.checked"}))
    (library / "routines" / "check.json").write_text(
        (V3 / "routines" / "routine-e2e-check.json").read_text()
    )
    env = {"WORKFLOW_LIBRARY_PATH": str(library)}
    async with workrail_client(tmp_path / "run", env=env) as client:
        listed = await tool_answer(client, "list_workflows", {})
        assert "wr.checked" in {w["workflowId"] for w in listed["workflows"]}
        run = await ScriptedAgent(client).run("wr.checked")
    assert run.complete
    assert run.steps == ["start", "check__inspect", "check__report", "finish"]
