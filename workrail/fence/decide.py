"""The functional core: given the stored record, a keyed command and `now`, decide.

No I/O and no clock: every function is `(record | None, command, now_ms) -> Result`. The
SQLite backend runs these functions inside one transaction; the Valkey/Redis backend runs
`checkpoint.lua`, a line-for-line port of them, so both backends share one contract suite
and one set of rejection reasons.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from returns.result import Failure, Result, Success

from workrail.fence.contract import (
    MAX_GENERATIONS,
    MAX_OBSERVATIONS,
    MINIMUM_ACTION_SAFETY_MARGIN_SECONDS,
    Stage,
)
from workrail.fence.errors import ErrorCode, FenceError
from workrail.fence.record import (
    TERMINAL_STAGES,
    AbandonCommand,
    CheckpointRecord,
    ClaimCommand,
    Command,
    ObservationRecord,
    Outcome,
    StatusCommand,
    TransitionCommand,
)

SAFETY_MARGIN_MS: Final = MINIMUM_ACTION_SAFETY_MARGIN_SECONDS * 1000

# The published graph. Anything else, including external_result_uncertain -> claimed, is
# INVALID_TRANSITION. claimed -> compensated is only allowed when recovery is required.
EDGES: Final[frozenset[tuple[Stage, Stage]]] = frozenset(
    {
        ("claimed", "external_result_uncertain"),
        ("claimed", "caller_verified"),
        ("claimed", "failed"),
        ("claimed", "compensated"),
        ("external_result_uncertain", "caller_verified"),
        ("external_result_uncertain", "failed"),
        ("external_result_uncertain", "compensated"),
    }
)

# reason -> (code, message). The Lua script returns the same reason tokens.
REASONS: Final[dict[str, tuple[ErrorCode, str]]] = {
    "not_found": (
        "CHECKPOINT_NOT_FOUND",
        "No live checkpoint exists for this workflow identity (never claimed, or its state"
        " expired). Claim it first.",
    ),
    "config_conflict": (
        "CONFIGURATION_CONFLICT",
        "claim_ttl_seconds, state_ttl_seconds and retry_failed are fixed when the checkpoint"
        " is created; send the original values.",
    ),
    "terminal": (
        "CHECKPOINT_TERMINAL",
        "The checkpoint reached a final stage (caller_verified or compensated); read status"
        " and use a new workflow identity for new work.",
    ),
    "failed_no_retry": (
        "CHECKPOINT_TERMINAL",
        "The checkpoint failed and was created with retry_failed=false, so it is final; use a"
        " new workflow identity to try again.",
    ),
    "generation_limit": (
        "CHECKPOINT_LIMIT_REACHED",
        f"All {MAX_GENERATIONS} generations are used; wait for the state to expire and find"
        " out why the workflow keeps losing its claim.",
    ),
    "observation_limit": (
        "CHECKPOINT_LIMIT_REACHED",
        f"The checkpoint already holds {MAX_OBSERVATIONS} observations; wait for the state"
        " to expire.",
    ),
    "stale_generation": (
        "STALE_GENERATION",
        "expected_generation is not the current generation; read status and replan.",
    ),
    "stale_stage": (
        "STALE_GENERATION",
        "from_stage is not the current stage; read status and replan.",
    ),
    "not_held": (
        "CHECKPOINT_NOT_HELD",
        "The caller does not hold an active claim on this generation; stand down, or claim"
        " again after the active claim expires.",
    ),
    "invalid_edge": (
        "INVALID_TRANSITION",
        "That stage change is not in the published graph (e.g. external_result_uncertain"
        " never returns to claimed).",
    ),
    "compensate_without_action": (
        "INVALID_TRANSITION",
        "claimed -> compensated is only allowed in a generation with recovery_required=true;"
        " nothing was attempted that could need compensating.",
    ),
    "evidence_incomplete": (
        "INVALID_TRANSITION",
        "evidence_type and evidence_fingerprint must be given together or both be null.",
    ),
    "evidence_required": (
        "INVALID_TRANSITION",
        "This transition needs evidence: caller_verified, compensated, leaving"
        " external_result_uncertain, and every transition in a recovery_required generation"
        " need evidence_type and evidence_fingerprint.",
    ),
    "safety_margin": (
        "INVALID_TRANSITION",
        f"Less than {MINIMUM_ACTION_SAFETY_MARGIN_SECONDS} s of the claim remain, so the"
        " action must not start; let the claim lapse and claim a new generation.",
    ),
    "abandon_after_action": (
        "INVALID_TRANSITION",
        "Only a pre-action claim (stage claimed) can be abandoned; resolve the uncertain"
        " result with a transition instead.",
    ),
    "observation_conflict": (
        "OBSERVATION_CONFLICT",
        "This observation_key was already used with a different transition body.",
    ),
}


@dataclass(frozen=True)
class Rejection:
    """A refused action; `reason` is a key of `REASONS`."""

    reason: str

    def error(self) -> FenceError:
        code, message = REASONS[self.reason]
        return FenceError(code, message)


Decision = Result[Outcome, Rejection]


def live(record: CheckpointRecord | None, now_ms: int) -> CheckpointRecord | None:
    """The record unless its state TTL has passed: expired state is treated as absent."""
    if record is None or now_ms >= record.state_expires_ms:
        return None
    return record


def claim_active(record: CheckpointRecord, now_ms: int) -> bool:
    return record.claim_expires_ms is not None and now_ms < record.claim_expires_ms


def is_final(record: CheckpointRecord) -> bool:
    """No further claim or transition can succeed on this identity."""
    return record.stage in TERMINAL_STAGES or (record.stage == "failed" and not record.retry_failed)


def decide(record: CheckpointRecord | None, command: Command, now_ms: int) -> Decision:
    """Dispatch one command to its decision function."""
    match command:
        case ClaimCommand():
            return decide_claim(record, command, now_ms)
        case TransitionCommand():
            return decide_transition(record, command, now_ms)
        case StatusCommand():
            return decide_status(record, now_ms)
        case AbandonCommand():
            return decide_abandon(record, command, now_ms)


def decide_status(record: CheckpointRecord | None, now_ms: int) -> Decision:
    current = live(record, now_ms)
    if current is None:
        return Failure(Rejection("not_found"))
    return Success(Outcome(current))


def decide_claim(record: CheckpointRecord | None, cmd: ClaimCommand, now_ms: int) -> Decision:
    current = live(record, now_ms)
    if current is None:
        state_expires = now_ms + cmd.state_ttl * 1000
        fresh = CheckpointRecord(
            workflow_hash=cmd.workflow_hash,
            stage="claimed",
            generation=1,
            holder=cmd.holder,
            claim_expires_ms=min(now_ms + cmd.claim_ttl * 1000, state_expires),
            claim_ttl=cmd.claim_ttl,
            state_ttl=cmd.state_ttl,
            retry_failed=cmd.retry_failed,
            state_expires_ms=state_expires,
            recovery_required=False,
            evidence_type=None,
            evidence_present=False,
            observations={},
        )
        return Success(Outcome(fresh, changed=True, acquired=True))
    if (current.claim_ttl, current.state_ttl, current.retry_failed) != (
        cmd.claim_ttl,
        cmd.state_ttl,
        cmd.retry_failed,
    ):
        return Failure(Rejection("config_conflict"))
    if current.stage in TERMINAL_STAGES:
        return Failure(Rejection("terminal"))
    if current.stage == "failed":
        if not current.retry_failed:
            return Failure(Rejection("failed_no_retry"))
        return _new_generation(current, cmd, now_ms, recovery_required=False)
    if claim_active(current, now_ms):
        if current.holder == cmd.holder:
            return Success(Outcome(current, acquired=True, reused=True))
        return Success(Outcome(current))
    # The claim lapsed or was abandoned. If the action may have happened (uncertain, or an
    # earlier recovery generation never resolved it), the next holder must verify first.
    recovery = current.stage == "external_result_uncertain" or current.recovery_required
    return _new_generation(current, cmd, now_ms, recovery_required=recovery)


def _new_generation(
    current: CheckpointRecord, cmd: ClaimCommand, now_ms: int, *, recovery_required: bool
) -> Decision:
    if current.generation >= MAX_GENERATIONS:
        return Failure(Rejection("generation_limit"))
    successor = current.model_copy(
        update={
            "stage": "claimed",
            "generation": current.generation + 1,
            "holder": cmd.holder,
            "claim_expires_ms": min(now_ms + cmd.claim_ttl * 1000, current.state_expires_ms),
            "recovery_required": recovery_required,
            "evidence_type": None,
            "evidence_present": False,
        }
    )
    return Success(Outcome(successor, changed=True, acquired=True, recovered=True))


def _evidence_required(current: CheckpointRecord, cmd: TransitionCommand) -> bool:
    if cmd.to_stage in ("caller_verified", "compensated"):
        return True
    if cmd.from_stage == "external_result_uncertain":
        return True
    # In a recovery_required generation an earlier holder may have acted, so every move out
    # of claimed needs proof of the check: acting again, and also giving up (`failed`, which
    # with retry_failed would start a generation that no longer requires recovery).
    return current.recovery_required


def decide_transition(
    record: CheckpointRecord | None, cmd: TransitionCommand, now_ms: int
) -> Decision:
    current = live(record, now_ms)
    if current is None:
        return Failure(Rejection("not_found"))
    seen = current.observations.get(cmd.observation)
    if seen is not None:
        if seen.body == cmd.body:
            return Success(Outcome(current, observation_replayed=True))
        return Failure(Rejection("observation_conflict"))
    if is_final(current):
        return Failure(Rejection("failed_no_retry" if current.stage == "failed" else "terminal"))
    if cmd.expected_generation != current.generation:
        return Failure(Rejection("stale_generation"))
    if current.holder != cmd.holder or not claim_active(current, now_ms):
        return Failure(Rejection("not_held"))
    if cmd.from_stage != current.stage:
        return Failure(Rejection("stale_stage"))
    if (cmd.from_stage, cmd.to_stage) not in EDGES:
        return Failure(Rejection("invalid_edge"))
    compensating = cmd.to_stage == "compensated" and cmd.from_stage == "claimed"
    if compensating and not current.recovery_required:
        return Failure(Rejection("compensate_without_action"))
    if (cmd.evidence_type is None) == cmd.evidence_present:
        return Failure(Rejection("evidence_incomplete"))
    if cmd.evidence_type is None and _evidence_required(current, cmd):
        return Failure(Rejection("evidence_required"))
    if cmd.to_stage == "external_result_uncertain":
        expires = current.claim_expires_ms
        if expires is None or expires - now_ms < SAFETY_MARGIN_MS:
            return Failure(Rejection("safety_margin"))
    if len(current.observations) >= MAX_OBSERVATIONS:
        return Failure(Rejection("observation_limit"))
    observations = dict(current.observations)
    observations[cmd.observation] = ObservationRecord(body=cmd.body, generation=current.generation)
    resolved = cmd.to_stage != "external_result_uncertain"
    updated = current.model_copy(
        update={
            "stage": cmd.to_stage,
            "claim_expires_ms": None if resolved else current.claim_expires_ms,
            "evidence_type": cmd.evidence_type,
            "evidence_present": cmd.evidence_present,
            "observations": observations,
        }
    )
    return Success(Outcome(updated, changed=True, transitioned=True))


def decide_abandon(record: CheckpointRecord | None, cmd: AbandonCommand, now_ms: int) -> Decision:
    current = live(record, now_ms)
    if current is None:
        return Failure(Rejection("not_found"))
    if is_final(current):
        return Failure(Rejection("failed_no_retry" if current.stage == "failed" else "terminal"))
    if cmd.expected_generation != current.generation:
        return Failure(Rejection("stale_generation"))
    if (
        current.stage == "claimed"
        and current.holder == cmd.holder
        and current.claim_expires_ms is None
    ):
        # Already abandoned by this holder: the repeat is a no-op with the same answer.
        return Success(Outcome(current, abandoned=True))
    if current.holder != cmd.holder or not claim_active(current, now_ms):
        return Failure(Rejection("not_held"))
    if current.stage != "claimed":
        return Failure(Rejection("abandon_after_action"))
    released = current.model_copy(update={"claim_expires_ms": None})
    return Success(Outcome(released, changed=True, abandoned=True))
