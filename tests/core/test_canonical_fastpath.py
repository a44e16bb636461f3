"""The json-module fast path of canonical_bytes must be byte-identical to rfc8785."""

from __future__ import annotations

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from workrail.core.canonical import canonical_bytes

SAFE = 2**53 - 1
text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)),  # no lone surrogates
    max_size=12,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-SAFE, SAFE) | text,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(text, children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=500)
@given(json_values)
def test_fast_path_matches_rfc8785(value: object) -> None:
    assert canonical_bytes(value) == rfc8785.dumps(value)


def test_control_characters_and_bmp_edges() -> None:
    value = {"\x7f": '\x00\x1f\u2028\ufeff"\\\\/', "\ue000": 1, "a": [True, None, -SAFE]}
    assert canonical_bytes(value) == rfc8785.dumps(value)


def test_astral_keys_fall_back_to_rfc8785_order() -> None:
    value = {"\U0001f600": 1, "\ufb33": 2, "\u20ac": 3}
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_bytes(value).index("€".encode()) < canonical_bytes(value).index("😀".encode())
