"""The scripted agent itself: it must finish a workflow from the answers alone, retry a
blocked step, supply a value an answer says is missing, and say where it got stuck."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripted_agent import (
    AgentStuck,
    Output,
    Script,
    ScriptedAgent,
    Visit,
    scripted,
    workrail_client,
)

FIXTURES = Path(__file__).parent / "fixtures" / "agent"
pytestmark = pytest.mark.anyio


def _loop_decision(decisions: list[str]) -> Script:
    def script(visit: Visit) -> Output:
        decision = decisions[min(visit.visit, len(decisions) - 1)]
        artifact = {"kind": "wr.loop_control", "loopId": "polish", "decision": decision}
        return Output(notes="Polished.", artifacts=[artifact])

    return script


async def test_the_agent_finishes_a_workflow_from_the_answers_alone(tmp_path: Path) -> None:
    script = scripted(
        {
            "collect": Output(
                notes="Items: a, b",
                context={"items": ["a", "b"], "size": "small"},
                artifacts=[{"kind": "wr.loop_control", "loopId": "polish", "decision": "continue"}],
            ),
            "polish-pass": _loop_decision(["continue", "stop"]),
        }
    )
    async with workrail_client(tmp_path, [FIXTURES]) as client:
        run = await ScriptedAgent(client, script).run("agent-probe")
    assert run.complete
    assert run.steps == [
        "collect",
        "process-item",
        "process-item",
        "polish-pass",
        "polish-pass",
        "wrap-up",
    ]
    assert run.blocked == []


async def test_a_condition_true_runs_the_step(tmp_path: Path) -> None:
    script = scripted(
        {
            "collect": Output(
                notes="Items: none",
                context={"items": [], "size": "large"},
                artifacts=[{"kind": "wr.loop_control", "loopId": "polish", "decision": "stop"}],
            ),
        }
    )
    async with workrail_client(tmp_path, [FIXTURES]) as client:
        run = await ScriptedAgent(client, script).run("agent-probe")
    assert run.steps == ["collect", "large-only", "wrap-up"]


async def test_a_blocked_step_is_retried_with_what_the_answer_asks(tmp_path: Path) -> None:
    def collect(visit: Visit) -> Output:
        if not visit.blocked:
            return Output(notes="nothing to say")  # fails the contains rule
        assert any("Items:" in issue for issue in visit.issues), visit.answer
        return Output(
            notes="Items: a",
            context={"items": ["a"]},
            artifacts=[{"kind": "wr.loop_control", "loopId": "polish", "decision": "stop"}],
        )

    async with workrail_client(tmp_path, [FIXTURES]) as client:
        run = await ScriptedAgent(client, scripted({"collect": collect})).run("agent-probe")
    assert run.complete
    assert run.blocked == ["collect"]
    assert run.steps == ["collect", "process-item", "wrap-up"]


async def test_a_missing_value_is_supplied_through_the_answers_next_call(
    tmp_path: Path,
) -> None:
    # No items in context: the forEach loop answers VALIDATION_ERROR naming context.items.
    supplied: list[str] = []

    def supply(missing: dict[str, object]) -> object:
        supplied.append(str(missing["key"]))
        if missing["in"] == "context":
            return ["only"]
        return {"kind": "wr.loop_control", "loopId": "polish", "decision": "stop"}

    async with workrail_client(tmp_path, [FIXTURES]) as client:
        agent = ScriptedAgent(
            client, scripted({"collect": Output(notes="Items: ?")}), supply=supply
        )
        run = await agent.run("agent-probe")
    assert run.complete
    assert "items" in supplied
    assert run.steps[:2] == ["collect", "process-item"]


async def test_an_agent_that_cannot_comply_says_where_it_is_stuck(tmp_path: Path) -> None:
    async with workrail_client(tmp_path, [FIXTURES]) as client:
        agent = ScriptedAgent(client, scripted({"collect": Output(notes="no")}), max_retries=2)
        with pytest.raises(AgentStuck, match="collect"):
            await agent.run("agent-probe")


async def test_a_start_that_needs_a_value_is_sent_again_with_it(tmp_path: Path) -> None:
    def supply(missing: dict[str, object]) -> object:
        assert missing["key"] == "items"
        return ["one", "two"]

    async with workrail_client(tmp_path, [FIXTURES]) as client:
        run = await ScriptedAgent(client, supply=supply).run("agent-start-needs")
    assert run.complete
    assert run.steps == ["work", "work"]
    assert run.turns[0].is_error
    assert run.turns[1].tool == "start_workflow"
