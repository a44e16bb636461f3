"""Sessions as MCP resources (`workrail://sessions/{id}`), on both backends: the summary,
each run's recap and a rehydrate call that really continues the run; the recent sessions
listed; unknown, malformed and ambiguous ids as JSON-RPC -32602 without a traceback; and
not a byte written by listing or reading, the files index included."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.console.conftest import Store, store_for
from tests.engine.helpers import tree_digest
from tests.mcp.conftest import advance_args, ok
from workrail.core.budgets import NOTES_MAX_BYTES
from workrail.engine.api import Engine
from workrail.engine.session_recap import RECAP_BUDGET_BYTES
from workrail.mcp import build_server
from workrail.mcp.resource_listing import LISTED_MAX

pytestmark = pytest.mark.anyio

PREFIX = "workrail://sessions/"


@pytest.fixture(params=["files", "postgres"])
def store(request: pytest.FixtureRequest, data_dir: Path) -> Iterator[Store]:
    yield from store_for(request, data_dir, "resources")


@pytest.fixture
def engine(store: Store) -> Engine:
    return store.engine()


@pytest.fixture
async def client(engine: Engine) -> AsyncIterator[Client]:
    async with Client(build_server(engine), raise_exceptions=True) as c:
        yield c


def stored(store: Store) -> str:
    """Everything stored; on files the whole data directory, the summary index included."""
    return tree_digest(store.data_dir) if store.url is None else store.digest()


async def settled(client: Client, store: Store) -> str:
    """`stored(store)` once a first query has written the summary rows this process's
    appends left pending (the files index writes them then, not on the append's path)."""
    await client.list_resources()
    return stored(store)


async def _start(client: Client, goal: str) -> dict[str, Any]:
    return await ok(
        client, "start_workflow", {"workflowId": "probe-flow", "context": {"goal": goal}}
    )


async def _read(client: Client, uri: str) -> dict[str, Any]:
    read = await client.read_resource(uri)
    (content,) = read.contents
    assert content.mime_type == "application/json"
    parsed: dict[str, Any] = json.loads(content.text)  # type: ignore[union-attr]
    return parsed


async def test_a_session_reads_as_summary_recap_and_a_call_that_continues_it(
    client: Client, store: Store
) -> None:
    start = await _start(client, "Fix the login bug")
    planned = await ok(client, "continue_workflow", advance_args(start, "planned the fix"))
    await ok(client, "continue_workflow", advance_args(planned, "built the fix"))
    sid = start["sessionId"]
    before = await settled(client, store)
    body = await _read(client, PREFIX + sid)
    again = await _read(client, PREFIX + sid)
    assert stored(store) == before
    assert body["sessionId"] == sid
    assert body["title"] == "Fix the login bug"
    assert body["status"] == "in_progress"
    assert body["health"] == "healthy"
    assert body["pendingStep"] == {"stepId": "verify", "title": "Verify"}
    (run,) = body["runs"]
    assert run["recap"] == ["planned the fix", "built the fix"]
    assert run["earlierRecapOmitted"] is False
    assert body["recapUnavailable"] is None
    assert body["nextIntent"] == "rehydrate"
    assert body["nextCall"] == run["nextCall"]
    assert sid in body["message"]
    assert "Verify" in body["message"]
    # Idempotent apart from the freshly minted token; the token is the tip's own.
    assert {**again, "runs": None, "nextCall": None} == {**body, "runs": None, "nextCall": None}
    recovered = await ok(client, body["nextCall"]["tool"], body["nextCall"]["params"])
    assert recovered["sessionId"] == sid
    assert recovered["pending"]["stepId"] == "verify"
    done = await ok(client, "continue_workflow", advance_args(recovered, "verified"))
    assert done["isComplete"] is True


async def test_recent_sessions_are_listed_newest_first_and_any_is_reachable(
    client: Client, engine: Engine, store: Store
) -> None:
    first = (await _start(client, "oldest work"))["sessionId"]
    archived = (await _start(client, "put away"))["sessionId"]
    newest = (await _start(client, "newest work"))["sessionId"]
    engine.archive([archived]).unwrap()
    before = await settled(client, store)
    listed = [r for r in (await client.list_resources()).resources if str(r.uri).startswith(PREFIX)]
    templates = (await client.list_resource_templates()).resource_templates
    assert stored(store) == before
    assert [str(r.uri) for r in listed] == [PREFIX + newest, PREFIX + first]
    assert listed[0].title == "newest work"
    assert listed[0].name == newest
    assert listed[0].description is not None
    assert "Probe Flow" in listed[0].description
    assert [t.uri_template for t in templates][-1] == PREFIX + "{sessionId}"
    # Archived: not offered, still readable by id (and by a unique start of it).
    assert (await _read(client, PREFIX + archived))["archived"] is True
    assert (await _read(client, PREFIX + newest[: len("sess_") + 20]))["sessionId"] == newest


async def test_listing_stops_at_the_most_recent(client: Client) -> None:
    ids = [(await _start(client, f"chore {n}"))["sessionId"] for n in range(LISTED_MAX + 1)]
    listed = [str(r.uri) for r in (await client.list_resources()).resources]
    sessions = [u for u in listed if u.startswith(PREFIX)]
    assert sessions == [PREFIX + sid for sid in reversed(ids[1:])]


async def test_a_finished_run_offers_no_call(client: Client) -> None:
    step = await _start(client, "short job")
    for notes in ("a", "b", "c"):
        step = await ok(client, "continue_workflow", advance_args(step, notes))
    assert step["isComplete"] is True
    body = await _read(client, PREFIX + step["sessionId"])
    assert body["status"] == "complete"
    assert body["runs"][0]["recap"] == ["a", "b", "c"]
    assert body["nextIntent"] == "complete"
    assert body["nextCall"] is None
    assert body["runs"][0]["stateToken"] is None
    assert body["runs"][0]["nextCall"] is None


async def test_a_long_recap_keeps_the_newest_notes_within_the_budget(client: Client) -> None:
    step = await _start(client, "wordy job")
    for n in range(3):
        notes = f"step {n} " + "x" * NOTES_MAX_BYTES  # stored cut to NOTES_MAX_BYTES
        step = await ok(client, "continue_workflow", advance_args(step, notes))
    (run,) = (await _read(client, PREFIX + step["sessionId"]))["runs"]
    # Three full recaps are just over the budget: the oldest gives way.
    assert 3 * (NOTES_MAX_BYTES + 2) > RECAP_BUDGET_BYTES >= 2 * (NOTES_MAX_BYTES + 2)
    assert [r[:6] for r in run["recap"]] == ["step 1", "step 2"]
    assert all(len(r.encode()) == NOTES_MAX_BYTES for r in run["recap"])
    assert run["earlierRecapOmitted"] is True


async def test_a_damaged_session_is_shown_but_not_offered_to_continue(
    client: Client, store: Store
) -> None:
    start = await _start(client, "about to break")
    await ok(client, "continue_workflow", advance_args(start, "planned"))
    sid = start["sessionId"]
    store.damage_tail(sid)
    store.noticed()
    before = stored(store)
    # A server started after the damage (this one's store caches what it wrote itself).
    async with Client(build_server(store.engine()), raise_exceptions=True) as fresh:
        body = await _read(fresh, PREFIX + sid)
    assert stored(store) == before
    assert body["health"] == "corrupt_tail"
    assert body["recapUnavailable"] == "the session is corrupt_tail"
    assert body["nextIntent"] == "none"
    assert body["nextCall"] is None
    assert f"workrail sessions show {sid}" in body["message"]


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("sess_" + "a" * 26, "No session sess_" + "a" * 26 + "."),
        ("zzzz", "No session sess_zzzz."),
        ("../../etc/passwd", "Not a session id or id prefix"),
        ("SESS_" + "!" * 100_000, "Not a session id or id prefix"),
        ("", "Not a session id or id prefix"),
    ],
    ids=["unknown", "unknown-prefix", "traversal", "huge", "empty"],
)
async def test_unknown_or_malformed_ids_are_invalid_params_without_a_traceback(
    client: Client, store: Store, caplog: pytest.LogCaptureFixture, ref: str, says: str
) -> None:
    await _start(client, "something stored")
    caplog.set_level(logging.DEBUG)
    before = stored(store)
    with pytest.raises(MCPError) as raised:
        await client.read_resource(PREFIX + ref)
    assert stored(store) == before
    error = raised.value.error
    assert error.code == -32602
    assert error.message.startswith("Unknown resource: workrail://sessions/")
    assert says in error.message
    assert len(error.message) < 600
    assert "Traceback" not in caplog.text
    assert not any(r.exc_info for r in caplog.records)


async def test_an_ambiguous_prefix_names_the_candidates(client: Client) -> None:
    # 33 ids over 32 possible first letters: two of them share one (pigeonhole).
    ids = [(await _start(client, f"job {n}"))["sessionId"] for n in range(33)]
    firsts = [i[len("sess_")] for i in ids]
    shared = "sess_" + next(c for c in sorted(firsts) if firsts.count(c) > 1)
    matching = sorted(i for i in ids if i.startswith(shared))
    with pytest.raises(MCPError) as raised:
        await client.read_resource(PREFIX + shared)
    assert raised.value.error.code == -32602
    assert "is the start of" in raised.value.error.message
    assert matching[0] in raised.value.error.message
