"""One large or hostile call must not stall other clients (issue 16, defect 2): argument
checking runs off the event loop, its work is bounded whatever the arguments hold, and the
answer never echoes long input back."""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from tests.mcp.conftest import fail, ok
from workrail.engine.errors import EngineError
from workrail.mcp import tool_calls as tool_calls_module
from workrail.mcp.validation import MAX_REPORTED_KEYS, validate_arguments

pytestmark = pytest.mark.anyio

HUGE_KEY = "workflowId" + "x" * 3_900_000
SMALL_ANSWER = 4096


def _text_size(result: Any) -> int:
    return len(result.content[0].text)


async def test_a_huge_unknown_key_gets_a_small_answer(client: Client) -> None:
    result = await client.call_tool("start_workflow", {"workflowId": "probe-flow", HUGE_KEY: 1})
    assert result.is_error
    assert _text_size(result) < SMALL_ANSWER
    envelope = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert envelope["code"] == "VALIDATION_ERROR"
    (hint,) = envelope["details"]["suggestions"]
    assert hint["provided"].endswith(f"… ({len(HUGE_KEY)} characters)")
    assert "didYouMean" not in hint


async def test_a_million_artifacts_get_a_small_answer(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    args = {
        **start["nextCall"]["params"],
        "output": {"notesMarkdown": "done", "artifacts": [0] * 1_000_000},
    }
    result = await client.call_tool("continue_workflow", args)
    assert result.is_error
    assert _text_size(result) < SMALL_ANSWER
    envelope = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert envelope["code"] == "VALIDATION_ERROR"
    assert envelope["details"]["details"]["kind"] == "context_budget_exceeded"


async def test_a_context_with_a_million_keys_is_refused_by_its_budget(client: Client) -> None:
    context = {f"k{i}": i for i in range(1_000_000)}
    env = await fail(
        client,
        "start_workflow",
        {"workflowId": "probe-flow", "context": context},
        "VALIDATION_ERROR",
    )
    assert env["details"]["details"]["kind"] == "context_budget_exceeded"
    assert "more than 262144 values" in env["message"]


async def test_validation_runs_off_the_event_loop(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call held inside argument checking must not keep a second call from being
    answered. Before the fix checking ran on the event loop, so the held call froze it
    and the small call could only finish after it."""
    entered, release = threading.Event(), threading.Event()
    real = validate_arguments

    def held(tool: str, arguments: dict[str, Any], *rest: Any) -> EngineError | None:
        if HUGE_KEY in arguments:
            entered.set()
            release.wait(timeout=120)  # set by the test: the bound only ends a hang
        return real(tool, arguments, *rest)

    monkeypatch.setattr(tool_calls_module, "validate_arguments", held)
    finished: list[str] = []

    async def big() -> None:
        await client.call_tool("start_workflow", {"workflowId": "probe-flow", HUGE_KEY: 1})
        finished.append("big")

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(big)
        assert await anyio.to_thread.run_sync(lambda: entered.wait(timeout=30))
        await ok(client, "list_workflows", {})
        finished.append("small")
        release.set()
    assert finished == ["small", "big"]


async def test_a_hostile_call_and_a_small_one_both_answer(client: Client) -> None:
    answers: dict[str, Any] = {}

    async def call(name: str, tool: str, args: dict[str, Any]) -> None:
        answers[name] = await client.call_tool(tool, args)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call, "big", "start_workflow", {"workflowId": "probe-flow", HUGE_KEY: 1})
        tasks.start_soon(call, "small", "list_workflows", {})
    assert answers["big"].is_error
    assert _text_size(answers["big"]) < SMALL_ANSWER
    assert not answers["small"].is_error


def test_many_unknown_keys_are_counted_not_listed() -> None:
    args: dict[str, Any] = {"workflowId": "probe-flow"}
    args.update({f"extra{i:02d}": i for i in range(40)})
    problem = validate_arguments("start_workflow", args)
    assert problem is not None
    assert len(problem.details["suggestions"]) == MAX_REPORTED_KEYS
    message = problem.details["validationErrors"][0]["message"]
    assert message.endswith(f"and {40 - MAX_REPORTED_KEYS} more")


def test_an_object_wider_than_any_schema_is_refused_without_reading_its_keys() -> None:
    args = {f"k{i}": i for i in range(100_000)}
    problem = validate_arguments("list_workflows", args)
    assert problem is not None
    assert problem.details["validationErrors"] == [
        {
            "path": "",
            "message": "Object has 100000 keys; at most 64 are accepted (see correctTemplate "
            "for the fields this tool takes)",
        }
    ]
    assert "suggestions" not in problem.details


@pytest.mark.parametrize("field", ["stateToken", "intent"])
def test_long_values_are_not_echoed(field: str) -> None:
    args: dict[str, Any] = {"intent": "rehydrate", "stateToken": "st1.x"}
    args[field] = "y" * 1_000_000
    problem = validate_arguments("continue_workflow", args)
    assert problem is not None
    assert len(json.dumps(problem.to_envelope())) < SMALL_ANSWER
