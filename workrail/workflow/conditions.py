"""Condition evaluation (50-workflows §7) for runCondition, loops and validation rules.

Conditions never fail: anything malformed or any evaluation problem counts as `false`,
exactly like the reference, so a sloppy condition skips a step instead of crashing a run.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, Final

from workrail.workflow.jsvalues import (
    compile_js_regex,
    is_number,
    js_number,
    js_string,
    js_trim,
    js_truthy,
)

_MISSING: Final = object()
VALUE_OPERATORS: Final = (
    "equals",
    "not_equals",
    "gt",
    "gte",
    "lt",
    "lte",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "in",
)
_TRUE_WORDS: Final = frozenset({"true", "1", "yes"})
_FALSE_WORDS: Final = frozenset({"false", "0", "no"})


def evaluate_condition(condition: Any, context: Mapping[str, Any]) -> bool:
    """True when `condition` holds under `context`; `None`/`{}`/non-objects are true."""
    try:
        return _evaluate(condition, context)
    except (RecursionError, TypeError, ValueError, OverflowError):
        return False


def _evaluate(condition: Any, context: Mapping[str, Any]) -> bool:
    if not isinstance(condition, dict) or not condition:
        return True
    if "var" in condition:
        name = condition["var"]
        value = context.get(name, _MISSING) if isinstance(name, str) else _MISSING
        for op in VALUE_OPERATORS:
            if op in condition:
                return _apply(op, value, condition[op])
        return value is not _MISSING and js_truthy(value)
    if "and" in condition:
        parts = condition["and"]
        return isinstance(parts, list) and all(_evaluate(p, context) for p in parts)
    if "or" in condition:
        parts = condition["or"]
        return isinstance(parts, list) and any(_evaluate(p, context) for p in parts)
    if "not" in condition:
        return not _evaluate(condition["not"], context)
    return False


def _apply(op: str, value: Any, operand: Any) -> bool:
    if op == "equals":
        return lenient_equals(value, operand)
    if op == "not_equals":
        return not lenient_equals(value, operand)
    if op in ("gt", "gte", "lt", "lte"):
        return _compare(op, value, operand)
    if op == "in":
        # Membership, with the same forgiving equality as `equals` (WorkRail's current
        # language); anything but a list of candidates is false.
        return isinstance(operand, list) and any(lenient_equals(value, o) for o in operand)
    if op == "matches":
        if not isinstance(operand, str):
            return False
        regex = compile_js_regex(operand, "i")
        return regex is not None and regex.search(js_trim(_text(value))) is not None
    left, right = _folded(value), _folded(operand)
    if op == "contains":
        return right in left
    if op == "startsWith":
        return left.startswith(right)
    return left.endswith(right)


def _text(value: Any) -> str:
    return "" if value is None or value is _MISSING else js_string(value)


def _folded(value: Any) -> str:
    return js_trim(_text(value)).lower()


def _compare(op: str, value: Any, operand: Any) -> bool:
    if not is_number(value):
        return False
    right = js_number(operand)
    if math.isnan(right) or (isinstance(value, float) and math.isnan(value)):
        return False
    left = float(value)
    if op == "gt":
        return left > right
    if op == "gte":
        return left >= right
    if op == "lt":
        return left < right
    return left <= right


def lenient_equals(value: Any, expected: Any) -> bool:
    """The reference's forgiving equality: trims/lowercases strings, parses numbers."""
    left = None if value is _MISSING else value
    right = None if expected is _MISSING else expected
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, str) and isinstance(right, str):
        return js_trim(left).lower() == js_trim(right).lower()
    if isinstance(left, str) and is_number(right):
        return _string_number_equal(left, right)
    if isinstance(right, str) and is_number(left):
        return _string_number_equal(right, left)
    if isinstance(left, str) and isinstance(right, bool):
        return _string_bool_equal(left, right)
    if isinstance(right, str) and isinstance(left, bool):
        return _string_bool_equal(right, left)
    return _strict_equal(left, right)


def _string_number_equal(text: str, number: float | int) -> bool:
    parsed = js_number(text)
    return not math.isnan(parsed) and parsed == float(number)


def _string_bool_equal(text: str, flag: bool) -> bool:
    word = js_trim(text).lower()
    return word in (_TRUE_WORDS if flag else _FALSE_WORDS)


def _strict_equal(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    if is_number(left) and is_number(right):
        return float(left) == float(right)
    if isinstance(left, str) and isinstance(right, str):
        return left == right
    return False


NUMERIC_OPERATORS: Final = ("gt", "gte", "lt", "lte")


def non_numeric_operands(condition: Any, context: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """`(var, value)` for each `{"var": …, "gt"|"gte"|"lt"|"lte": …}` in `condition` whose
    context value is not a number (`_MISSING` when unset): comparisons that are silently
    false (the reference's rule), which a loop reports instead of exiting on."""
    found: list[tuple[str, Any]] = []
    for node in condition_nodes(condition):
        name = node.get("var")
        if not isinstance(name, str) or not any(op in node for op in NUMERIC_OPERATORS):
            continue
        if not any(op in node for op in VALUE_OPERATORS[: VALUE_OPERATORS.index("gt")]):
            value = context.get(name, _MISSING)
            if not is_number(value):
                found.append((name, value))
    return found


def condition_nodes(condition: Any, limit: int = 1000) -> Iterator[dict[str, Any]]:
    """The objects of a condition tree, depth first, as evaluation reads them (a `var`
    node is a leaf), looking at no more than `limit` values (a hostile tree stays cheap)."""
    stack = [condition]
    seen = 0
    while stack and seen < limit:
        seen += 1
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield node
        if "var" in node:
            continue
        for key in ("and", "or"):
            parts = node.get(key)
            if isinstance(parts, list):
                stack.extend(parts)
        if "not" in node:
            stack.append(node["not"])


def is_missing(value: Any) -> bool:
    return value is _MISSING
