"""The durable checkpoint record and the keyed commands the core decides on.

Both backends store exactly this record as JSON (SQLite in a row, Valkey/Redis in one key
read and written by the Lua script), so the bytes at rest are the same shape everywhere.
It holds only keyed digests, never a raw namespace, workflow key, holder or observation key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from workrail.fence.contract import EvidenceType, Stage

TERMINAL_STAGES: Final[frozenset[Stage]] = frozenset({"caller_verified", "compensated"})
RESOLVED_STAGES: Final[frozenset[Stage]] = frozenset({"caller_verified", "failed", "compensated"})


class ObservationRecord(BaseModel):
    """One recorded transition: its keyed body digest and the generation it applied to."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    body: str
    generation: int


class CheckpointRecord(BaseModel):
    """The whole state of one workflow identity. Times are integer epoch milliseconds."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    v: Literal[1] = 1
    workflow_hash: str
    stage: Stage
    generation: int
    holder: str
    # None once the claim is released (abandon, or a resolved stage); the holder digest stays
    # so a repeated abandon or transition by the same holder is recognised.
    claim_expires_ms: int | None
    claim_ttl: int
    state_ttl: int
    retry_failed: bool
    state_expires_ms: int
    recovery_required: bool
    evidence_type: EvidenceType | None
    evidence_present: bool
    observations: dict[str, ObservationRecord]


@dataclass(frozen=True)
class ClaimCommand:
    workflow_hash: str
    holder: str
    claim_ttl: int
    state_ttl: int
    retry_failed: bool
    action: Literal["claim"] = "claim"


@dataclass(frozen=True)
class TransitionCommand:
    workflow_hash: str
    holder: str
    expected_generation: int
    from_stage: Stage
    to_stage: Stage
    observation: str
    body: str
    evidence_type: EvidenceType | None
    evidence_present: bool
    action: Literal["transition"] = "transition"


@dataclass(frozen=True)
class StatusCommand:
    workflow_hash: str
    action: Literal["status"] = "status"


@dataclass(frozen=True)
class AbandonCommand:
    workflow_hash: str
    holder: str
    expected_generation: int
    action: Literal["abandon"] = "abandon"


Command = ClaimCommand | TransitionCommand | StatusCommand | AbandonCommand


@dataclass(frozen=True)
class Outcome:
    """What an accepted action did: the record after it, and the flags the output reports."""

    record: CheckpointRecord
    changed: bool = False
    acquired: bool = False
    recovered: bool = False
    reused: bool = False
    transitioned: bool = False
    observation_replayed: bool = False
    abandoned: bool = False
