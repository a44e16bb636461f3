"""Minting and verifying tokens. Pure: same keys and payload give the same string.

Verification order (each step maps to one closed code, never an exception):
1. shape of the head `<kind><version>.` (or a reference bech32m token) → TOKEN_INVALID_FORMAT
2. version other than 1                                → TOKEN_UNSUPPORTED_VERSION
3. kind other than the one this parameter expects      → TOKEN_INVALID_FORMAT
4. length, charset, separator, canonical base64        → TOKEN_INVALID_FORMAT
5. MAC under the current, then the previous key        → TOKEN_BAD_SIGNATURE
After step 4 the payload is exactly 48 bytes, and any 16 bytes are a valid id, so a token
with a good MAC always decodes.
The kind is checked before the MAC (the reference checks after) because "you passed the
ack token as stateToken" is the more useful answer; both are refusals.
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from workrail.core.ids import workflow_hash_ref
from workrail.tokens import errors
from workrail.tokens.errors import TokenError
from workrail.tokens.layout import (
    BODY_RE,
    FOREIGN_RE,
    HEAD_RE,
    KIND_WORDS,
    PAYLOAD_BYTES,
    PAYLOAD_CHARS,
    PREFIXES,
    VERSION,
    b64decode_canonical,
    b64encode,
    pack,
    token_length,
    unpack_ack,
    unpack_checkpoint,
    unpack_continue,
    unpack_state,
)
from workrail.tokens.models import (
    AckToken,
    CheckpointToken,
    ContinueToken,
    StateToken,
    Token,
    TokenKind,
)
from workrail.tokens.signing import KeySource, make_signers


class TokenCodec:
    """Signs with the keyring's current key; accepts tokens signed by current or previous."""

    def __init__(self, keys: KeySource) -> None:
        self._signers = make_signers(keys)

    def encode(self, token: Token) -> str:
        """The token string. Raises ValueError for a malformed id (a caller bug)."""
        value = PREFIXES[token.kind] + b64encode(pack(token))
        return self._signers[token.kind].sign(value).decode("ascii")

    def mint_state(self, *, session_id: str, node_id: str, workflow_hash: str) -> str:
        """State token for a node; `workflow_hash` is the run's `sha256:<hex>`."""
        return self.encode(StateToken(session_id, node_id, workflow_hash_ref(workflow_hash)))

    def mint_ack(self, *, session_id: str, node_id: str, attempt_id: str) -> str:
        """Ack token for one advance attempt from a node."""
        return self.encode(AckToken(session_id, node_id, attempt_id))

    def mint_checkpoint(self, *, session_id: str, node_id: str, attempt_id: str) -> str:
        """Checkpoint token for one checkpoint on a node."""
        return self.encode(CheckpointToken(session_id, node_id, attempt_id))

    def mint_continue(self, *, session_id: str, node_id: str, attempt_id: str) -> str:
        """Continue token (state + ack in one) for one advance attempt from a node."""
        return self.encode(ContinueToken(session_id, node_id, attempt_id))

    def parse_continue(self, token: str) -> Result[ContinueToken | StateToken, TokenError]:
        """A `continueToken` argument: a continue token (ct1.), or the state-only kind
        (st1.) that rehydrate-only answers hand out."""
        head = HEAD_RE.match(token) if isinstance(token, str) else None
        if head is not None and KIND_WORDS[head.group(1)] == "state":
            return self.parse_state(token)
        verified = self._verify(token, "continue")
        if isinstance(verified, Failure):
            err = verified.failure()
            kind = KIND_WORDS[head.group(1)] if head is not None else None
            if err.code == "TOKEN_INVALID_FORMAT" and kind not in (None, "continue"):
                return Failure(errors.not_a_continue_token(kind, PREFIXES))  # another kind
            return Failure(err)
        return Success(unpack_continue(verified.unwrap()))

    def parse_state(self, token: str) -> Result[StateToken, TokenError]:
        """Verify a stateToken and decode it; every failure is a `TokenError` value."""
        return self._verify(token, "state").map(unpack_state)

    def parse_ack(self, token: str) -> Result[AckToken, TokenError]:
        return self._verify(token, "ack").map(unpack_ack)

    def parse_checkpoint(self, token: str) -> Result[CheckpointToken, TokenError]:
        return self._verify(token, "checkpoint").map(unpack_checkpoint)

    def _verify(self, token: object, expected: TokenKind) -> Result[bytes, TokenError]:
        """The verified 48 payload bytes of a token of the `expected` kind."""
        if not isinstance(token, str):
            return Failure(errors.bad_prefix(""))
        head = HEAD_RE.match(token)
        if head is None:
            if FOREIGN_RE.fullmatch(token):
                return Failure(errors.foreign_format())
            return Failure(errors.bad_prefix(token))
        kind = KIND_WORDS[head.group(1)]
        if head.group(2) != str(VERSION):
            return Failure(errors.unsupported_version(head.group(0)))
        if kind != expected:
            return Failure(errors.wrong_kind(expected, kind, PREFIXES))
        body = token[head.end() :]
        payload_text, mac_text = body[:PAYLOAD_CHARS], body[PAYLOAD_CHARS + 1 :]
        raw = b64decode_canonical(payload_text) if BODY_RE.fullmatch(body) else None
        if raw is None or len(raw) != PAYLOAD_BYTES or b64decode_canonical(mac_text) is None:
            return Failure(errors.corrupted(PREFIXES[kind], len(token), token_length(kind)))
        if not self._signers[kind].verify_signature(token[: head.end()] + payload_text, mac_text):
            return Failure(errors.bad_signature())
        return Success(raw)
