"""What a blocked answer's `nextCall` carries so an agent can comply from it alone: a ready
artifact for every artifact the step requires, when an artifact caused the block.

Pure and derived from the pinned workflow and the recorded block only, so a replayed
answer carries the same template. v1.4 files keep the reference's bare `nextCall` for
their loop-control blocks (their answers stay byte-identical).
"""

from __future__ import annotations

from typing import Any

from workrail.core.snapshot import StepInstance
from workrail.workflow.assessments import ASSESSMENT_CONTRACT, assessment_templates
from workrail.workflow.compiler import CompiledWorkflow
from workrail.workflow.contracts import LOOP_CONTROL_CONTRACT, contract
from workrail.workflow.definition import ArtifactContractSource


def retry_artifacts(
    compiled: CompiledWorkflow,
    instance: StepInstance,
    blocked_ref: str,
    *,
    after_followup: bool = False,
) -> list[dict[str, Any]]:
    """Ready artifacts for what caused the block: the contract's template, or one
    assessment per referenced assessment; none when something else blocked (notes,
    validation criteria, an unknown contract). Only the cause is templated, so a template
    never stands in for an artifact of the agent's that already passed.
    `after_followup`: an assessment consequence blocked (see assessment_templates)."""
    step = compiled.step(instance.step_id)
    if step is None:
        return []
    if blocked_ref == ASSESSMENT_CONTRACT:
        return assessment_templates(step, compiled.assessments, after_followup=after_followup)
    declared = step.contract
    spec = contract(declared.contract_ref) if declared is not None else None
    if spec is None or spec.ref != blocked_ref:
        return []
    if spec.ref == LOOP_CONTROL_CONTRACT and not compiled.current_language:
        return []
    return [spec.template(_deciding_loop(compiled, instance))]


def _deciding_loop(compiled: CompiledWorkflow, instance: StepInstance) -> str | None:
    """The loop id the step's loop-control decision is for: its innermost loop's; for a
    step outside any loop (one that decides whether a loop is entered), the next loop
    decided by artifacts, else the first one."""
    for frame in reversed(instance.loop_path):
        loop = compiled.loops.get(frame.loop_id)
        if loop is None:
            continue
        source = loop.condition_source
        if isinstance(source, ArtifactContractSource):
            return source.loop_id or loop.id
        return loop.id
    decided = [
        (i, source.loop_id or loop_id)
        for i, loop_id in enumerate(compiled.selectable_ids)
        if (loop := compiled.loops.get(loop_id)) is not None
        and isinstance(source := loop.condition_source, ArtifactContractSource)
    ]
    position = (
        compiled.selectable_ids.index(instance.step_id)
        if instance.step_id in compiled.selectable_ids
        else -1
    )
    candidates = [loop_id for i, loop_id in decided if i > position] or [
        loop_id for _, loop_id in decided
    ]
    return candidates[0] if candidates else None
