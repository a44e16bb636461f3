"""Sessions the console tests look at, made through the real engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.engine.helpers import loop_control, looped, ok, sid_of
from workrail.engine.api import Engine

HOSTILE_NOTES = """# Findings <script>window.__pwned = 'script'</script>

<img src=x onerror="window.__pwned = 'img'">

[click me](javascript:window.__pwned='link') and [also](JAVASCRIPT:alert(1))

<a href="#" onclick="window.__pwned='onclick'">inline handler</a>

<iframe src="javascript:window.__pwned='iframe'"></iframe>

![pixel](data:text/html,<script>window.__pwned='data'</script>)

**bold** and a [safe link](https://example.com/docs).
"""


def forked_blocked_looped(engine: Engine, notes: str = "Prepared the review.") -> str:
    """loopctl-flow: prep; a fork from prep; review (checkpointed, one blocked attempt,
    then continue); review again; stop; done pending."""
    r = ok(engine.start_workflow("loopctl-flow", {"goal": "review the parser"}))
    prep = looped(engine, r, notes, "continue")
    again = ok(engine.rehydrate(r["stateToken"]))
    ok(
        engine.advance(
            r["stateToken"],
            again["ackToken"],
            notes_markdown="A second take on the prep.",
            artifacts=[loop_control("continue")],
        )
    )
    ok(engine.checkpoint(prep["checkpointToken"]))
    blocked = ok(engine.advance(prep["stateToken"], prep["ackToken"], notes_markdown="forgot it"))
    assert blocked["kind"] == "blocked", blocked
    first = looped(engine, blocked, "Reviewed once; **another pass** needed.", "continue")
    second = looped(engine, first, "Reviewed twice; done.", "stop")
    assert second["pending"]["stepId"] == "done", second
    return sid_of(engine, r["stateToken"])


def started(engine: Engine, workflow: str = "probe-flow") -> tuple[str, dict[str, Any]]:
    r = ok(engine.start_workflow(workflow))
    return sid_of(engine, r["stateToken"]), r


def damage_tail(data_dir: Path, session_id: str) -> None:
    """Flip one byte in the newest segment: the session becomes corrupt_tail."""
    segment = max((data_dir / "sessions" / session_id / "events").iterdir())
    raw = bytearray(segment.read_bytes())
    raw[10] ^= 0x01
    segment.write_bytes(bytes(raw))


def long_flow(directory: Path, steps: int) -> Path:
    """A workflow directory holding `long-flow`: a loop of two steps, `steps // 2` times."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    iterations = max(1, steps // 2)
    flow = {
        "id": "long-flow",
        "name": "Long flow",
        "version": "1.0.0",
        "description": "A loop of two steps.",
        "steps": [
            {
                "id": "work-loop",
                "type": "loop",
                "title": "Work loop",
                "loop": {"type": "for", "count": iterations, "maxIterations": iterations},
                "body": [
                    {"id": "think", "title": "Think", "prompt": "Think about item {{i}}."},
                    {"id": "act", "title": "Act", "prompt": "Act on it."},
                ],
            },
            {"id": "wrap-up", "title": "Wrap up", "prompt": "Summarise."},
        ],
    }
    (directory / "long-flow.json").write_text(json.dumps(flow))
    return directory


def long_run(engine: Engine, steps: int) -> tuple[str, dict[str, Any]]:
    """`steps` advances through long-flow (an engine over `long_flow`'s directory)."""
    r = ok(engine.start_workflow("long-flow"))
    sid = sid_of(engine, r["stateToken"])
    for n in range(steps):
        r = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown=f"Step {n} done."))
    return sid, r
