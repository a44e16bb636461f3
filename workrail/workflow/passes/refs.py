"""The refs pass: `{"kind": "ref", "refId": "wr.refs.…"}` parts of prompt blocks become the
text WorkRail for Python ships for that id (a closed set: refs are hashed with the
workflow, so a ref's text is part of what a run pinned)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final

from workrail.workflow.errors import Problem
from workrail.workflow.passes.steps import JsonObject, iter_steps, map_steps

_REF_TEXTS: Final[dict[str, str]] = {
    "wr.refs.memory_usage": (
        "If memory tools are connected (for example memory_briefing, memory_store, "
        "memory_query):\n"
        "- before you start, ask them what earlier sessions learned about this workspace\n"
        "- once something significant is done, record the discoveries and decisions\n"
        "- give each record a topic and title a later session would search for\n"
        "- treat memory as a help only: if a call fails, carry on without it"
    ),
    "wr.refs.memory_store": (
        "If a memory_store tool is connected:\n"
        "- record what this phase found under a topic and title that say what it is about\n"
        "- include the files involved, the decisions taken and why\n"
        "- if storing fails, carry on: the notes of the step remain the record"
    ),
    "wr.refs.memory_query": (
        "If memory tools are connected (memory_briefing, memory_query):\n"
        "- look up what earlier sessions recorded about this task\n"
        "- scope the queries to this workspace to find related work\n"
        "- when nothing comes back or the tools fail, go on with what you have"
    ),
    "wr.refs.notes_first_durability": (
        "Keep the record in the notes:\n"
        "- the step's notes (output.notesMarkdown) are the durable record of what happened\n"
        "- state that later steps rely on goes into notes and context values, not side files\n"
        "- documents written for people are a convenience, never the workflow's memory\n"
        "- notes and context survive a rewound chat; files you wrote may not\n"
        "- write decisions, findings and their reasons into the notes before you advance"
    ),
    "wr.refs.synthesis_under_disagreement": (
        "When the parallel results disagree:\n"
        "- resolve the disagreement explicitly; never smooth it over\n"
        "- an issue two or more results report at the same severity counts as confirmed\n"
        "- an issue reported at different severities takes the higher one, unless the lower "
        "one comes with concrete counter-evidence\n"
        "- an issue only one result reports is investigated, and blocks only when clearly "
        "critical\n"
        "- when one result calls an issue a false alarm and another calls it real, decide it "
        "yourself and say why in the notes\n"
        "- while a material disagreement is open, the findings outrank any early "
        "recommendation\n"
        "- record each resolved contradiction with the reason for the resolution"
    ),
    "wr.refs.parallelize_cognition_serialize_synthesis": (
        "Working in parallel:\n"
        "- independent thinking can run side by side: gathering context, proposing "
        "hypotheses, audits, reviews\n"
        "- bringing results together cannot: merging, resolving conflicts, deciding and "
        "writing the final artifacts happen one after the other, by you\n"
        "- a subagent never settles the final answer; you do\n"
        "- hand out one well-prepared batch of work rather than many small ones\n"
        "- give every parallel worker its own focus, with no overlap"
    ),
    "wr.refs.adversarial_challenge_rules": (
        "Challenging the current position:\n"
        "- try to break the leading conclusion instead of collecting support for it\n"
        "- for every finding ask which evidence would refute it, and whether that evidence "
        "exists\n"
        "- a challenge that cannot weaken the position makes it stronger\n"
        "- a challenge that exposes a real weakness becomes a finding, and the position "
        "changes\n"
        "- rate severity by the actual risk, not by what is comfortable to say\n"
        "- push back on inflated severities as firmly as on understated ones\n"
        "- a serious concern raised by two or more independent challengers blocks by default"
    ),
}
REF_TEXTS: Final[Mapping[str, str]] = MappingProxyType(_REF_TEXTS)
PROMPT_VALUE_BLOCKS: Final = ("goal", "constraints", "procedure", "verify")


def iter_values(blocks: Mapping[str, Any], path: str) -> Iterator[tuple[str, Any]]:
    """(path, prompt value) of every value of a promptBlocks object."""
    if "goal" in blocks:
        yield f"{path}.goal", blocks["goal"]
    for name in ("constraints", "procedure", "verify"):
        values = blocks.get(name)
        if isinstance(values, list):
            for k, value in enumerate(values):
                yield f"{path}.{name}[{k}]", value


def unknown_refs(definition: JsonObject) -> Iterator[Problem]:
    """Every ref part naming an id outside the closed set."""
    for path, step in iter_steps(definition):
        blocks = step.get("promptBlocks")
        if not isinstance(blocks, dict):
            continue
        for value_path, value in iter_values(blocks, f"{path}.promptBlocks"):
            if not isinstance(value, list):
                continue
            for k, part in enumerate(value):
                if isinstance(part, dict) and part.get("kind") == "ref":
                    ref = part.get("refId")
                    if isinstance(ref, str) and ref not in REF_TEXTS:
                        yield unknown_ref(ref, f"{value_path}[{k}].refId")


def unknown_ref(ref: str, path: str) -> Problem:
    close = difflib.get_close_matches(ref, list(REF_TEXTS), n=1)
    fix = f"did you mean '{close[0]}'?" if close else "use one of: " + ", ".join(REF_TEXTS)
    return Problem("UNKNOWN_REF", path, f"unknown ref '{ref}'", fix)


def resolve_value(value: Any) -> Any:
    """A prompt value as one text: text parts as written, ref parts as their text."""
    if not isinstance(value, list):
        return value
    pieces = []
    for part in value:
        if isinstance(part, dict):
            if part.get("kind") == "ref":
                pieces.append(REF_TEXTS.get(str(part.get("refId")), ""))
            else:
                pieces.append(str(part.get("text", "")))
    return "".join(pieces)


def resolve_refs(definition: JsonObject) -> JsonObject:
    """The pass: every part-list value of every promptBlocks becomes one text."""
    return map_steps(definition, _resolve_step)


def _resolve_step(step: JsonObject) -> list[JsonObject]:
    blocks = step.get("promptBlocks")
    if not isinstance(blocks, dict) or not any(
        isinstance(v, list) for _, v in iter_values(blocks, "")
    ):
        return [step]
    resolved: JsonObject = dict(blocks)
    if "goal" in blocks:
        resolved["goal"] = resolve_value(blocks["goal"])
    for name in ("constraints", "procedure", "verify"):
        if isinstance(blocks.get(name), list):
            resolved[name] = [resolve_value(v) for v in blocks[name]]
    return [{**step, "promptBlocks": resolved}]
