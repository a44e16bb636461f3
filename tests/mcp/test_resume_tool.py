"""resume_session end to end: the right run first with a token that works, at most five
candidates, bad input as VALIDATION_ERROR, and not a byte written."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from tests.engine.helpers import tree_digest
from tests.mcp.conftest import fail, ok

pytestmark = pytest.mark.anyio


async def _start(client: Client, goal: str, workflow: str = "probe-flow") -> str:
    started = await ok(
        client, "start_workflow", {"workflowId": workflow, "context": {"goal": goal}}
    )
    return str(started["sessionId"])


async def test_resume_finds_the_session_and_hands_back_a_working_token(
    client: Client, data_dir: Path
) -> None:
    await _start(client, "Migrate the billing database")
    wanted = await _start(client, "Refactor the tokenizer for speed")
    for n in range(6):
        await _start(client, f"Unrelated chore {n}")
    sessions = tree_digest(data_dir / "sessions")
    found = await ok(client, "resume_session", {"query": "continue the tokenizer refactor"})
    # The first query writes the index rows this process's starts left pending, nothing
    # else; from then on a query is read-only, the index included.
    assert tree_digest(data_dir / "sessions") == sessions
    before = tree_digest(data_dir)
    again = await ok(client, "resume_session", {"query": "continue the tokenizer refactor"})
    assert tree_digest(data_dir) == before
    assert [c["sessionId"] for c in found["candidates"]] == [
        c["sessionId"] for c in again["candidates"]
    ]  # idempotent apart from the freshly minted tokens
    best = found["candidates"][0]
    assert best["sessionId"] == wanted
    assert best["confidence"] == "strong"
    assert "matched_notes" in best["whyMatched"]
    assert best["title"] == "Refactor the tokenizer for speed"
    assert len(found["candidates"]) <= 5
    assert found["nextIntent"] == "rehydrate"
    assert found["nextCall"] == best["nextCall"]
    recovered = await ok(client, best["nextCall"]["tool"], best["nextCall"]["params"])
    assert recovered["pending"]["stepId"] == "plan"


async def test_resume_by_id_prefers_it_over_text(client: Client) -> None:
    first = await _start(client, "alpha work")
    await _start(client, "beta work")
    found = await ok(client, "resume_session", {"query": "beta", "sessionId": first})
    assert found["candidates"][0]["sessionId"] == first
    assert found["candidates"][0]["whyMatched"][0] == "matched_session_id"


async def test_nothing_to_resume_points_at_starting(client: Client) -> None:
    found = await ok(client, "resume_session", {"query": "anything"})
    assert found["candidates"] == []
    assert found["nextCall"]["tool"] == "list_workflows"


@pytest.mark.parametrize(
    "asked",
    [
        {"sessionId": "sess_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
        {"query": "nothing like this xyzzy"},
        {"runId": "run_bogus"},
    ],
)
async def test_a_request_nothing_matches_is_not_sent_into_a_recent_session(
    client: Client, asked: dict[str, str]
) -> None:
    """The only candidate is the latest session, there by recency alone: shown, but the
    agent is told to ask or start, not to continue it."""
    recent = await _start(client, "Refactor the tokenizer")
    found = await ok(client, "resume_session", asked)
    assert [c["sessionId"] for c in found["candidates"]] == [recent]
    assert set(found["candidates"][0]["whyMatched"]) <= {"recency_fallback", "matched_workspace"}
    assert found["nextIntent"] == "start_workflow"
    assert found["nextCall"] == {"tool": "list_workflows", "params": {}}
    assert "Nothing matched what was asked" in found["message"]


async def test_asking_for_the_latest_in_so_many_words_continues_it(client: Client) -> None:
    recent = await _start(client, "Refactor the tokenizer")
    for asked in ({}, {"query": "continue my work"}):
        found = await ok(client, "resume_session", asked)
        assert found["candidates"][0]["sessionId"] == recent
        assert found["nextIntent"] == "rehydrate"


async def test_bad_input_is_a_validation_error(client: Client, data_dir: Path) -> None:
    await _start(client, "some work")
    before = tree_digest(data_dir)
    typo = await fail(client, "resume_session", {"qeury": "x"}, "VALIDATION_ERROR")
    assert typo["details"]["suggestions"][0]["didYouMean"] == "query"
    await fail(client, "resume_session", {"query": "x" * 257}, "VALIDATION_ERROR")
    await fail(client, "resume_session", {"query": ""}, "VALIDATION_ERROR")
    await fail(client, "resume_session", {"gitHeadSha": "abc"}, "VALIDATION_ERROR")
    await fail(client, "resume_session", {"includeCompleted": "yes"}, "VALIDATION_ERROR")
    assert tree_digest(data_dir) == before
