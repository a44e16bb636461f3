"""The parts of a step's prompt that depend on the run's context, so are rendered when the
step is shown rather than compiled: prompt fragments whose `when` holds, and `{{name.path}}`
placeholders filled from the context and the loop variables.

Both are functions of (compiled step, context), like the rest of the renderer, so a replayed
answer renders the same text from the same recorded context.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from workrail.core.budgets import cut_utf8, utf8_len
from workrail.core.canonical import CanonicalJsonError, canonical_bytes
from workrail.workflow.conditions import evaluate_condition
from workrail.workflow.jsvalues import js_string

PLACEHOLDER_RE: Final = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}")
MAX_VALUE_BYTES: Final = 2048
_RESERVED_ROOT: Final = "wr"


def with_fragments(prompt: str, fragments: Any, context: Mapping[str, Any]) -> str:
    """`prompt` plus, in declaration order, the text of every fragment whose `when` holds
    for `context` (a fragment without `when` always applies)."""
    if not isinstance(fragments, Sequence) or isinstance(fragments, str):
        return prompt
    parts = [prompt]
    for fragment in fragments:
        if not isinstance(fragment, Mapping) or not isinstance(fragment.get("text"), str):
            continue
        when = fragment.get("when")
        if when is None or evaluate_condition(when, context):
            parts.append(fragment["text"])
    return "\n\n".join(parts)


def fill_placeholders(text: str, values: Mapping[str, Any]) -> str:
    """Replace each `{{name.path}}` whose value exists in `values`; leave the others (and
    every `{{wr.…}}`) exactly as written."""
    if "{{" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        path = match.group(1).split(".")
        if path[0] == _RESERVED_ROOT:
            return match.group(0)
        found, value = _lookup(values, path)
        return _as_text(value) if found else match.group(0)

    return PLACEHOLDER_RE.sub(one, text)


def _lookup(values: Mapping[str, Any], path: list[str]) -> tuple[bool, Any]:
    current: Any = values
    for key in path:
        if isinstance(current, Mapping) and key in current:
            current = current[key]
        elif isinstance(current, list) and key.isdigit() and int(key) < len(current):
            current = current[int(key)]
        else:
            return False, None
    return True, current


def _as_text(value: Any) -> str:
    """Scalars as JavaScript's String() writes them, objects and arrays as bounded JSON."""
    if isinstance(value, dict | list):
        return bounded_json(value)
    return js_string(value)


def bounded_json(value: Any, limit: int = MAX_VALUE_BYTES) -> str:
    """Compact canonical JSON cut to `limit` UTF-8 bytes (with `…` when cut)."""
    try:
        text = canonical_bytes(value).decode("utf-8")
    except CanonicalJsonError:
        return "(not representable as JSON)"
    if utf8_len(text) <= limit:
        return text
    return cut_utf8(text, limit) + "…"
