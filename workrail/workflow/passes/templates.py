"""The templates pass: a step with `templateCall: {templateId: "wr.templates.routine.<name>",
args}` is replaced, at compile time, by the steps of that routine.

Each expanded step keeps everything the routine wrote, with: its id prefixed by the
caller's (`<caller>__<step>`: `__` cannot occur in an authored step id, so the result never
collides and stays a delimiter-safe id), `{arg}` placeholders in its title and texts
replaced by the call's args (`{{…}}` is left for run time), the routine's metaGuidance
appended to its guidance, and the caller's runCondition (if any) added to its own. A
routine may call other routines; a chain that comes back to a routine already being
expanded is an error, as is a missing or non-scalar arg.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.workflow.errors import Problem
from workrail.workflow.passes.steps import JsonObject, iter_steps, map_steps, map_texts

ROUTINE_PREFIX: Final = "wr.templates.routine."
ID_JOINER: Final = "__"
MAX_DEPTH: Final = 8
_ARG_RE: Final = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")
RoutineLibrary = Mapping[str, JsonObject]
"""Template id → routine definition (a workflow-shaped JSON from a `routines/` folder)."""


def routine_template_id(routine_id: str) -> str:
    """`routine-tension-driven-design` and `wr.routine-design-review` →
    `wr.templates.routine.tension-driven-design`, `wr.templates.routine.design-review`: the
    namespace and the `routine-` prefix are not part of the template name."""
    name = routine_id.split(".", 1)[1] if "." in routine_id else routine_id
    return ROUTINE_PREFIX + name.removeprefix("routine-")


@dataclass(frozen=True, slots=True)
class _Call:
    path: str
    template_id: str
    args: Mapping[str, Any]


def template_problems(definition: JsonObject, routines: RoutineLibrary) -> Iterator[Problem]:
    """Every templateCall that cannot be expanded, at the caller's path."""
    for path, step in iter_steps(definition):
        if isinstance(step.get("templateCall"), dict):
            expanded = _expand(step, path, routines, ())
            if isinstance(expanded, Failure):
                yield expanded.failure()


def expand_templates(definition: JsonObject, routines: RoutineLibrary) -> JsonObject:
    """The pass (on a definition `template_problems` accepts)."""

    def expand(step: JsonObject) -> list[JsonObject]:
        if not isinstance(step.get("templateCall"), dict):
            return [step]
        result = _expand(step, "$", routines, ())
        return result.unwrap() if isinstance(result, Success) else [step]

    return map_steps(definition, expand)


def _expand(
    step: JsonObject, path: str, routines: RoutineLibrary, chain: tuple[str, ...]
) -> Result[list[JsonObject], Problem]:
    call = step["templateCall"]
    where = f"{path}.templateCall.templateId"
    template_id = call.get("templateId")
    if not isinstance(template_id, str):
        return Success([step])
    routine = routines.get(template_id)
    if routine is None:
        return Failure(_unknown(template_id, where, routines))
    if template_id in chain or len(chain) >= MAX_DEPTH:
        loop = " → ".join((*chain, template_id))
        return Failure(
            Problem(
                "ROUTINE_CYCLE",
                where,
                f"routine calls come back to a routine already being expanded: {loop}",
                "remove the templateCall that closes the circle (a routine cannot include itself)",
            )
        )
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    assert isinstance(args, dict)
    caller_id = str(step.get("id", "step"))
    guidance = [g for g in routine.get("metaGuidance") or () if isinstance(g, str)]
    out: list[JsonObject] = []
    for inner in routine.get("steps") or ():
        if not isinstance(inner, dict) or inner.get("type") in ("loop", "parallel"):
            return Failure(
                Problem(
                    "ROUTINE_INVALID",
                    where,
                    f"routine '{template_id}' holds a step that is not a standard step",
                    "routines may only hold standard steps; move loops into the workflow",
                )
            )
        substituted = _substitute(inner, args, template_id, f"{path}.templateCall.args")
        if isinstance(substituted, Failure):
            return substituted
        expanded = substituted.unwrap()
        expanded["id"] = f"{caller_id}{ID_JOINER}{inner.get('id')}"
        if guidance:
            expanded["guidance"] = [*(inner.get("guidance") or ()), *guidance]
        if "runCondition" in step:
            own = expanded.get("runCondition")
            expanded["runCondition"] = (
                step["runCondition"] if own is None else {"and": [step["runCondition"], own]}
            )
        if isinstance(expanded.get("templateCall"), dict):
            nested = _expand(expanded, path, routines, (*chain, template_id))
            if isinstance(nested, Failure):
                return nested
            out.extend(nested.unwrap())
        else:
            out.append(expanded)
    return Success(out)


def _substitute(
    step: JsonObject, args: Mapping[str, Any], template_id: str, where: str
) -> Result[JsonObject, Problem]:
    missing: list[str] = []
    bad: list[str] = []

    def sub(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in args:
                missing.append(name)
                return match.group(0)
            value = args[name]
            if isinstance(value, bool):
                return "true" if value else "false"
            if isinstance(value, str | int | float):
                return str(value)
            bad.append(name)
            return match.group(0)

        return _ARG_RE.sub(one, text)

    out: JsonObject = dict(step)
    for key in ("title", "prompt"):
        if isinstance(step.get(key), str):
            out[key] = sub(step[key])
    if isinstance(step.get("promptBlocks"), dict):
        out["promptBlocks"] = map_texts(step["promptBlocks"], sub)
    if isinstance(step.get("templateCall"), dict):
        inner_args = step["templateCall"].get("args")
        if isinstance(inner_args, dict):
            out["templateCall"] = {**step["templateCall"], "args": map_texts(inner_args, sub)}
    step_id = step.get("id")
    if missing:
        names = ", ".join(sorted(set(missing)))
        return Failure(
            Problem(
                "TEMPLATE_ARG_MISSING",
                where,
                f"routine '{template_id}' step '{step_id}' uses {{{names}}}, which the call "
                "does not pass",
                f"add {names} to templateCall.args",
            )
        )
    if bad:
        names = ", ".join(sorted(set(bad)))
        return Failure(
            Problem(
                "TEMPLATE_ARG_MISSING",
                where,
                f"templateCall.args {names} of '{template_id}' must be a text, number or boolean",
                "pass a scalar value (objects and arrays cannot be written into a prompt)",
            )
        )
    return Success(out)


def _unknown(template_id: str, where: str, routines: RoutineLibrary) -> Problem:
    known = sorted(routines)
    close = difflib.get_close_matches(template_id, known, n=1)
    if close:
        fix = f"did you mean '{close[0]}'?"
    elif known:
        fix = "use one of: " + ", ".join(known[:8]) + (", …" if len(known) > 8 else "")
    else:
        fix = "put the routine in a routines/ folder of a workflow directory or library"
    return Problem("UNKNOWN_TEMPLATE", where, f"no template or routine '{template_id}'", fix)
