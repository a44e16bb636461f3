"""The completed set of a run: StepInstanceKeys in the reference's collation order.

A snapshot stores `completed.values` sorted by the reference's ICU collation (50-workflows
§5), so the order is part of the snapshot's bytes and hash. `CompletedKeys` keeps the keys
in that order at all times: adding one key is a binary-search insert, so an advance costs
O(log n) comparisons instead of re-sorting and re-validating the whole set, which made a
long session slower at every step.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Iterator, Sequence, Set
from typing import Final

# Rank order of the reference's ICU collation for the key alphabet (50-workflows §5).
_RANK_ALPHABET: Final = "_-:@/0123456789abcdefghijklmnopqrstuvwxyz"
_RANK: Final = {ch: i for i, ch in enumerate(_RANK_ALPHABET)}
KEY_PATTERN: Final = r"^[a-z0-9_@/:-]+$"
_KEY_RE: Final = re.compile(KEY_PATTERN)


@functools.lru_cache(maxsize=65536)
def collation_key(text: str) -> tuple[int, ...]:
    """Sort key for StepInstanceKeys; a proper prefix sorts first (tuple comparison).

    Characters outside the key alphabet cannot occur in valid keys; they sort after it by
    code point so the order stays total. Cached: binary searches meet the same keys again.
    """
    return tuple(_RANK.get(ch, len(_RANK_ALPHABET) + ord(ch)) for ch in text)


def is_collated(values: Sequence[str]) -> bool:
    """True when `values` are unique and in collation order (one linear pass)."""
    keys = [collation_key(v) for v in values]
    return all(a < b for a, b in zip(keys, keys[1:], strict=False))


def sort_completed(values: Iterable[str]) -> list[str]:
    """Unique keys in the reference's collation order, as `completed.values` must be."""
    if isinstance(values, CompletedKeys):
        return list(values.ordered)
    items = list(values)
    if is_collated(items):
        return items
    return sorted(set(items), key=collation_key)


class CompletedKeys(Set[str]):
    """An immutable set of valid StepInstanceKeys, always held in collation order.

    Every instance is unique, collated and pattern-valid by construction, so a snapshot
    built from one needs no re-validation. `first_missing` remembers how far a scan got;
    sets derived by `with_key` only grow, so they inherit that position.
    """

    __slots__ = ("_ordered", "_scan")

    _ordered: list[str]
    _scan: tuple[Sequence[str], int] | None

    def __init__(self, values: Iterable[str] = ()) -> None:
        """Sort and check arbitrary keys (O(n log n)); a bad key raises ValueError."""
        ordered = sort_completed(values)
        for key in ordered:
            _check(key)
        self._ordered = ordered
        self._scan = None

    @classmethod
    def from_collated(cls, values: list[str]) -> CompletedKeys:
        """Wrap keys a validated snapshot holds (unique, collated, pattern-valid) without
        checking them again. The list is shared, never copied nor changed."""
        made = cls.__new__(cls)
        made._ordered = values
        made._scan = None
        return made

    @property
    def ordered(self) -> list[str]:
        """The keys in collation order (shared, never copied: callers must not change it)."""
        return self._ordered

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        ordered = self._ordered
        i = bisect.bisect_left(ordered, collation_key(key), key=collation_key)
        return i < len(ordered) and ordered[i] == key

    def __iter__(self) -> Iterator[str]:
        return iter(self._ordered)

    def __len__(self) -> int:
        return len(self._ordered)

    def __hash__(self) -> int:
        return self._hash()

    def __repr__(self) -> str:
        return f"CompletedKeys({self._ordered!r})"

    def with_key(self, key: str) -> CompletedKeys:
        """This set plus `key` (itself when already present); one insert, no re-sort."""
        _check(key)
        ordered = self._ordered
        i = bisect.bisect_left(ordered, collation_key(key), key=collation_key)
        if i < len(ordered) and ordered[i] == key:
            return self
        grown = ordered.copy()
        grown.insert(i, key)
        made = CompletedKeys.from_collated(grown)
        made._scan = self._scan
        return made

    def first_missing(self, ids: Sequence[str]) -> int:
        """Index of the first of `ids` not in this set (len(ids) when all are).

        Remembered per `ids` object (compare by identity): a caller that scans the same
        tuple on every advance only pays for the keys added since the last scan.
        """
        scan = self._scan
        start = scan[1] if scan is not None and scan[0] is ids else 0
        n = len(ids)
        if start == 0 and n > 8:
            members = frozenset(self._ordered)  # one C-level pass beats n binary searches
            i = 0
            while i < n and ids[i] in members:
                i += 1
        else:
            i = start
            while i < n and ids[i] in self:
                i += 1
        self._scan = (ids, i)
        return i


def _check(key: str) -> None:
    if _KEY_RE.fullmatch(key) is None:
        raise ValueError(f"not a StepInstanceKey: {key!r}")
