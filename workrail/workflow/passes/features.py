"""The features pass: each `wr.features.*` a workflow declares adds its constraints,
procedure and verify items to every step written with promptBlocks (steps with a plain
`prompt` are the author's text alone, as in WorkRail). A closed set, since the added text
is part of the hashed, compiled workflow."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from workrail.workflow.errors import Problem
from workrail.workflow.passes.steps import JsonObject, map_steps


@dataclass(frozen=True, slots=True)
class Feature:
    """What one feature adds to each promptBlocks section (prompt values: texts or parts)."""

    constraints: tuple[Any, ...] = ()
    procedure: tuple[Any, ...] = ()
    verify: tuple[Any, ...] = ()


def _ref(ref_id: str) -> list[dict[str, str]]:
    return [{"kind": "ref", "refId": ref_id}]


FEATURES: Final[Mapping[str, Feature]] = MappingProxyType(
    {
        "wr.features.memory_context": Feature(constraints=(_ref("wr.refs.memory_usage"),)),
        "wr.features.subagent_guidance": Feature(
            constraints=(
                "Subagents you start are generic WorkRail executors; do not invent named "
                "specialist roles for them.",
                "You keep the strategy, the decisions, the synthesis and the final outputs; "
                "a subagent contributes an independent view and nothing more.",
                _ref("wr.refs.parallelize_cognition_serialize_synthesis"),
            ),
            procedure=(
                "Give each executor you delegate to a distinct focus and the same shared "
                "facts as its starting truth.",
                "Read every result the executors return and write the synthesis yourself; "
                "no single result becomes the answer unreviewed.",
            ),
            verify=(
                "You synthesised the delegated results yourself instead of adopting one verbatim.",
                "No subagent had the final say on findings, recommendations or artifacts.",
            ),
        ),
        "wr.features.capabilities": Feature(
            constraints=(
                "Use optional capabilities (subagents, web access, other tools) when they are "
                "available and help; the step must still succeed without them.",
                "Do not assume a capability exists: find out by trying it once and note what "
                "you learned.",
            ),
            procedure=(
                "Before relying on a capability, check that it works here; if it does not, "
                "take the path that needs no extra capability.",
            ),
            verify=(
                "The notes say which optional capabilities were used and which fallbacks "
                "were taken.",
            ),
        ),
    }
)


def unknown_features(definition: JsonObject) -> Iterator[Problem]:
    features = definition.get("features")
    if not isinstance(features, list):
        return
    for i, feature in enumerate(features):
        if isinstance(feature, str) and feature not in FEATURES:
            close = difflib.get_close_matches(feature, list(FEATURES), n=1)
            fix = (
                f"did you mean '{close[0]}'?"
                if close
                else "use one of: " + ", ".join(FEATURES) + " (or remove it)"
            )
            yield Problem(
                "UNKNOWN_FEATURE", f"$.features[{i}]", f"unknown feature '{feature}'", fix
            )


def apply_features(definition: JsonObject) -> JsonObject:
    """The pass: the declared features' items appended to every promptBlocks step."""
    declared = [FEATURES[f] for f in definition.get("features") or () if f in FEATURES]
    if not declared:
        return definition

    def apply(step: JsonObject) -> list[JsonObject]:
        blocks = step.get("promptBlocks")
        if not isinstance(blocks, dict):
            return [step]
        merged: JsonObject = dict(blocks)
        for name in ("constraints", "procedure", "verify"):
            added = [item for feature in declared for item in getattr(feature, name)]
            if added:
                merged[name] = [*(blocks.get(name) or ()), *added]
        return [{**step, "promptBlocks": merged}]

    return map_steps(definition, apply)
