"""Typed ids `<prefix>_<26 lowercase base32>` (spec 20-events §6, 30-tokens)."""

from __future__ import annotations

import base64
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workrail.core.ids import (
    ID_PREFIXES,
    b32_decode16,
    b32_encode16,
    id_bytes,
    is_id,
    is_session_id,
    make_id,
    next_attempt_id,
    workflow_hash_ref,
)

ID_RE = re.compile(r"^(sess|run|node|evt|attempt|wf)_[a-z2-7]{25}[aeimquy4]$")


@pytest.mark.parametrize("prefix", [*ID_PREFIXES, "wf"])
def test_minted_id_shape(prefix: str) -> None:
    for _ in range(50):
        text = make_id(prefix, os.urandom(16))  # type: ignore[arg-type]
        assert ID_RE.fullmatch(text)
        body = text.split("_", 1)[1]
        assert len(body) == 26
        assert body[-1] in "aeimquy4"
        assert is_id(text, prefix)  # type: ignore[arg-type]


def test_known_encodings() -> None:
    assert b32_encode16(bytes(16)) == "a" * 26
    assert b32_encode16(b"\xff" * 16) == "7" * 25 + "4"
    raw = bytes(range(16))
    assert b32_encode16(raw) == base64.b32encode(raw).decode().rstrip("=").lower()


@pytest.mark.parametrize("size", [0, 15, 17, 32])
def test_encode_requires_16_bytes(size: int) -> None:
    with pytest.raises(ValueError, match="exactly 16 bytes"):
        b32_encode16(b"\x00" * size)


@pytest.mark.parametrize("last", list("bcdfghjklnoprstvwxz2356" + "7"))
def test_decode_rejects_non_zero_pad_bits(last: str) -> None:
    with pytest.raises(ValueError, match="id body"):
        b32_decode16("a" * 25 + last)
    assert not is_id("sess_" + "a" * 25 + last, "sess")
    assert not is_session_id("sess_" + "a" * 25 + last)


@pytest.mark.parametrize(
    "body",
    [
        "a" * 25,  # too short
        "a" * 27,  # too long
        "a" * 24 + "a",
        "",
        "A" * 26,  # uppercase
        "a" * 25 + "A",
        "a" * 24 + "1a",  # '1' not in the alphabet
        "a" * 24 + "0a",
        "a" * 24 + "8a",
        "a" * 24 + "9a",
        "a" * 24 + "=a",
        "a" * 22 + "====",
        "a" * 25 + "a\n",
        "\u00e9" + "a" * 25,
    ],
)
def test_decode_rejects_bad_bodies(body: str) -> None:
    with pytest.raises(ValueError, match="id body"):
        b32_decode16(body)


def test_is_session_id() -> None:
    good = make_id("sess", os.urandom(16))
    assert is_session_id(good)
    assert is_session_id("sess_akuobhxpaal3j6jgnpsnzywq2u")
    for bad in [
        good.upper(),
        good + "a",
        good[:-1],
        "run_" + good[5:],
        "sess-" + good[5:],
        "../" + good,
        good + "/..",
        good + "\n",
        "sess_",
        "",
    ]:
        assert not is_session_id(bad), bad


def test_is_id_checks_the_prefix() -> None:
    node = make_id("node", os.urandom(16))
    assert is_id(node, "node")
    assert not is_id(node, "run")
    assert not is_id(node, "sess")


def test_id_bytes() -> None:
    raw = os.urandom(16)
    assert id_bytes(make_id("evt", raw), "evt") == raw
    with pytest.raises(ValueError, match="not a node id"):
        id_bytes(make_id("evt", raw), "node")
    with pytest.raises(ValueError, match="not a evt id"):
        id_bytes("evt_" + "a" * 25 + "b", "evt")


def test_next_attempt_id_spec_example() -> None:
    assert (
        next_attempt_id("attempt_pqozqp3ocnhrtydshez6gceaza")
        == "attempt_t2ro2n57vawkhvyychnjrmk4di"
    )


def test_next_attempt_id_is_deterministic_and_well_formed() -> None:
    first = next_attempt_id("attempt_pqozqp3ocnhrtydshez6gceaza")
    second = next_attempt_id(first)
    assert second != first
    assert next_attempt_id(first) == second
    assert is_id(second, "attempt")


def test_workflow_hash_ref_spec_example() -> None:
    digest = "sha256:5355dac5bead5f869d68b02723ceaef551e0acd397d6973e14fc7959d7110c09"
    assert workflow_hash_ref(digest) == "wf_knk5vrn6vvpynhliwatshtvo6u"
    assert is_id(workflow_hash_ref(digest), "wf")
    assert id_bytes(workflow_hash_ref(digest), "wf") == bytes.fromhex(digest[7:])[:16]


@settings(deadline=None)
@given(st.binary(min_size=16, max_size=16), st.sampled_from([*ID_PREFIXES, "wf"]))
def test_round_trip(raw: bytes, prefix: str) -> None:
    text = make_id(prefix, raw)  # type: ignore[arg-type]
    assert ID_RE.fullmatch(text)
    assert id_bytes(text, prefix) == raw  # type: ignore[arg-type]
    assert b32_decode16(text.split("_", 1)[1]) == raw


@given(st.binary(min_size=16, max_size=16))
def test_b32_matches_the_standard_library(raw: bytes) -> None:

    expected = base64.b32encode(raw).decode("ascii").rstrip("=").lower()
    assert b32_encode16(raw) == expected
    assert b32_decode16(expected) == raw
