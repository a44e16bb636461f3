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
    changed = False
    out: list[Any] = []
    for step in steps:
        if isinstance(step, dict) and step.get("type") == "loop":
            body = step.get("body")
            if isinstance(body, list):
                new_body = _map_list(body, fn)
                if new_body is not body:
                    step = {**step, "body": new_body}
                    changed = True
            out.append(step)
            continue
        if isinstance(step, dict):
            replaced = fn(step)
            if len(replaced) != 1 or replaced[0] is not step:
                changed = True
            out.extend(replaced)
        else:
            out.append(step)
    return {**definition, "steps": out} if changed else definition


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
