"""Token signing that follows the keyring store, so a rotation reaches every running server.

The codec itself stays pure (workrail/tokens); this small shell object holds the codec for
the keys it last loaded and swaps it when the store's keyring changes: at most once every
`recheck_seconds` when a token's signature does not verify (another replica may already
sign with a newer key — the token is then checked again under the fresh keys), and every
`refresh_seconds` before signing (so this server starts signing with the new key too).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final, Protocol, TypeVar

from returns.result import Failure, Result

from workrail.core.keyring import Keyring
from workrail.store.ports import KeyringStore
from workrail.tokens import TokenCodec, TokenError
from workrail.tokens.models import AckToken, CheckpointToken, ContinueToken, StateToken

log = logging.getLogger("workrail.engine")

T = TypeVar("T")

REFRESH_SECONDS: Final = 30.0
"""How stale the signing key may be after a rotation elsewhere."""

RECHECK_SECONDS: Final = 2.0
"""The least time between two keyring loads caused by bad signatures (so forged tokens
cannot make every request hit the store)."""


class Codec(Protocol):
    """What the engine needs to mint and verify tokens."""

    def mint_state(self, *, session_id: str, node_id: str, workflow_hash: str) -> str: ...

    def mint_ack(self, *, session_id: str, node_id: str, attempt_id: str) -> str: ...

    def mint_checkpoint(self, *, session_id: str, node_id: str, attempt_id: str) -> str: ...

    def mint_continue(self, *, session_id: str, node_id: str, attempt_id: str) -> str: ...

    def parse_continue(self, token: str) -> Result[ContinueToken | StateToken, TokenError]: ...

    def parse_state(self, token: str) -> Result[StateToken, TokenError]: ...

    def parse_ack(self, token: str) -> Result[AckToken, TokenError]: ...

    def parse_checkpoint(self, token: str) -> Result[CheckpointToken, TokenError]: ...


class KeyringCodec:
    """A `Codec` over the keys a `KeyringStore` holds now (see the module docstring)."""

    def __init__(
        self,
        store: KeyringStore,
        keyring: Keyring,
        *,
        clock: Callable[[], float] = time.monotonic,
        refresh_seconds: float = REFRESH_SECONDS,
        recheck_seconds: float = RECHECK_SECONDS,
    ) -> None:
        self._store = store
        self._clock = clock
        self._refresh = refresh_seconds
        self._recheck = recheck_seconds
        self._mutex = threading.Lock()
        self._rechecking = threading.Lock()
        self._keyring = keyring
        self._codec = TokenCodec(keyring)
        self._loaded_at = clock()
        self._rechecked_at = float("-inf")

    def _reload(self, *, only_if_stale: bool = False) -> bool:
        """Load the store's keyring; True when it differs from the one in use. A store
        that cannot be read leaves the current keys in place. With `only_if_stale` the
        age is checked again under the mutex, so of the threads that found the keys stale
        at once only the first loads them."""
        with self._mutex:
            if only_if_stale and self._clock() - self._loaded_at < self._refresh:
                return False
            self._loaded_at = self._clock()
            loaded = self._store.load()
            if isinstance(loaded, Failure):
                log.warning("keeping the current token keys: %s", loaded.failure().message)
                return False
            keyring = loaded.unwrap()
            if keyring == self._keyring:
                return False
            self._keyring, self._codec = keyring, TokenCodec(keyring)
            return True

    def _signing(self) -> TokenCodec:
        if self._clock() - self._loaded_at >= self._refresh:
            self._reload(only_if_stale=True)
        return self._codec

    def _verify(
        self, token: str, parse: Callable[[TokenCodec, str], Result[T, TokenError]]
    ) -> Result[T, TokenError]:
        """A bad signature rechecks under `_rechecking`, which the reload it may start is
        held under: a verification that arrives while another one's reload runs waits for
        it and then tries the keys it brought (the throttle is set before that reload
        finishes, so without the wait a token signed with the new key would be refused)."""
        codec = self._signing()
        result = parse(codec, token)
        if isinstance(result, Failure) and result.failure().code == "TOKEN_BAD_SIGNATURE":
            with self._rechecking:
                with self._mutex:  # and for a signing refresh that is loading right now
                    current = self._codec
                if current is not codec:
                    return parse(current, token)
                now = self._clock()
                if now - self._rechecked_at >= self._recheck:
                    self._rechecked_at = now
                    if self._reload():
                        return parse(self._codec, token)
        return result

    def mint_state(self, *, session_id: str, node_id: str, workflow_hash: str) -> str:
        return self._signing().mint_state(
            session_id=session_id, node_id=node_id, workflow_hash=workflow_hash
        )

    def mint_ack(self, *, session_id: str, node_id: str, attempt_id: str) -> str:
        return self._signing().mint_ack(
            session_id=session_id, node_id=node_id, attempt_id=attempt_id
        )

    def mint_checkpoint(self, *, session_id: str, node_id: str, attempt_id: str) -> str:
        return self._signing().mint_checkpoint(
            session_id=session_id, node_id=node_id, attempt_id=attempt_id
        )

    def mint_continue(self, *, session_id: str, node_id: str, attempt_id: str) -> str:
        return self._signing().mint_continue(
            session_id=session_id, node_id=node_id, attempt_id=attempt_id
        )

    def parse_continue(self, token: str) -> Result[ContinueToken | StateToken, TokenError]:
        return self._verify(token, TokenCodec.parse_continue)

    def parse_state(self, token: str) -> Result[StateToken, TokenError]:
        return self._verify(token, TokenCodec.parse_state)

    def parse_ack(self, token: str) -> Result[AckToken, TokenError]:
        return self._verify(token, TokenCodec.parse_ack)

    def parse_checkpoint(self, token: str) -> Result[CheckpointToken, TokenError]:
        return self._verify(token, TokenCodec.parse_checkpoint)
