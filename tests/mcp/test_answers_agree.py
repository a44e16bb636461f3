"""Answers that say one thing: nextIntent, nextCall and every piece of advice agree; start,
continue, checkpoint and import answers name their session; an accidental fork is visible;
every field of every schema says what it is for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.mcp.conftest import advance_args, ok
from tests.mcp.test_tools import event_count
from workrail.store.local.backend import LocalBackend

pytestmark = pytest.mark.anyio


def _call_kind(call: dict[str, Any]) -> str:
    """advance or rehydrate, in either protocol (a ct1. token advances once output is
    added; a state-only st1. token only recovers)."""
    params = call["params"]
    if "continueToken" in params:
        return "advance" if params["continueToken"].startswith("ct1.") else "rehydrate"
    return str(params["intent"])


def assert_agrees(answer: dict[str, Any]) -> None:
    """The one rule every step answer follows."""
    intent, call = answer["nextIntent"], answer["nextCall"]
    if intent == "complete":
        assert call is None
        assert answer["pending"] is None
    elif intent == "rehydrate_only":
        assert _call_kind(call) == "rehydrate"
    else:
        assert intent in {"perform_pending_then_continue", "await_user_confirmation"}
        assert _call_kind(call) == "advance"
        assert answer["pending"] is not None
    for blocker in answer.get("blockers", {}).get("blockers", []):
        if answer.get("retryable"):
            fix = blocker["suggestedFix"]
            assert "nextCall" in fix, fix
            assert "WITHOUT ackToken" not in fix, fix


def _session_ids(data_dir: Path) -> list[str]:
    return list(LocalBackend.open(data_dir).sessions.list_ids().unwrap())


async def test_every_step_answer_names_its_session_and_agrees(
    client: Client, data_dir: Path
) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    (sid,) = _session_ids(data_dir)
    answers = [start]
    answers.append(await ok(client, "continue_workflow", advance_args(start, "planned")))
    answers.append(
        await ok(
            client,
            "continue_workflow",
            {"intent": "rehydrate", "stateToken": answers[-1]["stateToken"]},
        )
    )
    answers.append(await ok(client, "continue_workflow", advance_args(answers[-1], "built")))
    answers.append(await ok(client, "continue_workflow", advance_args(answers[-1], "checked")))
    assert answers[-1]["isComplete"] is True
    answers.append(
        await ok(
            client,
            "continue_workflow",
            {"intent": "rehydrate", "stateToken": answers[-1]["stateToken"]},
        )
    )
    for answer in answers:
        assert answer["sessionId"] == sid
        assert_agrees(answer)
    checkpoint = await ok(
        client, "checkpoint_workflow", {"checkpointToken": start["checkpointToken"]}
    )
    assert checkpoint["sessionId"] == sid
    assert checkpoint["nextCall"]["params"]["intent"] == "advance"


async def test_rehydrate_says_to_perform_the_step_its_next_call_advances(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    recovered = await ok(
        client, "continue_workflow", {"intent": "rehydrate", "stateToken": start["stateToken"]}
    )
    assert recovered["nextIntent"] == "perform_pending_then_continue"
    assert recovered["nextCall"]["params"]["intent"] == "advance"


async def test_a_blocked_answer_tells_the_agent_to_send_next_call(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "val-flow"})
    blocked = await ok(client, "continue_workflow", advance_args(start, "not yet"))
    assert blocked["kind"] == "blocked"
    assert_agrees(blocked)
    assert blocked["nextCall"]["params"]["ackToken"] == blocked["retryAckToken"]
    missing = await ok(client, "continue_workflow", advance_args(blocked, None))
    assert missing["blockers"]["blockers"][0]["code"] == "MISSING_REQUIRED_OUTPUT"
    assert_agrees(missing)


async def test_import_names_the_new_session_and_agrees(client: Client, data_dir: Path) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    exported = await ok(client, "export_session", {"stateToken": start["stateToken"]})
    imported = await ok(client, "import_session", {"bundle": exported["bundle"]})
    assert imported["sessionId"] in _session_ids(data_dir)
    assert imported["nextIntent"] == "perform_pending_then_continue"
    assert imported["nextCall"]["params"]["intent"] == "advance"
    assert imported["runs"][0]["nextIntent"] == "perform_pending_then_continue"


# --- forks --------------------------------------------------------------------------------


async def test_a_second_advance_from_one_step_warns_of_the_fork(
    client: Client, data_dir: Path
) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    first = await ok(client, "continue_workflow", advance_args(start, "planned"))
    assert "warnings" not in first
    # An agent that lost the reply rehydrates the old step and advances it again.
    again = await ok(
        client, "continue_workflow", {"intent": "rehydrate", "stateToken": start["stateToken"]}
    )
    forked = await ok(client, "continue_workflow", advance_args(again, "planned twice"))
    (warning,) = forked["warnings"]
    assert warning["code"] == "FORK_CREATED"
    assert warning["otherBranch"]["stateToken"] == first["stateToken"]
    assert warning["otherBranch"]["tipNodeId"] in warning["message"]
    assert_agrees(forked)
    # The fork is kept (intentional forks still work) and its replay says the same.
    before = event_count(data_dir)
    replay = await ok(client, "continue_workflow", advance_args(again, "planned twice"))
    assert replay == forked
    assert event_count(data_dir) == before


async def test_the_other_branch_tip_is_as_it_stood_when_the_fork_was_made(
    client: Client,
) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    one = await ok(client, "continue_workflow", advance_args(start, "planned"))
    two = await ok(client, "continue_workflow", advance_args(one, "built"))
    again = await ok(
        client, "continue_workflow", {"intent": "rehydrate", "stateToken": start["stateToken"]}
    )
    forked = await ok(client, "continue_workflow", advance_args(again, "other plan"))
    assert forked["warnings"][0]["otherBranch"]["stateToken"] == two["stateToken"]
    # The first branch moves on; the fork's recorded answer does not change.
    await ok(client, "continue_workflow", advance_args(two, "checked"))
    replay = await ok(client, "continue_workflow", advance_args(again, "other plan"))
    assert replay == forked


async def test_checkpoints_and_blocked_attempts_are_not_branches(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    await ok(client, "checkpoint_workflow", {"checkpointToken": start["checkpointToken"]})
    advanced = await ok(client, "continue_workflow", advance_args(start, "planned"))
    assert "warnings" not in advanced

    val = await ok(client, "start_workflow", {"workflowId": "val-flow"})
    await ok(client, "continue_workflow", advance_args(val, "not yet"))  # blocked attempt
    again = await ok(
        client, "continue_workflow", {"intent": "rehydrate", "stateToken": val["stateToken"]}
    )
    passed = await ok(client, "continue_workflow", advance_args(again, "DONE"))
    assert passed["kind"] == "ok"
    assert "warnings" not in passed


# --- schemas ------------------------------------------------------------------------------


def _undescribed(schema: Any, path: str) -> list[str]:
    """Paths of properties (and array items of objects) without a description."""
    missing: list[str] = []
    if not isinstance(schema, dict):
        return missing
    for name, sub in schema.get("properties", {}).items():
        if not sub.get("description"):
            missing.append(f"{path}.{name}")
        missing += _undescribed(sub, f"{path}.{name}")
    for option in schema.get("anyOf", []):
        missing += _undescribed(option, path)
    items = schema.get("items")
    if isinstance(items, dict) and items.get("properties"):
        missing += _undescribed(items, f"{path}[]")
    return missing


async def test_every_field_of_every_schema_is_described(full_client: Client) -> None:
    tools = (await full_client.list_tools()).tools
    assert "effect_checkpoint" in [t.name for t in tools]
    missing = []
    for tool in tools:
        missing += _undescribed(tool.input_schema, f"{tool.name}.input")
        assert tool.output_schema is not None, tool.name
        missing += _undescribed(tool.output_schema, f"{tool.name}.output")
    assert missing == []


async def test_list_and_inspect_say_their_hash_is_the_preview_hash(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("list_workflows", "inspect_workflow"):
        schema = tools[name].output_schema
        assert schema is not None
        text = str(schema)
        assert "preview" in text, name
        assert "start_workflow pins" in text, name
