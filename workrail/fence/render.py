"""Build the contract's output from a decided outcome, as seen by one caller at `now`.

Pure, and shared by every backend, so the same record always renders the same answer.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

from workrail.fence.contract import MAX_GENERATIONS, Action, CheckpointOutput
from workrail.fence.decide import claim_active, is_final
from workrail.fence.record import CheckpointRecord, Outcome

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def iso_ms(epoch_ms: int) -> str:
    """`YYYY-MM-DDTHH:MM:SS.mmmZ`, the contract's timestamp form."""
    moment = _EPOCH + timedelta(milliseconds=epoch_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def to_epoch_ms(moment: datetime) -> int:
    """Integer epoch milliseconds of an aware datetime (the clock's reading)."""
    if moment.tzinfo is None:
        raise ValueError("the fence clock must return timezone-aware datetimes")
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _remaining_seconds(until_ms: int, now_ms: int) -> int:
    # Rounded down, so the caller is never told it has more time than it has.
    return max(0, (until_ms - now_ms) // 1000)


def allowed_next_actions(
    record: CheckpointRecord, held_by_caller: bool | None, now_ms: int
) -> list[Action]:
    """Actions that can succeed next for this caller; for status (caller unknown), for anyone."""
    if is_final(record):
        return ["status"]
    active = claim_active(record, now_ms)
    may_act = active and held_by_caller is not False
    actions: list[Action] = []
    if not active and record.generation < MAX_GENERATIONS:
        actions.append("claim")
    if may_act:
        actions.append("transition")
    actions.append("status")
    if may_act and record.stage == "claimed":
        actions.append("abandon")
    return actions


def render(
    action: Action, outcome: Outcome, caller_holder: str | None, now_ms: int
) -> CheckpointOutput:
    """The output document for `outcome`; `caller_holder` is None for status."""
    record = outcome.record
    active = claim_active(record, now_ms)
    held = None if caller_holder is None else (active and record.holder == caller_holder)
    expires = record.claim_expires_ms
    return CheckpointOutput(
        action=action,
        workflow_hash=record.workflow_hash,
        observed_at=iso_ms(now_ms),
        stage=record.stage,
        generation=record.generation,
        acquired=outcome.acquired,
        recovered=outcome.recovered,
        reused=outcome.reused,
        recovery_required=record.recovery_required,
        transitioned=outcome.transitioned,
        observation_replayed=outcome.observation_replayed,
        abandoned=outcome.abandoned,
        claim_active=active,
        held_by_caller=held,
        claim_expires_at=None if expires is None else iso_ms(expires),
        state_expires_at=iso_ms(record.state_expires_ms),
        claim_ttl_seconds_remaining=None
        if expires is None
        else _remaining_seconds(expires, now_ms),
        state_ttl_seconds_remaining=_remaining_seconds(record.state_expires_ms, now_ms),
        evidence_type=record.evidence_type,
        evidence_fingerprint_present=record.evidence_present,
        retry_failed_allowed=record.retry_failed,
        allowed_next_actions=allowed_next_actions(record, held, now_ms),
        minimum_action_safety_margin_seconds=15,
        external_proof=False,
    )
