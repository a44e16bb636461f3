"""Execution snapshots (50-workflows §5): the interpreter state stored in the CAS.

A snapshot's id is `sha256(JCS(snapshot))`, so field names, omitted optionals and the
collation of `completed` are part of the on-disk contract. The model enforces the
reference's read-time invariants so a malformed snapshot is rejected on load.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Final, Literal

from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from returns.result import Failure, Result, Success

from workrail.core.blockers import BlockerReport
from workrail.core.canonical import canonical_bytes, canonical_digest
from workrail.core.completed import (
    KEY_PATTERN,
    CompletedKeys,
    collation_key,
    is_collated,
    sort_completed,
)
from workrail.core.wire import CamelWire

__all__ = [
    "CompletedKeys",
    "collation_key",
    "is_collated",
    "sort_completed",
]

_SAFE_ID = r"^[a-z0-9_-]+$"
SafeId = Annotated[str, Field(pattern=_SAFE_ID)]
SafeKey = Annotated[str, Field(pattern=KEY_PATTERN)]
NonNegInt = Annotated[int, Field(ge=0)]


class LoopPathFrame(CamelWire):
    loop_id: SafeId
    iteration: NonNegInt


class LoopFrame(CamelWire):
    loop_id: SafeId
    iteration: NonNegInt
    body_index: NonNegInt


class StepInstance(CamelWire):
    step_id: SafeId
    loop_path: list[LoopPathFrame] = Field(default_factory=list)

    @property
    def key(self) -> str:
        return step_instance_key(self.step_id, self.loop_path)


def step_instance_key(step_id: str, loop_path: Sequence[LoopPathFrame]) -> str:
    """`stepId`, or `outer@0/inner@2::stepId` inside loops (iterations 0-based)."""
    if not loop_path:
        return step_id
    frames = "/".join(f"{f.loop_id}@{f.iteration}" for f in loop_path)
    return f"{frames}::{step_id}"


class PendingNone(CamelWire):
    kind: Literal["none"] = "none"


class PendingSome(CamelWire):
    kind: Literal["some"] = "some"
    step: StepInstance


Pending = Annotated[PendingNone | PendingSome, Field(discriminator="kind")]


class CompletedSet(CamelWire):
    kind: Literal["set"] = "set"
    values: list[SafeKey] = Field(default_factory=list)

    @field_validator("values")
    @classmethod
    def _sorted_unique(cls, values: list[str]) -> list[str]:
        if not is_collated(values):
            raise ValueError("completed.values must be unique and sorted by key collation")
        return values

    @classmethod
    def of(cls, keys: CompletedKeys) -> CompletedSet:
        """The wire form of keys that are valid and collated by construction: built
        without re-validating every key, which is O(n) per advance in a long session."""
        made = cls.model_construct(kind="set", values=keys.ordered)
        object.__setattr__(made, _KEYS_ATTR, keys)
        return made

    def keys(self) -> CompletedKeys:
        """The values as a CompletedKeys (they were validated when this model was).

        The same object every time, remembered beside the fields (outside the model's
        fields, so it never reaches the wire nor equality): the next advance from this
        snapshot then continues the interpreter's scan where the last one stopped.
        """
        keys = self.__dict__.get(_KEYS_ATTR)
        if not isinstance(keys, CompletedKeys):
            keys = CompletedKeys.from_collated(self.values)
            object.__setattr__(self, _KEYS_ATTR, keys)
        return keys


_KEYS_ATTR = "_completed_keys"


class ContractReason(CamelWire):
    kind: Literal["invalid_required_output", "missing_required_output"]
    contract_ref: Annotated[str, Field(min_length=1)]


class MissingContextKeyReason(CamelWire):
    kind: Literal["missing_context_key"] = "missing_context_key"
    key: Annotated[str, Field(min_length=1)]


class ContextBudgetReason(CamelWire):
    kind: Literal["context_budget_exceeded"] = "context_budget_exceeded"


RetryableReason = ContractReason | MissingContextKeyReason | ContextBudgetReason


class UserOnlyDependencyReason(CamelWire):
    kind: Literal["user_only_dependency"] = "user_only_dependency"
    detail: str
    step_id: SafeId


class CapabilityReason(CamelWire):
    kind: Literal["required_capability_unknown", "required_capability_unavailable"]
    capability: str


class PlainTerminalReason(CamelWire):
    kind: Literal["invariant_violation", "storage_corruption_detected", "evaluation_error"]


TerminalReason = UserOnlyDependencyReason | CapabilityReason | PlainTerminalReason


class RetryableBlock(CamelWire):
    kind: Literal["retryable_block"] = "retryable_block"
    reason: RetryableReason
    retry_attempt_id: Annotated[str, Field(min_length=1)]
    validation_ref: Annotated[str, Field(min_length=1)]
    blockers: BlockerReport


class TerminalBlock(CamelWire):
    kind: Literal["terminal_block"] = "terminal_block"
    reason: TerminalReason
    validation_ref: str | None = None
    blockers: BlockerReport


BlockInfo = Annotated[RetryableBlock | TerminalBlock, Field(discriminator="kind")]


class InitState(CamelWire):
    kind: Literal["init"] = "init"


class CompleteState(CamelWire):
    kind: Literal["complete"] = "complete"


class _Progress(CamelWire):
    completed: CompletedSet = Field(default_factory=CompletedSet)
    loop_stack: list[LoopFrame] = Field(default_factory=list)
    pending: Pending = Field(default_factory=PendingNone)

    @model_validator(mode="after")
    def _invariants(self) -> _Progress:
        loop_ids = [f.loop_id for f in self.loop_stack]
        if len(set(loop_ids)) != len(loop_ids):
            raise ValueError("a loop id appears twice in loopStack")
        if isinstance(self.pending, PendingSome):
            path = [(f.loop_id, f.iteration) for f in self.pending.step.loop_path]
            if path != [(f.loop_id, f.iteration) for f in self.loop_stack]:
                raise ValueError("pending loopPath must equal the loopStack frames in order")
            if self.pending.step.key in self.completed.keys():  # noqa: SIM118 - a method, not a dict view
                raise ValueError("the pending step instance is already completed")
        return self

    @property
    def pending_step(self) -> StepInstance | None:
        return self.pending.step if isinstance(self.pending, PendingSome) else None


class RunningState(_Progress):
    kind: Literal["running"] = "running"


class BlockedState(_Progress):
    kind: Literal["blocked"] = "blocked"
    blocked: BlockInfo


EngineState = Annotated[
    InitState | CompleteState | RunningState | BlockedState, Field(discriminator="kind")
]


class EnginePayload(CamelWire):
    v: Literal[1] = 1
    engine_state: EngineState


class ExecutionSnapshot(CamelWire):
    v: Literal[1] = 1
    kind: Literal["execution_snapshot"] = "execution_snapshot"
    engine_payload: EnginePayload

    @property
    def state(self) -> InitState | CompleteState | RunningState | BlockedState:
        return self.engine_payload.engine_state

    def to_json(self) -> dict[str, Any]:
        """The wire/disk JSON: camelCase, optional fields omitted (never `null`). The
        completed keys (one per step done, so O(session)) are validated strings already:
        copied as one list, not serialised one by one at every advance."""
        state = self.state
        if not isinstance(state, RunningState | BlockedState):
            return self.model_dump(mode="json", by_alias=True, exclude_none=True)
        dumped = self.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude=_WITHOUT_COMPLETED_VALUES
        )
        dumped["enginePayload"]["engineState"]["completed"]["values"] = list(state.completed.values)
        return dumped

    def canonical_bytes(self) -> bytes:
        return canonical_bytes(self.to_json())

    def snapshot_ref(self) -> str:
        """`sha256:<hex>` of the JCS bytes — the CAS key of this snapshot."""
        return canonical_digest(self.to_json())


_WITHOUT_COMPLETED_VALUES: Final = {"engine_payload": {"engine_state": {"completed": {"values"}}}}


def snapshot_of(
    state: InitState | CompleteState | RunningState | BlockedState,
) -> ExecutionSnapshot:
    return ExecutionSnapshot(engine_payload=EnginePayload(engine_state=state))


def running_snapshot(
    completed: Iterable[str], loop_stack: Sequence[LoopFrame], pending: StepInstance | None
) -> ExecutionSnapshot:
    """A `running` snapshot with `completed` collated the way the reference requires."""
    return snapshot_of(
        RunningState(
            completed=completed_set(completed),
            loop_stack=list(loop_stack),
            pending=PendingNone() if pending is None else PendingSome(step=pending),
        )
    )


def completed_set(completed: Iterable[str]) -> CompletedSet:
    """`completed` in wire form; a CompletedKeys is taken as it is (already valid)."""
    if isinstance(completed, CompletedKeys):
        return CompletedSet.of(completed)
    return CompletedSet(values=sort_completed(completed))


def complete_snapshot() -> ExecutionSnapshot:
    return snapshot_of(CompleteState())


def parse_snapshot(data: Any) -> Result[ExecutionSnapshot, str]:
    """Validate parsed JSON into a snapshot; the failure is a readable reason string."""
    try:
        return Success(ExecutionSnapshot.model_validate(data))
    except ValidationError as exc:
        return Failure(f"invalid execution snapshot: {exc.errors(include_url=False)}")
