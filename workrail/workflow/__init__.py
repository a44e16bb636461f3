"""Workflow definitions: validation, discovery, pinning/hashing, interpreter, prompts.

Everything here is pure except `sources` (file system) and `cli_commands` (printing).
The engine uses: `discover`/`Catalog.resolve` → `LoadedWorkflow.pinned()` (store it under
its `workflow_hash()`), `parse_pinned` + `compile_pinned` at every use, `start` for the
first snapshot, `decide_advance` for advances, `render_pending`/`render_recovery` for
responses.
"""

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
