"""Warnings about a workflow definition: things that are valid but most likely a slip.

A warning never makes a file invalid and never changes what is stored, pinned or hashed:
`workrail validate` prints warnings beside the verdict, and the catalogue, the engine and
every workflowHash ignore them. Pure: a parsed definition in, warnings out.

The one check so far: a condition that compares with a quoted literal — the string
`"false"`, `"true"` or a number in quotes such as `"3"` — where the JSON boolean or number
was meant. Conditions compare leniently, so such a condition often matches anyway, but not
always (`"false"` never matches an agent's `"no"`, which `false` does), and the quotes hide
the type the context value is meant to have.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

from workrail.workflow.errors import Problem
from workrail.workflow.validate import json_path

CONDITION_KEYS: Final = frozenset({"runCondition", "condition", "requireConfirmation", "when"})
"""The properties whose object value is a condition, wherever they appear."""

COMPARISONS: Final = ("equals", "not_equals", "gt", "gte", "lt", "lte")
"""Operators whose operand is one value the variable is compared with."""

_NUMBER_RE: Final = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")
MAX_DEPTH: Final = 64
"""Deeper nesting is not looked at (the schema and canonical JSON bound real files)."""


LintWarning = Problem
"""A warning has a problem's shape (code, JSON path, message, fix) but lives in its own
list: validity is decided by problems alone."""


def lint_workflow(raw: Any) -> list[LintWarning]:
    """Every warning for a parsed definition, in document order; empty when none."""
    return list(_walk(raw, [], 0))


def _walk(value: Any, path: list[str | int], depth: int) -> Iterator[LintWarning]:
    if depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key in CONDITION_KEYS and isinstance(item, dict):
                yield from _condition(item, [*path, key], depth + 1)
            else:
                yield from _walk(item, [*path, key], depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, [*path, index], depth + 1)


def _condition(cond: dict[str, Any], path: list[str | int], depth: int) -> Iterator[LintWarning]:
    if depth > MAX_DEPTH:
        return
    var = cond.get("var")
    for op in COMPARISONS:
        if op in cond:
            yield from _operand(var, op, cond[op], [*path, op])
    choices = cond.get("in")
    if isinstance(choices, list):
        for index, choice in enumerate(choices):
            yield from _operand(var, "in", choice, [*path, "in", index])
    for key in ("and", "or"):
        parts = cond.get(key)
        if isinstance(parts, list):
            for index, part in enumerate(parts):
                if isinstance(part, dict):
                    yield from _condition(part, [*path, key, index], depth + 1)
    negated = cond.get("not")
    if isinstance(negated, dict):
        yield from _condition(negated, [*path, "not"], depth + 1)


def _operand(var: Any, op: str, operand: Any, path: list[str | int]) -> Iterator[LintWarning]:
    if not isinstance(operand, str):
        return
    word = operand.strip().lower()
    subject = f"`{var}`" if isinstance(var, str) else "the variable"
    if word in ("true", "false"):
        kind, literal = "boolean", word
    elif _NUMBER_RE.match(operand):
        kind, literal = "number", operand.strip()
    else:
        return
    yield LintWarning(
        "CONDITION_QUOTED_LITERAL",
        json_path(path),
        f'{op} compares {subject} with the string "{operand}", not the {kind} {literal}',
        f"write {literal} without quotes (the JSON {kind}), so the condition compares the "
        f"value the agent sends as a {kind}",
    )
