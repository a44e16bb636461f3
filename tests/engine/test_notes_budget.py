"""Notes over the 4 KiB recap budget are stored cut to it, and the answer says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.engine.conftest import make_engine
from tests.engine.helpers import ok
from workrail.core.budgets import NOTES_MAX_BYTES, utf8_len
from workrail.store.local.backend import LocalBackend


def _codes(response: dict[str, Any]) -> list[str]:
    return [w["code"] for w in response.get("warnings", ())]


def _recap(data_dir: Path, response: dict[str, Any], engine: Any) -> str:
    session = engine.deps.codec.parse_state(response["stateToken"]).unwrap().session_id
    sessions = LocalBackend.open(data_dir).sessions

    def recaps(log: Any) -> list[str]:
        return [
            o.data.payload.notesMarkdown
            for outs in log.index.outputs.values()
            for o in outs
            if o.data.outputChannel == "recap"
        ]

    (recap,) = sessions.read(session, recaps).unwrap()
    return str(recap)


def test_notes_over_the_budget_are_cut_and_the_answer_warns(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    start = ok(engine.start_workflow("probe-flow"))
    notes = "é" * 3000  # 6000 bytes
    advanced = ok(engine.advance(start["stateToken"], start["ackToken"], notes_markdown=notes))
    assert _codes(advanced) == ["NOTES_TRUNCATED"]
    warning = advanced["warnings"][0]
    assert "6000 bytes" in warning["message"]
    assert warning["suggestion"]
    recap = _recap(data_dir, advanced, engine)
    assert utf8_len(recap) <= NOTES_MAX_BYTES
    assert notes.startswith(recap[:100])
    # the replay of the same call says the same
    again = ok(engine.advance(start["stateToken"], start["ackToken"], notes_markdown=notes))
    assert _codes(again) == ["NOTES_TRUNCATED"]


def test_notes_within_the_budget_get_no_warning(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    start = ok(engine.start_workflow("probe-flow"))
    notes = "a" * NOTES_MAX_BYTES
    advanced = ok(engine.advance(start["stateToken"], start["ackToken"], notes_markdown=notes))
    assert "warnings" not in advanced
    assert _recap(data_dir, advanced, engine) == notes


def test_a_replay_with_other_long_notes_says_only_that_they_were_not_recorded(
    data_dir: Path,
) -> None:
    engine = make_engine(data_dir)
    start = ok(engine.start_workflow("probe-flow"))
    ok(engine.advance(start["stateToken"], start["ackToken"], notes_markdown="short"))
    other = ok(engine.advance(start["stateToken"], start["ackToken"], notes_markdown="b" * 9000))
    assert _codes(other) == ["OUTPUT_NOT_RECORDED"]
