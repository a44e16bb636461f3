"""The prompt-blocks pass: a step's `promptBlocks` become its `prompt`, sections in a fixed
order (goal, constraints, procedure, outputRequired, verify), so the same blocks always
give the same text and the hash covers what the agent reads."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from workrail.workflow.errors import Problem
from workrail.workflow.passes.refs import resolve_value
from workrail.workflow.passes.steps import JsonObject, iter_steps, map_steps

HEADINGS: Final = {
    "goal": "## Objective",
    "constraints": "## Ground rules",
    "procedure": "## How to go about it",
    "outputRequired": "## What to hand back",
    "verify": "## Check before you finish",
}


def render_blocks(blocks: Mapping[str, Any]) -> str:
    """The prompt text of a promptBlocks object (ref parts already resolved or resolved
    here); empty when every section is empty."""
    sections: list[str] = []
    goal = blocks.get("goal")
    if goal is not None and resolve_value(goal) != "":
        sections.append(f"{HEADINGS['goal']}\n{resolve_value(goal)}")
    for name, numbered in (("constraints", False), ("procedure", True)):
        items = [str(resolve_value(v)) for v in blocks.get(name) or ()]
        if items:
            lines = (f"{k}. {t}" if numbered else f"- {t}" for k, t in enumerate(items, 1))
            sections.append(f"{HEADINGS[name]}\n" + "\n".join(lines))
    wanted = blocks.get("outputRequired")
    if isinstance(wanted, dict) and wanted:
        lines = (f"- **{key}**: {text}" for key, text in wanted.items())
        sections.append(f"{HEADINGS['outputRequired']}\n" + "\n".join(lines))
    checks = [str(resolve_value(v)) for v in blocks.get("verify") or ()]
    if checks:
        sections.append(f"{HEADINGS['verify']}\n" + "\n".join(f"- {t}" for t in checks))
    return "\n\n".join(sections)


def empty_blocks(definition: JsonObject) -> Iterator[Problem]:
    """Steps whose promptBlocks would render to no text at all."""
    for path, step in iter_steps(definition):
        blocks = step.get("promptBlocks")
        if isinstance(blocks, dict) and not _has_content(blocks):
            yield Problem(
                "EMPTY_PROMPT_BLOCKS",
                f"{path}.promptBlocks",
                "promptBlocks has no non-empty section, so the step would have no prompt",
                "write at least a 'goal' text (or constraints, procedure, outputRequired, verify)",
            )


def _has_content(blocks: Mapping[str, Any]) -> bool:
    """Some section holds text or a ref (an unknown ref is reported on its own)."""

    def filled(value: Any) -> bool:
        return bool(value) if isinstance(value, str | list) else False

    if filled(blocks.get("goal")) or blocks.get("outputRequired"):
        return True
    return any(
        filled(v) for name in ("constraints", "procedure", "verify") for v in blocks.get(name) or ()
    )


def render_prompt_blocks(definition: JsonObject) -> JsonObject:
    """The pass: `promptBlocks` replaced by the `prompt` it renders to."""

    def render(step: JsonObject) -> list[JsonObject]:
        blocks = step.get("promptBlocks")
        if not isinstance(blocks, dict):
            return [step]
        rendered = {k: v for k, v in step.items() if k != "promptBlocks"}
        rendered["prompt"] = render_blocks(blocks)
        return [rendered]

    return map_steps(definition, render)
