"""Signed tokens: short, opaque, tamper-evident references into a session's log.

Pure given a keyring: no I/O, no clock, no randomness. Errors are `TokenError` values.

Format v1 (spec 30-tokens §7 leaves the encoding to us; the reference's bech32m tokens are
166–167 characters, these are 91–92 so agents can copy them by hand):

    st1.<64 base64url: sessionId ‖ nodeId ‖ workflowHashRef>.<22 base64url: MAC>   91 chars
    ack1.<64 base64url: sessionId ‖ nodeId ‖ attemptId>.<22 base64url: MAC>        92 chars
    chk1.<64 base64url: sessionId ‖ nodeId ‖ attemptId>.<22 base64url: MAC>        92 chars
    ct1.<64 base64url: sessionId ‖ nodeId ‖ attemptId>.<22 base64url: MAC>         91 chars

A continue token is state and ack in one (the `continueToken` protocol): it names the node
and one advance attempt. It has no room for the workflowHashRef within 100 characters and
needs none: the node's `node_created` event fixes the run's workflow hash.

Each id field is the 16 bytes behind its `<prefix>_<26 base32>` text. MAC = first 16 bytes
of HMAC-SHA256 over everything before the last `.` (so kind and version are signed too),
keyed by HMAC-SHA256(keyring key, "workrail.token.v1.<kind>") via itsdangerous.

Why no runId: a node id is 128 random bits recorded by exactly one `node_created` event,
which names its run; the engine reads the run from there. The MAC still binds every field a
token carries, and advance's scope rule (same session and node) implies the same run.
"""

from workrail.tokens.codec import TokenCodec
from workrail.tokens.errors import TokenError, TokenErrorCode
from workrail.tokens.layout import PREFIXES, token_length
from workrail.tokens.models import (
    AckToken,
    CheckpointToken,
    ContinueToken,
    StateToken,
    Token,
    TokenKind,
)
from workrail.tokens.scope import check_advance_scope
from workrail.tokens.signing import KeySource

__all__ = [
    "PREFIXES",
    "AckToken",
    "CheckpointToken",
    "ContinueToken",
    "KeySource",
    "StateToken",
    "Token",
    "TokenCodec",
    "TokenError",
    "TokenErrorCode",
    "TokenKind",
    "check_advance_scope",
    "token_length",
]
