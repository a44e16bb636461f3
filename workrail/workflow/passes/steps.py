"""Walking and rebuilding the steps of a definition: the one traversal every pass uses."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

JsonObject = dict[str, Any]
StepMap = Callable[[JsonObject], list[JsonObject]]
"""A step (standard or parallel) → the steps that replace it (usually itself alone)."""


def map_steps(definition: JsonObject, fn: StepMap) -> JsonObject:
    """`definition` with `fn` applied to every non-loop step, top-level and inline loop
    bodies. Returns `definition` itself when `fn` returned every step unchanged."""
    steps = definition.get("steps")
    if not isinstance(steps, list):
        return definition

    def top_level(step: JsonObject) -> list[JsonObject]:
        if step.get("type") != "loop":
            return fn(step)
        body = step.get("body")
        if not isinstance(body, list):
            return [step]
        new_body = _map_list(body, fn)
        return [step] if new_body is body else [{**step, "body": new_body}]

    out = _map_list(steps, top_level)
    return definition if out is steps else {**definition, "steps": out}


def _map_list(steps: list[Any], fn: StepMap) -> list[Any]:
    changed = False
    out: list[Any] = []
    for step in steps:
        if isinstance(step, dict):
            replaced = fn(step)
            if len(replaced) != 1 or replaced[0] is not step:
                changed = True
            out.extend(replaced)
        else:
            out.append(step)
    return out if changed else steps


def map_texts(value: Any, sub: Callable[[str], str]) -> Any:
    """`value` with `sub` applied to every text in it, except the `kind` and `refId` of
    prompt parts (they name things; they are not prose)."""
    if isinstance(value, str):
        return sub(value)
    if isinstance(value, list):
        return [map_texts(v, sub) for v in value]
    if isinstance(value, dict):
        return {k: (v if k in ("kind", "refId") else map_texts(v, sub)) for k, v in value.items()}
    return value


def iter_steps(definition: JsonObject) -> Iterator[tuple[str, JsonObject]]:
    """(JSON path, step) of every non-loop step, in document order."""
    steps = definition.get("steps")
    if not isinstance(steps, list):
        return
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        if step.get("type") == "loop":
            body = step.get("body")
            if isinstance(body, list):
                for j, inner in enumerate(body):
                    if isinstance(inner, dict):
                        yield f"$.steps[{i}].body[{j}]", inner
            continue
        yield f"$.steps[{i}]", step
