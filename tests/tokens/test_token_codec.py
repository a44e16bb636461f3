"""Minting, parsing, tampering, keys and rotation for the three token kinds."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Callable

import pytest
from itsdangerous import URLSafeSerializer
from returns.result import Failure, Result, Success

from workrail.store.local.keyring import Keyring
from workrail.tokens import (
    AckToken,
    CheckpointToken,
    ContinueToken,
    StateToken,
    TokenCodec,
    TokenError,
    token_length,
)

KEY_A = bytes(range(32))
KEY_B = bytes(range(32, 64))
KEY_C = bytes(range(64, 96))

SESSION = "sess_akuobhxpaal3j6jgnpsnzywq2u"
NODE = "node_o6kivaif72shejqlmg4jum2rqu"
ATTEMPT = "attempt_pqozqp3ocnhrtydshez6gceaza"
WORKFLOW_HASH = "sha256:5355dac5bead5f869d68b02723ceaef5" + "0" * 32
WF_REF = "wf_knk5vrn6vvpynhliwatshtvo6u"

# Real tokens issued by the reference server (bech32m format), from the spec's transcripts.
REFERENCE_STATE = (
    "st1qyqq928qnmhsq9a5lynxhexuutgd2f2p5vz7x6lad6rc2s6vn2sty94u4exuewgpm9hag8kjf2xgjd2a2d2a43"
    "d7440cd8tgkqnj8n4w744axd73ryegnmwcn07hjqy4lel92l96uk9zs4zfnnfpr4rzsr4fjlatpnz"
)
REFERENCE_ACK = (
    "ack1qyqs928qnmhsq9a5lynxhexuutgd2f2p5vz7x6lad6rc2s6vn2sty94u4exuewgpm9hag8kjf2xgjd2akyd7"
    "j685hlsph9x6sk8ny3jx3hy00kj762s2zuqw8uynzagzvakdhyllawdz5guufl0vx3myaedtw93ptsl"
)
JWT_LIKE = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)

URL_SAFE = re.compile(r"[A-Za-z0-9_.-]+")

Parser = Callable[[TokenCodec, str], Result[object, TokenError]]
PARSERS: dict[str, Parser] = {
    "state": lambda c, t: c.parse_state(t),
    "ack": lambda c, t: c.parse_ack(t),
    "checkpoint": lambda c, t: c.parse_checkpoint(t),
}


def codec_for(current: bytes, previous: bytes | None = None) -> TokenCodec:
    return TokenCodec(Keyring(current=current, previous=previous))


def mint(codec: TokenCodec, kind: str) -> str:
    if kind == "state":
        return codec.mint_state(session_id=SESSION, node_id=NODE, workflow_hash=WORKFLOW_HASH)
    if kind == "ack":
        return codec.mint_ack(session_id=SESSION, node_id=NODE, attempt_id=ATTEMPT)
    return codec.mint_checkpoint(session_id=SESSION, node_id=NODE, attempt_id=ATTEMPT)


def error_of(result: Result[object, TokenError]) -> TokenError:
    assert isinstance(result, Failure), f"expected a failure, got {result!r}"
    error = result.failure()
    assert isinstance(error, TokenError)
    return error


def code_of(result: Result[object, TokenError]) -> str:
    return error_of(result).code


KINDS = ["state", "ack", "checkpoint"]


@pytest.fixture
def codec() -> TokenCodec:
    return codec_for(KEY_A)


# --- round trips, determinism, shape ---------------------------------------------------------


def test_state_round_trip(codec: TokenCodec) -> None:
    token = mint(codec, "state")
    assert codec.parse_state(token) == Success(StateToken(SESSION, NODE, WF_REF))


def test_ack_round_trip(codec: TokenCodec) -> None:
    assert codec.parse_ack(mint(codec, "ack")) == Success(AckToken(SESSION, NODE, ATTEMPT))


def test_checkpoint_round_trip(codec: TokenCodec) -> None:
    token = mint(codec, "checkpoint")
    assert codec.parse_checkpoint(token) == Success(CheckpointToken(SESSION, NODE, ATTEMPT))


def test_state_token_knows_its_workflow_hash(codec: TokenCodec) -> None:
    state = codec.parse_state(mint(codec, "state")).unwrap()
    assert state.matches_workflow_hash(WORKFLOW_HASH)
    assert not state.matches_workflow_hash("sha256:" + "1" * 64)
    assert not state.matches_workflow_hash("not a hash")


@pytest.mark.parametrize("kind", KINDS)
def test_minting_is_deterministic_across_codecs(kind: str) -> None:
    assert mint(codec_for(KEY_A), kind) == mint(codec_for(KEY_A), kind)


@pytest.mark.parametrize("kind", KINDS)
def test_a_different_key_gives_a_different_string(kind: str) -> None:
    assert mint(codec_for(KEY_A), kind) != mint(codec_for(KEY_B), kind)


def test_ack_and_checkpoint_with_the_same_fields_differ(codec: TokenCodec) -> None:
    ack, checkpoint = mint(codec, "ack"), mint(codec, "checkpoint")
    assert ack.split(".")[1] == checkpoint.split(".")[1]  # same payload bytes
    assert ack.split(".")[2] != checkpoint.split(".")[2]  # different salt → different MAC


@pytest.mark.parametrize(
    ("kind", "prefix", "length"),
    [("state", "st1.", 91), ("ack", "ack1.", 92), ("checkpoint", "chk1.", 92)],
)
def test_shape_and_length(codec: TokenCodec, kind: str, prefix: str, length: int) -> None:
    token = mint(codec, kind)
    assert token.startswith(prefix)
    assert len(token) == length == token_length(kind)  # type: ignore[arg-type]
    assert len(token) <= 100
    assert URL_SAFE.fullmatch(token)


def test_mac_is_hmac_sha256_with_per_kind_derived_key_truncated_to_128_bits(
    codec: TokenCodec,
) -> None:
    token = mint(codec, "ack")
    value, mac_text = token.rsplit(".", 1)
    derived = hmac.new(KEY_A, b"workrail.token.v1.ack", hashlib.sha256).digest()
    expected = hmac.new(derived, value.encode(), hashlib.sha256).digest()[:16]
    assert base64.urlsafe_b64decode(mac_text + "==") == expected


# --- kinds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("given", KINDS)
@pytest.mark.parametrize("slot", KINDS)
def test_a_token_is_accepted_only_in_its_own_slot(codec: TokenCodec, given: str, slot: str) -> None:
    result = PARSERS[slot](codec, mint(codec, given))
    if given == slot:
        assert isinstance(result, Success)
        return
    error = error_of(result)
    assert error.code == "TOKEN_INVALID_FORMAT"
    assert error.message.startswith(f"Expected {'an' if slot == 'ack' else 'a'} {slot} token")
    param = {"state": "stateToken", "ack": "ackToken", "checkpoint": "checkpointToken"}[slot]
    assert error.suggestion == f"Use the {param} returned by WorkRail."


def test_relabelling_the_prefix_breaks_the_signature(codec: TokenCodec) -> None:
    ack = mint(codec, "ack")
    as_checkpoint = "chk1." + ack.removeprefix("ack1.")
    assert code_of(codec.parse_checkpoint(as_checkpoint)) == "TOKEN_BAD_SIGNATURE"


# --- tampering and garbage ------------------------------------------------------------------


def _flip(token: str, index: int) -> str:
    replacement = "B" if token[index] != "B" else "C"
    return token[:index] + replacement + token[index + 1 :]


@pytest.mark.parametrize("kind", KINDS)
def test_flipped_payload_character_is_bad_signature(codec: TokenCodec, kind: str) -> None:
    token = mint(codec, kind)
    start = token.index(".") + 1
    for index in (start, start + 30, start + 63):
        assert code_of(PARSERS[kind](codec, _flip(token, index))) == "TOKEN_BAD_SIGNATURE"


@pytest.mark.parametrize("kind", KINDS)
def test_flipped_signature_character_is_refused(codec: TokenCodec, kind: str) -> None:
    token = mint(codec, kind)
    for index in range(len(token) - 22, len(token)):
        assert code_of(PARSERS[kind](codec, _flip(token, index))) in {
            "TOKEN_BAD_SIGNATURE",
            "TOKEN_INVALID_FORMAT",
        }


def test_non_canonical_signature_encoding_is_refused(codec: TokenCodec) -> None:
    token = mint(codec, "state")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(token[-1])
    same_bytes = token[:-1] + alphabet[last + 1]  # only the 4 unused pad bits change
    assert base64.urlsafe_b64decode(same_bytes.rsplit(".", 1)[1] + "==") == (
        base64.urlsafe_b64decode(token.rsplit(".", 1)[1] + "==")
    )
    assert code_of(codec.parse_state(same_bytes)) == "TOKEN_INVALID_FORMAT"


@pytest.mark.parametrize("kind", KINDS)
def test_truncated_and_extended_tokens_are_invalid_format(codec: TokenCodec, kind: str) -> None:
    token = mint(codec, kind)
    for broken in (token[:-1], token[:-10], token[: len(token) // 2], token + "A", token + "."):
        error = error_of(PARSERS[kind](codec, broken))
        assert error.code == "TOKEN_INVALID_FORMAT"
        assert "Likely copy/paste error" in error.message


@pytest.mark.parametrize("kind", KINDS)
def test_whitespace_anywhere_is_invalid_format(codec: TokenCodec, kind: str) -> None:
    token = mint(codec, kind)
    for broken in (" " + token, token + " ", token + "\n", token[:20] + " " + token[21:]):
        assert code_of(PARSERS[kind](codec, broken)) == "TOKEN_INVALID_FORMAT"


@pytest.mark.parametrize("kind", KINDS)
def test_non_ascii_lookalikes_are_invalid_format(codec: TokenCodec, kind: str) -> None:
    token = mint(codec, kind)
    for char in ("é", "\uff21", "\u0661", "\u200b", "\ud800"):
        broken = token[:20] + char + token[21:]
        assert code_of(PARSERS[kind](codec, broken)) == "TOKEN_INVALID_FORMAT"


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        " ",
        "st1",
        "st1.",
        "st1..",
        "ST1." + "A" * 64 + "." + "A" * 22,
        "null",
        JWT_LIKE,
        URLSafeSerializer("secret").dumps({"sessionId": SESSION}),
        "x" * 10_000,
    ],
)
@pytest.mark.parametrize("kind", KINDS)
def test_garbage_is_invalid_format(codec: TokenCodec, kind: str, garbage: str) -> None:
    error = error_of(PARSERS[kind](codec, garbage))
    assert error.code == "TOKEN_INVALID_FORMAT"
    assert error.suggestion


@pytest.mark.parametrize("foreign", [REFERENCE_STATE, REFERENCE_ACK])
@pytest.mark.parametrize("kind", KINDS)
def test_reference_bech32m_tokens_are_refused_with_an_explanation(
    codec: TokenCodec, kind: str, foreign: str
) -> None:
    error = error_of(PARSERS[kind](codec, foreign))
    assert error.code == "TOKEN_INVALID_FORMAT"
    assert "another WorkRail implementation" in error.message


def test_non_string_input_is_invalid_format(codec: TokenCodec) -> None:
    assert code_of(codec.parse_state(None)) == "TOKEN_INVALID_FORMAT"  # type: ignore[arg-type]
    assert code_of(codec.parse_ack(b"ack1.")) == "TOKEN_INVALID_FORMAT"  # type: ignore[arg-type]


# --- versions -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_version_is_unsupported_version(codec: TokenCodec, kind: str) -> None:
    token = mint(codec, kind)
    word = token.split("1.", 1)[0]
    for version in ("2", "0", "10", "999"):
        relabelled = f"{word}{version}." + token.split(".", 1)[1]
        error = error_of(PARSERS[kind](codec, relabelled))
        assert error.code == "TOKEN_UNSUPPORTED_VERSION"
        assert error.suggestion == "Update WorkRail to a version that supports this token format."


def test_unknown_version_wins_over_wrong_kind(codec: TokenCodec) -> None:
    assert code_of(codec.parse_ack("st2.anything")) == "TOKEN_UNSUPPORTED_VERSION"


# --- keys and rotation ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_token_from_another_keyring_is_bad_signature(kind: str) -> None:
    token = mint(codec_for(KEY_B), kind)
    error = error_of(PARSERS[kind](codec_for(KEY_A), token))
    assert error.code == "TOKEN_BAD_SIGNATURE"
    assert error.message == "Signature verification failed"
    # the reference's advice first, then what to do when the signing key itself changed
    assert error.suggestion.startswith(
        "Token signature verification failed. Use the exact tokens returned by WorkRail."
    )
    for hint in ("signing key has changed", "resume_session", "import_session", "export"):
        assert hint in error.suggestion


@pytest.mark.parametrize("kind", KINDS)
def test_rotation_keeps_previous_key_tokens_valid_for_one_rotation(kind: str) -> None:
    before = codec_for(KEY_A)
    once = codec_for(KEY_B, previous=KEY_A)
    twice = codec_for(KEY_C, previous=KEY_B)
    old_token = mint(before, kind)

    assert PARSERS[kind](once, old_token) == PARSERS[kind](before, old_token)
    assert isinstance(PARSERS[kind](once, old_token), Success)
    assert code_of(PARSERS[kind](twice, old_token)) == "TOKEN_BAD_SIGNATURE"

    new_token = mint(once, kind)  # signs with the new current key
    assert new_token != old_token
    assert new_token == mint(codec_for(KEY_B), kind)
    assert isinstance(PARSERS[kind](twice, new_token), Success)


def test_short_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        codec_for(b"short")
    with pytest.raises(ValueError, match="at least 32 bytes"):
        codec_for(KEY_A, previous=b"")


def test_any_object_with_current_and_previous_is_a_key_source() -> None:
    class Keys:
        current = KEY_A
        previous = None

    assert mint(TokenCodec(Keys()), "state") == mint(codec_for(KEY_A), "state")


# --- minting preconditions and error values -------------------------------------------------


@pytest.mark.parametrize(
    "bad_id",
    ["", "sess_short", NODE, "sess_AKUOBHXPAAL3J6JGNPSNZYWQ2U", "sess_akuobhxpaal3j6jgnpsnzywq2v"],
)
def test_minting_with_a_malformed_session_id_is_a_caller_bug(
    codec: TokenCodec, bad_id: str
) -> None:
    with pytest.raises(ValueError, match="not a sess id"):
        codec.mint_ack(session_id=bad_id, node_id=NODE, attempt_id=ATTEMPT)


def test_minting_with_a_malformed_workflow_hash_is_a_caller_bug(codec: TokenCodec) -> None:
    with pytest.raises(ValueError, match="non-hexadecimal"):
        codec.mint_state(session_id=SESSION, node_id=NODE, workflow_hash="sha256:zz")


def test_error_envelope_matches_the_wire_contract(codec: TokenCodec) -> None:
    error = error_of(codec.parse_state(mint(codec, "ack")))
    assert error.to_envelope() == {
        "code": "TOKEN_INVALID_FORMAT",
        "message": "Expected a state token (starting with st1.), "
        "got an ack token (starting with ack1.).",
        "retry": {"kind": "not_retryable"},
        "details": {"suggestion": "Use the stateToken returned by WorkRail."},
    }


# --- continue tokens (state + ack in one) -------------------------------------------------


def test_continue_token_round_trips_and_is_short() -> None:
    codec = codec_for(KEY_A)
    text = codec.mint_continue(session_id=SESSION, node_id=NODE, attempt_id=ATTEMPT)
    assert text.startswith("ct1.")
    assert len(text) == token_length("continue") == 91
    parsed = codec.parse_continue(text).unwrap()
    assert isinstance(parsed, ContinueToken)
    assert parsed.ack() == AckToken(SESSION, NODE, ATTEMPT)


def test_continue_parameter_accepts_the_state_only_kind() -> None:
    codec = codec_for(KEY_A)
    state = codec.mint_state(session_id=SESSION, node_id=NODE, workflow_hash=WORKFLOW_HASH)
    assert codec.parse_continue(state).unwrap() == StateToken(SESSION, NODE, WF_REF)


def test_an_ack_relabelled_as_continue_fails_its_signature() -> None:
    """Same payload layout, different salt: kind separation holds for the new kind."""
    codec = codec_for(KEY_A)
    ack = codec.mint_ack(session_id=SESSION, node_id=NODE, attempt_id=ATTEMPT)
    forged = "ct1." + ack.removeprefix("ack1.")
    err = codec.parse_continue(forged)
    assert isinstance(err, Failure)
    assert err.failure().code == "TOKEN_BAD_SIGNATURE"
    assert isinstance(codec.parse_ack("ack1." + forged.removeprefix("ct1.")), Success)


@pytest.mark.parametrize("kind", ["ack", "checkpoint"])
def test_continue_parameter_names_the_kind_it_got(kind: str) -> None:
    codec = codec_for(KEY_A)
    mint = codec.mint_ack if kind == "ack" else codec.mint_checkpoint
    err = codec.parse_continue(mint(session_id=SESSION, node_id=NODE, attempt_id=ATTEMPT))
    assert isinstance(err, Failure)
    assert err.failure().code == "TOKEN_INVALID_FORMAT"
    assert "Expected a continue token" in err.failure().message


@pytest.mark.parametrize("damage", ["short", "long", "a character off the alphabet"])
def test_a_damaged_continue_token_is_told_what_is_wrong_with_it(damage: str) -> None:
    """Not "expected a continue token, got a continue token": the fault of this one."""
    codec = codec_for(KEY_A)
    text = codec.mint_continue(session_id=SESSION, node_id=NODE, attempt_id=ATTEMPT)
    damaged, fault = {
        "short": (text[:12], "got 12 characters"),
        "long": (text + "AAAA", "got 95 characters"),
        "a character off the alphabet": (text[:-1] + "!", "a character is outside"),
    }[damage]
    err = codec.parse_continue(damaged)
    assert isinstance(err, Failure)
    assert err.failure().code == "TOKEN_INVALID_FORMAT"
    assert err.failure().message.startswith("Token corrupted: a ct1.... token has exactly 91")
    assert fault in err.failure().message
