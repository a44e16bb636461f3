"""The output contracts a step may require (`outputContract.contractRef`): for each, the
artifact kind, how it is checked, the lines the prompt shows and a template that passes.

One registry serves validation (which refs exist), the requirement check (is this call's
artifact enough), the prompt (what to send) and blocked answers (a ready template in
`nextCall`). The artifact shapes follow WorkRail's: strict at the top level, so a misspelt
field is reported instead of dropped; a review finding may carry extra fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workrail.core.session_index import LOOP_CONTROL_KIND

LOOP_CONTROL_CONTRACT: Final = "wr.contracts.loop_control"
REVIEW_VERDICT_CONTRACT: Final = "wr.contracts.review_verdict"
GATE_VERDICT_CONTRACT: Final = "wr.contracts.gate_verdict"
CODING_HANDOFF_CONTRACT: Final = "wr.contracts.coding_handoff"
DISCOVERY_HANDOFF_CONTRACT: Final = "wr.contracts.discovery_handoff"
SHAPING_HANDOFF_CONTRACT: Final = "wr.contracts.shaping_handoff"
DIFFERENTIATION_HANDOFF_CONTRACT: Final = "wr.contracts.differentiation_handoff"
LOOP_ID_PLACEHOLDER: Final = "<loop id>"

_UTC_STAMP = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"
_UUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


class _Strict(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, strict=True)


class _Lenient(BaseModel):
    """Nested objects whose unknown fields are dropped, as WorkRail's plain objects do."""

    model_config = ConfigDict(defer_build=True, extra="ignore", frozen=True, strict=True)


Text = Annotated[str, Field(min_length=1)]
Short = Annotated[str, Field(min_length=1, max_length=200)]
Confidence = Literal["high", "medium", "low"]


# --- loop control ------------------------------------------------------------------------


class LoopControlMetadata(_Strict):
    reason: Annotated[str, Field(max_length=1024)] | None = None
    issuesFound: Annotated[int, Field(ge=0)] | None = None  # noqa: N815 - wire name
    iterationIndex: Annotated[int, Field(ge=0)] | None = None  # noqa: N815
    confidence: Annotated[int, Field(ge=0, le=100)] | None = None


class LoopControlArtifact(_Strict):
    """`wr.loop_control`: the agent's continue/stop decision for one loop."""

    kind: Literal["wr.loop_control"]
    loopId: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9_-]+$")]  # noqa: N815
    decision: Literal["continue", "stop"]
    metadata: LoopControlMetadata | None = None


# --- review and gate verdicts --------------------------------------------------------------


class ReviewFinding(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="allow", frozen=True, strict=True)

    severity: Literal["critical", "major", "minor", "nit"]
    summary: Text
    findingCategory: (  # noqa: N815
        Literal["correctness", "security", "architecture", "ux", "performance", "testing", "style"]
        | None
    ) = None


class ReviewVerdictArtifact(_Strict):
    kind: Literal["wr.review_verdict"]
    verdict: Literal["clean", "minor", "blocking"]
    confidence: Confidence
    findings: list[ReviewFinding]
    summary: Text


class GateVerdictArtifact(_Strict):
    kind: Literal["wr.gate_verdict"]
    version: Literal[1]
    verdict: Literal["approved", "rejected", "uncertain"]
    confidence: Confidence
    rationale: Annotated[str, Field(min_length=20)]


# --- phase handoffs ----------------------------------------------------------------------


class CorrectedAssumption(_Lenient):
    assumed: Short
    actual: Short


class CodingHandoffArtifact(_Strict):
    kind: Literal["wr.coding_handoff"]
    version: Literal[1]
    branchName: Text | None = None  # noqa: N815
    keyDecisions: Annotated[list[Short], Field(max_length=8)]  # noqa: N815
    knownLimitations: Annotated[list[Short], Field(max_length=6)]  # noqa: N815
    testsAdded: Annotated[list[Short], Field(max_length=10)]  # noqa: N815
    filesChanged: Annotated[  # noqa: N815
        list[Annotated[str, Field(min_length=1, max_length=300)]], Field(max_length=20)
    ]
    correctedAssumptions: Annotated[list[CorrectedAssumption], Field(max_length=6)] | None = None  # noqa: N815


class RejectedDirection(_Lenient):
    direction: Short
    reason: Annotated[str, Field(min_length=1, max_length=300)]


class CodebaseLocation(_Lenient):
    path: Annotated[str, Field(min_length=1, max_length=300)]
    relevance: Annotated[str, Field(min_length=1, max_length=150)]


class DiscoveryHandoffArtifact(_Strict):
    kind: Literal["wr.discovery_handoff"]
    version: Literal[1]
    selectedDirection: Text  # noqa: N815
    designDocPath: str  # noqa: N815
    confidenceBand: Confidence  # noqa: N815
    keyInvariants: Annotated[list[Short], Field(max_length=12)]  # noqa: N815
    rejectedDirections: Annotated[list[RejectedDirection], Field(max_length=5)] | None = None  # noqa: N815
    implementationConstraints: Annotated[list[Short], Field(max_length=8)] | None = None  # noqa: N815
    keyCodebaseLocations: Annotated[list[CodebaseLocation], Field(max_length=10)] | None = None  # noqa: N815


class ShapingHandoffArtifact(_Strict):
    kind: Literal["wr.shaping_handoff"]
    version: Literal[1]
    pitchPath: Text  # noqa: N815
    selectedShape: Short  # noqa: N815
    appetite: Annotated[str, Field(min_length=1, max_length=100)]
    keyConstraints: Annotated[list[Short], Field(max_length=8)]  # noqa: N815
    rabbitHoles: Annotated[list[Short], Field(max_length=6)]  # noqa: N815
    outOfScope: Annotated[list[Short], Field(max_length=6)]  # noqa: N815
    validationChecklist: Annotated[list[Short], Field(max_length=10)]  # noqa: N815


Stamp = Annotated[str, Field(pattern=_UTC_STAMP)]


class EvidenceFreshness(_Lenient):
    oldestCapturedAt: Stamp  # noqa: N815
    newestCapturedAt: Stamp  # noqa: N815


class TeamConstraints(_Lenient):
    teamSize: Annotated[int, Field(gt=0)]  # noqa: N815
    technicalCapabilities: Annotated[list[str], Field(min_length=1)]  # noqa: N815
    exclusions: list[str] = Field(default_factory=list)


class DefensibilityClaim(_Lenient):
    power: Literal[
        "Counter-Positioning",
        "Switching Costs",
        "Network Economies",
        "Scale Economies",
        "Cornered Resource",
        "Process Power",
        "Branding",
        "None_Imitable",
    ]
    cannibalization: str


class ShapingInput(_Lenient):
    rawIdea: Text  # noqa: N815
    problem: Text
    baseline: Text
    appetiteHint: Literal["small_batch", "big_batch"]  # noqa: N815
    noGosHints: list[str]  # noqa: N815
    constraints: TeamConstraints
    evidenceTopK: Annotated[list[Annotated[str, Field(pattern=_UUID)]], Field(max_length=10)]  # noqa: N815
    defensibilityClaim: DefensibilityClaim  # noqa: N815


class DifferentiationHandoffArtifact(_Strict):
    kind: Literal["wr.differentiation_handoff"]
    version: Literal[1]
    schemaVersion: Literal["1.0.0"]  # noqa: N815
    generatedAt: Stamp  # noqa: N815
    evidenceFreshness: EvidenceFreshness  # noqa: N815
    validationChecklist: Annotated[list[Short], Field(max_length=10)]  # noqa: N815
    shapingHandoff: ShapingInput  # noqa: N815


# --- the registry ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContractSpec:
    """One contract: its artifact kind and model, prompt lines and a passing template.

    `template` takes the id of the loop the step runs in (only loop control uses it).
    """

    ref: str
    kind: str
    model: type[BaseModel]
    prompt_lines: tuple[str, ...]
    template: Callable[[str | None], dict[str, Any]]

    def issues(self, artifact: Any) -> list[str]:
        """`<path>: <message>` for each problem of `artifact`; empty when it passes."""
        try:
            self.model.model_validate(artifact)
        except ValidationError as exc:
            return validation_issues(exc)
        return []

    def matches(self, artifact: Any) -> bool:
        return isinstance(artifact, dict) and artifact.get("kind") == self.kind


def validation_issues(exc: ValidationError) -> list[str]:
    return [
        f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
        for err in exc.errors(include_url=False)
    ]


def _fixed(template: dict[str, Any]) -> Callable[[str | None], dict[str, Any]]:
    def make(_loop_id: str | None) -> dict[str, Any]:
        copied: dict[str, Any] = _copy(template)
        return copied

    return make


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _loop_control_template(loop_id: str | None) -> dict[str, Any]:
    return {
        "kind": LOOP_CONTROL_KIND,
        "loopId": loop_id or LOOP_ID_PLACEHOLDER,
        "decision": "continue",
    }


_SPECS: Final = (
    ContractSpec(
        LOOP_CONTROL_CONTRACT,
        LOOP_CONTROL_KIND,
        LoopControlArtifact,
        (
            'Provide an artifact with kind: "wr.loop_control"',
            'Fields: loopId (lowercase, delimiter-safe), decision ("continue" | "stop")',
        ),
        _loop_control_template,
    ),
    ContractSpec(
        REVIEW_VERDICT_CONTRACT,
        "wr.review_verdict",
        ReviewVerdictArtifact,
        (
            'Send one artifact with kind "wr.review_verdict" in output.artifacts',
            'verdict: "clean" | "minor" | "blocking"; confidence: "high" | "medium" | "low"',
            "findings: a list (empty when clean) of {severity: critical | major | minor | nit, "
            "summary, findingCategory?}; more fields per finding (file, lines…) are kept",
            "summary: one line saying what the review found",
        ),
        _fixed(
            {
                "kind": "wr.review_verdict",
                "verdict": "clean",
                "confidence": "high",
                "findings": [],
                "summary": "<one line on what the review found>",
            }
        ),
    ),
    ContractSpec(
        GATE_VERDICT_CONTRACT,
        "wr.gate_verdict",
        GateVerdictArtifact,
        (
            'Send one artifact with kind "wr.gate_verdict" and version 1 in output.artifacts',
            'verdict: "approved" | "rejected" | "uncertain"; confidence: "high" | "medium" | "low"',
            "rationale: why, in at least 20 characters",
        ),
        _fixed(
            {
                "kind": "wr.gate_verdict",
                "version": 1,
                "verdict": "approved",
                "confidence": "high",
                "rationale": "<why this verdict, in at least twenty characters>",
            }
        ),
    ),
    ContractSpec(
        CODING_HANDOFF_CONTRACT,
        "wr.coding_handoff",
        CodingHandoffArtifact,
        (
            'Send one artifact with kind "wr.coding_handoff" and version 1 in output.artifacts',
            "Lists of short texts (≤ 200 characters each): keyDecisions (≤ 8), "
            "knownLimitations (≤ 6), testsAdded (≤ 10); filesChanged (≤ 20 paths)",
            "Optional: branchName, correctedAssumptions [{assumed, actual}] (≤ 6)",
        ),
        _fixed(
            {
                "kind": "wr.coding_handoff",
                "version": 1,
                "keyDecisions": [],
                "knownLimitations": [],
                "testsAdded": [],
                "filesChanged": [],
            }
        ),
    ),
    ContractSpec(
        DISCOVERY_HANDOFF_CONTRACT,
        "wr.discovery_handoff",
        DiscoveryHandoffArtifact,
        (
            'Send one artifact with kind "wr.discovery_handoff" and version 1 in output.artifacts',
            "selectedDirection (one sentence), designDocPath (may be empty), "
            'confidenceBand ("high" | "medium" | "low"), keyInvariants (≤ 12 short texts)',
            "Optional: rejectedDirections [{direction, reason}], implementationConstraints, "
            "keyCodebaseLocations [{path, relevance}]",
        ),
        _fixed(
            {
                "kind": "wr.discovery_handoff",
                "version": 1,
                "selectedDirection": "<the direction chosen, in one sentence>",
                "designDocPath": "",
                "confidenceBand": "high",
                "keyInvariants": [],
            }
        ),
    ),
    ContractSpec(
        SHAPING_HANDOFF_CONTRACT,
        "wr.shaping_handoff",
        ShapingHandoffArtifact,
        (
            'Send one artifact with kind "wr.shaping_handoff" and version 1 in output.artifacts',
            "pitchPath, selectedShape (≤ 200 characters), appetite (≤ 100 characters)",
            "Lists of short texts: keyConstraints (≤ 8), rabbitHoles (≤ 6), outOfScope (≤ 6), "
            "validationChecklist (≤ 10)",
        ),
        _fixed(
            {
                "kind": "wr.shaping_handoff",
                "version": 1,
                "pitchPath": "<path of the pitch document>",
                "selectedShape": "<the shape chosen, and why>",
                "appetite": "<the time budget>",
                "keyConstraints": [],
                "rabbitHoles": [],
                "outOfScope": [],
                "validationChecklist": [],
            }
        ),
    ),
    ContractSpec(
        DIFFERENTIATION_HANDOFF_CONTRACT,
        "wr.differentiation_handoff",
        DifferentiationHandoffArtifact,
        (
            'Send one artifact with kind "wr.differentiation_handoff", version 1 and '
            'schemaVersion "1.0.0" in output.artifacts',
            "generatedAt and evidenceFreshness {oldestCapturedAt, newestCapturedAt}: UTC "
            "times such as 2026-01-31T12:00:00Z; validationChecklist (≤ 10 short texts)",
            "shapingHandoff: rawIdea, problem, baseline, appetiteHint (small_batch | "
            "big_batch), noGosHints, constraints {teamSize, technicalCapabilities (≥ 1), "
            "exclusions}, evidenceTopK (≤ 10 UUIDs), defensibilityClaim {power, cannibalization}",
        ),
        _fixed(
            {
                "kind": "wr.differentiation_handoff",
                "version": 1,
                "schemaVersion": "1.0.0",
                "generatedAt": "2026-01-01T00:00:00Z",
                "evidenceFreshness": {
                    "oldestCapturedAt": "2026-01-01T00:00:00Z",
                    "newestCapturedAt": "2026-01-01T00:00:00Z",
                },
                "validationChecklist": [],
                "shapingHandoff": {
                    "rawIdea": "<the idea as first stated>",
                    "problem": "<the problem it solves>",
                    "baseline": "<what people do today without it>",
                    "appetiteHint": "small_batch",
                    "noGosHints": [],
                    "constraints": {
                        "teamSize": 1,
                        "technicalCapabilities": ["<a capability the team has>"],
                        "exclusions": [],
                    },
                    "evidenceTopK": [],
                    "defensibilityClaim": {
                        "power": "Counter-Positioning",
                        "cannibalization": "<what it takes away from existing offers>",
                    },
                },
            }
        ),
    ),
)

CONTRACTS: Final[Mapping[str, ContractSpec]] = MappingProxyType({s.ref: s for s in _SPECS})
KNOWN_CONTRACTS: Final = frozenset(CONTRACTS)


def contract(ref: str) -> ContractSpec | None:
    return CONTRACTS.get(ref)


CheckStatus = Literal["satisfied", "missing", "invalid"]


@dataclass(frozen=True, slots=True)
class ContractCheck:
    status: CheckStatus
    issues: tuple[str, ...] = ()


def check_contract(
    spec: ContractSpec, artifacts: Sequence[Any], *, required: bool
) -> ContractCheck:
    """The first artifact of the contract's kind decides (WorkRail's rule); none is
    `missing` when the contract is required."""
    for artifact in artifacts:
        if spec.matches(artifact):
            issues = spec.issues(artifact)
            return ContractCheck("invalid", tuple(issues)) if issues else ContractCheck("satisfied")
    return ContractCheck("missing" if required else "satisfied")


def parse_loop_control(artifact: Any) -> LoopControlArtifact | list[str]:
    """The parsed artifact, or its issues as `<path>: <message>` strings."""
    try:
        return LoopControlArtifact.model_validate(artifact)
    except ValidationError as exc:
        return validation_issues(exc)


def is_loop_control(artifact: Any) -> bool:
    return isinstance(artifact, dict) and artifact.get("kind") == LOOP_CONTROL_KIND
