"""The event envelope and every event kind of the closed set (spec 20-events).

Events are the only durable truth of a session. The models validate what the reference
validates; unknown kinds are a schema failure, and each kind's scope rule is enforced.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any, Final, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
    model_validator,
)

from workrail.core.budgets import NOTES_MAX_BYTES, TRACE_MAX_ENTRIES
from workrail.core.wire import (
    DEFERRED,
    DedupeKey,
    Digest,
    Lenient,
    NonEmptyStr,
    Omittable,
    SafeId,
    SchemaV1,
    Strict,
)

EVENT_KINDS: Final = (
    "session_created",
    "observation_recorded",
    "run_started",
    "node_created",
    "edge_created",
    "advance_recorded",
    "validation_performed",
    "node_output_appended",
    "preferences_changed",
    "context_set",
    "decision_trace_appended",
    "gap_recorded",
    "capability_observed",
    "divergence_recorded",
)


class Scope(Lenient):
    runId: Omittable[NonEmptyStr]
    nodeId: Omittable[NonEmptyStr]


# --- payloads ---------------------------------------------------------------------------


class SessionCreatedData(Lenient):
    pass


SourceKind = Literal["bundled", "user", "project", "remote", "plugin"]


class RunStartedData(Lenient):
    workflowId: NonEmptyStr
    workflowHash: Digest
    workflowSourceKind: SourceKind
    workflowSourceRef: NonEmptyStr


NodeKind = Literal["step", "checkpoint", "blocked_attempt"]


class NodeCreatedData(Lenient):
    nodeKind: NodeKind
    parentNodeId: NonEmptyStr | None
    workflowHash: Digest
    snapshotRef: Digest


EdgeKind = Literal["acked_step", "checkpoint"]
EdgeCauseKind = Literal[
    "idempotent_replay", "intentional_fork", "non_tip_advance", "checkpoint_created"
]


class EdgeCause(Lenient):
    kind: EdgeCauseKind
    eventId: NonEmptyStr


class EdgeCreatedData(Lenient):
    edgeKind: EdgeKind
    fromNodeId: NonEmptyStr
    toNodeId: NonEmptyStr
    cause: EdgeCause

    @model_validator(mode="after")
    def _checkpoint_cause(self) -> EdgeCreatedData:
        if self.edgeKind == "checkpoint" and self.cause.kind != "checkpoint_created":
            raise ValueError("edgeKind=checkpoint requires cause.kind=checkpoint_created")
        return self


class AdvancedOutcome(Lenient):
    kind: Literal["advanced"]
    toNodeId: NonEmptyStr


class BlockedOutcome(Lenient):
    """Deprecated by the reference (ADR 008) but readers must still accept it."""

    kind: Literal["blocked"]
    blockers: dict[str, Any]


class AdvanceRecordedData(Lenient):
    attemptId: NonEmptyStr
    intent: Literal["ack_pending"]
    outcome: Annotated[AdvancedOutcome | BlockedOutcome, Field(discriminator="kind")]


class ValidationResult(Strict):
    valid: bool
    issues: list[str]
    suggestions: list[str]


class ValidationPerformedData(Strict):
    validationId: NonEmptyStr
    attemptId: NonEmptyStr
    contractRef: NonEmptyStr
    result: ValidationResult


class NotesPayload(Lenient):
    payloadKind: Literal["notes"]
    notesMarkdown: NonEmptyStr

    @model_validator(mode="after")
    def _budget(self) -> NotesPayload:
        if len(self.notesMarkdown.encode("utf-8")) > NOTES_MAX_BYTES:
            raise ValueError(f"notesMarkdown exceeds {NOTES_MAX_BYTES} UTF-8 bytes")
        return self


class ArtifactRefPayload(Lenient):
    payloadKind: Literal["artifact_ref"]
    sha256: Digest
    contentType: NonEmptyStr
    byteLength: Annotated[int, Field(ge=0)]
    content: Any = None

    @model_serializer(mode="wrap")
    def _omit_absent_content(self, handler: SerializerFunctionWrapHandler) -> Any:
        # `content` may legitimately be JSON null; it is omitted only when absent.
        data = handler(self)
        if "content" not in self.model_fields_set and isinstance(data, dict):
            data.pop("content", None)
        return data


class NodeOutputAppendedData(Lenient):
    outputId: NonEmptyStr
    supersedesOutputId: Omittable[NonEmptyStr]
    outputChannel: Literal["recap", "artifact"]
    payload: Annotated[NotesPayload | ArtifactRefPayload, Field(discriminator="payloadKind")]

    @model_validator(mode="after")
    def _recap_is_notes(self) -> NodeOutputAppendedData:
        if self.outputChannel == "recap" and self.payload.payloadKind != "notes":
            raise ValueError("outputChannel=recap requires a notes payload")
        return self


Autonomy = Literal["guided", "full_auto_stop_on_user_deps", "full_auto_never_stop"]
RiskPolicy = Literal["conservative", "balanced", "aggressive"]


class AutonomyDelta(Lenient):
    key: Literal["autonomy"]
    value: Autonomy


class RiskPolicyDelta(Lenient):
    key: Literal["riskPolicy"]
    value: RiskPolicy


class EffectivePreferences(Lenient):
    autonomy: Autonomy
    riskPolicy: RiskPolicy


class PreferencesChangedData(Lenient):
    changeId: NonEmptyStr
    source: Literal["user", "workflow_recommendation", "system"]
    delta: Annotated[
        list[Annotated[AutonomyDelta | RiskPolicyDelta, Field(discriminator="key")]],
        Field(min_length=1),
    ]
    effective: EffectivePreferences

    @model_validator(mode="after")
    def _unique_keys(self) -> PreferencesChangedData:
        keys = [d.key for d in self.delta]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate keys in preference delta")
        return self


class ContextSetData(Lenient):
    contextId: NonEmptyStr
    context: Any
    source: Literal["initial", "agent_delta"]


class StepRef(Strict):
    kind: Literal["step_id"]
    stepId: SafeId


class LoopRef(Strict):
    kind: Literal["loop_id"]
    loopId: SafeId


class ConditionRef(Strict):
    kind: Literal["condition_id"]
    conditionId: SafeId


class IterationRef(Strict):
    kind: Literal["iteration"]
    value: Annotated[int, Field(ge=0)]


TraceRef = Annotated[StepRef | LoopRef | ConditionRef | IterationRef, Field(discriminator="kind")]
TraceKind = Literal[
    "selected_next_step",
    "evaluated_condition",
    "entered_loop",
    "exited_loop",
    "detected_non_tip_advance",
]


class TraceEntry(Lenient):
    kind: TraceKind
    summary: NonEmptyStr
    refs: Omittable[Annotated[list[TraceRef], Field(max_length=10)]]


class DecisionTraceAppendedData(Lenient):
    traceId: NonEmptyStr
    entries: Annotated[list[TraceEntry], Field(min_length=1, max_length=TRACE_MAX_ENTRIES)]


class GapReason(Lenient):
    category: Literal[
        "user_only_dependency", "contract_violation", "capability_missing", "unexpected"
    ]
    detail: NonEmptyStr


class GapResolution(Lenient):
    kind: Literal["unresolved", "resolves"]
    resolvesGapId: Omittable[NonEmptyStr]


class GapRecordedData(Lenient):
    gapId: NonEmptyStr
    severity: Literal["info", "warning", "critical"]
    reason: GapReason
    summary: NonEmptyStr
    resolution: GapResolution
    evidenceRefs: Omittable[list[dict[str, Any]]]


SHORT_STRING_MAX_UNITS: Final = 80
"""A `short_string` observation holds 1..80 UTF-16 code units (spec 20 §5)."""

_GIT_SHA1: Final = re.compile(r"[0-9a-f]{40}")
_SHA256: Final = re.compile(r"sha256:[0-9a-f]{64}")


def short_string_problem(value: str) -> str | None:
    """Why `value` cannot be a `short_string` observation, or None when it can.

    Control characters (NUL above all) and lone surrogates are refused here, in the model,
    so every backend refuses the same bundles: PostgreSQL text cannot hold a NUL or a
    surrogate, and a branch name never holds either (git refuses control characters)."""
    if not value:
        return "is empty"
    if len(value.encode("utf-16-le", "surrogatepass")) // 2 > SHORT_STRING_MAX_UNITS:
        return f"is longer than {SHORT_STRING_MAX_UNITS} characters"
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cs"):
            return f"holds the control character U+{ord(char):04X}"
    return None


def is_git_sha1(value: str) -> bool:
    return _GIT_SHA1.fullmatch(value) is not None


class ObservationValue(Lenient):
    type: Literal["short_string", "git_sha1", "sha256"]
    value: NonEmptyStr

    @model_validator(mode="after")
    def _value_fits_its_type(self) -> ObservationValue:
        if self.type == "short_string":
            problem = short_string_problem(self.value)
            if problem is not None:
                raise ValueError(f"a short_string observation {problem}")
        elif self.type == "git_sha1" and not is_git_sha1(self.value):
            raise ValueError("a git_sha1 observation is 40 lowercase hex digits")
        elif self.type == "sha256" and _SHA256.fullmatch(self.value) is None:
            raise ValueError("a sha256 observation is sha256: and 64 lowercase hex digits")
        return self


class ObservationRecordedData(Lenient):
    key: Literal["git_branch", "git_head_sha", "repo_root_hash"]
    value: ObservationValue
    confidence: Literal["low", "med", "high"]


class CapabilityObservedData(Lenient):
    capObsId: NonEmptyStr
    capability: Literal["delegation", "web_browsing"]
    status: Literal["unknown", "available", "unavailable"]
    provenance: dict[str, Any]


class DivergenceRecordedData(Lenient):
    divergenceId: NonEmptyStr
    reason: Literal[
        "missing_user_context",
        "capability_unavailable",
        "efficiency_skip",
        "safety_stop",
        "policy_constraint",
    ]
    summary: NonEmptyStr
    relatedStepId: Omittable[NonEmptyStr]


# --- envelope ---------------------------------------------------------------------------

_SCOPE_RULE: Final[dict[str, str]] = {
    "session_created": "absent",
    "observation_recorded": "absent",
    "run_started": "run",
    "edge_created": "run",
    "context_set": "run",
}


class EventBase(Lenient):
    v: SchemaV1
    kind: str
    eventId: NonEmptyStr
    eventIndex: Annotated[int, Field(ge=0)]
    sessionId: NonEmptyStr
    dedupeKey: Annotated[DedupeKey, Field(min_length=1)]
    scope: Omittable[Scope]

    @model_validator(mode="after")
    def _scope_rule(self) -> EventBase:
        kind: str = self.kind
        rule = _SCOPE_RULE.get(kind, "run_node")
        scope = self.scope
        if rule == "absent":
            if scope is not None:
                raise ValueError(f"{kind} must not carry a scope")
        elif scope is None or scope.runId is None:
            raise ValueError(f"{kind} requires scope.runId")
        elif rule == "run_node" and scope.nodeId is None:
            raise ValueError(f"{kind} requires scope.nodeId")
        return self

    @property
    def run_id(self) -> str:
        """scope.runId (only for kinds whose scope requires it)."""
        assert self.scope is not None
        assert self.scope.runId is not None
        return self.scope.runId

    @property
    def node_id(self) -> str:
        """scope.nodeId (only for kinds whose scope requires it)."""
        assert self.scope is not None
        assert self.scope.nodeId is not None
        return self.scope.nodeId


class SessionCreated(EventBase):
    kind: Literal["session_created"]
    data: SessionCreatedData


class ObservationRecorded(EventBase):
    kind: Literal["observation_recorded"]
    data: ObservationRecordedData


class RunStarted(EventBase):
    kind: Literal["run_started"]
    data: RunStartedData


class NodeCreated(EventBase):
    kind: Literal["node_created"]
    data: NodeCreatedData


class EdgeCreated(EventBase):
    kind: Literal["edge_created"]
    data: EdgeCreatedData


class AdvanceRecorded(EventBase):
    kind: Literal["advance_recorded"]
    data: AdvanceRecordedData


class ValidationPerformed(EventBase):
    kind: Literal["validation_performed"]
    data: ValidationPerformedData


class NodeOutputAppended(EventBase):
    kind: Literal["node_output_appended"]
    data: NodeOutputAppendedData


class PreferencesChanged(EventBase):
    kind: Literal["preferences_changed"]
    data: PreferencesChangedData


class ContextSet(EventBase):
    kind: Literal["context_set"]
    data: ContextSetData


class DecisionTraceAppended(EventBase):
    kind: Literal["decision_trace_appended"]
    data: DecisionTraceAppendedData


class GapRecorded(EventBase):
    kind: Literal["gap_recorded"]
    data: GapRecordedData


class CapabilityObserved(EventBase):
    kind: Literal["capability_observed"]
    data: CapabilityObservedData


class DivergenceRecorded(EventBase):
    kind: Literal["divergence_recorded"]
    data: DivergenceRecordedData


DomainEvent = Annotated[
    SessionCreated
    | ObservationRecorded
    | RunStarted
    | NodeCreated
    | EdgeCreated
    | AdvanceRecorded
    | ValidationPerformed
    | NodeOutputAppended
    | PreferencesChanged
    | ContextSet
    | DecisionTraceAppended
    | GapRecorded
    | CapabilityObserved
    | DivergenceRecorded,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: Final[TypeAdapter[DomainEvent]] = TypeAdapter(DomainEvent, config=DEFERRED)


def parse_event(raw: object) -> DomainEvent:
    """Validate one decoded JSON object as an event (raises pydantic.ValidationError)."""
    return EVENT_ADAPTER.validate_python(raw)


def event_json(event: EventBase) -> dict[str, Any]:
    """The event as its on-disk JSON object."""
    return event.to_json()
