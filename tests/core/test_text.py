"""Agent text made inert for a screen: control and bidi characters become visible marks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from workrail.core.text import BIDI_RE, CONTROL_RE, screen_safe, visible_bidi, visible_controls

HOSTILE = "a\x1b[2Jb\x1b]0;owned\x07c\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\\x9b31m"


def test_escape_sequences_become_visible_text() -> None:
    shown = visible_controls(HOSTILE + "\r\x7f\x00")
    assert not CONTROL_RE.search(shown)
    assert shown.startswith("a\\x1b[2Jb\\x1b]0;owned\\x07c\\x1b]8;;https://evil.example")
    assert shown.endswith("\\x9b31m\\x0d\\x7f\\x00")


def test_tabs_and_newlines_stay_and_plain_text_is_untouched() -> None:
    assert visible_controls("line 1\n\tline 2 — ünïcode ✓") == "line 1\n\tline 2 — ünïcode ✓"


def test_bidi_controls_are_shown_as_code_points() -> None:
    assert visible_bidi("ok\u202egnp.exe\u2066x\u2069") == "ok[U+202E]gnp.exe[U+2066]x[U+2069]"


@given(st.text())
def test_nothing_a_terminal_obeys_survives(text: str) -> None:
    shown = screen_safe(text)
    assert not CONTROL_RE.search(shown)
    assert not BIDI_RE.search(shown)
    assert screen_safe(shown) == shown  # idempotent: marks are plain ASCII
