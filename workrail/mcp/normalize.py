"""Forgiving input: the near-misses agents commonly send, read as what they meant and named
in a `warnings` entry with the canonical field, before the arguments are validated.

Accepted: object arguments sent as JSON text (a known client habit), `notes` /
`notesMarkdown` / `artifacts` at the top level of continue_workflow (→ `output.…`),
`contextVariables` (→ `context`), `token` (→ `continueToken`) and an `intent` in another
case. Anything else unknown stays a VALIDATION_ERROR with did-you-mean (validation.py), and
an alias sent together with its canonical field is refused rather than guessed at.
Pure: the same arguments always give the same result, so replays stay byte-identical.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from workrail.mcp.validation import clip

Path = tuple[str, ...]

ALIASES: Final[dict[str, tuple[tuple[str, Path], ...]]] = {
    "continue_workflow": (
        ("notes", ("output", "notesMarkdown")),
        ("notesMarkdown", ("output", "notesMarkdown")),
        ("artifacts", ("output", "artifacts")),
        ("contextVariables", ("context",)),
        ("token", ("continueToken",)),
    ),
    "start_workflow": (("contextVariables", ("context",)),),
}
OBJECT_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "continue_workflow": ("context", "contextVariables", "output"),
    "start_workflow": ("context", "contextVariables"),
}
INTENTS: Final = ("advance", "rehydrate")


@dataclass
class Normalized:
    arguments: dict[str, Any]
    warnings: list[dict[str, Any]] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)


def _dotted(path: Path) -> str:
    return ".".join(path)


def _parsed_object(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # too deep to parse is as bad as malformed
        return None
    return value if isinstance(value, dict) else None


def normalize_arguments(tool: str, arguments: Mapping[str, Any]) -> Normalized:
    """`arguments` with the accepted near-misses rewritten to their canonical fields."""
    out = Normalized(dict(arguments))
    for name in OBJECT_FIELDS.get(tool, ()):
        _parse_object_text(out, name)
    for alias, canonical in ALIASES.get(tool, ()):
        if alias in out.arguments:
            _move_alias(out, tool, alias, canonical)
    _fold_intent(out)
    return out


def _parse_object_text(out: Normalized, name: str) -> None:
    """An object field sent as JSON text is read as the object it holds."""
    value = out.arguments.get(name)
    if isinstance(value, str) and (parsed := _parsed_object(value)) is not None:
        out.arguments[name] = parsed
        out.warnings.append(
            {
                "code": "ARGUMENT_JSON_PARSED",
                "field": name,
                "message": f"'{name}' arrived as JSON text; it was parsed as the object it holds.",
                "suggestion": f"Send '{name}' as a JSON object, not a string.",
            }
        )


def _move_alias(out: Normalized, tool: str, alias: str, canonical: Path) -> None:
    """`alias` moved to `canonical`, unless the canonical field is there too (a conflict)
    or its parent is not an object (validation reports that)."""
    args = out.arguments
    target = _dotted(canonical)
    parent: Any = args
    for part in canonical[:-1]:
        parent = parent.get(part) if isinstance(parent, dict) else None
    if parent is not None and not isinstance(parent, dict):
        return  # e.g. output is not an object: validation reports that
    if isinstance(parent, dict) and canonical[-1] in parent:
        out.conflicts.append(
            {
                "path": alias,
                "message": f'Provide either "{target}" or "{alias}", not both. Canonical '
                f'field: "{target}".',
            }
        )
        return
    value = args.pop(alias)
    holder = args
    for part in canonical[:-1]:
        holder[part] = dict(holder.get(part) or {})  # never edit the caller's object
        holder = holder[part]
    holder[canonical[-1]] = value
    out.warnings.append(
        {
            "code": "ARGUMENT_ALIAS_ACCEPTED",
            "field": alias,
            "canonical": target,
            "message": f"'{alias}' is not a field of {tool}; it was read as {target}.",
            "suggestion": f"Send {target} next time.",
        }
    )


def _fold_intent(out: Normalized) -> None:
    """An intent in another case (or with spaces around it) is read in lower case."""
    args = out.arguments
    intent = args.get("intent")
    if isinstance(intent, str) and intent not in INTENTS and intent.strip().lower() in INTENTS:
        args["intent"] = intent.strip().lower()
        out.warnings.append(
            {
                "code": "ARGUMENT_ALIAS_ACCEPTED",
                "field": "intent",
                "canonical": "intent",
                "message": f"intent '{clip(intent)}' was read as '{args['intent']}'.",
                "suggestion": f'Send intent "{args["intent"]}" (lower case) next time.',
            }
        )
