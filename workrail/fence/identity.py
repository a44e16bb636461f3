"""Keyed HMAC-SHA256 digests: the only form in which caller identifiers are stored or returned.

The fence key is its own secret, `keys/fence.key` (32 random bytes, mode 0600), created once
and never rotated: `workrail keys rotate` changes the token keyring only, because a changed
fence key would make every live checkpoint invisible and let a second holder acquire the
same side effect. Holder and observation digests are scoped to the workflow, so the same
holder is not linkable across workflows. Machines sharing one Valkey/Redis must share
`keys/fence.key`.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path
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
from workrail.store.fsio import UnsafePath, create_exclusive, read_private

FENCE_KEY_BYTES: Final = 32


class FenceKeyCorrupt(ValueError):
    """`keys/fence.key` exists but is not 32 bytes: a bad setting, reported, never replaced."""


def fence_key_path(data_dir: Path) -> Path:
    return data_dir / "keys" / "fence.key"


def load_or_create_fence_key(data_dir: Path, *, allow_insecure: bool = False) -> tuple[bytes, bool]:
    """The fence key, and whether it was created just now (0600, on first use). Processes
    racing to create it all end up with the one that was published first. Like the token
    keyring it must be private to this user (`NotPrivate` otherwise, unless
    `allow_insecure`), and a link or non-regular file is `FenceKeyCorrupt`."""
    path = fence_key_path(data_dir)
    created = False
    if not os.path.lexists(path):
        created = create_exclusive(path, os.urandom(FENCE_KEY_BYTES), root=data_dir)
    try:
        key = read_private(path, allow_shared=allow_insecure)
    except UnsafePath as exc:
        raise FenceKeyCorrupt(f"keys/fence.key: {exc}") from exc
    if len(key) != FENCE_KEY_BYTES:
        raise FenceKeyCorrupt(
            f"keys/fence.key must hold exactly {FENCE_KEY_BYTES} bytes; restore it from a"
            " machine that shares this fence backend (it is never regenerated automatically)."
        )
    return key, created


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
