"""Workflow definitions: validation, discovery, pinning/hashing, interpreter, prompts.

Everything here is pure except `sources`, which reads the workflow directories.
The engine uses: `discover`/`Catalog.resolve` → `LoadedWorkflow.pinned()` (store it under
its `workflow_hash()`), `parse_pinned` + `compile_pinned` at every use, `start` for the
first snapshot, `decide_advance` for advances, `render_pending`/`render_recovery` for
responses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Loaded on first use (PEP 562): importing one submodule, such as `sources` for the
# configuration, then does not build every model of the package.
if TYPE_CHECKING:
    from workrail.workflow.advance import (
        Advanced,
        AdvanceDecision,
        AdvanceRequest,
        Blocked,
        decide_advance,
    )
    from workrail.workflow.catalog import (
        Catalog,
        InvalidWorkflow,
        LoadedWorkflow,
        Shadowed,
        WorkflowNotFound,
        WorkflowSource,
        build_catalog,
    )
    from workrail.workflow.compiler import CompiledWorkflow, compile_definition, compile_pinned
    from workrail.workflow.envelopes import (
        PinnedWorkflow,
        PreviewWorkflow,
        parse_envelope,
        parse_pinned,
        pin_workflow,
        preview_workflow,
    )
    from workrail.workflow.errors import Problem, WorkflowError
    from workrail.workflow.interpreter import (
        InterpreterState,
        Selection,
        complete_pending,
        select_next,
        start,
        state_from_snapshot,
    )
    from workrail.workflow.outcomes import DecisionTraceEntry, ValidationRecord, ValidationResult
    from workrail.workflow.prompts import (
        PendingPrompt,
        RecoveryContext,
        render_pending,
        render_recovery,
    )
    from workrail.workflow.sources import DiscoveryConfig, discover
    from workrail.workflow.validate import parse_workflow_json, validate_workflow

_WHERE: dict[str, str] = {
    "AdvanceDecision": "workrail.workflow.advance",
    "AdvanceRequest": "workrail.workflow.advance",
    "Advanced": "workrail.workflow.advance",
    "Blocked": "workrail.workflow.advance",
    "Catalog": "workrail.workflow.catalog",
    "CompiledWorkflow": "workrail.workflow.compiler",
    "DecisionTraceEntry": "workrail.workflow.outcomes",
    "DiscoveryConfig": "workrail.workflow.sources",
    "InterpreterState": "workrail.workflow.interpreter",
    "InvalidWorkflow": "workrail.workflow.catalog",
    "LoadedWorkflow": "workrail.workflow.catalog",
    "PendingPrompt": "workrail.workflow.prompts",
    "PinnedWorkflow": "workrail.workflow.envelopes",
    "PreviewWorkflow": "workrail.workflow.envelopes",
    "Problem": "workrail.workflow.errors",
    "RecoveryContext": "workrail.workflow.prompts",
    "Selection": "workrail.workflow.interpreter",
    "Shadowed": "workrail.workflow.catalog",
    "ValidationRecord": "workrail.workflow.outcomes",
    "ValidationResult": "workrail.workflow.outcomes",
    "WorkflowError": "workrail.workflow.errors",
    "WorkflowNotFound": "workrail.workflow.catalog",
    "WorkflowSource": "workrail.workflow.catalog",
    "build_catalog": "workrail.workflow.catalog",
    "compile_definition": "workrail.workflow.compiler",
    "compile_pinned": "workrail.workflow.compiler",
    "complete_pending": "workrail.workflow.interpreter",
    "decide_advance": "workrail.workflow.advance",
    "discover": "workrail.workflow.sources",
    "parse_envelope": "workrail.workflow.envelopes",
    "parse_pinned": "workrail.workflow.envelopes",
    "parse_workflow_json": "workrail.workflow.validate",
    "pin_workflow": "workrail.workflow.envelopes",
    "preview_workflow": "workrail.workflow.envelopes",
    "render_pending": "workrail.workflow.prompts",
    "render_recovery": "workrail.workflow.prompts",
    "select_next": "workrail.workflow.interpreter",
    "start": "workrail.workflow.interpreter",
    "state_from_snapshot": "workrail.workflow.interpreter",
    "validate_workflow": "workrail.workflow.validate",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AdvanceDecision",
    "AdvanceRequest",
    "Advanced",
    "Blocked",
    "Catalog",
    "CompiledWorkflow",
    "DecisionTraceEntry",
    "DiscoveryConfig",
    "InterpreterState",
    "InvalidWorkflow",
    "LoadedWorkflow",
    "PendingPrompt",
    "PinnedWorkflow",
    "PreviewWorkflow",
    "Problem",
    "RecoveryContext",
    "Selection",
    "Shadowed",
    "ValidationRecord",
    "ValidationResult",
    "WorkflowError",
    "WorkflowNotFound",
    "WorkflowSource",
    "build_catalog",
    "compile_definition",
    "compile_pinned",
    "complete_pending",
    "decide_advance",
    "discover",
    "parse_envelope",
    "parse_pinned",
    "parse_workflow_json",
    "pin_workflow",
    "preview_workflow",
    "render_pending",
    "render_recovery",
    "select_next",
    "start",
    "state_from_snapshot",
    "validate_workflow",
]
