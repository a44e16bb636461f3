"""UTF-8 byte budgets and the truncation marker (spec 20-events §5)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workrail.core.budgets import (
    NOTES_MAX_BYTES,
    TRUNCATION_MARKER,
    truncate_notes,
    truncate_utf8,
    utf8_len,
)

MARKER_BYTES = TRUNCATION_MARKER.encode("utf-8")


def test_marker_is_the_canonical_13_bytes() -> None:
    assert TRUNCATION_MARKER == "\n\n[TRUNCATED]"
    assert len(MARKER_BYTES) == 13
    assert NOTES_MAX_BYTES == 4096


@pytest.mark.parametrize("size", [0, 1, 4083, 4095, 4096])
def test_notes_within_budget_are_unchanged(size: int) -> None:
    text = "a" * size
    assert truncate_notes(text) == text


def test_ascii_over_budget_keeps_exactly_4083_bytes_plus_marker() -> None:
    text = "a" * 4097
    result = truncate_notes(text)
    assert result == "a" * 4083 + TRUNCATION_MARKER
    assert utf8_len(result) == 4096


def test_multibyte_exactly_at_budget_is_unchanged() -> None:
    text = "\u00e9" * 2048  # 4096 bytes
    assert truncate_notes(text) == text


def test_3000_e_acute_yields_valid_utf8_with_marker() -> None:
    # 6000 bytes; byte 4083 falls in the middle of a 2-byte character, which must be dropped
    # (the reference leaves the lone lead byte and produces an invalid 4098-byte string).
    result = truncate_notes("\u00e9" * 3000)
    encoded = result.encode("utf-8")
    assert "\ufffd" not in result
    assert len(encoded) <= 4096
    assert result == "\u00e9" * 2041 + TRUNCATION_MARKER
    assert len(encoded) == 4082 + 13


@pytest.mark.parametrize("char", ["\u20ac", "\U0001f600"])
def test_cut_drops_incomplete_trailing_sequences(char: str) -> None:
    width = len(char.encode("utf-8"))
    count = 5000 // width + 1
    result = truncate_notes(char * count)
    keep = 4083 // width
    assert result == char * keep + TRUNCATION_MARKER


def test_small_limit_edge_cases() -> None:
    assert truncate_utf8("abcdef", 6) == "abcdef"
    assert truncate_utf8("a" * 20, 14) == "a" + TRUNCATION_MARKER
    # no room for the marker: cut on a character boundary without it
    assert truncate_utf8("abcdef", 5) == "abcde"
    assert truncate_utf8("\u00e9\u00e9\u00e9", 3) == "\u00e9"


@settings(deadline=None)
@given(st.text(), st.integers(min_value=14, max_value=300))
def test_truncation_properties(text: str, limit: int) -> None:
    result = truncate_utf8(text, limit)
    encoded = result.encode("utf-8")  # valid: no lone surrogates, round-trips
    assert encoded.decode("utf-8") == result
    assert len(encoded) <= limit
    if utf8_len(text) <= limit:
        assert result == text
    else:
        assert result.endswith(TRUNCATION_MARKER)
        kept = result[: -len(TRUNCATION_MARKER)]
        assert text.startswith(kept)
        room = limit - len(MARKER_BYTES)
        # the cut is as late as possible: at most one incomplete character (≤ 3 bytes) lost
        assert room - 3 <= utf8_len(kept) <= room


@settings(deadline=None)
@given(st.text(min_size=1000, max_size=3000))
def test_notes_truncation_property(text: str) -> None:
    result = truncate_notes(text)
    assert utf8_len(result) <= 4096
    if utf8_len(text) > 4096:
        assert result.endswith(TRUNCATION_MARKER)
        assert text.startswith(result[: -len(TRUNCATION_MARKER)])
    else:
        assert result == text
