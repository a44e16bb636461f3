"""The locked case across two real processes, and random call sequences."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.conftest import make_engine
from tests.engine.helpers import err, ok, tree_digest
from tests.engine.hold_lock_child import writer_in_another_process
from workrail.store.local.backend import LocalBackend

ROOT = Path(__file__).resolve().parents[2]


def test_locked_session_is_retryable_and_replays_still_work(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    r = ok(engine.start_workflow("probe-flow"))
    a = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    with writer_in_another_process(data_dir)(sid):
        locked = err(engine.advance(a["stateToken"], a["ackToken"], notes_markdown="built"))
        assert locked.code == "TOKEN_SESSION_LOCKED"
        assert locked.retry_guidance.to_json() == {"kind": "retryable_after_ms", "afterMs": 1000}
        locked_chk = err(engine.checkpoint(a["checkpointToken"]))
        assert locked_chk.code == "TOKEN_SESSION_LOCKED"
        # reads and replays never take the lock
        assert ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned")) == a
        ok(engine.rehydrate(a["stateToken"]))
    ok(engine.advance(a["stateToken"], a["ackToken"], notes_markdown="built"))


ACTIONS = st.lists(
    st.sampled_from(["advance", "replay", "rehydrate", "checkpoint", "checkpoint_replay", "fork"]),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(actions=ACTIONS)
def test_random_call_sequences_keep_the_log_valid(
    tmp_path_factory: Any, actions: list[str]
) -> None:
    data_dir = tmp_path_factory.mktemp("seq")
    engine = make_engine(data_dir, None)
    start = ok(engine.start_workflow("val-flow"))
    current = start
    previous: tuple[dict[str, Any], dict[str, Any]] | None = None
    notes = {"write": "DONE", "write-two": "OK!!"}
    for action in actions:
        if current.get("pending") is None:
            break
        step = current["pending"]["stepId"]
        if action == "advance":
            nxt = ok(
                engine.advance(
                    current["stateToken"],
                    current["ackToken"],
                    notes_markdown=notes.get(step, "fine"),
                )
            )
            previous, current = (current, nxt), nxt
        elif action == "replay" and previous is not None:
            before = tree_digest(data_dir)
            again = ok(
                engine.advance(
                    previous[0]["stateToken"],
                    previous[0]["ackToken"],
                    notes_markdown=notes.get(previous[0]["pending"]["stepId"], "fine"),
                )
            )
            assert again == previous[1]
            assert tree_digest(data_dir) == before
        elif action == "rehydrate":
            before = tree_digest(data_dir)
            fresh = ok(engine.rehydrate(current["stateToken"]))
            assert tree_digest(data_dir) == before
            current = {
                **current,
                "ackToken": fresh["ackToken"],
                "checkpointToken": fresh["checkpointToken"],
            }
        elif action == "checkpoint":
            ok(engine.checkpoint(current["checkpointToken"]))
        elif action == "checkpoint_replay":
            first = ok(engine.checkpoint(current["checkpointToken"]))
            before = tree_digest(data_dir)
            assert ok(engine.checkpoint(current["checkpointToken"])) == first
            assert tree_digest(data_dir) == before
        elif action == "fork" and previous is not None:
            fresh = ok(engine.rehydrate(previous[0]["stateToken"]))
            ok(
                engine.advance(
                    previous[0]["stateToken"], fresh["ackToken"], notes_markdown="DONE OK!!"
                )
            )
    store = LocalBackend.open(data_dir).sessions
    sid = engine.deps.codec.parse_state(start["stateToken"]).unwrap().session_id
    assert store.health(sid).unwrap().kind == "healthy"
    events = store.read(sid, lambda log: list(log.events)).unwrap()
    assert [e.eventIndex for e in events] == list(range(len(events)))
    assert len({e.dedupeKey for e in events}) == len(events)
