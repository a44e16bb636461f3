"""Token error values: a closed set of codes, each with a message and a suggestion for the agent.

Codes and suggestion texts follow spec 40-execution §9 so the MCP layer can put them on the
wire unchanged; messages that named the reference's bech32m format are adapted to ours.
Every token error is `not_retryable`: sending the same token again can never succeed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from workrail.core.errors import CATALOG, NOT_RETRYABLE
from workrail.tokens.models import TokenKind

TokenErrorCode = Literal[
    "TOKEN_INVALID_FORMAT",
    "TOKEN_UNSUPPORTED_VERSION",
    "TOKEN_BAD_SIGNATURE",
    "TOKEN_SCOPE_MISMATCH",
]
"""The subset of the closed `TOKEN_*` set this package can decide without reading the log."""

SUGGEST_EXACT: Final = CATALOG["TOKEN_INVALID_FORMAT"].suggestion
SUGGEST_COPY: Final = (
    "Copy the entire token string exactly as returned. "
    "Use triple-click to select the complete line."
)
SUGGEST_SIGNATURE: Final = CATALOG["TOKEN_BAD_SIGNATURE"].suggestion
SUGGEST_VERSION: Final = CATALOG["TOKEN_UNSUPPORTED_VERSION"].suggestion
SUGGEST_SCOPE: Final = CATALOG["TOKEN_SCOPE_MISMATCH"].suggestion
SUGGEST_FOREIGN: Final = (
    "Tokens are not portable between WorkRail implementations. "
    "Use a token returned by this server, or start a new run with start_workflow."
)

_PARAM: Final[dict[TokenKind, str]] = {
    "state": "stateToken",
    "ack": "ackToken",
    "checkpoint": "checkpointToken",
    "continue": "continueToken",
}


@dataclass(frozen=True)
class TokenError:
    """Why a token was refused, phrased so the agent knows what to do next."""

    code: TokenErrorCode
    message: str
    suggestion: str
    retry: Literal["not_retryable"] = "not_retryable"

    def to_envelope(self) -> dict[str, object]:
        """The wire error envelope of spec 40-execution §1."""
        return {
            "code": self.code,
            "message": self.message,
            "retry": NOT_RETRYABLE.to_json(),
            "details": {"suggestion": self.suggestion},
        }


def bad_prefix(token: str) -> TokenError:
    return TokenError(
        "TOKEN_INVALID_FORMAT",
        f"Invalid token format: expected st1./ack1./chk1./ct1. prefix, got {token[:5]!r}",
        SUGGEST_EXACT,
    )


def foreign_format() -> TokenError:
    return TokenError(
        "TOKEN_INVALID_FORMAT",
        "Invalid token format: this is a bech32m token issued by another WorkRail "
        "implementation; this server issues tokens like st1.<payload>.<signature>.",
        SUGGEST_FOREIGN,
    )


def corrupted(prefix: str, got: int, expected: int) -> TokenError:
    problem = (
        f"got {got} characters"
        if got != expected
        else "a character is outside A-Z a-z 0-9 - _ or out of place"
    )
    return TokenError(
        "TOKEN_INVALID_FORMAT",
        f"Token corrupted: a {prefix}... token has exactly {expected} characters "
        f"({prefix}<64>.<22>); {problem}. Likely copy/paste error.",
        SUGGEST_COPY,
    )


def unsupported_version(prefix: str) -> TokenError:
    return TokenError(
        "TOKEN_UNSUPPORTED_VERSION",
        f"Unsupported token version: {prefix!r}; this WorkRail reads version 1 tokens only.",
        SUGGEST_VERSION,
    )


def _a(kind: TokenKind) -> str:
    return f"an {kind}" if kind == "ack" else f"a {kind}"


def wrong_kind(expected: TokenKind, got: TokenKind, prefixes: dict[TokenKind, str]) -> TokenError:
    return TokenError(
        "TOKEN_INVALID_FORMAT",
        f"Expected {_a(expected)} token (starting with {prefixes[expected]}), "
        f"got {_a(got)} token (starting with {prefixes[got]}).",
        f"Use the {_PARAM[expected]} returned by WorkRail.",
    )


def not_a_continue_token(got: TokenKind, prefixes: dict[TokenKind, str]) -> TokenError:
    return TokenError(
        "TOKEN_INVALID_FORMAT",
        f"Expected a continue token (starting with {prefixes['continue']}) or a state token "
        f"(starting with {prefixes['state']}), got {_a(got)} token (starting with "
        f"{prefixes[got]}).",
        "Send the continueToken of the latest WorkRail response as continueToken; "
        "ackToken and checkpointToken go in their own fields.",
    )


def bad_signature() -> TokenError:
    return TokenError("TOKEN_BAD_SIGNATURE", "Signature verification failed", SUGGEST_SIGNATURE)


def scope_mismatch(field: Literal["sessionId", "nodeId"]) -> TokenError:
    return TokenError("TOKEN_SCOPE_MISMATCH", f"{field} mismatch", SUGGEST_SCOPE)
