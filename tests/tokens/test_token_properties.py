"""Properties over generated ids and strings: round trips, length, tamper evidence, no raising."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from workrail.core.ids import make_id
from workrail.store.local.keyring import Keyring
from workrail.tokens import (
    AckToken,
    CheckpointToken,
    ContinueToken,
    StateToken,
    Token,
    TokenCodec,
    TokenError,
    check_advance_scope,
)

CODEC = TokenCodec(Keyring(current=bytes(range(32)), previous=bytes(range(32, 64))))
OTHER = TokenCodec(Keyring(current=bytes(range(64, 96)), previous=None))

ParseFn = Callable[[str], Result[Token, TokenError]]
PARSERS: tuple[ParseFn, ...] = (
    lambda t: CODEC.parse_state(t),
    lambda t: CODEC.parse_ack(t),
    lambda t: CODEC.parse_checkpoint(t),
)
BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

raw16 = st.binary(min_size=16, max_size=16)
sessions = raw16.map(lambda b: make_id("sess", b))
nodes = raw16.map(lambda b: make_id("node", b))
attempts = raw16.map(lambda b: make_id("attempt", b))
wf_refs = raw16.map(lambda b: make_id("wf", b))

tokens: st.SearchStrategy[Token] = st.one_of(
    st.builds(StateToken, sessions, nodes, wf_refs),
    st.builds(AckToken, sessions, nodes, attempts),
    st.builds(CheckpointToken, sessions, nodes, attempts),
)


def parse(token: Token, text: str) -> Result[Token, TokenError]:
    match token:
        case StateToken():
            return CODEC.parse_state(text).map(lambda t: t)
        case AckToken():
            return CODEC.parse_ack(text).map(lambda t: t)
        case CheckpointToken():
            return CODEC.parse_checkpoint(text).map(lambda t: t)
        case ContinueToken():
            return CODEC.parse_continue(text).map(lambda t: t)


@given(tokens)
def test_every_token_round_trips_and_is_at_most_100_characters(token: Token) -> None:
    text = CODEC.encode(token)
    assert len(text) <= 100
    assert len(text) == (91 if isinstance(token, StateToken) else 92)
    assert parse(token, text) == Success(token)
    assert CODEC.encode(token) == text


@given(tokens, tokens)
def test_different_payloads_give_different_strings(a: Token, b: Token) -> None:
    assert (CODEC.encode(a) == CODEC.encode(b)) == (a == b)


@given(tokens, st.data())
@settings(max_examples=300)
def test_changing_any_single_character_never_verifies(token: Token, data: st.DataObject) -> None:
    text = CODEC.encode(token)
    index = data.draw(st.integers(0, len(text) - 1))
    replacement = data.draw(
        st.one_of(st.sampled_from(BASE64URL + ". "), st.characters()).filter(
            lambda c: c != text[index]
        )
    )
    mutated = text[:index] + replacement + text[index + 1 :]
    for parser in PARSERS:
        assert isinstance(parser(mutated), Failure)


@given(tokens)
def test_a_token_signed_with_another_key_never_verifies(token: Token) -> None:
    for parser in PARSERS:
        result = parser(OTHER.encode(token))
        assert isinstance(result, Failure)
        assert result.failure().code in {"TOKEN_BAD_SIGNATURE", "TOKEN_INVALID_FORMAT"}


@given(st.text())
def test_parse_never_raises_and_never_accepts_arbitrary_text(text: str) -> None:
    for parser in PARSERS:
        assert isinstance(parser(text), Failure)


@given(
    st.sampled_from(["st1.", "ack1.", "chk1."]),
    st.text(BASE64URL, min_size=64, max_size=64),
    st.text(BASE64URL, min_size=22, max_size=22),
)
def test_well_shaped_forgeries_never_verify(prefix: str, payload: str, mac: str) -> None:
    for parser in PARSERS:
        result = parser(f"{prefix}{payload}.{mac}")
        assert isinstance(result, Failure)
        assert result.failure().code in {"TOKEN_BAD_SIGNATURE", "TOKEN_INVALID_FORMAT"}


@given(sessions, sessions, nodes, nodes, wf_refs, attempts)
def test_scope_check_on_parsed_tokens(
    s1: str, s2: str, n1: str, n2: str, wf: str, attempt: str
) -> None:
    state = CODEC.parse_state(CODEC.encode(StateToken(s1, n1, wf))).unwrap()
    ack = CODEC.parse_ack(CODEC.encode(AckToken(s2, n2, attempt))).unwrap()
    result = check_advance_scope(state, ack)
    if s1 != s2:
        assert result.failure().message == "sessionId mismatch"
    elif n1 != n2:
        assert result.failure().message == "nodeId mismatch"
    else:
        assert result == Success(None)
