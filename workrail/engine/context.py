"""Agent-supplied context: validation against the spec's budget (40 §3) and the shallow
merge used by advances. Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from returns.result import Failure, Result, Success

from workrail.core.budgets import CONTEXT_MAX_BYTES, CONTEXT_MAX_DEPTH
from workrail.core.canonical import CanonicalJsonError, canonical_bytes
from workrail.engine.errors import EngineError, error

_MAX_SAFE_INT = 2**53 - 1
RESERVED_KEYS = frozenset({"__proto__", "constructor", "prototype"})


def validate_context(tool: str, context: Any) -> Result[dict[str, Any], EngineError]:
    """Shape, depth, JSON-only values, reserved keys, then the JCS byte budget."""
    if not isinstance(context, dict):
        return Failure(_not_an_object(tool))
    if exceeds_value_budget(context, CONTEXT_MAX_BYTES):
        return Failure(too_many_values(f"context is too large for {tool}", tool))
    problem = _scan(context, "", 1)
    if problem is not None:
        kind, path = problem
        return Failure(
            error(
                "VALIDATION_ERROR",
                f"context is not JSON-serializable for {tool} (see details).",
                "Send only JSON values (objects, arrays, strings, finite numbers, booleans, "
                f"null), nested at most {CONTEXT_MAX_DEPTH} levels.",
                kind=kind,
                path=clip_path(path),
                maxDepth=CONTEXT_MAX_DEPTH,
            )
        )
    reserved = sorted(RESERVED_KEYS & context.keys())
    if reserved:
        return Failure(
            error(
                "VALIDATION_ERROR",
                f"context uses reserved {'key' if len(reserved) == 1 else 'keys'} {reserved} for "
                f"{tool}.",
                "Rename these keys; __proto__, constructor and prototype are reserved.",
                kind="context_reserved_key",
                keys=reserved,
            )
        )
    try:
        size = len(canonical_bytes(context))
    except CanonicalJsonError as exc:
        return Failure(
            error(
                "VALIDATION_ERROR",
                f"context is not JSON-serializable for {tool} (see details).",
                f"Send only JSON values: {exc}",
                kind="context_unsupported_value",
            )
        )
    if size > CONTEXT_MAX_BYTES:
        return Failure(_too_large(tool, size))
    return Success(context)


def _not_an_object(tool: str) -> EngineError:
    return error(
        "VALIDATION_ERROR",
        f"context must be a JSON object for {tool}.",
        'Pass context as a JSON object of external facts, e.g. {"ticket": "T-1"}.',
        kind="context_invalid_shape",
        tool=tool,
        expected="object",
    )


def _too_large(tool: str, size: int) -> EngineError:
    return _over_budget(
        f"context is too large for {tool}: {size} bytes (max {CONTEXT_MAX_BYTES}).",
        "Keep context small: store large data elsewhere and pass a reference.",
        tool,
        measuredBytes=size,
    )


def _over_budget(message: str, suggestion: str, tool: str, **measured: Any) -> EngineError:
    """`context_budget_exceeded`, saying how the budget is measured (as the spec does)."""
    return error(
        "VALIDATION_ERROR",
        f"{message} Size is measured as UTF-8 bytes of RFC 8785 (JCS) canonical JSON.",
        suggestion,
        kind="context_budget_exceeded",
        tool=tool,
        **measured,
        maxBytes=CONTEXT_MAX_BYTES,
        measuredAs="jcs_utf8_bytes",
    )


def exceeds_value_budget(value: Any, max_bytes: int) -> bool:
    """True when `value` holds more than `max_bytes` JSON values (keys included): each
    takes at least one byte of canonical JSON, so it is certainly over a `max_bytes`
    budget. Stops counting there, so a hostile million-item value costs a bounded walk
    instead of a full scan and encoding."""
    seen = 0
    stack = [value]
    while stack:
        item = stack.pop()
        seen += 1
        if isinstance(item, dict):
            seen += len(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        if seen > max_bytes:
            return True
    return False


def too_many_values(what: str, tool: str) -> EngineError:
    return _over_budget(
        f"{what}: more than {CONTEXT_MAX_BYTES} values, so over the {CONTEXT_MAX_BYTES}-byte "
        "budget.",
        "Keep it small: store large data elsewhere and pass a reference.",
        tool,
    )


PATH_ECHO_MAX_CHARS = 200


def clip_path(path: str) -> str:
    """A JSON path as it may be echoed: keys are the agent's, and may be huge."""
    if len(path) <= PATH_ECHO_MAX_CHARS:
        return path
    return f"{path[:PATH_ECHO_MAX_CHARS]}… ({len(path)} characters)"


def json_value_problem(value: Any) -> tuple[str, str] | None:
    """`(kind, path)` of the first value that cannot round-trip through the log, or None."""
    return _scan(value, "", 1)


def _scan(value: Any, path: str, depth: int) -> tuple[str, str] | None:
    if depth > CONTEXT_MAX_DEPTH:
        return ("context_too_deep", path)
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(key, str):
                return ("context_unsupported_value", path)
            found = _scan(child, f"{path}.{key}" if path else key, depth + 1)
            if found:
                return found
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found = _scan(child, f"{path}[{i}]", depth + 1)
            if found:
                return found
    elif isinstance(value, float):
        if not math.isfinite(value):
            return ("context_non_finite_number", path)
        if value.is_integer() and abs(value) > _MAX_SAFE_INT:
            # JCS prints e.g. 1e16 as integer digits, which read back as an int beyond
            # the safe range that canonical JSON rejects: refuse what could not be re-read.
            return ("context_unsupported_value", path)

    elif not (value is None or isinstance(value, (bool, int, str))):
        return ("context_unsupported_value", path)
    return None


def merge_context(stored: Mapping[str, Any], delta: Mapping[str, Any] | None) -> dict[str, Any]:
    """Shallow merge: input keys override, `null` deletes, values replace wholesale."""
    merged = dict(stored)
    if delta is None:
        return merged
    for key, value in delta.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged
