"""The two compiled-snapshot envelopes (50-workflows §3) and their hashes.

`v1_pinned` wraps the definition exactly as parsed; its JCS hash is the run's
`workflowHash` and must equal the reference's, so nothing here normalises or expands the
definition. `v1_preview` is what list/inspect report.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, ValidationError
from returns.result import Failure, Result, Success

from workrail.core.canonical import canonical_bytes, canonical_digest
from workrail.core.wire import CamelWire
from workrail.core.wording import counted
from workrail.workflow.errors import WorkflowError

LOOP_PREVIEW_PROMPT: Final = (
    "Loop step '{step_id}' cannot be previewed in v2 Slice 1 "
    "(loop execution/compilation not implemented yet)."
)


class _Envelope(CamelWire):
    def to_json(self) -> dict[str, Any]:
        """Wire/disk JSON (camelCase; optional fields omitted)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def canonical_bytes(self) -> bytes:
        """The exact bytes stored under `workflows/pinned/<hash>.json`."""
        return canonical_bytes(self.to_json())

    def workflow_hash(self) -> str:
        """`sha256:<hex>` of the JCS bytes — the store key and (for pinned) execution authority."""
        return canonical_digest(self.to_json())


class PinnedWorkflow(_Envelope):
    schema_version: Literal[1] = 1
    source_kind: Literal["v1_pinned"] = "v1_pinned"
    workflow_id: str
    name: str
    description: str
    version: str
    definition: dict[str, Any]


class PreviewStep(_Envelope):
    step_id: str
    title: str
    prompt: str


class PreviewWorkflow(_Envelope):
    schema_version: Literal[1] = 1
    source_kind: Literal["v1_preview"] = "v1_preview"
    workflow_id: str
    name: str
    description: str
    version: str
    preview: PreviewStep

    def metadata(self) -> dict[str, Any]:
        """`compiled` of inspect_workflow in `metadata` mode."""
        return {
            "schemaVersion": self.schema_version,
            "sourceKind": self.source_kind,
            "workflowId": self.workflow_id,
        }


CompiledEnvelope = Annotated[PinnedWorkflow | PreviewWorkflow, Discriminator("source_kind")]


class _EnvelopeAdapter(BaseModel):
    model_config = ConfigDict(defer_build=True, strict=True)
    envelope: CompiledEnvelope


def pin_workflow(definition: dict[str, Any]) -> PinnedWorkflow:
    """The v1_pinned envelope of a schema-valid definition (copied, never normalised)."""
    return PinnedWorkflow(
        workflow_id=definition["id"],
        name=definition["name"],
        description=definition["description"],
        version=definition["version"],
        definition=definition,
    )


def preview_workflow(definition: dict[str, Any]) -> PreviewWorkflow:
    """The v1_preview envelope: identity plus the first step as the agent would see it."""
    first = definition["steps"][0]
    step_id = first["id"]
    if first.get("type") == "loop":
        prompt = LOOP_PREVIEW_PROMPT.format(step_id=step_id)
    else:
        prompt = first.get("prompt") or f"Pending step: {step_id}"
    return PreviewWorkflow(
        workflow_id=definition["id"],
        name=definition["name"],
        description=definition["description"],
        version=definition["version"],
        preview=PreviewStep(step_id=step_id, title=first.get("title") or step_id, prompt=prompt),
    )


def parse_envelope(data: Any) -> Result[PinnedWorkflow | PreviewWorkflow, WorkflowError]:
    """Read an envelope from the pinned store (either kind); malformed → INVALID_ENVELOPE."""
    try:
        return Success(_EnvelopeAdapter.model_validate({"envelope": data}).envelope)
    except ValidationError as exc:
        return Failure(
            WorkflowError(
                "INVALID_ENVELOPE",
                f"stored compiled workflow is malformed ({counted(exc.error_count(), 'problem')}); "
                "re-pin the workflow with start_workflow",
            )
        )


def parse_pinned(data: Any) -> Result[PinnedWorkflow, WorkflowError]:
    """Read a stored envelope and require it to be an executable v1_pinned one."""
    return parse_envelope(data).bind(_require_executable)


def _require_executable(
    envelope: PinnedWorkflow | PreviewWorkflow,
) -> Result[PinnedWorkflow, WorkflowError]:
    if not isinstance(envelope, PinnedWorkflow):
        return Failure(
            WorkflowError("NOT_EXECUTABLE", "stored snapshot is a preview, not a pinned workflow")
        )
    d = envelope.definition
    steps = d.get("steps")
    if not all(isinstance(d.get(k), str) for k in ("id", "name", "description", "version")) or not (
        isinstance(steps, list) and steps
    ):
        return Failure(
            WorkflowError(
                "NOT_EXECUTABLE",
                "pinned definition lacks string id/name/description/version or non-empty steps",
            )
        )
    return Success(envelope)
