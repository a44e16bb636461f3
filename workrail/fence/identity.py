"""Keyed HMAC-SHA256 digests: the only form in which caller identifiers are stored or returned.

The fence key is derived from the keyring's current key, so it never appears at rest beside
the data. Holder and observation digests are scoped to the workflow, so the same holder is
not linkable across workflows. Machines sharing one Valkey/Redis must share the keyring.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

from workrail.core.canonical import canonical_bytes
from workrail.fence.contract import (
    AbandonInput,
    ClaimInput,
    StatusInput,
    TransitionInput,
)
from workrail.fence.record import (
    AbandonCommand,
    ClaimCommand,
    Command,
    StatusCommand,
    TransitionCommand,
)
from workrail.store.local.keyring import Keyring

_DERIVATION_LABEL: Final = b"workrail.fence.v1"


def fence_key(keyring: Keyring) -> bytes:
    """A sub-key for the fence only, so its digests cannot be confused with token MACs."""
    return hmac.new(keyring.current, _DERIVATION_LABEL, hashlib.sha256).digest()


def keyed_hex(key: bytes, *parts: str | int | None) -> str:
    """Hex HMAC-SHA256 of the canonical JSON array of `parts` (unambiguous framing)."""
    return hmac.new(key, canonical_bytes(list(parts)), hashlib.sha256).hexdigest()


def workflow_hash(key: bytes, namespace: str, workflow_key: str) -> str:
    return "hmac-sha256:" + keyed_hex(key, "workflow", namespace, workflow_key)


def key_check(key: bytes) -> str:
    """A digest that shows whether two processes use the same fence key, revealing nothing."""
    return keyed_hex(key, "key-check")


def to_command(
    key: bytes, request: ClaimInput | TransitionInput | StatusInput | AbandonInput
) -> Command:
    """Replace every raw identifier in a validated request by its keyed digest."""
    wf = workflow_hash(key, request.namespace, request.workflow_key)
    match request:
        case ClaimInput():
            return ClaimCommand(
                workflow_hash=wf,
                holder=keyed_hex(key, "holder", wf, request.holder),
                claim_ttl=request.claim_ttl_seconds,
                state_ttl=request.state_ttl_seconds,
                retry_failed=request.retry_failed,
            )
        case TransitionInput():
            holder = keyed_hex(key, "holder", wf, request.holder)
            return TransitionCommand(
                workflow_hash=wf,
                holder=holder,
                expected_generation=request.expected_generation,
                from_stage=request.from_stage,
                to_stage=request.to_stage,
                observation=keyed_hex(key, "observation", wf, request.observation_key),
                body=keyed_hex(
                    key,
                    "transition-body",
                    wf,
                    holder,
                    request.expected_generation,
                    request.from_stage,
                    request.to_stage,
                    request.evidence_type,
                    request.evidence_fingerprint,
                ),
                evidence_type=request.evidence_type,
                evidence_present=request.evidence_fingerprint is not None,
            )
        case StatusInput():
            return StatusCommand(workflow_hash=wf)
        case AbandonInput():
            return AbandonCommand(
                workflow_hash=wf,
                holder=keyed_hex(key, "holder", wf, request.holder),
                expected_generation=request.expected_generation,
            )
