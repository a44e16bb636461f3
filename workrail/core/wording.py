"""Words for people: counts with the right plural, the option a typo meant."""

from __future__ import annotations

import difflib
from collections.abc import Sequence


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """`1 problem`, `0 problems`, `6 problems` (`plural` for irregular words)."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def did_you_mean(value: str, options: Sequence[str], *, cutoff: float = 0.5) -> str | None:
    """The option `value` most likely misspells, if one is close enough."""
    close = difflib.get_close_matches(value, options, n=1, cutoff=cutoff)
    return close[0] if close else None
