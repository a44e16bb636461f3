"""Words for people: counts with the right plural."""

from __future__ import annotations


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """`1 problem`, `0 problems`, `6 problems` (`plural` for irregular words)."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"
