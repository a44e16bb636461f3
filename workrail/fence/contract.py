"""Wire models of the opaque workflow checkpoint: the contract's input and output, exactly.

These models are the single source of the published describe document (see `describe.py`),
so a bound, enum or field name changed here changes the published contract too, and the
drift test against the reference document fails.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from workrail.core.wire import DEFERRED
from workrail.fence.ratelimit import DEFAULT_CLIENT_RPM, DEFAULT_GLOBAL_RPM  # noqa: F401 (its names)

Stage = Literal[
    "claimed",
    "external_result_uncertain",
    "caller_verified",
    "failed",
    "compensated",
]
STAGES: Final[tuple[Stage, ...]] = (
    "claimed",
    "external_result_uncertain",
    "caller_verified",
    "failed",
    "compensated",
)

EvidenceType = Literal[
    "provider_idempotency_result",
    "atomic_unique_result",
    "stable_marker_readback",
    "conditional_write_result",
    "delivery_status",
    "durable_result_readback",
    "manual_review",
]

Action = Literal["claim", "transition", "status", "abandon"]
ACTIONS: Final[tuple[Action, ...]] = ("claim", "transition", "status", "abandon")

MIN_CLAIM_TTL_SECONDS: Final = 60
MAX_CLAIM_TTL_SECONDS: Final = 3600
MIN_STATE_TTL_SECONDS: Final = 60
MAX_STATE_TTL_SECONDS: Final = 3600
MAX_GENERATIONS: Final = 16
MAX_OBSERVATIONS: Final = 32
MINIMUM_ACTION_SAFETY_MARGIN_SECONDS: Final = 15
MAX_SAFE_INTEGER: Final = 9007199254740991

NAMESPACE_PATTERN: Final = (
    r"^[a-zA-Z0-9._-]{1,40}:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)
HMAC_DIGEST_PATTERN: Final = r"^hmac-sha256:[a-f0-9]{64}$"
# An RFC 3339 UTC timestamp (leap-day aware), as the contract publishes it.
DATE_TIME_PATTERN: Final = (
    r"^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29"
    r"|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)"
    r"|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z))$"
)

Namespace = Annotated[
    str,
    Field(
        min_length=38,
        max_length=77,
        pattern=NAMESPACE_PATTERN,
        description=(
            "Private workflow namespace formatted as <scope>:<fresh UUID v4>. Generate a new"
            " UUID for each independent workflow and share it only with participating agents."
        ),
    ),
]
WorkflowKey = Annotated[str, Field(min_length=16, max_length=256)]
Holder = Annotated[str, Field(min_length=16, max_length=128)]
ObservationKey = Annotated[str, Field(min_length=16, max_length=128)]
TtlSeconds = Annotated[int, Field(ge=60, le=3600)]
GenerationNumber = Annotated[int, Field(ge=1, le=MAX_GENERATIONS)]
HmacDigest = Annotated[str, Field(pattern=HMAC_DIGEST_PATTERN)]
DateTime = Annotated[
    str, Field(pattern=DATE_TIME_PATTERN, json_schema_extra={"format": "date-time"})
]
Seconds = Annotated[int, Field(ge=0, le=MAX_SAFE_INTEGER)]

_STRICT = ConfigDict(defer_build=True, extra="forbid", frozen=True, strict=True)


class ClaimInput(BaseModel):
    """Create, reuse or recover the expiring claim on one workflow identity."""

    model_config = _STRICT

    namespace: Namespace
    workflow_key: WorkflowKey
    holder: Holder
    claim_ttl_seconds: TtlSeconds
    state_ttl_seconds: TtlSeconds
    retry_failed: bool
    action: Literal["claim"]


class TransitionInput(BaseModel):
    """Record one caller assertion that moves the current generation along the graph."""

    model_config = _STRICT

    namespace: Namespace
    workflow_key: WorkflowKey
    holder: Holder
    expected_generation: GenerationNumber
    from_stage: Stage
    to_stage: Stage
    observation_key: ObservationKey
    evidence_type: EvidenceType | None
    evidence_fingerprint: HmacDigest | None
    action: Literal["transition"]


class StatusInput(BaseModel):
    """Read the checkpoint without changing it."""

    model_config = _STRICT

    namespace: Namespace
    workflow_key: WorkflowKey
    action: Literal["status"]


class AbandonInput(BaseModel):
    """Release a pre-action claim held by the caller."""

    model_config = _STRICT

    namespace: Namespace
    workflow_key: WorkflowKey
    holder: Holder
    expected_generation: GenerationNumber
    action: Literal["abandon"]


CheckpointInput = Annotated[
    ClaimInput | TransitionInput | StatusInput | AbandonInput,
    Field(discriminator="action"),
]
INPUT_MODELS: Final = (ClaimInput, TransitionInput, StatusInput, AbandonInput)
INPUT_ADAPTER: Final[TypeAdapter[ClaimInput | TransitionInput | StatusInput | AbandonInput]] = (
    TypeAdapter(CheckpointInput, config=DEFERRED)
)


class CheckpointOutput(BaseModel):
    """What every successful action returns: the checkpoint as seen by this caller, now."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    action: Action
    workflow_hash: HmacDigest
    observed_at: DateTime
    stage: Stage
    generation: GenerationNumber
    acquired: bool
    recovered: bool
    reused: bool
    recovery_required: bool
    transitioned: bool
    observation_replayed: bool
    abandoned: bool
    claim_active: bool
    held_by_caller: bool | None
    claim_expires_at: DateTime | None
    state_expires_at: DateTime
    claim_ttl_seconds_remaining: Seconds | None
    state_ttl_seconds_remaining: Seconds
    evidence_type: EvidenceType | None
    evidence_fingerprint_present: bool
    retry_failed_allowed: bool
    allowed_next_actions: Annotated[list[Action], Field(max_length=4)]
    minimum_action_safety_margin_seconds: Annotated[
        Literal[15], Field(json_schema_extra={"type": "number"})
    ]
    external_proof: Literal[False]
