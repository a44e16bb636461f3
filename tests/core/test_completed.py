"""CompletedKeys: always collated, unique and valid; adding keeps the reference's order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workrail.core.completed import CompletedKeys, collation_key, sort_completed

KEY_ALPHABET = "_-:@/0123456789abcdefghijklmnopqrstuvwxyz"
keys = st.text(alphabet=KEY_ALPHABET, min_size=1, max_size=8)


@given(st.lists(keys, max_size=40))
def test_adding_one_by_one_equals_sorting_the_whole_set(values: list[str]) -> None:
    grown = CompletedKeys()
    for value in values:
        grown = grown.with_key(value)
    assert list(grown.ordered) == sorted(set(values), key=collation_key)
    assert list(grown.ordered) == sort_completed(values)
    as_set: object = set(values)  # a CompletedKeys equals the plain set of its keys
    assert grown == as_set
    assert grown == CompletedKeys(values)
    assert len(grown) == len(set(values))


@given(st.lists(keys, max_size=30), keys)
def test_membership_is_exact(values: list[str], probe: str) -> None:
    completed = CompletedKeys(values)
    assert (probe in completed) == (probe in set(values))
    not_a_key: object = 42
    assert not_a_key not in completed


def test_adding_a_present_key_returns_the_same_set() -> None:
    completed = CompletedKeys(["b", "a"])
    assert completed.with_key("a") is completed
    assert list(completed.ordered) == ["a", "b"]


def test_sets_are_immutable_values() -> None:
    before = CompletedKeys(["a"])
    after = before.with_key("b")
    assert list(before) == ["a"]
    assert list(after) == ["a", "b"]
    assert hash(CompletedKeys(["a", "b"])) == hash(frozenset({"a", "b"}))


@pytest.mark.parametrize("bad", ["", "Bad", "a b", "a\n", "é"])
def test_invalid_keys_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not a StepInstanceKey"):
        CompletedKeys([bad])
    with pytest.raises(ValueError, match="not a StepInstanceKey"):
        CompletedKeys().with_key(bad)


@given(st.lists(keys, max_size=20), st.lists(keys, min_size=1, max_size=20, unique=True))
def test_first_missing_is_remembered_and_inherited(values: list[str], ids: list[str]) -> None:
    scan = tuple(ids)
    completed = CompletedKeys(values)

    def expected(keys: CompletedKeys) -> int:
        return next((i for i, key in enumerate(scan) if key not in set(keys)), len(scan))

    assert completed.first_missing(scan) == expected(completed)
    for key in ids:  # completing the scanned ids in any order moves the position on
        completed = completed.with_key(key)
        assert completed.first_missing(scan) == expected(completed)
    assert completed.first_missing(scan) == len(scan)
