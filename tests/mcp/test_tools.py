"""Every tool end to end through the in-memory MCP client: success shapes, nextIntent /
nextCall, replay semantics, and the JSON error envelope for every code path."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from returns.result import Success

from tests.conftest import REFERENCE
from tests.engine.conftest import make_engine
from tests.mcp.conftest import advance_args, error_body, fail, ok
from workrail.engine.api import Engine
from workrail.mcp import build_server
from workrail.mcp.validation import (
    ADVANCE_WITHOUT_ACK,
    REHYDRATE_WITH_ACK,
    REHYDRATE_WITH_OUTPUT,
)
from workrail.store.local.backend import LocalBackend

pytestmark = pytest.mark.anyio


def event_count(data_dir: Path) -> int:
    sessions = LocalBackend.open(data_dir).sessions
    total = 0
    for sid in sessions.list_ids().unwrap():
        read = sessions.read(sid, lambda log: log.count)
        assert isinstance(read, Success)
        total += read.unwrap()
    return total


# --- list / inspect ---------------------------------------------------------------------


async def test_list_workflows_lists_and_points_at_start(client: Client) -> None:
    r = await ok(client, "list_workflows", {})
    ids = [w["workflowId"] for w in r["workflows"]]
    assert ids == sorted(ids)
    assert "probe-flow" in ids
    assert r["nextIntent"] == "start_workflow"
    assert r["nextCall"] == {"tool": "start_workflow", "params": {"workflowId": "<workflowId>"}}


async def test_list_workflows_placeholder_is_rejected_if_sent_verbatim(client: Client) -> None:
    listed = await ok(client, "list_workflows", {})
    env = await fail(client, "start_workflow", listed["nextCall"]["params"], "VALIDATION_ERROR")
    assert env["details"]["validationErrors"][0]["path"] == "workflowId"


@pytest.mark.parametrize("mode", ["preview", "metadata"])
async def test_inspect_workflow_modes(client: Client, mode: str) -> None:
    r = await ok(client, "inspect_workflow", {"workflowId": "probe-flow", "mode": mode})
    assert r["workflowId"] == "probe-flow"
    assert r["mode"] == mode
    assert r["workflowHash"].startswith("sha256:")
    assert ("preview" in r["compiled"]) is (mode == "preview")
    assert r["nextCall"] == {"tool": "start_workflow", "params": {"workflowId": "probe-flow"}}


async def test_inspect_defaults_to_preview(client: Client) -> None:
    r = await ok(client, "inspect_workflow", {"workflowId": "probe-flow"})
    assert r["mode"] == "preview"
    assert r["compiled"]["preview"]["stepId"] == "plan"


async def test_inspect_unknown_workflow_is_not_found(client: Client) -> None:
    env = await fail(client, "inspect_workflow", {"workflowId": "nope"}, "NOT_FOUND")
    assert env["message"] == "Workflow not found: nope"
    assert env["retry"] == {"kind": "not_retryable"}


async def test_dotted_workflow_id_passes_input_validation(client: Client) -> None:
    await fail(client, "start_workflow", {"workflowId": "wr.namespaced"}, "NOT_FOUND")


# --- start / advance / rehydrate / checkpoint -------------------------------------------


async def test_start_returns_first_step_tokens_and_next_call(client: Client) -> None:
    r = await ok(client, "start_workflow", {"workflowId": "probe-flow", "context": {"a": 1}})
    assert "kind" not in r
    assert r["pending"]["stepId"] == "plan"
    assert r["isComplete"] is False
    assert r["nextIntent"] == "perform_pending_then_continue"
    assert r["nextCall"] == {
        "tool": "continue_workflow",
        "params": {"intent": "advance", "stateToken": r["stateToken"], "ackToken": r["ackToken"]},
    }


async def test_start_unknown_workflow_is_not_found(client: Client) -> None:
    env = await fail(client, "start_workflow", {"workflowId": "nope"}, "NOT_FOUND")
    assert env["details"]["suggestion"].startswith("Use list_workflows")


async def test_success_text_is_pretty_json(client: Client) -> None:
    result = await client.call_tool("start_workflow", {"workflowId": "probe-flow"})
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith('{\n  "stateToken": ')


async def test_walk_to_completion_following_next_call(client: Client) -> None:
    r = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    seen = [r["pending"]["stepId"]]
    while r["nextCall"] is not None:
        r = await ok(client, "continue_workflow", advance_args(r, f"did {seen[-1]}"))
        assert r["kind"] == "ok"
        if r["pending"]:
            seen.append(r["pending"]["stepId"])
    assert seen == ["plan", "build", "verify"]
    assert r["isComplete"] is True
    assert r["nextIntent"] == "complete"
    assert r["pending"] is None


async def test_advance_replay_returns_recorded_outcome_and_writes_nothing(
    client: Client, data_dir: Path
) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    first = await ok(client, "continue_workflow", advance_args(start, "planned"))
    before = event_count(data_dir)
    same = await ok(client, "continue_workflow", advance_args(start, "planned"))
    other = await ok(client, "continue_workflow", advance_args(start, "DIFFERENT"))
    assert same == first
    assert {k: v for k, v in other.items() if k != "warnings"} == first
    assert [w["code"] for w in other["warnings"]] == ["OUTPUT_NOT_RECORDED"]
    assert event_count(data_dir) == before


async def test_blocked_advance_and_one_call_retry(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "val-flow"})
    blocked = await ok(client, "continue_workflow", advance_args(start, "not yet"))
    assert blocked["kind"] == "blocked"
    assert blocked["retryable"] is True
    assert blocked["validation"]["issues"] == ["Notes must contain DONE"]
    assert blocked["nextCall"]["params"]["ackToken"] == blocked["retryAckToken"]
    passed = await ok(client, "continue_workflow", advance_args(blocked, "DONE"))
    assert passed["kind"] == "ok"
    assert passed["pending"]["stepId"] == "write-two"


async def test_rehydrate_recovers_without_writing(client: Client, data_dir: Path) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    advanced = await ok(client, "continue_workflow", advance_args(start, "planned"))
    before = event_count(data_dir)
    r = await ok(
        client,
        "continue_workflow",
        {"intent": "rehydrate", "stateToken": advanced["stateToken"], "context": {"x": 1}},
    )
    assert r["pending"]["stepId"] == "build"
    assert r["nextIntent"] == "perform_pending_then_continue"
    assert r["nextCall"]["params"]["intent"] == "advance"
    assert event_count(data_dir) == before


async def test_checkpoint_is_idempotent_and_does_not_advance(
    client: Client, data_dir: Path
) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    first = await ok(client, "checkpoint_workflow", {"checkpointToken": start["checkpointToken"]})
    before = event_count(data_dir)
    again = await ok(client, "checkpoint_workflow", {"checkpointToken": start["checkpointToken"]})
    assert again == first
    assert first["checkpointNodeId"].startswith("node_")
    assert first["stateToken"] == start["stateToken"]
    assert first["nextCall"]["tool"] == "continue_workflow"
    assert event_count(data_dir) == before


# --- VALIDATION_ERROR -------------------------------------------------------------------


async def _invalid(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    env = await fail(client, tool, args, "VALIDATION_ERROR")
    assert env["message"] == "Invalid input"
    assert env["retry"] == {"kind": "not_retryable"}
    assert env["details"]["suggestion"]
    assert "correctTemplate" in env["details"]
    return env


async def test_unknown_top_level_key_names_it_and_suggests_the_fix(client: Client) -> None:
    env = await _invalid(client, "start_workflow", {"workflowID": "probe-flow"})
    errors = env["details"]["validationErrors"]
    assert {"path": "", "message": "Unrecognized key(s) in object: 'workflowID'"} in errors
    assert {"path": "workflowId", "message": "Required"} in errors
    assert env["details"]["suggestion"] == "Rename 'workflowID' to 'workflowId'."
    assert env["details"]["suggestions"][0]["didYouMean"] == "workflowId"


async def test_a_continue_call_without_any_token_is_shown_the_continue_token(
    client: Client,
) -> None:
    """Each missing field once (jsonschema reports one error per missing key, each naming
    them all), and the suggestion leads with the one-token form."""
    env = await _invalid(client, "continue_workflow", {})
    assert [s["param"] for s in env["details"]["suggestions"]] == ["intent", "stateToken"]
    assert env["details"]["validationErrors"] == [
        {"path": "intent", "message": "Required"},
        {"path": "stateToken", "message": "Required"},
    ]
    assert env["details"]["suggestion"].startswith("Send the continueToken from the latest")
    assert set(env["details"]["correctTemplate"]) == {"continueToken", "output"}


async def test_a_misspelt_token_key_is_told_to_rename_it(client: Client) -> None:
    """A call holding no token because its key is misspelt is told the rename, as any
    other misspelt key is, not the general word on the token forms."""
    env = await _invalid(client, "continue_workflow", {"contineToken": "ct1.x"})
    assert env["details"]["suggestion"] == "Rename 'contineToken' to 'continueToken'."


async def test_extra_key_on_list_workflows(client: Client) -> None:
    env = await _invalid(client, "list_workflows", {"extra": 1})
    assert env["details"]["validationErrors"] == [
        {"path": "", "message": "Unrecognized key(s) in object: 'extra'"}
    ]


@pytest.mark.parametrize(
    ("tool", "args", "path", "message"),
    [
        ("start_workflow", {"workflowId": 5}, "workflowId", "Expected string, received number"),
        ("start_workflow", {"workflowId": ""}, "workflowId", "String must contain at least 1"),
        ("start_workflow", {"workflowId": "a b"}, "workflowId", "Invalid: must match"),
        (
            "start_workflow",
            {"workflowId": "probe-flow", "context": []},
            "context",
            "Expected object, received array",
        ),
        ("inspect_workflow", {"workflowId": "probe-flow", "mode": "full"}, "mode", "Invalid enum"),
        ("continue_workflow", {"intent": "jump", "stateToken": "st1"}, "intent", "Invalid enum"),
        ("continue_workflow", {"intent": "rehydrate"}, "stateToken", "Required"),
        (
            "continue_workflow",
            {"intent": "advance", "stateToken": "s", "ackToken": "a", "output": {"notes": "x"}},
            "output",
            "Unrecognized key(s) in object: 'notes'",
        ),
        (
            "continue_workflow",
            {
                "intent": "advance",
                "stateToken": "s",
                "ackToken": "a",
                "output": {"notesMarkdown": ""},
            },
            "output.notesMarkdown",
            "String must contain at least 1",
        ),
        ("checkpoint_workflow", {}, "checkpointToken", "Required"),
    ],
)
async def test_schema_violations_name_the_field(
    client: Client, tool: str, args: dict[str, Any], path: str, message: str
) -> None:
    env = await _invalid(client, tool, args)
    errors = env["details"]["validationErrors"]
    assert any(e["path"] == path and e["message"].startswith(message) for e in errors), errors


@pytest.mark.parametrize(
    ("args", "path", "message"),
    [
        ({"intent": "advance", "stateToken": "st1"}, "ackToken", ADVANCE_WITHOUT_ACK),
        (
            {"intent": "rehydrate", "stateToken": "st1", "ackToken": "a"},
            "ackToken",
            REHYDRATE_WITH_ACK,
        ),
        (
            {"intent": "rehydrate", "stateToken": "st1", "output": {"notesMarkdown": "x"}},
            "output",
            REHYDRATE_WITH_OUTPUT,
        ),
    ],
)
async def test_cross_field_rules_use_the_reference_wording(
    client: Client, args: dict[str, Any], path: str, message: str
) -> None:
    env = await _invalid(client, "continue_workflow", args)
    assert env["details"]["validationErrors"] == [{"path": path, "message": message}]


async def test_advance_without_ack_message_is_exact(client: Client) -> None:
    env = await _invalid(client, "continue_workflow", {"intent": "advance", "stateToken": "st1"})
    assert env["details"]["validationErrors"][0]["message"] == (
        'intent is "advance" but ackToken is missing. To advance to the next step, include the '
        "ackToken from the previous start_workflow or continue_workflow response. If you don't "
        'have an ackToken, set intent to "rehydrate" to recover the current step.'
    )


async def test_context_too_deep_is_rejected_by_the_engine(client: Client) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(70):
        node["k"] = {}
        node = node["k"]
    env = await fail(
        client, "start_workflow", {"workflowId": "probe-flow", "context": deep}, "VALIDATION_ERROR"
    )
    assert env["message"] == "context is not JSON-serializable for start_workflow (see details)."
    assert env["details"]["details"]["kind"] == "context_too_deep"


# --- token errors -----------------------------------------------------------------------


async def test_garbage_token_is_invalid_format(client: Client) -> None:
    env = await fail(
        client,
        "continue_workflow",
        {"intent": "rehydrate", "stateToken": "hello"},
        "TOKEN_INVALID_FORMAT",
    )
    assert "suggestion" in env["details"]


async def test_wrong_token_kind_is_invalid_format(client: Client) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    await fail(
        client,
        "checkpoint_workflow",
        {"checkpointToken": start["stateToken"]},
        "TOKEN_INVALID_FORMAT",
    )


async def test_token_from_another_data_dir_has_a_bad_signature(
    client: Client, tmp_path: Path
) -> None:
    other = build_server(make_engine(tmp_path / "other"))
    async with Client(other) as foreign:
        start = await ok(foreign, "start_workflow", {"workflowId": "probe-flow"})
    env = await fail(
        client,
        "continue_workflow",
        {"intent": "rehydrate", "stateToken": start["stateToken"]},
        "TOKEN_BAD_SIGNATURE",
    )
    assert env["details"]["suggestion"]


async def test_tokens_from_two_runs_are_a_scope_mismatch(client: Client) -> None:
    a = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    b = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    args = {"intent": "advance", "stateToken": a["stateToken"], "ackToken": b["ackToken"]}
    env = await fail(client, "continue_workflow", args, "TOKEN_SCOPE_MISMATCH")
    assert "same WorkRail response" in env["details"]["suggestion"]


async def test_signed_token_for_a_missing_session_is_unknown_node(
    client: Client, data_dir: Path, tmp_path: Path
) -> None:
    # Same keyring, different data: a validly signed token naming nothing here.
    twin = tmp_path / "twin"
    twin.mkdir()
    for item in data_dir.iterdir():
        if item.name != "sessions" and item.is_dir():
            shutil.copytree(item, twin / item.name)
        elif item.is_file():
            shutil.copy2(item, twin / item.name)
    async with Client(build_server(make_engine(twin))) as other:
        start = await ok(other, "start_workflow", {"workflowId": "probe-flow"})
    await fail(
        client,
        "continue_workflow",
        {"intent": "rehydrate", "stateToken": start["stateToken"]},
        "TOKEN_UNKNOWN_NODE",
    )
    await fail(
        client,
        "checkpoint_workflow",
        {"checkpointToken": start["checkpointToken"]},
        "TOKEN_UNKNOWN_NODE",
    )


# --- store conditions -------------------------------------------------------------------


def _only_session(data_dir: Path) -> str:
    (sid,) = LocalBackend.open(data_dir).sessions.list_ids().unwrap()
    return sid


async def test_corrupt_segment_is_session_not_healthy(client: Client, data_dir: Path) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    segments = sorted((data_dir / "sessions" / _only_session(data_dir) / "events").iterdir())
    raw = segments[0].read_bytes()
    segments[0].write_bytes(raw.replace(b"probe-flow", b"probe-floX", 1))
    # A fresh server: nothing cached in memory, the damage is read from disk.
    async with Client(build_server(make_engine(data_dir))) as fresh:
        env = await fail(fresh, "continue_workflow", advance_args(start), "SESSION_NOT_HEALTHY")
        assert env["retry"] == {"kind": "not_retryable"}
        await fail(
            fresh,
            "checkpoint_workflow",
            {"checkpointToken": start["checkpointToken"]},
            "SESSION_NOT_HEALTHY",
        )


async def test_session_held_by_another_writer_is_locked(client: Client, data_dir: Path) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    sid = _only_session(data_dir)
    holding, release = threading.Event(), threading.Event()

    def hold(_txn: Any) -> Success[None]:
        holding.set()
        release.wait(timeout=30)
        return Success(None)

    writer = threading.Thread(
        target=lambda: LocalBackend.open(data_dir).sessions.write(sid, hold), daemon=True
    )
    writer.start()
    assert holding.wait(timeout=30)
    try:
        env = await fail(client, "continue_workflow", advance_args(start), "TOKEN_SESSION_LOCKED")
        assert env["retry"] == {"kind": "retryable_after_ms", "afterMs": 1000}
        # The reference says not_retryable here (spec 40 §8); the engine chose to make it
        # retryable like the other tools, so only the code is pinned.
        await fail(
            client,
            "checkpoint_workflow",
            {"checkpointToken": start["checkpointToken"]},
            "TOKEN_SESSION_LOCKED",
        )
    finally:
        release.set()
        writer.join(timeout=30)
    # Released: the same call now goes through.
    await ok(client, "continue_workflow", advance_args(start))


async def test_missing_pinned_workflow_is_precondition_failed(
    client: Client, data_dir: Path
) -> None:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    for pinned in (data_dir / "workflows" / "pinned").iterdir():
        pinned.unlink()
    async with Client(build_server(make_engine(data_dir))) as fresh:
        await fail(fresh, "continue_workflow", advance_args(start), "PRECONDITION_FAILED")


# --- the SDK's edges --------------------------------------------------------------------


async def test_unexpected_exception_still_reaches_the_agent_as_an_envelope(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(engine, "start_workflow", boom)
    async with Client(build_server(engine)) as c:
        env = await fail(c, "start_workflow", {"workflowId": "probe-flow"}, "INTERNAL_ERROR")
    assert "disk on fire" not in env["message"]


async def test_unknown_tool_is_a_plain_error(client: Client) -> None:
    result = await client.call_tool("delete_session", {})  # people delete; agents cannot
    assert result.is_error
    assert result.content[0].text == "Unknown tool: delete_session"  # type: ignore[union-attr]


async def test_errors_are_json_text_without_structured_content(client: Client) -> None:
    """Structured content is what the outputSchema describes (success answers): a client
    that checks it, as the TypeScript SDK does, would refuse an envelope there."""
    result = await client.call_tool("inspect_workflow", {"workflowId": "nope"})
    assert error_body(result)["code"] == "NOT_FOUND"


async def test_an_invalid_workflow_is_answered_as_invalid_not_unknown(tmp_path: Path) -> None:
    """Through the composition root's catalogue: start and inspect name the file and its
    problems (WORKFLOW_INVALID), list_workflows marks the row, valid rows are unchanged."""
    from workrail.app import DiscoveredCatalog
    from workrail.engine.deps import EngineDeps
    from workrail.tokens import TokenCodec
    from workrail.workflow.sources import DiscoveryConfig

    custom = tmp_path / "wf"
    custom.mkdir()
    shutil.copy(REFERENCE / "workflows" / "probe-flow.json", custom)
    broken = custom / "broken.json"
    broken.write_text('{"id": "broken-flow", "name": "Broken", "steps": []}')
    config = DiscoveryConfig(
        home=tmp_path / "home",
        cwd=tmp_path,
        env={"WORKFLOW_STORAGE_PATH": str(custom), "WORKFLOW_INCLUDE_BUNDLED": "false"},
        bundled_dir=None,
    )
    backend = LocalBackend.open(tmp_path / "data")
    deps = EngineDeps.over(
        backend, DiscoveredCatalog(config), TokenCodec(backend.keyring.load().unwrap())
    )
    async with Client(build_server(Engine(deps)), raise_exceptions=True) as client:
        for tool in ("start_workflow", "inspect_workflow"):
            env = await fail(client, tool, {"workflowId": "broken-flow"}, "WORKFLOW_INVALID")
            found = env["details"]["details"]
            assert found["path"] == str(broken)
            assert str(broken) in env["message"]
            assert found["problemCount"] == len(found["problems"]) >= 1
            assert all({"code", "path", "message", "fix"} <= set(p) for p in found["problems"])
            assert "workrail validate" in env["details"]["suggestion"]
        listed = {w["workflowId"]: w for w in (await ok(client, "list_workflows", {}))["workflows"]}
        assert listed["broken-flow"]["valid"] is False
        assert listed["broken-flow"]["problems"] == found["problemCount"]
        assert listed["broken-flow"]["path"] == str(broken)
        assert set(listed["probe-flow"]) == {
            "workflowId",
            "name",
            "description",
            "version",
            "kind",
            "workflowHash",
        }
        await fail(client, "start_workflow", {"workflowId": "no-such-flow"}, "NOT_FOUND")
