"""Agent text never reaches the operator's terminal raw: titles, notes and step output with
escape sequences (clear screen, colours, OSC 0 window titles, OSC 8 hyperlinks) or bidi
controls are printed with those characters made visible, by every human-readable command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.conftest import make_engine

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = (
    "Fix \x1b[2J\x1b[31mred\x1b[0m \x1b]0;owned title\x07 "
    "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ \x9b1m \u202eevil"
)
RAW = ("\x1b", "\x9b", "\x07", "\u202e")


@pytest.fixture
def hostile_session(data_dir: Path) -> str:
    engine = make_engine(data_dir)
    r = engine.start_workflow("probe-flow", {"goal": HOSTILE}).unwrap()
    engine.advance(r["stateToken"], r["ackToken"], notes_markdown=HOSTILE).unwrap()
    return str(r["sessionId"])


def _workrail(
    data_dir: Path, *argv: str, tty_width: str = "200"
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "WORKRAIL_DATA_DIR": str(data_dir),
        "COLUMNS": tty_width,
        "FORCE_COLOR": "1",  # styled as on a terminal: the command's own colours still drawn
    }
    env.pop("WORKRAIL_STORE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "workrail", *argv],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("sessions",),
        ("sessions", "--search", "fix"),
        ("sessions", "show", "{sid}"),
        ("sessions", "events", "{sid}"),
    ],
)
def test_hostile_text_is_printed_visibly_not_obeyed(
    data_dir: Path, hostile_session: str, argv: tuple[str, ...]
) -> None:
    done = _workrail(data_dir, *(a.format(sid=hostile_session) for a in argv))
    assert done.returncode == 0, done.stderr
    styled = done.stdout
    for ch in RAW[1:]:
        assert ch not in styled, (argv, ch)
    # ESC appears only as rich's own SGR styling ("ESC[…m"), never as the agent's sequences
    for marker in ("\x1b[2J", "\x1b]0;", "\x1b]8;"):
        assert marker not in styled, (argv, marker)
    if "events" not in argv:
        assert "\\x1b" in styled  # shown, as a mark (a long title may be cut after it)


def test_an_error_echoing_hostile_input_is_visible_too(data_dir: Path) -> None:
    done = _workrail(data_dir, "sessions", "show", "sess_\x1b]0;owned\x07")
    assert done.returncode != 0
    assert "\x1b]0;" not in done.stderr
    assert "\x07" not in done.stderr
