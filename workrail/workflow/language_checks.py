"""Checks of the current language that the JSON Schema cannot express and no compiler pass
owns: how steps refer to the workflow's assessments."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from workrail.workflow.errors import Problem
from workrail.workflow.passes.steps import JsonObject, iter_steps


def assessment_levels(definition: Mapping[str, Any]) -> dict[str, set[str]]:
    """Assessment id → every level any of its dimensions allows."""
    out: dict[str, set[str]] = {}
    for assessment in definition.get("assessments") or ():
        if isinstance(assessment, dict) and isinstance(assessment.get("id"), str):
            levels = out.setdefault(assessment["id"], set())
            for dim in assessment.get("dimensions") or ():
                if isinstance(dim, dict):
                    levels.update(v for v in dim.get("levels") or () if isinstance(v, str))
    return out


def assessment_problems(definition: JsonObject) -> Iterator[Problem]:
    """Refs to undeclared assessments, consequences without refs, and trigger levels no
    dimension of the referenced assessments has (the consequence could never fire)."""
    declared = assessment_levels(definition)
    for path, step in iter_steps(definition):
        refs = [r for r in step.get("assessmentRefs") or () if isinstance(r, str)]
        for k, ref in enumerate(refs):
            if ref not in declared:
                yield _unknown(ref, f"{path}.assessmentRefs[{k}]", declared)
        consequences = step.get("assessmentConsequences")
        if not isinstance(consequences, list):
            continue
        if not refs:
            yield Problem(
                "UNKNOWN_ASSESSMENT",
                f"{path}.assessmentConsequences",
                "the step has assessment consequences but no assessmentRefs",
                "add the assessments the consequences are about to assessmentRefs",
            )
            continue
        for k, consequence in enumerate(consequences):
            when = consequence.get("when") if isinstance(consequence, dict) else None
            if not isinstance(when, dict):
                continue
            where = f"{path}.assessmentConsequences[{k}].when"
            scope = when.get("forAssessment")
            if isinstance(scope, str) and scope not in refs:
                yield Problem(
                    "UNKNOWN_ASSESSMENT",
                    f"{where}.forAssessment",
                    f"forAssessment '{scope}' is not one of this step's assessmentRefs",
                    f"use one of: {', '.join(refs)}",
                )
                continue
            level = when.get("anyEqualsLevel")
            targets = [scope] if isinstance(scope, str) else refs
            allowed = sorted(set().union(*(declared.get(t, set()) for t in targets)))
            if isinstance(level, str) and allowed and level not in allowed:
                yield Problem(
                    "UNKNOWN_ASSESSMENT_LEVEL",
                    f"{where}.anyEqualsLevel",
                    f"level '{level}' is not a level of {', '.join(targets)}, so the "
                    "consequence could never fire",
                    f"use one of the declared levels: {', '.join(allowed)}",
                )


def _unknown(ref: str, path: str, declared: Mapping[str, Any]) -> Problem:
    close = difflib.get_close_matches(ref, list(declared), n=1)
    if close:
        fix = f"did you mean '{close[0]}'?"
    elif declared:
        fix = f"use one of: {', '.join(sorted(declared))}"
    else:
        fix = "declare it in the workflow's assessments (id, purpose, dimensions)"
    return Problem("UNKNOWN_ASSESSMENT", path, f"no assessment '{ref}' is declared", fix)
