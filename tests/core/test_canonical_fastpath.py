"""The orjson fast path of canonical_bytes must be byte-identical to rfc8785, and must be
the path taken for the values it claims (so the equivalence tests test orjson)."""

from __future__ import annotations

import enum
import uuid
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from workrail.core.canonical import CanonicalJsonError, _orjson_exact, canonical_bytes

SAFE = 2**53 - 1
text = st.text(
    alphabet=st.characters(exclude_categories=["Cs"]),  # no lone surrogates
    max_size=12,
)
bmp_text = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], max_codepoint=0xFFFF), max_size=12
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-SAFE, SAFE) | text,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(text, children, max_size=5),
    max_leaves=30,
)
bmp_key_values = st.recursive(
    st.none() | st.booleans() | st.integers(-SAFE, SAFE) | text,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(bmp_text, children, max_size=6)
    ),
    max_leaves=40,
)


@settings(max_examples=500)
@given(json_values)
def test_fast_path_matches_rfc8785(value: Any) -> None:
    assert canonical_bytes(value) == rfc8785.dumps(value)


@settings(max_examples=1000)
@given(bmp_key_values)
def test_orjson_path_is_taken_and_matches_rfc8785(value: Any) -> None:
    """Any text in values (astral characters included), BMP keys: orjson writes it."""
    assert _orjson_exact(value)
    assert canonical_bytes(value) == rfc8785.dumps(value)


@settings(max_examples=300)
@given(st.lists(bmp_text, max_size=50), st.lists(st.integers(-SAFE, SAFE), max_size=5))
def test_string_lists_and_mixed_lists(strings: list[str], ints: list[int]) -> None:
    values: list[Any] = [strings, [*strings, *ints], [*ints, *strings], {"values": strings}]
    for value in values:
        assert _orjson_exact(value)
        assert canonical_bytes(value) == rfc8785.dumps(value)


def test_control_characters_and_bmp_edges() -> None:
    value: Any = {"\x7f": '\x00\x1f\u2028\ufeff"\\\\/', "\ue000": 1, "a": [True, None, -SAFE]}
    assert _orjson_exact(value)
    assert canonical_bytes(value) == rfc8785.dumps(value)


def test_safe_integer_bounds_are_written_and_beyond_them_refused() -> None:
    assert canonical_bytes([SAFE, -SAFE]) == rfc8785.dumps([SAFE, -SAFE])
    for beyond in (SAFE + 1, -SAFE - 1, 2**63, 2**64):
        with pytest.raises(CanonicalJsonError, match="range"):
            canonical_bytes({"n": [beyond]})


def test_astral_keys_fall_back_to_rfc8785_order() -> None:
    value = {"\U0001f600": 1, "\ufb33": 2, "\u20ac": 3}
    assert not _orjson_exact(value)
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_bytes(value).index("€".encode()) < canonical_bytes(value).index("😀".encode())


def test_floats_take_the_rfc8785_path() -> None:
    for value in (1.0, [0.5], {"x": 1e21}, {"x": [1, -0.0]}):
        assert not _orjson_exact(value)
        assert canonical_bytes(value) == rfc8785.dumps(value)


class Colour(enum.Enum):
    RED = "red"


class Count(enum.IntEnum):
    ONE = 1


class Text(str):
    pass


@pytest.mark.parametrize(
    "value",
    [(1, 2), [("a",)], {"x": (1,)}, uuid.UUID(int=0), [Colour.RED]],
    ids=repr,
)
def test_types_orjson_would_write_are_still_refused(value: Any) -> None:
    """orjson writes tuples, UUIDs and enums natively; canonical JSON refuses them."""
    assert not _orjson_exact(value)
    with pytest.raises(CanonicalJsonError):
        canonical_bytes(value)


def test_str_and_int_subclasses_are_written_as_their_value() -> None:
    value = {"a": Text("x"), "b": [Text("y"), "z"], "c": Count.ONE}
    assert not _orjson_exact(value)
    assert canonical_bytes(value) == b'{"a":"x","b":["y","z"],"c":1}'


@pytest.mark.parametrize("value", ["\ud800", ["ok", "\udc00"], {"\ud800": 1}, {"a": "\udfff"}])
def test_lone_surrogates_are_refused_on_the_fast_path_too(value: Any) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_bytes(value)


def test_nesting_beyond_orjson_limit_falls_back() -> None:
    value: Any = "leaf"
    for _ in range(300):
        value = [value]
    assert canonical_bytes(value) == rfc8785.dumps(value)
