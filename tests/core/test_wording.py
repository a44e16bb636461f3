"""Counts read as people write them."""

from __future__ import annotations

from workrail.core.wording import counted


def test_one_is_singular_and_everything_else_plural() -> None:
    assert counted(1, "problem") == "1 problem"
    assert [counted(n, "event") for n in (0, 2, 55)] == ["0 events", "2 events", "55 events"]
    assert counted(2, "entry", "entries") == "2 entries"
    assert counted(1, "pinned workflow") == "1 pinned workflow"
