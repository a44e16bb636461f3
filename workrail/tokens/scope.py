"""The advance scope rule: the stateToken and ackToken of one call must name the same node.

Tokens carry no runId: a node belongs to exactly one run, so equal (session, node) implies
equal run. Fields are compared in the reference's order (sessionId, then nodeId).
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from workrail.tokens import errors
from workrail.tokens.errors import TokenError
from workrail.tokens.models import AckToken, StateToken


def check_advance_scope(state: StateToken, ack: AckToken) -> Result[None, TokenError]:
    """Success when both tokens point at the same session and node."""
    if state.session_id != ack.session_id:
        return Failure(errors.scope_mismatch("sessionId"))
    if state.node_id != ack.node_id:
        return Failure(errors.scope_mismatch("nodeId"))
    return Success(None)
