"""Argument validation against the advertised schemas, producing the spec's
VALIDATION_ERROR envelope (40 §1–2) instead of the SDK's plain validation text.

The SDK would reject bad arguments itself, but only as prose the agent cannot parse; doing it
here gives `{path, message}` per problem, the cross-field rules with the reference's exact
wording, and a concrete fix.

The work is bounded whatever the arguments hold (one hostile call must not stall other
clients): objects with more than `MAX_FIELDS` keys are refused before the schema is
consulted, only keys up to `MAX_FUZZY_KEY_CHARS` are fuzzy-matched, at most
`MAX_REPORTED_KEYS` unknown keys are named, every echoed key or value is clipped to
`MAX_ECHO_CHARS`, and the schema never descends into `context` or `output.artifacts` (the
engine bounds those by their byte budgets).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from workrail.engine.api import EngineError
from workrail.mcp.resume_tool import RESUME_SESSION
from workrail.mcp.schemas import CONTINUE_WORKFLOW, TOOLS, ToolSpec

ADVANCE_WITHOUT_ACK = (
    'intent is "advance" but ackToken is missing. To advance to the next step, include the '
    "ackToken from the previous start_workflow or continue_workflow response. If you don't "
    'have an ackToken, set intent to "rehydrate" to recover the current step.'
)
REHYDRATE_WITH_ACK = (
    'intent is "rehydrate" but ackToken was provided. Rehydration recovers the current step '
    'without advancing — it does not accept ackToken. To advance, set intent to "advance". '
    "To rehydrate, remove ackToken."
)
REHYDRATE_WITH_OUTPUT = (
    'intent is "rehydrate" but output was provided. Rehydration is read-only state recovery — '
    'it does not accept output. To submit output and advance, set intent to "advance" and '
    "include ackToken."
)

MAX_FIELDS = 64
"""An object with more keys than this (top level or `output`) is refused without a look at
each key; the widest schema has seven."""
MAX_FUZZY_KEY_CHARS = 64
MAX_REPORTED_KEYS = 10
MAX_ECHO_CHARS = 64


def clip(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """`text` as it may be echoed back: long input is cut, its length said instead."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def _without_free_subschemas(schema: Any) -> Any:
    """The schema minus `additionalProperties: {}` / `items: {}`: they accept anything,
    yet jsonschema still descends into every value, which costs per item."""
    if isinstance(schema, dict):
        return {
            k: _without_free_subschemas(v)
            for k, v in schema.items()
            if not (k in ("additionalProperties", "items") and v == {})
        }
    if isinstance(schema, list):
        return [_without_free_subschemas(v) for v in schema]
    return schema


_ALL = (*TOOLS, RESUME_SESSION)
_VALIDATORS: dict[str, Any] = {
    spec.name: Draft202012Validator(_without_free_subschemas(spec.input_schema)) for spec in _ALL
}
_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in _ALL}
# continue_workflow advertises no required field (a continueToken call needs neither);
# without a continueToken the v1.4 fields are required, as the reference's schema says.
_V1_CONTINUE = Draft202012Validator(
    {
        **_without_free_subschemas(CONTINUE_WORKFLOW.input_schema),
        "required": ["intent", "stateToken"],
    }
)
CONTINUE_WITHOUT_TOKEN = (
    "Send the continueToken from the latest response, with output.notesMarkdown saying what "
    "you did (see correctTemplate); or, in the older form, intent and stateToken (with "
    "ackToken to advance)."
)
CONTINUE_TOKEN_MIXED = (
    "continueToken replaces stateToken and ackToken: send continueToken alone (with output "
    "to advance, without to recover), or stateToken and ackToken without it; not both."
)
CONTINUE_REHYDRATE_WITH_OUTPUT = (
    'intent is "rehydrate" but output was provided. Rehydration is read-only state recovery '
    "— it does not accept output. To advance, send the continueToken with output and no "
    'intent (or intent "advance").'
)
CONTINUE_TEMPLATE: dict[str, Any] = {
    "continueToken": "<continueToken from the latest response>",
    "output": {"notesMarkdown": "<what you did for this step>"},
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _path(parts: Iterable[Any]) -> str:
    return ".".join(str(p) for p in parts)


def _schema_at(schema: Mapping[str, Any], parts: Iterable[Any]) -> Mapping[str, Any]:
    """The sub-schema describing the object at `parts` (for known-key suggestions)."""
    node = schema
    for part in parts:
        props = node.get("properties", {})
        if isinstance(part, str) and part in props:
            node = props[part]
        else:
            return {}
    return node


def _issue(
    err: ValidationError, spec: ToolSpec, suggestions: list[dict[str, Any]]
) -> list[dict[str, str]]:
    """Messages worded like the reference's (zod) so prompts tuned on it still read right."""
    where = list(err.absolute_path)
    if err.validator == "additionalProperties":
        return [_unknown_keys(err, spec, where, suggestions)]
    if err.validator == "required":
        return _missing_keys(err, spec, where, suggestions)
    return [{"path": _path(where), "message": _message(err, where)}]


def _unknown_keys(
    err: ValidationError, spec: ToolSpec, where: list[Any], suggestions: list[dict[str, Any]]
) -> dict[str, str]:
    """One issue naming the unknown keys (at most MAX_REPORTED_KEYS), each a suggestion
    with the closest known key."""
    instance: Any = err.instance
    known = list(_schema_at(spec.input_schema, where).get("properties", {}))
    extras = sorted(k for k in instance if k not in known)
    for key in extras[:MAX_REPORTED_KEYS]:
        hint: dict[str, Any] = {"kind": "unknown_key", "provided": clip(key)}
        match = _closest(key, known)
        if match is not None:
            hint["didYouMean"], hint["similarity"] = match
        suggestions.append(hint)
    keys = ", ".join(f"'{clip(k)}'" for k in extras[:MAX_REPORTED_KEYS])
    if len(extras) > MAX_REPORTED_KEYS:
        keys += f" and {len(extras) - MAX_REPORTED_KEYS} more"
    return {"path": _path(where), "message": f"Unrecognized key(s) in object: {keys}"}


def _missing_keys(
    err: ValidationError, spec: ToolSpec, where: list[Any], suggestions: list[dict[str, Any]]
) -> list[dict[str, str]]:
    """An issue per missing key; a top-level one is suggested with the tool's example."""
    expected: Any = err.validator_value
    instance: Any = err.instance
    out = []
    for key in [k for k in expected if k not in instance]:
        example = spec.example.get(key, "<value>") if not where else "<value>"
        suggestions.append(
            {"kind": "missing_required", "param": _path([*where, key]), "example": example}
        )
        out.append({"path": _path([*where, key]), "message": "Required"})
    return out


def _message(err: ValidationError, where: list[Any]) -> str:
    """The reference's wording for one failed keyword; jsonschema's own, clipped, else."""
    validator = err.validator
    expected: Any = err.validator_value
    instance: Any = err.instance
    if validator == "anyOf" and all("type" in option for option in expected):
        wanted = " or ".join(str(option["type"]) for option in expected)
        return f"Expected {wanted}, received {_json_type(instance)}"
    if validator == "type":
        wanted = " or ".join(expected) if isinstance(expected, list) else expected
        return f"Expected {wanted}, received {_json_type(instance)}"
    if validator == "minLength":
        return f"String must contain at least {expected} character(s)"
    if validator == "pattern" and where == ["sessionId"]:
        return "Invalid: must be a session id (sess_ followed by 26 base32 characters)"
    if validator == "pattern":
        return f"Invalid: must match {expected} (letters, digits, '_', '-' and '.')"
    if validator == "enum":
        options = " | ".join(f"'{v}'" for v in expected)
        return f"Invalid enum value. Expected {options}, received '{clip(str(instance))}'"
    if validator == "maxLength":
        return f"String must contain at most {expected} character(s), received {len(instance)}"
    return clip(err.message, 200)


def _closest(key: str, known: list[str]) -> tuple[str, float] | None:
    """The most similar known key (ratio ≥ 0.6). Long keys are never compared: difflib's
    cost grows with the key, and no field name is that long."""
    if len(key) > MAX_FUZZY_KEY_CHARS:
        return None
    best: tuple[str, float] | None = None
    for candidate in known:
        ratio = difflib.SequenceMatcher(None, key.lower(), candidate.lower()).ratio()
        if ratio >= 0.6 and (best is None or ratio > best[1]):
            best = (candidate, round(ratio, 2))
    return best


def _cross_field(arguments: Mapping[str, Any]) -> list[dict[str, str]]:
    intent = arguments.get("intent")
    issues = []
    if "continueToken" in arguments:
        if "stateToken" in arguments or "ackToken" in arguments:
            issues.append({"path": "continueToken", "message": CONTINUE_TOKEN_MIXED})
        elif intent == "rehydrate" and "output" in arguments:
            issues.append({"path": "output", "message": CONTINUE_REHYDRATE_WITH_OUTPUT})
        return issues
    if intent == "advance" and "ackToken" not in arguments:
        issues.append({"path": "ackToken", "message": ADVANCE_WITHOUT_ACK})
    if intent == "rehydrate" and "ackToken" in arguments:
        issues.append({"path": "ackToken", "message": REHYDRATE_WITH_ACK})
    if intent == "rehydrate" and "output" in arguments:
        issues.append({"path": "output", "message": REHYDRATE_WITH_OUTPUT})
    return issues


def _suggestion(
    spec: ToolSpec,
    arguments: Mapping[str, Any],
    issues: list[dict[str, str]],
    suggestions: list[dict[str, Any]],
) -> str:
    renames = [s for s in suggestions if s["kind"] == "unknown_key" and "didYouMean" in s]
    if renames:
        return "; ".join(f"Rename '{s['provided']}' to '{s['didYouMean']}'" for s in renames) + "."
    unknown = [s["provided"] for s in suggestions if s["kind"] == "unknown_key"]
    if unknown:
        return "Remove the unrecognized field(s) " + ", ".join(f"'{k}'" for k in unknown) + "."
    if _without_any_token(spec, arguments):
        return CONTINUE_WITHOUT_TOKEN  # what is missing is a token: the simpler form first
    missing = [s["param"] for s in suggestions if s["kind"] == "missing_required"]
    if missing:
        return "Add the required field(s) " + ", ".join(f"'{k}'" for k in missing) + "."
    if len(issues) == 1 and len(issues[0]["message"]) > 80:
        return issues[0]["message"]
    return "Fix the listed fields to match the tool's input schema (see correctTemplate)."


def _without_any_token(spec: ToolSpec, arguments: Mapping[str, Any]) -> bool:
    """A continue_workflow call holding neither token form: it is told the simpler one."""
    tokens = ("continueToken", "stateToken", "ackToken")
    return spec.name == "continue_workflow" and not any(t in arguments for t in tokens)


def _template(spec: ToolSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    if spec.name == "continue_workflow" and (
        "continueToken" in arguments or _without_any_token(spec, arguments)
    ):
        return CONTINUE_TEMPLATE
    if spec.name == "continue_workflow" and arguments.get("intent") == "rehydrate":
        return {"intent": "rehydrate", "stateToken": "<stateToken from the latest response>"}
    return spec.example


def _too_wide(arguments: Mapping[str, Any]) -> list[dict[str, str]]:
    """Objects with more keys than any schema could want, found without iterating them."""
    issues = []
    output = arguments.get("output")
    for path, value in (("", arguments), ("output", output)):
        if isinstance(value, dict) and len(value) > MAX_FIELDS:
            issues.append(
                {
                    "path": path,
                    "message": f"Object has {len(value)} keys; at most {MAX_FIELDS} are "
                    "accepted (see correctTemplate for the fields this tool takes)",
                }
            )
    return issues


def validate_arguments(
    tool: str, arguments: Mapping[str, Any], conflicts: list[dict[str, str]] | None = None
) -> EngineError | None:
    """None when `arguments` satisfy the tool's schema and cross-field rules; `conflicts`
    are problems found before (an alias sent with its canonical field)."""
    spec = _SPECS[tool]
    suggestions: list[dict[str, Any]] = []
    issues: list[dict[str, str]] = _too_wide(arguments) + list(conflicts or ())
    if issues:
        return _invalid(spec, arguments, issues, suggestions)
    validator = _VALIDATORS[tool]
    if tool == "continue_workflow" and "continueToken" not in arguments:
        validator = _V1_CONTINUE
    errors = sorted(
        validator.iter_errors(dict(arguments)),
        key=lambda e: (list(map(str, e.absolute_path)), str(e.validator)),
    )
    missing_at: set[tuple[str, ...]] = set()
    for err in errors:
        if err.validator == "required":
            # jsonschema reports each missing key of an object, each error naming them all
            at = tuple(map(str, err.absolute_path))
            if at in missing_at:
                continue
            missing_at.add(at)
        issues.extend(_issue(err, spec, suggestions))
    if not issues and tool == "continue_workflow":
        issues = _cross_field(arguments)
    if not issues:
        return None
    return _invalid(spec, arguments, issues, suggestions)


def _invalid(
    spec: ToolSpec,
    arguments: Mapping[str, Any],
    issues: list[dict[str, str]],
    suggestions: list[dict[str, Any]],
) -> EngineError:
    details: dict[str, Any] = {
        "validationErrors": issues,
        "suggestion": _suggestion(spec, arguments, issues, suggestions),
    }
    if suggestions:
        details["suggestions"] = suggestions
    details["correctTemplate"] = _template(spec, arguments)
    return EngineError("VALIDATION_ERROR", "Invalid input", details=details)
