"""Forgiving input: the near-misses agents commonly send are read as meant and named in a
`warnings` entry with the canonical field; anything else unknown is still refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from tests.mcp.conftest import fail, ok

pytestmark = pytest.mark.anyio


def _aliases(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (w["field"], w.get("canonical", ""))
        for w in answer.get("warnings", [])
        if w["code"] in {"ARGUMENT_ALIAS_ACCEPTED", "ARGUMENT_JSON_PARSED"}
    ]


@pytest.mark.parametrize("alias", ["notes", "notesMarkdown"])
async def test_top_level_notes_are_read_as_output_notes(client: Client, alias: str) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "val-flow"})
    r = await ok(client, "continue_workflow", {**start["nextCall"]["params"], alias: "DONE"})
    assert r["kind"] == "ok"
    assert r["pending"]["stepId"] == "write-two"
    assert _aliases(r) == [(alias, "output.notesMarkdown")]
    assert alias in r["warnings"][0]["message"]


async def test_context_variables_top_level_artifacts_and_token(client: Client) -> None:
    start = await ok(
        client,
        "start_workflow",
        {"workflowId": "probe-flow", "contextVariables": {"ticket": "T-1"}},
    )
    assert _aliases(start) == [("contextVariables", "context")]
    r = await ok(
        client,
        "continue_workflow",
        {"token": start["continueToken"], "notes": "planned", "artifacts": [{"k": 1}]},
    )
    assert r["pending"]["stepId"] == "build"
    assert sorted(_aliases(r)) == [
        ("artifacts", "output.artifacts"),
        ("notes", "output.notesMarkdown"),
        ("token", "continueToken"),
    ]


@pytest.mark.parametrize("intent", ["Advance", "ADVANCE", " advance "])
async def test_an_intent_in_another_case_is_accepted(client: Client, intent: str) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    args = {**start["nextCall"]["params"], "intent": intent, "output": {"notesMarkdown": "x"}}
    r = await ok(client, "continue_workflow", args)
    assert r["pending"]["stepId"] == "build"
    assert _aliases(r) == [("intent", "intent")]


async def test_object_arguments_sent_as_json_text_are_parsed(client: Client) -> None:
    start = await ok(
        client,
        "start_workflow",
        {"workflowId": "probe-flow", "context": json.dumps({"ticket": "T-1"})},
    )
    assert _aliases(start) == [("context", "")]
    args = {**start["nextCall"]["params"], "output": json.dumps({"notesMarkdown": "planned"})}
    r = await ok(client, "continue_workflow", args)
    assert r["pending"]["stepId"] == "build"
    assert _aliases(r) == [("output", "")]


async def test_json_text_that_is_not_an_object_stays_an_error(client: Client) -> None:
    env = await fail(
        client,
        "start_workflow",
        {"workflowId": "probe-flow", "context": "[1, 2]"},
        "VALIDATION_ERROR",
    )
    assert env["details"]["validationErrors"][0]["path"] == "context"


@pytest.mark.parametrize("depth", [100_000, 2_000])
async def test_json_text_too_deep_to_parse_is_a_validation_error(
    client: Client, depth: int
) -> None:
    deep = '{"a":' + "[" * depth
    env = await fail(
        client, "start_workflow", {"workflowId": "probe-flow", "context": deep}, "VALIDATION_ERROR"
    )
    assert env["details"]["validationErrors"][0]["path"] == "context"


async def test_an_alias_beside_its_canonical_field_is_refused(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    args = {**start["nextCall"]["params"], "notes": "a", "output": {"notesMarkdown": "b"}}
    env = await fail(client, "continue_workflow", args, "VALIDATION_ERROR")
    assert env["details"]["validationErrors"] == [
        {
            "path": "notes",
            "message": 'Provide either "output.notesMarkdown" or "notes", not both. '
            'Canonical field: "output.notesMarkdown".',
        }
    ]


async def test_other_unknown_keys_are_still_refused_with_did_you_mean(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    env = await fail(
        client,
        "continue_workflow",
        {**start["nextCall"]["params"], "statetoken2": "x"},
        "VALIDATION_ERROR",
    )
    assert env["details"]["suggestions"][0]["didYouMean"] == "stateToken"


async def test_replay_with_the_same_alias_is_byte_identical(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    args = {"token": start["continueToken"], "notes": "planned"}
    first = await client.call_tool("continue_workflow", args)
    again = await client.call_tool("continue_workflow", args)
    assert first.content[0].text == again.content[0].text  # type: ignore[union-attr]
