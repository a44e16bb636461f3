"""The bindings pass: `{{wr.bindings.<slotId>}}` in a step's texts becomes the routine or
workflow id bound to that extension point (its declared `default`, or a project's
override passed in), at compile time, so the binding is pinned with the run."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Final

from workrail.workflow.errors import Problem
from workrail.workflow.passes.steps import JsonObject, iter_steps, map_steps, map_texts

BINDING_RE: Final = re.compile(r"\{\{\s*wr\.bindings\.([A-Za-z0-9_-]+)\s*\}\}")
_TOKEN: Final = "wr.bindings."


def slot_values(definition: JsonObject, overrides: Mapping[str, str]) -> dict[str, str]:
    """slotId → bound id: the override when one is given, else the declared default."""
    values: dict[str, str] = {}
    for point in definition.get("extensionPoints") or ():
        if isinstance(point, dict) and isinstance(point.get("slotId"), str):
            slot = point["slotId"]
            values[slot] = overrides.get(slot, str(point.get("default", "")))
    return values


def _texts(step: JsonObject, path: str) -> Iterator[tuple[str, str]]:
    """(path, text) of every text of a step a binding may appear in."""
    if isinstance(step.get("prompt"), str):
        yield f"{path}.prompt", step["prompt"]
    blocks = step.get("promptBlocks")
    if isinstance(blocks, dict):
        for name, value in blocks.items():
            values = value if name != "goal" and isinstance(value, list) else [value]
            for k, item in enumerate(values):
                where = f"{path}.promptBlocks.{name}" + (f"[{k}]" if name != "goal" else "")
                if isinstance(item, str):
                    yield where, item
                elif isinstance(item, list):
                    for m, part in enumerate(item):
                        if isinstance(part, dict) and isinstance(part.get("text"), str):
                            yield f"{where}[{m}].text", part["text"]
                elif isinstance(item, dict) and name == "outputRequired":
                    for key, text in item.items():
                        if isinstance(text, str):
                            yield f"{where}.{key}", text


def unknown_bindings(definition: JsonObject) -> Iterator[Problem]:
    declared = slot_values(definition, {})
    for path, step in iter_steps(definition):
        for where, text in _texts(step, path):
            if _TOKEN not in text:
                continue
            for match in BINDING_RE.finditer(text):
                if match.group(1) not in declared:
                    fix = (
                        "declare it in extensionPoints (slotId, purpose, default)"
                        if not declared
                        else f"use a declared slot ({', '.join(sorted(declared))}) or declare it"
                    )
                    yield Problem(
                        "UNKNOWN_BINDING",
                        where,
                        f"'{match.group(0)}' names no extension point of this workflow",
                        fix,
                    )


def resolve_bindings(
    definition: JsonObject, overrides: Mapping[str, str] | None = None
) -> JsonObject:
    """The pass: every binding token replaced by its bound id."""
    values = slot_values(definition, overrides or {})
    if not values:
        return definition

    def sub(text: str) -> str:
        return BINDING_RE.sub(lambda m: values.get(m.group(1), m.group(0)), text)

    def step_fn(step: JsonObject) -> list[JsonObject]:
        if not any(_TOKEN in text for _, text in _texts(step, "")):
            return [step]
        return [_map_texts(step, sub)]

    return map_steps(definition, step_fn)


def _map_texts(step: JsonObject, sub: Callable[[str], str]) -> JsonObject:
    changed: JsonObject = {}
    if isinstance(step.get("prompt"), str) and BINDING_RE.search(step["prompt"]):
        changed["prompt"] = sub(step["prompt"])
    blocks = step.get("promptBlocks")
    if isinstance(blocks, dict):
        new_blocks = map_texts(blocks, sub)
        if new_blocks != blocks:
            changed["promptBlocks"] = new_blocks
    return {**step, **changed} if changed else step
