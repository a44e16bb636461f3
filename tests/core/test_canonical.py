"""RFC 8785 (JCS) canonical bytes and digests (spec 00-overview §5)."""

from __future__ import annotations

import datetime
import decimal
import hashlib
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workrail.core.canonical import (
    CanonicalJsonError,
    canonical_bytes,
    canonical_digest,
    digest_file_name,
    is_digest,
    jsonl_line,
    sha256_digest,
)

REFERENCE_DATA = Path(__file__).resolve().parents[1] / "fixtures" / "reference" / "data"
SAFE = 2**53 - 1

# --- golden bytes -----------------------------------------------------------------------


def test_rfc8785_number_array_example() -> None:
    value = [333333333.3333333, 1e30, 4.5, 0.002, 1e-27]
    assert canonical_bytes(value) == b"[333333333.3333333,1e+30,4.5,0.002,1e-27]"


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (-0.0, b"0"),
        (0.0, b"0"),
        (1.0, b"1"),
        (-1.0, b"-1"),
        (1e21, b"1e+21"),
        (1e20, b"100000000000000000000"),
        (1e-7, b"1e-7"),
        (1e-6, b"0.000001"),
        (5e-324, b"5e-324"),
        (-5e-324, b"-5e-324"),
        (1.7976931348623157e308, b"1.7976931348623157e+308"),
        (-1.7976931348623157e308, b"-1.7976931348623157e+308"),
        (9007199254740991.0, b"9007199254740991"),
        (295147905179352830000.0, b"295147905179352830000"),
        (4.35, b"4.35"),
        (0.1 + 0.2, b"0.30000000000000004"),
        (1e-27, b"1e-27"),
        (333333333.3333333, b"333333333.3333333"),
        (SAFE, b"9007199254740991"),
        (-SAFE, b"-9007199254740991"),
        (0, b"0"),
        (True, b"true"),
        (False, b"false"),
        (None, b"null"),
    ],
)
def test_number_and_literal_formatting(number: Any, expected: bytes) -> None:
    assert canonical_bytes(number) == expected


def test_rfc8785_key_sorting_uses_utf16_code_units() -> None:
    # RFC 8785 §3.2.3: "\r" < "1" < U+0080 < "ö" < "€" < U+1F600 < U+FB33.
    # U+1F600 is the surrogate pair D83D DE00, which sorts *before* U+FB33 in UTF-16
    # although its code point is larger.
    keys = ["\u20ac", "\r", "\ufb33", "1", "\U0001f600", "\u0080", "\u00f6"]
    random.Random(7).shuffle(keys)
    value = {k: i for i, k in enumerate(keys)}
    encoded = canonical_bytes(value)
    decoded = json.loads(encoded)
    assert list(decoded) == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    assert encoded.startswith(b'{"\\r":')
    assert "\ufb33".encode() in encoded  # raw UTF-8, not escaped


def test_nested_objects_sorted_and_arrays_keep_order() -> None:
    value = {"b": [3, 1, {"z": 1, "a": 2}], "a": {"y": None, "x": "s"}}
    assert canonical_bytes(value) == b'{"a":{"x":"s","y":null},"b":[3,1,{"a":2,"z":1}]}'


def test_string_escaping() -> None:
    text = '\x00\x01\x1f\b\f\n\r\t"\\/ \x7f\u00e9\u20ac\U0001f600\u2028'
    expected = (
        b'"\\u0000\\u0001\\u001f\\b\\f\\n\\r\\t\\"\\\\/ \x7f'
        + "\u00e9\u20ac\U0001f600\u2028".encode()
        + b'"'
    )
    assert canonical_bytes(text) == expected


@pytest.mark.parametrize("code", [c for c in range(0x20) if chr(c) not in "\b\f\n\r\t"])
def test_other_control_characters_use_lowercase_u_escapes(code: int) -> None:
    assert canonical_bytes(chr(code)) == f'"\\u{code:04x}"'.encode()


def test_no_whitespace_anywhere() -> None:
    assert canonical_bytes({"a": [1, 2], "b": {"c": "d e"}}) == b'{"a":[1,2],"b":{"c":"d e"}}'


def test_jsonl_line_is_canonical_plus_one_newline() -> None:
    assert jsonl_line({"b": 1, "a": 2}) == b'{"a":2,"b":1}\n'


# --- rejections -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        [1, math.nan],
        {"x": math.inf},
        2**53,
        -(2**53),
        2**64,
        {"deep": [[2**53]]},
        (1, 2),
        [1, (2,)],
        {1, 2},
        frozenset(),
        b"bytes",
        bytearray(b"x"),
        decimal.Decimal("1.5"),
        datetime.datetime(2024, 1, 1),
        datetime.date(2024, 1, 1),
        object(),
        {"a": {1}},
        {1: "x"},
        {True: "x"},
        {None: "x"},
        {("a",): "x"},
        "\ud800",
        "a\udfffb",
        ["ok", "\udc00"],
        {"\ud800": 1},
    ],
    # the same id in every process (a bare object's repr holds its address): parallel
    # workers must collect the same tests
    ids=lambda value: "object()" if type(value) is object else repr(value),
)
def test_rejected_values_raise_canonical_json_error(value: Any) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_bytes(value)
    with pytest.raises(CanonicalJsonError):
        canonical_digest(value)


def test_canonical_json_error_is_a_value_error() -> None:
    assert issubclass(CanonicalJsonError, ValueError)


def test_integral_floats_beyond_the_safe_range_are_refused_at_the_boundary() -> None:
    """1e16 is printed by JCS as the integer literal `10000000000000000`, which a JSON
    reader hands back as an int beyond 2^53 - 1 that canonical JSON rejects. canonical_bytes
    itself follows RFC 8785 for floats, so the engine refuses such numbers in agent input
    (context and artifacts): nothing is ever written that could not be written again."""
    from workrail.engine.context import json_value_problem, validate_context

    for value in [2.0**53, 1e16, -1e16, 1e20, -(2.0**60)]:
        first = canonical_bytes(value)
        with pytest.raises(CanonicalJsonError):
            canonical_bytes(json.loads(first))
        assert json_value_problem({"n": value}) is not None
        assert validate_context("start_workflow", {"n": value}).failure().code == "VALIDATION_ERROR"


# --- properties -------------------------------------------------------------------------

_SAFE_INTS = st.integers(min_value=-SAFE, max_value=SAFE)
# Integral floats in [2^53, 1e21) are covered by the explicit test above.
_FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: not (f.is_integer() and 2**53 <= abs(f) < 1e21)
)
_TEXT = st.text(st.characters(exclude_categories=["Cs"]))

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | _SAFE_INTS | _FLOATS | _TEXT,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(_TEXT, children, max_size=5),
    max_leaves=25,
)


@settings(deadline=None)
@given(JSON_VALUES)
def test_round_trip_and_idempotence(value: Any) -> None:
    encoded = canonical_bytes(value)
    parsed = json.loads(encoded)
    # -0.0 == 0 and 1.0 == 1 in Python, so value equality holds across the int/float change
    assert parsed == value
    assert canonical_bytes(parsed) == encoded
    encoded.decode("utf-8")  # always valid UTF-8


@settings(deadline=None)
@given(st.dictionaries(_TEXT, st.integers(-10, 10), max_size=8))
def test_keys_sorted_by_utf16_code_units(value: dict[str, int]) -> None:
    decoded = json.loads(canonical_bytes(value))
    keys = list(decoded)
    assert keys == sorted(value, key=lambda k: k.encode("utf-16-be"))


@settings(deadline=None)
@given(_FLOATS)
def test_floats_round_trip_exactly(number: float) -> None:
    assert float(json.loads(canonical_bytes(number))) == number


# --- digests ----------------------------------------------------------------------------


def test_sha256_digest_format() -> None:
    assert sha256_digest(b"") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert is_digest(sha256_digest(b"abc"))


def test_canonical_digest_hashes_the_canonical_bytes() -> None:
    value = {"b": 1.0, "a": "\u00e9"}
    expected = "sha256:" + hashlib.sha256('{"a":"\u00e9","b":1}'.encode()).hexdigest()
    assert canonical_digest(value) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "sha256:",
        "sha256:" + "a" * 63,
        "sha256:" + "a" * 65,
        "sha256:" + "A" * 64,
        "sha256:" + "g" * 64,
        "SHA256:" + "a" * 64,
        "sha256:" + "a" * 64 + "\n",
        " sha256:" + "a" * 64,
        "sha512:" + "a" * 64,
        "../x",
        "sha256:../../etc/passwd",
        "sha256:XYZ",
        "sha256_" + "a" * 64,
    ],
)
def test_non_digests_are_rejected(text: str) -> None:
    assert not is_digest(text)
    with pytest.raises(ValueError, match="not a sha256 digest"):
        digest_file_name(text)


def test_digest_file_name() -> None:
    digest = "sha256:" + "0123456789abcdef" * 4
    assert digest_file_name(digest) == "sha256_" + "0123456789abcdef" * 4 + ".json"


# --- reference CAS files ----------------------------------------------------------------

CAS_FILES = sorted((REFERENCE_DATA / "snapshots").glob("*.json")) + sorted(
    (REFERENCE_DATA / "workflows" / "pinned").glob("*.json")
)


def test_reference_cas_files_exist() -> None:
    assert len(list((REFERENCE_DATA / "snapshots").glob("*.json"))) >= 1
    assert len(list((REFERENCE_DATA / "workflows" / "pinned").glob("*.json"))) >= 1


@pytest.mark.parametrize("path", CAS_FILES, ids=lambda p: f"{p.parent.name}/{p.name[:20]}")
def test_reference_cas_file_is_jcs_and_named_by_its_digest(path: Path) -> None:
    data = path.read_bytes()
    assert not data.endswith(b"\n")
    assert canonical_bytes(json.loads(data)) == data
    digest = sha256_digest(data)
    assert canonical_digest(json.loads(data)) == digest
    assert digest_file_name(digest) == path.name
