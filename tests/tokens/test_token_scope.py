"""Advance scope: the stateToken and ackToken must name the same session and node."""

from __future__ import annotations

from returns.result import Failure, Success

from workrail.tokens import AckToken, StateToken, TokenError, check_advance_scope

SESSION = "sess_akuobhxpaal3j6jgnpsnzywq2u"
OTHER_SESSION = "sess_xitzhouag5y6h6k7bbzrv6k6ly"
NODE = "node_o6kivaif72shejqlmg4jum2rqu"
OTHER_NODE = "node_aaaaaaaaaaaaaaaaaaaaaaaaaa"
ATTEMPT = "attempt_pqozqp3ocnhrtydshez6gceaza"
WF_REF = "wf_knk5vrn6vvpynhliwatshtvo6u"

SUGGESTION = (
    "Tokens must come from the same WorkRail response. "
    "Do not mix tokens from different runs or nodes."
)


def _mismatch(state: StateToken, ack: AckToken) -> TokenError:
    result = check_advance_scope(state, ack)
    assert isinstance(result, Failure)
    error = result.failure()
    assert isinstance(error, TokenError)
    assert error.code == "TOKEN_SCOPE_MISMATCH"
    assert error.suggestion == SUGGESTION
    assert error.retry == "not_retryable"
    return error


def test_same_session_and_node_is_in_scope() -> None:
    state = StateToken(SESSION, NODE, WF_REF)
    assert check_advance_scope(state, AckToken(SESSION, NODE, ATTEMPT)) == Success(None)


def test_session_mismatch() -> None:
    state = StateToken(SESSION, NODE, WF_REF)
    error = _mismatch(state, AckToken(OTHER_SESSION, NODE, ATTEMPT))
    assert error.message == "sessionId mismatch"


def test_node_mismatch() -> None:
    state = StateToken(SESSION, NODE, WF_REF)
    assert _mismatch(state, AckToken(SESSION, OTHER_NODE, ATTEMPT)).message == "nodeId mismatch"


def test_session_is_checked_before_node() -> None:
    state = StateToken(SESSION, NODE, WF_REF)
    error = _mismatch(state, AckToken(OTHER_SESSION, OTHER_NODE, ATTEMPT))
    assert error.message == "sessionId mismatch"
