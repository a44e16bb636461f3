"""The compiler pipeline: a source definition → the compiled definition that is pinned and
hashed, in WorkRail's order (templates/routines → bindings → features → refs → prompt
blocks), then the metrics footer.

`check_source` finds everything the passes would trip over, each with a JSON path into
the source and a fix; `compile_source` runs the passes on a definition it accepts. A
v1.4-era definition (none of the newer constructs) comes back as the very same object, so
its workflowHash, snapshot and prompts are what they always were.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.workflow.errors import Problem
from workrail.workflow.language_checks import assessment_problems
from workrail.workflow.passes.bindings import resolve_bindings, unknown_bindings
from workrail.workflow.passes.blocks import empty_blocks, render_prompt_blocks
from workrail.workflow.passes.features import apply_features, unknown_features
from workrail.workflow.passes.metrics import add_metrics_footer
from workrail.workflow.passes.refs import resolve_refs, unknown_refs
from workrail.workflow.passes.steps import JsonObject
from workrail.workflow.passes.templates import (
    RoutineLibrary,
    expand_templates,
    template_problems,
)

NO_ROUTINES: Final[RoutineLibrary] = MappingProxyType({})


def check_source(
    raw: JsonObject, routines: RoutineLibrary = NO_ROUTINES, *, routine: bool = False
) -> list[Problem]:
    """Problems the passes would meet (on a schema-valid definition). A routine is checked
    without its bindings: those name extension points of the workflows that call it."""
    problems = [
        *template_problems(raw, routines),
        *unknown_features(raw),
        *unknown_refs(raw),
        *empty_blocks(raw),
        *assessment_problems(raw),
    ]
    if not routine:
        problems.extend(unknown_bindings(raw))
    return problems


def compile_source(
    raw: JsonObject,
    routines: RoutineLibrary = NO_ROUTINES,
    bindings: Mapping[str, str] | None = None,
) -> Result[JsonObject, list[Problem]]:
    """The compiled definition, or the problems that stop it."""
    problems = check_source(raw, routines)
    if problems:
        return Failure(problems)
    return Success(run_passes(raw, routines, bindings))


def run_passes(
    raw: JsonObject,
    routines: RoutineLibrary = NO_ROUTINES,
    bindings: Mapping[str, str] | None = None,
) -> JsonObject:
    """The passes alone, in order (for a definition `check_source` accepts)."""
    compiled = expand_templates(raw, routines)
    compiled = resolve_bindings(compiled, bindings)
    compiled = apply_features(compiled)
    compiled = resolve_refs(compiled)
    compiled = render_prompt_blocks(compiled)
    return add_metrics_footer(compiled)


def is_compiled_identity(raw: Any, compiled: Any) -> bool:
    """True when compiling changed nothing (a v1.4-era definition)."""
    return raw is compiled
