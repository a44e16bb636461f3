"""list_workflows and inspect_workflow (spec 40 §4–5). Read-only: unlike the reference,
they do not write preview snapshots into the pinned store."""

from __future__ import annotations

from typing import Any

from returns.result import Failure, Result, Success

from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, workflow_unavailable
from workrail.workflow.envelopes import preview_workflow
from workrail.workflow.metadata import catalogue_fields, spec_version_hint


def list_workflows(deps: EngineDeps) -> dict[str, Any]:
    items = []
    for entry in sorted(deps.catalog.entries(), key=lambda e: e.workflow_id):
        preview_hash = (
            preview_workflow(entry.definition).workflow_hash()
            if entry.definition is not None
            else None
        )
        row: dict[str, Any] = {
            "workflowId": entry.workflow_id,
            "name": entry.name,
            "description": entry.description,
            "version": entry.version,
            "kind": "workflow",
            "workflowHash": preview_hash,
            **(catalogue_fields(entry.definition) if entry.definition is not None else {}),
        }
        if entry.definition is None:
            # Marked, so an agent does not pick it and a person knows where to look.
            row.update(valid=False, problems=len(entry.problems), path=entry.source_path)
        else:
            row.update(catalogue_fields(entry.definition))
        items.append(row)
    return {"workflows": items}


def inspect_workflow(
    deps: EngineDeps, workflow_id: str, mode: str
) -> Result[dict[str, Any], EngineError]:
    entry = deps.catalog.get(workflow_id)
    if entry is None or entry.definition is None:
        return Failure(workflow_unavailable(workflow_id, entry, deps.catalog))
    preview = preview_workflow(entry.definition)
    compiled = preview.metadata() if mode == "metadata" else preview.to_json()
    answer: dict[str, Any] = {
        "workflowId": entry.workflow_id,
        "workflowHash": preview.workflow_hash(),
        "mode": mode,
        "compiled": compiled,
        **catalogue_fields(entry.definition),
    }
    hint = spec_version_hint(entry.definition)
    if hint is not None:
        answer["authoringSpec"] = hint
    return Success(answer)
