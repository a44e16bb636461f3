"""Rendering the pending step for the agent (50-workflows §9), with the rehydrate variant
that appends bounded recovery context.

Deliberate deviations, documented in docs/workflows.md: array-form validation criteria
are listed under OUTPUT REQUIREMENTS too (90-quirks A7), `functionReferences` are matched
without their `()` (A6), and steps inside loops get a LOOP CONTEXT section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from workrail.core.budgets import REHYDRATE_PROMPT_MAX_BYTES, truncate_utf8
from workrail.core.snapshot import StepInstance
from workrail.workflow.assessments import assessment_prompt_lines
from workrail.workflow.compiler import CompiledLoop, CompiledWorkflow
from workrail.workflow.conditions import evaluate_condition
from workrail.workflow.contracts import contract
from workrail.workflow.definition import (
    FunctionDefinition,
    FunctionScope,
    StandardStep,
)
from workrail.workflow.interpreter import (
    DEFAULT_INDEX_VAR,
    DEFAULT_ITEM_VAR,
    DEFAULT_ITERATION_VAR,
    projected_context,
)
from workrail.workflow.jsvalues import is_number, js_number_to_string, js_truthy
from workrail.workflow.prompt_context import bounded_json, fill_placeholders, with_fragments

MAX_REQUIREMENT_LINES: Final = 5
RECOVERY_BUDGET_BYTES: Final = REHYDRATE_PROMPT_MAX_BYTES
RECOVERY_TRUNCATION_SUFFIX: Final = (
    "\n\n[TRUNCATED]\nOmitted recovery content due to budget constraints."
)
MAX_ITEM_PREVIEW_BYTES: Final = 2048
_SCOPE_RANK: Final[dict[FunctionScope, int]] = {"step": 0, "loop": 1, "workflow": 2}


@dataclass(frozen=True, slots=True)
class PendingPrompt:
    """What a response's `pending` carries, plus the confirmation flag for `nextIntent`."""

    step_id: str
    title: str
    prompt: str
    require_confirmation: bool

    def to_json(self) -> dict[str, str]:
        return {"stepId": self.step_id, "title": self.title, "prompt": self.prompt}


@dataclass(frozen=True, slots=True)
class RecoveryContext:
    """Facts from the projections (70-projections) that rehydrate shows.

    `child_count` counts outgoing edges of the node (any kind); recaps are the current
    recap texts, `downstream_recaps` from this node towards the preferred tip and
    `ancestry_recaps` from the root down to the parent (both oldest first). Set
    `unavailable_reason` when a projection failed.
    """

    child_count: int = 0
    preferred_tip_node_id: str | None = None
    downstream_recaps: Sequence[str] = ()
    ancestry_recaps: Sequence[str] = ()
    unavailable_reason: str | None = None


def render_pending(
    compiled: CompiledWorkflow,
    instance: StepInstance,
    context: Mapping[str, Any] | None = None,
) -> PendingPrompt:
    """The step as start/advance/replay responses show it (no recovery context).

    `context` (the run context) only adds the current forEach item to the loop section;
    pass the same context on replay to get the same text.
    """
    step = compiled.step(instance.step_id)
    if step is None:
        return PendingPrompt(
            instance.step_id, instance.step_id, f"Pending step: {instance.step_id}", False
        )
    text = _contextual(compiled, step, instance, context or {})
    if step.is_parallel:
        text = _parallel_section(step, context, lead=text if step.prompt else "")
    prompt = text + _loop_section(compiled, instance, context)
    prompt += _requirements_section(step.validation_criteria) + _contract_section(step)
    prompt += _assessment_section(compiled, step)
    gate = confirmation_required(step.require_confirmation, context)
    if gate and human_approval(step.require_confirmation):
        prompt += APPROVAL_SECTION
    return PendingPrompt(
        step_id=step.id,
        title=step.title or step.id,
        prompt=prompt,
        require_confirmation=gate,
    )


def render_recovery(
    compiled: CompiledWorkflow,
    instance: StepInstance,
    recovery: RecoveryContext,
    context: Mapping[str, Any] | None = None,
) -> PendingPrompt:
    """The rehydrate prompt: the normal prompt plus recovery context within 12 KiB."""
    base = render_pending(compiled, instance, context)
    if recovery.unavailable_reason is not None:
        prompt = (
            f"{base.prompt}\n\n(Recovery context unavailable due to {recovery.unavailable_reason})"
        )
        return PendingPrompt(base.step_id, base.title, prompt, base.require_confirmation)
    sections = _recovery_sections(compiled, instance, recovery)
    if not sections:
        return base
    prompt = base.prompt + "\n\n## Recovery Context\n\n" + "\n\n".join(sections)
    return PendingPrompt(
        base.step_id, base.title, fit_recovery_budget(prompt), base.require_confirmation
    )


def fit_recovery_budget(prompt: str) -> str:
    """Cut a rehydrate prompt to 12288 UTF-8 bytes (at a character boundary) plus a note."""
    return truncate_utf8(prompt, RECOVERY_BUDGET_BYTES, RECOVERY_TRUNCATION_SUFFIX)


def confirmation_required(rule: Any, context: Mapping[str, Any] | None = None) -> bool:
    """`requireConfirmation` as the reference reads it: JS truthiness, so a condition object
    counts as true (90-quirks A13, kept so replayed responses never depend on context).

    The current language's gate object `{kind, condition?}` fires when its condition holds
    for the run context the step became pending under (recorded, so replays agree).
    """
    if isinstance(rule, dict) and "kind" in rule:
        condition = rule.get("condition")
        return condition is None or context is None or evaluate_condition(condition, context)
    return js_truthy(rule)


def human_approval(rule: Any) -> bool:
    return isinstance(rule, dict) and rule.get("kind") == "human_approval"


APPROVAL_SECTION: Final = (
    "\n\n**HUMAN APPROVAL REQUIRED:**\n"
    "- This step waits for a person: show the user what the step produced and ask for their "
    "explicit approval.\n"
    "- Send nextCall only after they approve, with their decision (and any changes they asked "
    "for) in output.notesMarkdown; if they do not approve, do what they ask first."
)


# --- sections ------------------------------------------------------------------------------


def _contextual(
    compiled: CompiledWorkflow,
    step: StandardStep,
    instance: StepInstance,
    context: Mapping[str, Any],
) -> str:
    """The step's own text: its prompt, the fragments whose `when` holds, and placeholders
    filled from the context and the loop variables (unless the workflow turned them off)."""
    prompt = with_fragments(
        step.prompt or f"Pending step: {step.id}", step.prompt_fragments, context
    )
    if not compiled.definition.placeholders:
        return prompt
    return fill_placeholders(prompt, _loop_values(compiled, instance, context))


def _loop_values(
    compiled: CompiledWorkflow, instance: StepInstance, context: Mapping[str, Any]
) -> dict[str, Any]:
    """The context with the loop variables of the step's loops, as the interpreter sets them."""
    values: dict[str, Any] = dict(context)
    for frame in instance.loop_path:
        loop = compiled.loops.get(frame.loop_id)
        if loop is not None:
            values = dict(projected_context(loop, frame.iteration, values))
    return values


def _requirements_section(criteria: Any) -> str:
    lines: list[str] = []
    if isinstance(criteria, list):
        for rule in criteria:
            lines.extend(_rule_lines(rule))
    elif isinstance(criteria, dict):
        _composition_lines(criteria, lines)
    lines = lines[:MAX_REQUIREMENT_LINES]
    if not lines:
        return ""
    return "\n\n**OUTPUT REQUIREMENTS:**\n" + "\n".join(f"- {line}" for line in lines)


def _composition_lines(node: Mapping[str, Any], lines: list[str]) -> None:
    parts = node.get("and")
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, dict):
                if "type" in part:
                    lines.extend(_rule_lines(part))
                else:
                    _composition_lines(part, lines)


def _rule_lines(rule: Any) -> list[str]:
    if not isinstance(rule, dict):
        return []
    kind = rule.get("type")
    if kind == "contains" and isinstance(rule.get("value"), str):
        return [f'Must contain: "{rule["value"]}"']
    if kind == "regex" and isinstance(rule.get("pattern"), str):
        flags = rule.get("flags")
        suffix = f" (flags: {flags})" if isinstance(flags, str) and flags else ""
        return [f"Must match pattern: {rule['pattern']}{suffix}"]
    if kind == "length":
        parts = []
        if is_number(rule.get("min")):
            parts.append(f"≥{js_number_to_string(rule['min'])} chars")
        if is_number(rule.get("max")):
            parts.append(f"≤{js_number_to_string(rule['max'])} chars")
        return [f"Length: {', '.join(parts)}"] if parts else []
    return []


def _contract_section(step: StandardStep) -> str:
    declared = step.contract
    if declared is None:
        return ""
    ref = declared.contract_ref
    spec = contract(ref)
    lines = [f"Artifact contract: {ref}"]
    lines += spec.prompt_lines if spec else ["Provide an artifact matching the contract schema"]
    return "\n\n**OUTPUT REQUIREMENTS (System):**\n" + "\n".join(f"- {line}" for line in lines)


def _assessment_section(compiled: CompiledWorkflow, step: StandardStep) -> str:
    lines = assessment_prompt_lines(step, compiled.assessments)
    if not lines:
        return ""
    return "\n\n**ASSESSMENT (System):**\n" + "\n".join(
        f"  - {line.strip()}" if line.startswith("  ") else f"- {line}" for line in lines
    )


def _parallel_section(step: StandardStep, context: Mapping[str, Any] | None, *, lead: str) -> str:
    """A `type: parallel` step as instructions for subagents run at the same time."""
    scope = context or {}
    chosen = [d for d in step.parallel_delegations if evaluate_condition(d.run_condition, scope)]
    lines = [lead] if lead else []
    lines.append(
        f"Delegate this step to {len(chosen)} subagent(s) working at the same time, one per "
        "delegation below; wait until all have finished."
    )
    for n, delegation in enumerate(chosen, 1):
        goal = f": {delegation.goal}" if delegation.goal else ""
        lines.append(f"{n}. Run workflow '{delegation.workflow_id}'{goal}")
        if delegation.context_mapping:
            pairs = ", ".join(f"{k} → {v}" for k, v in sorted(delegation.context_mapping.items()))
            lines.append(f"   Hand it these context values (yours → its): {pairs}")
        if delegation.args:
            lines.append(f"   Arguments: {_preview(delegation.args)}")
        if delegation.model_tier:
            lines.append(f"   Model size that suits it: {delegation.model_tier}")
        if delegation.allowed_tools:
            lines.append(f"   Tools it may use: {', '.join(delegation.allowed_tools)}")
    if not chosen:
        lines.append("(No delegation applies under the current context: nothing to delegate.)")
    synthesis = step.synthesis.prompt if step.synthesis and step.synthesis.prompt else None
    lines.append(
        f"Then: {synthesis}"
        if synthesis
        else "Then bring their results together in your notes for this step."
    )
    lines.append("If you cannot start subagents, do each delegation yourself, one after another.")
    return "\n".join(lines)


def _loop_section(
    compiled: CompiledWorkflow, instance: StepInstance, context: Mapping[str, Any] | None
) -> str:
    lines: list[str] = []
    for frame in instance.loop_path:
        loop = compiled.loops.get(frame.loop_id)
        if loop is not None:
            lines.extend(_loop_lines(loop, frame.iteration, context))
    if not lines:
        return ""
    return "\n\n**LOOP CONTEXT:**\n" + "\n".join(f"- {line}" for line in lines)


def _loop_lines(loop: CompiledLoop, iteration: int, context: Mapping[str, Any] | None) -> list[str]:
    config = loop.step.loop
    title = loop.step.title or loop.id
    lines = [
        f"Loop '{loop.id}' ({title}): iteration {iteration + 1} "
        f"(at most {js_number_to_string(config.max_iterations)})",
        f"{config.iteration_var or DEFAULT_ITERATION_VAR} = {iteration + 1}",
    ]
    if config.type == "forEach":
        items = context.get(config.items) if context is not None and config.items else None
        if isinstance(items, list) and iteration < len(items):
            lines[0] = f"Loop '{loop.id}' ({title}): item {iteration + 1} of {len(items)}"
            lines.append(f"{config.item_var or DEFAULT_ITEM_VAR} = {_preview(items[iteration])}")
        lines.append(f"{config.index_var or DEFAULT_INDEX_VAR} = {iteration}")
    return lines


def _preview(value: Any) -> str:
    return bounded_json(value, MAX_ITEM_PREVIEW_BYTES)


def _recovery_sections(
    compiled: CompiledWorkflow, instance: StepInstance, recovery: RecoveryContext
) -> list[str]:
    sections: list[str] = []
    if recovery.child_count > 0:
        noun = "child" if recovery.child_count == 1 else "children"
        summary = f"### Branch Summary\nThis node has {recovery.child_count} {noun}."
        if recovery.preferred_tip_node_id is not None:
            summary += f" Preferred branch tip: {recovery.preferred_tip_node_id}"
        sections.append(summary)
        if recovery.downstream_recaps:
            sections.append(
                "### Downstream Recap (Preferred Branch)\n"
                + "\n\n".join(recovery.downstream_recaps)
            )
    if recovery.ancestry_recaps:
        sections.append("### Ancestry Recap\n" + "\n\n".join(recovery.ancestry_recaps))
    functions = visible_functions(compiled, instance)
    if functions:
        body = "\n\n".join(f"function {f.name}(...)\n  {f.definition}" for f in functions)
        sections.append(f"### Function Definitions\n```\n{body}\n```")
    return sections


def visible_functions(
    compiled: CompiledWorkflow, instance: StepInstance
) -> list[FunctionDefinition]:
    """Function definitions the step can see: its own, its loops', the workflow's.

    The most specific definition of a name wins; with `functionReferences`, only the
    referenced names are kept (matched without `()`, fixing 90-quirks A6).
    """
    step = compiled.step(instance.step_id)
    candidates: list[tuple[FunctionScope, FunctionDefinition]] = []
    if step is not None:
        candidates += [("step", f) for f in step.function_definitions]
    for frame in instance.loop_path:
        loop = compiled.loops.get(frame.loop_id)
        if loop is not None:
            candidates += [("loop", f) for f in loop.step.function_definitions]
    candidates += [("workflow", f) for f in compiled.functions]
    chosen: dict[str, tuple[FunctionScope, FunctionDefinition]] = {}
    for level, fn in candidates:
        if (fn.scope or level) == level and fn.name not in chosen:
            chosen[fn.name] = (level, fn)
    if step is not None and step.function_references:
        wanted = {ref.removesuffix("()") for ref in step.function_references}
        chosen = {name: v for name, v in chosen.items() if name in wanted}
    ordered = sorted(chosen.values(), key=lambda v: (_SCOPE_RANK[v[0]], v[1].name))
    return [fn for _, fn in ordered]
