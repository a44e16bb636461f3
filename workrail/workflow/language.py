"""The workflow language's constructs, which WorkRail release brought each, and which of
them a definition uses: what `workrail validate` reports, and what docs/workflows.md
tabulates.

Release attribution: constructs in WorkRail v1.4.0's schema say `v1.4.0`; the rule that a
loop without an artifact is entered is from `v1.17.1`; the others came after v1.4.0 and are
in the current release (v3.121.0). `early v0.3.0 schema` marks those of the first revision
of the schema after v1.4.0 (prompt blocks, features, fragments, template calls, references,
extension points, `in`), `by v3.121.0` the later ones. WorkRail for Python's own additions
say so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from workrail.workflow.passes.refs import iter_values
from workrail.workflow.passes.steps import JsonObject, iter_steps

V14: Final = "v1.4.0"
V03_EARLY: Final = "after v1.4.0, early v0.3.0 schema"
V3: Final = "after v1.4.0, by v3.121.0"
OURS: Final = "WorkRail for Python only"


@dataclass(frozen=True, slots=True)
class Construct:
    key: str
    label: str
    since: str
    used_by: Callable[[JsonObject], bool]


def _top(name: str) -> Callable[[JsonObject], bool]:
    return lambda d: name in d


def _step(pred: Callable[[JsonObject], bool]) -> Callable[[JsonObject], bool]:
    return lambda d: any(pred(s) for _, s in iter_steps(d))


def _loops(d: JsonObject) -> Iterator[JsonObject]:
    for s in d.get("steps") or ():
        if isinstance(s, dict) and s.get("type") == "loop" and isinstance(s.get("loop"), dict):
            yield s["loop"]


def _conditions(value: Any) -> Iterator[JsonObject]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _conditions(v)
    elif isinstance(value, list):
        for v in value:
            yield from _conditions(v)


def _uses_condition_op(op: str) -> Callable[[JsonObject], bool]:
    def check(d: JsonObject) -> bool:
        for s in d.get("steps") or ():
            for c in _conditions(s):
                if op in c and "var" in c:
                    return True
        return False

    return check


def _artifact_loop(d: JsonObject) -> bool:
    return any(
        "condition" not in loop and isinstance(loop.get("conditionSource"), dict)
        for loop in _loops(d)
    )


def _other_contract(d: JsonObject) -> bool:
    def ref(s: JsonObject) -> bool:
        c = s.get("outputContract")
        return isinstance(c, dict) and c.get("contractRef") != "wr.contracts.loop_control"

    return _step(ref)(d)


def _has_ref(step: JsonObject) -> bool:
    blocks = step.get("promptBlocks")
    if not isinstance(blocks, dict):
        return False
    return any(
        isinstance(value, list)
        and any(isinstance(p, dict) and p.get("kind") == "ref" for p in value)
        for _, value in iter_values(blocks, "")
    )


def _gate_object(s: JsonObject) -> bool:
    rule = s.get("requireConfirmation")
    return isinstance(rule, dict) and "kind" in rule


def _parallel(d: JsonObject) -> bool:
    return any(isinstance(s, dict) and s.get("type") == "parallel" for _, s in iter_steps(d))


def _placeholders(d: JsonObject) -> bool:
    return any(isinstance(s.get("prompt"), str) and "{{" in s["prompt"] for _, s in iter_steps(d))


CONSTRUCTS: Final[tuple[Construct, ...]] = (
    Construct("steps", "standard steps, prompts, guidance, confirmation", V14, _top("steps")),
    Construct(
        "loops", "loops (while, until, for, forEach)", V14, lambda d: any(True for _ in _loops(d))
    ),
    Construct(
        "runCondition",
        "conditions (var, equals, gt…, and/or/not)",
        V14,
        _step(lambda s: "runCondition" in s),
    ),
    Construct(
        "validationCriteria",
        "output validation criteria",
        V14,
        _step(lambda s: "validationCriteria" in s),
    ),
    Construct(
        "functionDefinitions",
        "function definitions and references",
        V14,
        lambda d: "functionDefinitions" in d or _step(lambda s: "functionReferences" in s)(d),
    ),
    Construct(
        "loopControl",
        "wr.contracts.loop_control output contract",
        V14,
        _step(lambda s: isinstance(s.get("outputContract"), dict)),
    ),
    Construct(
        "recommendedPreferences",
        "recommended autonomy and risk policy",
        V14,
        _top("recommendedPreferences"),
    ),
    Construct(
        "artifactLoop",
        "loops decided by an artifact alone (loopId optional)",
        "v1.17.1",
        _artifact_loop,
    ),
    Construct(
        "promptBlocks",
        "prompts assembled from blocks (goal, constraints, …)",
        V03_EARLY,
        _step(lambda s: "promptBlocks" in s),
    ),
    Construct("features", "compiler features (wr.features.*)", V03_EARLY, _top("features")),
    Construct(
        "refs", "wr.refs.* snippets in prompt blocks", V03_EARLY, _step(lambda s: _has_ref(s))
    ),
    Construct(
        "promptFragments",
        "prompt fragments appended when a condition holds",
        V03_EARLY,
        _step(lambda s: "promptFragments" in s),
    ),
    Construct(
        "templateCall",
        "routines included with templateCall",
        V03_EARLY,
        _step(lambda s: "templateCall" in s),
    ),
    Construct("references", "document references", V03_EARLY, _top("references")),
    Construct(
        "extensionPoints",
        "extension points and {{wr.bindings.*}}",
        V03_EARLY,
        _top("extensionPoints"),
    ),
    Construct("conditionIn", "condition operator 'in'", V03_EARLY, _uses_condition_op("in")),
    Construct(
        "conditionContains", "condition operator 'contains'", V3, _uses_condition_op("contains")
    ),
    Construct(
        "notesOptional", "steps that need no notes", V3, _step(lambda s: "notesOptional" in s)
    ),
    Construct(
        "assessments",
        "assessments, assessmentRefs and consequences",
        V3,
        lambda d: "assessments" in d or _step(lambda s: "assessmentRefs" in s)(d),
    ),
    Construct("outputContracts", "output contracts beyond loop control", V3, _other_contract),
    Construct("parallel", "parallel steps (parallelDelegations)", V3, _parallel),
    Construct(
        "gateKinds",
        "requireConfirmation {kind: human_approval or coordinator_eval}",
        V3,
        _step(_gate_object),
    ),
    Construct(
        "modelTier",
        "model tiers",
        V3,
        lambda d: "modelTier" in d or _step(lambda s: "modelTier" in s)(d),
    ),
    Construct(
        "auditVerification",
        "audit and verification settings",
        V3,
        _step(lambda s: "audit" in s or "verification" in s),
    ),
    Construct(
        "metricsProfile", "metrics profile (metrics_* context keys)", V3, _top("metricsProfile")
    ),
    Construct("about", "about text for the catalogue", V3, _top("about")),
    Construct("examples", "example goals for the catalogue", V3, _top("examples")),
    Construct(
        "validatedAgainstSpecVersion",
        "authoring spec version checked against",
        V3,
        _top("validatedAgainstSpecVersion"),
    ),
    Construct(
        "placeholders", "{{name.path}} placeholders filled from the context", OURS, _placeholders
    ),
)
NEWEST_SPEC_VERSION: Final = 4
"""The newest WorkRail authoring-spec version we know; an older
`validatedAgainstSpecVersion` gets a staleness hint."""


def constructs_used(definition: JsonObject) -> list[Construct]:
    """The constructs a (schema-valid) definition uses, in table order."""
    return [c for c in CONSTRUCTS if c.used_by(definition)]


def uses_only_v14(definition: JsonObject) -> bool:
    return all(c.since == V14 for c in constructs_used(definition))
