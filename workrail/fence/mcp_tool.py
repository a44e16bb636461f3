"""The `effect_checkpoint` MCP tool: the checkpoint contract for agents.

Arguments are flat (one object with `action` plus the fields that action needs) because many
clients refuse a top-level `oneOf`; the advertised schema still carries every bound and enum,
and the service validates against the exact contract so a bad call comes back as the
INVALID_INPUT envelope the model can read, not as an opaque SDK error.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final

import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, WithJsonSchema

from workrail.fence.contract import (
    ACTIONS,
    HMAC_DIGEST_PATTERN,
    NAMESPACE_PATTERN,
    STAGES,
)
from workrail.fence.service import FenceService, Reply

TOOL_NAME: Final = "effect_checkpoint"

DESCRIPTION: Final = """\
Fence an external side effect (open a PR, send an email, charge a card, import a page) so it \
is not done twice when several workers try or a worker crashes after acting.

Protocol:
1. `claim` with a private namespace `<scope>:<fresh UUID v4>`, a workflow_key naming the \
side effect, your own random `holder`, the TTLs and retry_failed. Act only if \
`acquired` is true and `held_by_caller` is true. `acquired: false` means another holder is \
working: stand down. If `recovery_required` is true, a previous holder may already have \
acted: check the external system first.
2. Before acting, `transition` claimed -> external_result_uncertain (needs at least 15 s of \
claim left; in a recovery_required generation it also needs evidence of your check).
3. After acting, `transition` to caller_verified (evidence_type + evidence_fingerprint \
required), failed, or compensated. Use a fresh observation_key per transition and reuse it \
only to retry that same transition.
4. `abandon` releases a claim you no longer need, before acting. `status` reads.
The tool never contacts the external service: external_proof is always false. Identifiers \
are stored only as keyed digests and expire after state_ttl_seconds. Errors come back as \
{"ok": false, "error": {code, message, retryable, retry_after_seconds, recovery}}."""


_NULLABLE_EVIDENCE_TYPE: Final = {
    "anyOf": [
        {
            "type": "string",
            "enum": [
                "provider_idempotency_result",
                "atomic_unique_result",
                "stable_marker_readback",
                "conditional_write_result",
                "delivery_status",
                "durable_result_readback",
                "manual_review",
            ],
        },
        {"type": "null"},
    ]
}

Action = Annotated[
    Any,
    Field(description="claim | transition | status | abandon."),
    WithJsonSchema({"type": "string", "enum": list(ACTIONS)}),
]
Namespace = Annotated[
    Any,
    Field(
        description=(
            "All actions. <scope>:<fresh UUID v4>, e.g. 'pr-open:<uuid4>'. New UUID per independent"
            " workflow; share it only with participating agents."
        )
    ),
    WithJsonSchema(
        {"type": "string", "minLength": 38, "maxLength": 77, "pattern": NAMESPACE_PATTERN}
    ),
]
WorkflowKey = Annotated[
    Any,
    Field(description=("All actions. Stable name of the one side effect, 16-256 characters.")),
    WithJsonSchema({"type": "string", "minLength": 16, "maxLength": 256}),
]
Holder = Annotated[
    Any,
    Field(
        description=(
            "claim, transition, abandon. Your own random worker id, 16-128 characters, kept secret."
        )
    ),
    WithJsonSchema({"type": "string", "minLength": 16, "maxLength": 128}),
]
ClaimTtl = Annotated[
    Any,
    Field(
        description=(
            "claim. Seconds the claim lasts (60-3600); fixed when the checkpoint is created."
        )
    ),
    WithJsonSchema({"type": "integer", "minimum": 60, "maximum": 3600}),
]
StateTtl = Annotated[
    Any,
    Field(
        description=(
            "claim. Seconds the whole checkpoint lives (60-3600), counted from its creation; fixed."
        )
    ),
    WithJsonSchema({"type": "integer", "minimum": 60, "maximum": 3600}),
]
RetryFailed = Annotated[
    Any,
    Field(
        description=("claim. Whether a failed checkpoint may be claimed again; fixed at creation.")
    ),
    WithJsonSchema({"type": "boolean"}),
]
ExpectedGeneration = Annotated[
    Any,
    Field(description=("transition, abandon. The generation your claim returned (1-16).")),
    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 16}),
]
FromStage = Annotated[
    Any,
    Field(description=("transition. The stage you believe is current.")),
    WithJsonSchema({"type": "string", "enum": list(STAGES)}),
]
ToStage = Annotated[
    Any,
    Field(description=("transition. The stage to record.")),
    WithJsonSchema({"type": "string", "enum": list(STAGES)}),
]
ObservationKey = Annotated[
    Any,
    Field(
        description=(
            "transition. Fresh random key per transition (16-128 characters); resend it only to retry"
            " the identical transition."
        )
    ),
    WithJsonSchema({"type": "string", "minLength": 16, "maxLength": 128}),
]
EvidenceTypeArg = Annotated[
    Any,
    Field(
        description=(
            "transition. Kind of evidence you checked; required (with the fingerprint) for"
            " caller_verified, compensated, and leaving external_result_uncertain. Null otherwise."
        )
    ),
    WithJsonSchema(_NULLABLE_EVIDENCE_TYPE),
]
EvidenceFingerprint = Annotated[
    Any,
    Field(
        description=(
            "transition. 'hmac-sha256:<64 hex>' computed by you over the evidence; never the evidence"
            " itself."
        )
    ),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "pattern": HMAC_DIGEST_PATTERN}, {"type": "null"}]}
    ),
]

_FIELDS: Final = (
    "namespace",
    "workflow_key",
    "holder",
    "claim_ttl_seconds",
    "state_ttl_seconds",
    "retry_failed",
    "expected_generation",
    "from_stage",
    "to_stage",
    "observation_key",
    "evidence_type",
    "evidence_fingerprint",
)


def reply_to_result(reply: Reply) -> CallToolResult:
    """Success: the contract's output. Failure: the error envelope, flagged is_error."""
    structured = reply.body["result"] if reply.ok else reply.body
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(structured))],
        structured_content=structured,
        is_error=not reply.ok,
    )


def _client_id(ctx: Context) -> str:
    # One request budget per MCP session; the session object is stable for its lifetime.
    try:
        return f"mcp-session:{id(ctx.session)}"
    except (LookupError, RuntimeError, AttributeError, ValueError):
        return "mcp"


def register_effect_checkpoint(server: MCPServer, service: FenceService) -> None:
    """Add the `effect_checkpoint` tool to `server`, backed by `service`."""

    async def effect_checkpoint(
        ctx: Context,
        action: Action,
        namespace: Namespace = None,
        workflow_key: WorkflowKey = None,
        holder: Holder = None,
        claim_ttl_seconds: ClaimTtl = None,
        state_ttl_seconds: StateTtl = None,
        retry_failed: RetryFailed = None,
        expected_generation: ExpectedGeneration = None,
        from_stage: FromStage = None,
        to_stage: ToStage = None,
        observation_key: ObservationKey = None,
        evidence_type: EvidenceTypeArg = None,
        evidence_fingerprint: EvidenceFingerprint = None,
    ) -> CallToolResult:
        values = locals()
        payload: dict[str, Any] = {"action": action}
        payload.update({name: values[name] for name in _FIELDS if values[name] is not None})
        if action == "transition":
            # Omitted evidence means "no evidence": the contract's explicit null.
            payload.setdefault("evidence_type", None)
            payload.setdefault("evidence_fingerprint", None)
        client = _client_id(ctx)
        reply = await anyio.to_thread.run_sync(lambda: service.execute(payload, client_id=client))
        return reply_to_result(reply)

    server.add_tool(
        effect_checkpoint,
        name=TOOL_NAME,
        title="Effect checkpoint (fence an external side effect)",
        description=DESCRIPTION,
        annotations=ToolAnnotations(
            title="Effect checkpoint",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
