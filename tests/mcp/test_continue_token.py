"""One continue token (the reference's newer protocol) beside the v1.4 fields: every answer
that offers an advance carries a continueToken, continue_workflow infers the intent from
it, replays are byte-identical and write nothing, and mixing protocols is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.mcp.conftest import advance_args, fail, ok
from tests.mcp.test_answers_agree import assert_agrees
from tests.mcp.test_tools import event_count
from workrail.mcp.validation import CONTINUE_TOKEN_MIXED

pytestmark = pytest.mark.anyio


def with_output(answer: dict[str, Any], notes: str) -> dict[str, Any]:
    return {**answer["nextCall"]["params"], "output": {"notesMarkdown": notes}}


async def test_every_answer_that_offers_an_advance_carries_a_short_continue_token(
    client: Client,
) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    assert start["continueToken"].startswith("ct1.")
    assert len(start["continueToken"]) <= 100
    advanced = await ok(client, "continue_workflow", advance_args(start, "planned"))
    recovered = await ok(
        client, "continue_workflow", {"intent": "rehydrate", "stateToken": advanced["stateToken"]}
    )
    checkpoint = await ok(
        client, "checkpoint_workflow", {"checkpointToken": advanced["checkpointToken"]}
    )
    for answer in (advanced, recovered, checkpoint):
        assert answer["continueToken"].startswith("ct1.")
        assert len(answer["continueToken"]) <= 100
    # v1.4 calls keep v1.4 nextCalls (the reference transcripts replay unchanged).
    assert advanced["nextCall"]["params"]["intent"] == "advance"


async def test_walk_a_workflow_with_continue_tokens_only(client: Client) -> None:
    r = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    steps = [r["pending"]["stepId"]]
    r = await ok(
        client,
        "continue_workflow",
        {"continueToken": r["continueToken"], "output": {"notesMarkdown": "planned"}},
    )
    while r["nextCall"] is not None:
        assert r["nextCall"] == {
            "tool": "continue_workflow",
            "params": {"continueToken": r["continueToken"]},
        }
        assert_agrees(r)
        steps.append(r["pending"]["stepId"])
        r = await ok(client, "continue_workflow", with_output(r, f"did {steps[-1]}"))
    assert steps == ["plan", "build", "verify"]
    assert r["isComplete"] is True
    assert "continueToken" not in r


async def test_without_output_a_continue_token_rehydrates_and_writes_nothing(
    client: Client, data_dir: Path
) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    before = event_count(data_dir)
    recovered = await ok(client, "continue_workflow", {"continueToken": start["continueToken"]})
    assert event_count(data_dir) == before
    assert recovered["pending"]["stepId"] == "plan"
    assert recovered["stateToken"] == start["stateToken"]  # the node's own, re-minted
    assert recovered["nextCall"]["params"] == {"continueToken": recovered["continueToken"]}
    # The explicit intent is honoured too.
    again = await ok(
        client,
        "continue_workflow",
        {"continueToken": start["continueToken"], "intent": "rehydrate"},
    )
    assert again["pending"] == recovered["pending"]


async def test_replaying_a_continue_token_is_byte_identical_and_writes_nothing(
    client: Client, data_dir: Path
) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    args = {"continueToken": start["continueToken"], "output": {"notesMarkdown": "planned"}}
    first = await client.call_tool("continue_workflow", args)
    before = event_count(data_dir)
    again = await client.call_tool("continue_workflow", args)
    assert again.content[0].text == first.content[0].text  # type: ignore[union-attr]
    assert event_count(data_dir) == before


async def test_a_continue_token_replayed_with_other_output_is_warned_in_its_own_words(
    client: Client,
) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    token = start["continueToken"]
    await ok(
        client, "continue_workflow", {"continueToken": token, "output": {"notesMarkdown": "a"}}
    )
    again = await ok(
        client, "continue_workflow", {"continueToken": token, "output": {"notesMarkdown": "b"}}
    )
    (warning,) = again["warnings"]
    assert warning["code"] == "OUTPUT_NOT_RECORDED"
    assert "continueToken" in warning["message"]


async def test_both_protocols_share_one_idempotency_key(client: Client, data_dir: Path) -> None:
    """A continueToken is the state and ack of one response: advancing with it and with
    that response's stateToken + ackToken is the same attempt, recorded once."""
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    by_token = await ok(
        client,
        "continue_workflow",
        {"continueToken": start["continueToken"], "output": {"notesMarkdown": "planned"}},
    )
    before = event_count(data_dir)
    by_fields = await ok(client, "continue_workflow", advance_args(start, "planned"))
    assert event_count(data_dir) == before
    assert by_fields["stateToken"] == by_token["stateToken"]
    assert by_fields["continueToken"] == by_token["continueToken"]


async def test_a_blocked_answer_retries_through_its_continue_token(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "val-flow"})
    blocked = await ok(
        client,
        "continue_workflow",
        {"continueToken": start["continueToken"], "output": {"notesMarkdown": "not yet"}},
    )
    assert blocked["kind"] == "blocked"
    assert blocked["nextCall"]["params"] == {"continueToken": blocked["continueToken"]}
    passed = await ok(client, "continue_workflow", with_output(blocked, "DONE"))
    assert passed["kind"] == "ok"
    assert passed["pending"]["stepId"] == "write-two"


@pytest.mark.parametrize("other", ["stateToken", "ackToken"])
async def test_mixing_the_protocols_is_a_validation_error(client: Client, other: str) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    env = await fail(
        client,
        "continue_workflow",
        {"continueToken": start["continueToken"], other: start[other], "intent": "advance"},
        "VALIDATION_ERROR",
    )
    assert env["details"]["validationErrors"] == [
        {"path": "continueToken", "message": CONTINUE_TOKEN_MIXED}
    ]
    assert "continueToken" in env["details"]["correctTemplate"]


async def test_rehydrate_intent_with_output_is_refused(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    env = await fail(
        client,
        "continue_workflow",
        {
            "continueToken": start["continueToken"],
            "intent": "rehydrate",
            "output": {"notesMarkdown": "x"},
        },
        "VALIDATION_ERROR",
    )
    assert env["details"]["validationErrors"][0]["path"] == "output"


async def test_a_state_only_token_recovers_but_cannot_advance(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    recovered = await ok(client, "continue_workflow", {"continueToken": start["stateToken"]})
    assert recovered["stateToken"] == start["stateToken"]
    env = await fail(
        client,
        "continue_workflow",
        {"continueToken": start["stateToken"], "output": {"notesMarkdown": "x"}},
        "VALIDATION_ERROR",
    )
    assert "state-only" in env["message"]


async def test_other_token_kinds_are_refused_with_a_clear_message(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    for kind in ("ackToken", "checkpointToken"):
        env = await fail(
            client,
            "continue_workflow",
            {"continueToken": start[kind]},
            "TOKEN_INVALID_FORMAT",
        )
        assert "Expected a continue token" in env["message"]
    tampered = start["continueToken"][:-2] + ("AA" if start["continueToken"][-2:] != "AA" else "BA")
    await fail(client, "continue_workflow", {"continueToken": tampered}, "TOKEN_BAD_SIGNATURE")


async def test_v1_fields_still_require_intent_and_state_token(client: Client) -> None:
    env = await fail(client, "continue_workflow", {}, "VALIDATION_ERROR")
    paths = {e["path"] for e in env["details"]["validationErrors"]}
    assert paths == {"intent", "stateToken"}
