"""Validation of a workflow source: the JSON Schema plus the checks it cannot express.

Every problem carries its JSON path and a one-line fix, and all problems of a file are
reported together so an author can fix them in one pass.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from jsonschema.exceptions import ValidationError
from returns.result import Failure, Result, Success

from workrail.core.canonical import CanonicalJsonError, canonical_bytes
from workrail.core.wording import counted
from workrail.workflow.contracts import KNOWN_CONTRACTS
from workrail.workflow.errors import Problem
from workrail.workflow.jsvalues import compile_js_regex, python_only_syntax
from workrail.workflow.language import NEWEST_SPEC_VERSION
from workrail.workflow.passes.templates import RoutineLibrary
from workrail.workflow.pipeline import NO_ROUTINES, check_source
from workrail.workflow.schema import schema_accepts, workflow_validator

RESERVED_NAMESPACE: Final = "wr"
_SAFE_ID_RE: Final = re.compile(r"[a-z0-9_-]+")
_WORKFLOW_ID_RE: Final = re.compile(r"[a-z0-9_-]+|[a-z][a-z0-9_-]*\.[a-z][a-z0-9_-]*")
_TYPE_WEIGHT: Final = 100
_REQUIRED_RE: Final = re.compile(r"^('.*') is a required property$")
_PATH_PART_RE: Final = re.compile(r"\[(\d+)\]|\.([^.\[]+)")
# Readable names for the schema's patterns, so a fix says what to write, not a regex.
_PATTERN_HINTS: Final[dict[str, tuple[str, str]]] = {
    "^([a-z0-9_-]+|[a-z][a-z0-9_-]+\\.[a-z][a-z0-9_-]+)$": (
        "workflow id",
        "use lowercase letters, digits, '-' and '_', or 'namespace.name'",
    ),
    "^[a-z0-9-]+$": ("step id", "use only lowercase letters, digits and '-' (no '_')"),
    "^[a-zA-Z_][a-zA-Z0-9_]*$": (
        "identifier",
        "use letters, digits and '_', not starting with a digit",
    ),
    "^[a-zA-Z_][a-zA-Z0-9_]*\\(\\)$": (
        "function reference",
        "write the function name followed by '()'",
    ),
}
_SEMVER_HINT: Final = ("version", "use a semantic version such as 1.0.0 or 1.2.0-beta.1")


def parse_workflow_json(text: str | bytes) -> Result[Any, Problem]:
    """Parse file content; a syntax error becomes an INVALID_JSON problem with its line."""
    try:
        return Success(json.loads(text))
    except UnicodeDecodeError as exc:
        return Failure(Problem("INVALID_JSON", "$", f"not UTF-8: {exc.reason}", "save as UTF-8"))
    except RecursionError:
        return Failure(
            Problem(
                "INVALID_JSON",
                "$",
                "the JSON is nested too deeply to read",
                "flatten the structure (no real workflow nests more than a few dozen levels)",
            )
        )
    except json.JSONDecodeError as exc:
        return Failure(
            Problem(
                "INVALID_JSON",
                "$",
                f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
                "fix the JSON syntax at that position (a JSON linter shows it)",
            )
        )


def validate_workflow(
    raw: Any,
    *,
    bundled: bool = False,
    routines: RoutineLibrary = NO_ROUTINES,
    routine: bool = False,
) -> list[Problem]:
    """All errors of a parsed workflow definition, schema ones first; empty = it loads.

    `bundled` allows the reserved `wr.` namespace, which only shipped (and library)
    workflows may use; `routines` are what its templateCalls may include; `routine` checks
    it as a routine (its bindings belong to the workflows that call it).
    """
    return [
        p
        for p in all_problems(raw, bundled=bundled, routines=routines, routine=routine)
        if p.severity == "error"
    ]


def workflow_warnings(raw: Any, *, routines: RoutineLibrary = NO_ROUTINES) -> list[Problem]:
    """What deserves a look although the file loads (`workrail validate` shows them)."""
    return [
        p for p in all_problems(raw, bundled=True, routines=routines) if p.severity == "warning"
    ]


def all_problems(
    raw: Any,
    *,
    bundled: bool = False,
    routines: RoutineLibrary = NO_ROUTINES,
    routine: bool = False,
) -> list[Problem]:
    """Errors and warnings together, in document order."""
    problems = list(_schema_problems(raw))
    if isinstance(raw, dict):
        problems.extend(_semantic_problems(raw, bundled=bundled))
        if not problems:
            problems.extend(check_source(raw, routines, routine=routine))
        problems.extend(_spec_version_hint(raw))
    problems.sort(key=lambda p: _path_key(p.path))
    try:
        canonical_bytes(raw)
    except CanonicalJsonError as exc:
        problems.append(
            Problem(
                "NOT_CANONICAL_JSON",
                "$",
                f"the definition cannot be hashed: {exc}",
                "use integers within ±(2^53-1) and plain JSON values",
            )
        )
    return problems


def _spec_version_hint(raw: Mapping[str, Any]) -> Iterator[Problem]:
    version = raw.get("validatedAgainstSpecVersion")
    if isinstance(version, int) and not isinstance(version, bool) and version < NEWEST_SPEC_VERSION:
        yield Problem(
            "STALE_SPEC_VERSION",
            "$.validatedAgainstSpecVersion",
            f"last checked against authoring rules v{version}; the newest known is "
            f"v{NEWEST_SPEC_VERSION}",
            "review the workflow against the current authoring rules, then raise the number",
            "warning",
        )


# --- schema -------------------------------------------------------------------------------


def _schema_problems(raw: Any) -> Iterator[Problem]:
    if schema_accepts(raw) is True:
        return
    errors = sorted(workflow_validator().iter_errors(raw), key=lambda e: list(e.absolute_path))
    for error in errors:
        for leaf in _resolve_branches(error):
            yield from _to_problems(leaf)


def _resolve_branches(error: ValidationError) -> list[ValidationError]:
    """Replace an unmatched `oneOf` by the errors of the branch the author most likely meant.

    The likely branch is the one with the fewest errors on the value itself (a branch that
    fails on the value's very type or constant is the least likely), then fewest overall.
    """
    if error.validator != "oneOf" or not error.context:
        return [error]
    branches: dict[int, list[ValidationError]] = {}
    for sub in error.context:
        branches.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
    depth = len(error.absolute_path)

    def score(subs: list[ValidationError]) -> tuple[int, int]:
        at_root = [s for s in subs if len(s.absolute_path) == depth]
        weight = sum(_TYPE_WEIGHT if s.validator in ("type", "const") else 1 for s in at_root)
        return (weight, len(subs))

    best = min(branches.values(), key=score)
    if score(best)[0] >= _TYPE_WEIGHT:
        return [error]  # no branch fits even the value's type: report the oneOf itself
    resolved: list[ValidationError] = []
    for sub in best:
        resolved.extend(_resolve_branches(sub))
    return resolved


def json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _path_key(path: str) -> tuple[tuple[int, int | str], ...]:
    """Order paths as a reader expects: by document position, array indices numerically."""
    return tuple(
        (0, int(index)) if index else (1, name) for index, name in _PATH_PART_RE.findall(path)
    )


def _to_problems(error: ValidationError) -> Iterator[Problem]:
    path = json_path(error.absolute_path)
    validator = str(error.validator)
    value = error.validator_value
    if (
        validator == "additionalProperties"
        and isinstance(error.instance, dict)
        and isinstance(error.schema, Mapping)
    ):
        allowed = sorted(error.schema.get("properties", {}))
        for extra in sorted(set(error.instance) - set(allowed)):
            close = difflib.get_close_matches(extra, allowed, n=1)
            fix = f"rename it to '{close[0]}'" if close else f"remove it ({_allowed(allowed)})"
            yield Problem("SCHEMA_VIOLATION", f"{path}.{extra}", f"unknown property '{extra}'", fix)
        return
    if validator == "pattern" and isinstance(value, str):
        what, fix = _PATTERN_HINTS.get(value, _SEMVER_HINT if path == "$.version" else ("", ""))
        if what:
            yield Problem(
                "SCHEMA_VIOLATION", path, f"{error.instance!r} is not a valid {what}", fix
            )
            return
    if validator == "required":
        missing = _REQUIRED_RE.match(error.message)
        name = missing.group(1) if missing else "the missing property"
        yield Problem("SCHEMA_VIOLATION", path, error.message, f"add the required property {name}")
        return
    yield Problem("SCHEMA_VIOLATION", path, _short(error.message), _schema_fix(validator, value))


def _allowed(names: list[str], limit: int = 200) -> str:
    """`allowed here: a, b, …` within `limit` characters (steps now have many properties)."""
    text = "allowed here: " + ", ".join(names)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(", ", 1)[0]
    return f"{cut}, … (see docs/workflows.md)"


def _short(message: str, limit: int = 200) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def _schema_fix(validator: str, value: Any) -> str:
    fixes: dict[str, str] = {
        "type": f"use a value of type {value}",
        "pattern": f"make the text match {value}",
        "minLength": f"use at least {counted(value, 'character')}"
        if isinstance(value, int)
        else "use a longer text",
        "maxLength": f"shorten it to at most {value} characters",
        "minimum": f"use a number ≥ {value}",
        "maximum": f"use a number ≤ {value}",
        "enum": "use one of: " + ", ".join(json.dumps(v) for v in value)
        if isinstance(value, list)
        else "use an allowed value",
        "const": f"set it to {json.dumps(value)}",
        "minItems": f"provide at least {counted(value, 'item')}"
        if isinstance(value, int)
        else "provide more items",
        "uniqueItems": "remove the duplicate entries",
        "oneOf": "make it match exactly one allowed shape (see the workflow schema)",
    }
    return fixes.get(validator, "see workrail/workflow/schema/workflow.schema.json")


# --- semantic checks --------------------------------------------------------------------


def _semantic_problems(raw: Mapping[str, Any], *, bundled: bool) -> Iterator[Problem]:
    yield from _id_policy(raw.get("id"), bundled=bundled)
    steps = raw.get("steps")
    if not isinstance(steps, list):
        return
    top_level = {s["id"]: s for s in steps if isinstance(s, dict) and isinstance(s.get("id"), str)}
    seen: set[str] = set()
    workflow_fns = _visible_names(raw.get("functionDefinitions"), "workflow")
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        path = f"$.steps[{i}]"
        yield from _check_id(step.get("id"), f"{path}.id", seen)
        if step.get("type") == "loop":
            yield from _loop_problems(step, path, top_level, seen, workflow_fns)
        else:
            yield from _step_problems(step, path, workflow_fns | _containing_loop_fns(raw, step))


def _id_policy(workflow_id: Any, *, bundled: bool) -> Iterator[Problem]:
    if not isinstance(workflow_id, str):
        return
    schema_pattern = r"^([a-z0-9_-]+|[a-z][a-z0-9_-]+\.[a-z][a-z0-9_-]+)$"
    if _WORKFLOW_ID_RE.fullmatch(workflow_id) is None and re.search(schema_pattern, workflow_id):
        yield Problem(
            "UNSAFE_ID",
            "$.id",
            f"workflow id {workflow_id!r} is not a legacy or namespaced id",
            "use lowercase letters, digits, '-' and '_', optionally as 'namespace.name'",
        )
    elif workflow_id.split(".", 1)[0] == RESERVED_NAMESPACE and "." in workflow_id and not bundled:
        yield Problem(
            "RESERVED_NAMESPACE",
            "$.id",
            f"namespace '{RESERVED_NAMESPACE}' is reserved for bundled workflows",
            "use your own namespace (e.g. 'team.name') or a plain id",
        )


def _check_id(step_id: Any, path: str, seen: set[str]) -> Iterator[Problem]:
    if not isinstance(step_id, str):
        return
    if _SAFE_ID_RE.fullmatch(step_id) is None and re.search(r"^[a-z0-9-]+$", step_id):
        yield Problem(
            "UNSAFE_ID",
            path,
            f"step id {step_id!r} contains characters outside [a-z0-9-]",
            "use only lowercase letters, digits and '-'",
        )
    if step_id in seen:
        yield Problem(
            "DUPLICATE_STEP_ID",
            path,
            f"step id '{step_id}' is already used by an earlier step",
            "give every step and loop body step a unique id",
        )
    seen.add(step_id)


def _loop_problems(
    step: Mapping[str, Any],
    path: str,
    top_level: Mapping[str, Any],
    seen: set[str],
    workflow_fns: frozenset[str],
) -> Iterator[Problem]:
    loop = step.get("loop")
    if isinstance(loop, dict):
        yield from _loop_config_problems(loop, f"{path}.loop")
    body = step.get("body")
    loop_fns = workflow_fns | _visible_names(step.get("functionDefinitions"), "loop")
    if isinstance(body, str):
        target = top_level.get(body)
        if target is None or target.get("type") == "loop":
            what = "a loop" if target is not None else "not a top-level step"
            yield Problem(
                "UNKNOWN_LOOP_BODY",
                f"{path}.body",
                f"loop body '{body}' is {what}",
                "name an existing top-level standard step, or inline the body steps as an array",
            )
    elif isinstance(body, list):
        for j, inner in enumerate(body):
            if isinstance(inner, dict):
                inner_path = f"{path}.body[{j}]"
                yield from _check_id(inner.get("id"), f"{inner_path}.id", seen)
                yield from _step_problems(inner, inner_path, loop_fns)


def _loop_config_problems(loop: Mapping[str, Any], path: str) -> Iterator[Problem]:
    max_iter = loop.get("maxIterations")
    if isinstance(max_iter, float) and not max_iter.is_integer():
        yield Problem(
            "INVALID_MAX_ITERATIONS",
            f"{path}.maxIterations",
            f"maxIterations must be a whole number, got {max_iter}",
            "use an integer between 1 and 1000",
        )
    source = loop.get("conditionSource")
    if isinstance(source, dict) and source.get("kind") == "artifact_contract":
        ref = source.get("contractRef")
        if isinstance(ref, str) and ref not in KNOWN_CONTRACTS:
            yield _unknown_contract(ref, f"{path}.conditionSource.contractRef")


def _step_problems(
    step: Mapping[str, Any], path: str, visible: frozenset[str]
) -> Iterator[Problem]:
    yield from _prompt_problems(step, path)
    contract = step.get("outputContract")
    if isinstance(contract, dict):
        ref = contract.get("contractRef")
        if isinstance(ref, str) and ref not in KNOWN_CONTRACTS:
            yield _unknown_contract(ref, f"{path}.outputContract.contractRef")
    names = visible | _visible_names(step.get("functionDefinitions"), "step")
    refs = step.get("functionReferences")
    if isinstance(refs, list):
        for k, ref in enumerate(refs):
            if isinstance(ref, str) and ref.removesuffix("()") not in names:
                yield Problem(
                    "FUNCTION_NOT_DEFINED",
                    f"{path}.functionReferences[{k}]",
                    f"function '{ref}' is not in functionDefinitions, so the agent gets no "
                    "definition for it",
                    "add it to functionDefinitions (workflow, enclosing loop or step), or "
                    "make sure the prompt or metaGuidance explains it",
                    "warning",
                )
    yield from _regex_problems(step.get("validationCriteria"), f"{path}.validationCriteria")


def _prompt_problems(step: Mapping[str, Any], path: str) -> Iterator[Problem]:
    """A standard step says what to do in exactly one way: `prompt`, `promptBlocks`, or a
    `templateCall` that expands into steps which do."""
    if step.get("type") == "parallel":
        return
    has_prompt, has_blocks = "prompt" in step, "promptBlocks" in step
    if has_prompt and has_blocks:
        yield Problem(
            "MISSING_PROMPT",
            f"{path}.promptBlocks",
            "the step has both 'prompt' and 'promptBlocks'",
            "keep one of them: move the prompt text into promptBlocks.goal, or drop promptBlocks",
        )
    elif not (has_prompt or has_blocks or "templateCall" in step):
        yield Problem(
            "MISSING_PROMPT",
            path,
            "the step has no 'prompt', 'promptBlocks' or 'templateCall'",
            "add a 'prompt' text (or 'promptBlocks', or a 'templateCall' to a routine)",
        )


def _regex_problems(criteria: Any, path: str) -> Iterator[Problem]:
    if isinstance(criteria, list):
        for k, item in enumerate(criteria):
            yield from _regex_problems(item, f"{path}[{k}]")
    elif isinstance(criteria, dict):
        for op in ("and", "or"):
            if isinstance(criteria.get(op), list):
                yield from _regex_problems(criteria[op], f"{path}.{op}")
        if "not" in criteria:
            yield from _regex_problems(criteria["not"], f"{path}.not")
        if criteria.get("type") == "regex":
            pattern, flags = criteria.get("pattern"), criteria.get("flags", "")
            if not isinstance(pattern, str):
                yield Problem(
                    "INVALID_REGEX", path, "regex rule has no pattern", "add a 'pattern' string"
                )
            elif not isinstance(flags, str) or compile_js_regex(pattern, flags) is None:
                yield Problem(
                    "INVALID_REGEX",
                    f"{path}.pattern",
                    f"regular expression /{pattern}/{flags} does not compile",
                    "fix the pattern (JavaScript syntax) and use only the flags d g i m s u v y",
                )
            elif python_only_syntax(pattern):
                found = ", ".join(python_only_syntax(pattern))
                yield Problem(
                    "JS_INCOMPATIBLE_REGEX",
                    f"{path}.pattern",
                    f"/{pattern}/ uses {found}, which WorkRail for Python honours but "
                    "JavaScript engines (WorkRail's own) reject",
                    'for a file shared with WorkRail, use the flags field (e.g. "i") and '
                    "(?<name>…) groups instead",
                    "warning",
                )


def _unknown_contract(ref: str, path: str) -> Problem:
    return Problem(
        "UNKNOWN_CONTRACT",
        path,
        f"unknown output contract '{ref}'; a step requiring it could never be completed",
        f"use one of: {', '.join(sorted(KNOWN_CONTRACTS))}",
    )


def _visible_names(definitions: Any, level: str) -> frozenset[str]:
    """Function names a level exposes: scope absent or equal to the level (spec 50 §9)."""
    if not isinstance(definitions, list):
        return frozenset()
    return frozenset(
        d["name"]
        for d in definitions
        if isinstance(d, dict) and isinstance(d.get("name"), str) and d.get("scope", level) == level
    )


def _containing_loop_fns(raw: Mapping[str, Any], step: Mapping[str, Any]) -> frozenset[str]:
    """Loop-level functions of loops that use this top-level step as their string body."""
    names: frozenset[str] = frozenset()
    steps = raw.get("steps")
    if isinstance(steps, list):
        for loop in steps:
            body_of_step = isinstance(loop, dict) and loop.get("type") == "loop"
            if body_of_step and loop.get("body") == step.get("id"):
                names |= _visible_names(loop.get("functionDefinitions"), "loop")
    return names
