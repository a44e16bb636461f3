"""The console shows bidi and control characters of agent text as visible marks, so a title
or a note cannot reorder or disguise what a person reads."""

from __future__ import annotations

from tests.console.conftest import RunningConsole
from tests.engine.helpers import ok, sid_of
from workrail.engine.api import Engine

HOSTILE = "Deploy \u202egnp.exe\u202c to \u2066prod\u2069 \x1b[2J now"


def test_bidi_and_control_characters_are_rendered_visibly(
    console: RunningConsole, engine: Engine
) -> None:
    r = ok(engine.start_workflow("probe-flow", {"goal": HOSTILE}))
    ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown=HOSTILE))
    sid = sid_of(engine, r["stateToken"])
    for path in ("/", f"/sessions/{sid}", "/?q=deploy"):
        body = console.get(path).body
        for raw in ("\u202e", "\u202c", "\u2066", "\u2069", "\x1b"):
            assert raw not in body, (path, repr(raw))
    page = console.get(f"/sessions/{sid}").body
    assert "[U+202E]" in page
    assert "\\x1b[2J" in page
