"""The `effect_checkpoint` MCP tool: the checkpoint contract for agents.

Arguments are flat (one object with `action` plus the fields that action needs) because many
clients refuse a top-level `oneOf`; the advertised schema is generated from the contract's
input models, so it carries every bound and enum. The tool is a prebuilt SDK `Tool` whose
argument step passes the raw arguments through (as the workflow tools do): the service
validates them against the exact contract (unknown fields included), so a bad call comes
back as the INVALID_INPUT envelope the model can read, never silently trimmed.
"""

from __future__ import annotations

import json
from typing import Any, Final

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from workrail.fence.contract import ACTIONS, INPUT_MODELS, CheckpointOutput
from workrail.fence.describe import model_schema
from workrail.fence.service import FenceService, Reply
from workrail.mcp.raw_arguments import RawArguments

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
claim left). In a recovery_required generation every transition, failed included, needs \
evidence of your check of the external system.
3. After acting, `transition` to caller_verified, failed, or compensated (evidence_type + \
evidence_fingerprint required). Use a fresh observation_key per transition and reuse it \
only to retry that same transition.
4. `abandon` releases a claim you no longer need, before acting. `status` reads.
The tool never contacts the external service: external_proof is always false. Identifiers \
are stored only as keyed digests and expire after state_ttl_seconds. A failure comes back \
flagged as an error with {"ok": false, "error": {code, message, retry: {kind, afterMs?}, \
details: {suggestion}, retryable, retry_after_seconds, recovery, charged: false}}: retry is \
the product's guidance (kind not_retryable, retryable_immediate or retryable_after_ms with \
afterMs to wait), retryable and retry_after_seconds the contract's spelling of the same \
advice. Retry a retryable failure with the same arguments."""


# What each flat argument means to an agent; bounds, patterns and enums come from the models.
_DESCRIPTIONS: Final[dict[str, str]] = {
    "action": "claim | transition | status | abandon.",
    "namespace": (
        "All actions. <scope>:<fresh UUID v4>, e.g. 'pr-open:<uuid4>'. New UUID per independent"
        " workflow; share it only with participating agents."
    ),
    "workflow_key": "All actions. Stable name of the one side effect, 16-256 characters.",
    "holder": (
        "claim, transition, abandon. Your own random worker id, 16-128 characters, kept secret."
    ),
    "claim_ttl_seconds": (
        "claim. Seconds the claim lasts (60-3600); fixed when the checkpoint is created."
    ),
    "state_ttl_seconds": (
        "claim. Seconds the whole checkpoint lives (60-3600), counted from its creation; fixed."
    ),
    "retry_failed": "claim. Whether a failed checkpoint may be claimed again; fixed at creation.",
    "expected_generation": "transition, abandon. The generation your claim returned (1-16).",
    "from_stage": "transition. The stage you believe is current.",
    "to_stage": "transition. The stage to record.",
    "observation_key": (
        "transition. Fresh random key per transition (16-128 characters); resend it only to"
        " retry the identical transition."
    ),
    "evidence_type": (
        "transition. Kind of evidence you checked; required (with the fingerprint) for"
        " caller_verified, compensated, leaving external_result_uncertain, and every transition"
        " in a recovery_required generation. Null or omitted otherwise."
    ),
    "evidence_fingerprint": (
        "transition. 'hmac-sha256:<64 hex>' computed by you over the evidence; never the"
        " evidence itself."
    ),
}


# What each field of a successful answer means; types and bounds come from CheckpointOutput.
_OUTPUT_DESCRIPTIONS: Final[dict[str, str]] = {
    "action": "The action this answers.",
    "workflow_hash": (
        "hmac-sha256 digest of namespace + workflow_key: names the checkpoint without"
        " revealing them."
    ),
    "observed_at": "When the service read the checkpoint for this answer (UTC).",
    "stage": (
        "The current stage: claimed, external_result_uncertain, or a final caller_verified,"
        " failed or compensated."
    ),
    "generation": "The current generation (1-16); send it as expected_generation.",
    "acquired": (
        "claim: true when you hold the claim now (act only if held_by_caller is true too);"
        " false means another holder is working: stand down."
    ),
    "recovered": "claim: true when this claim started a new generation after a lapsed one.",
    "reused": "claim: true when you already held this claim (its expiry is not extended).",
    "recovery_required": (
        "A previous holder may have acted: check the external system before acting, and send"
        " evidence with every transition of this generation."
    ),
    "transitioned": "transition: true when this call recorded the transition.",
    "observation_replayed": (
        "transition: true when this observation_key was already recorded (a retry); nothing"
        " new was recorded."
    ),
    "abandoned": "abandon: true when the claim is released (also on a repeated abandon).",
    "claim_active": "Whether a claim is currently live on the checkpoint.",
    "held_by_caller": (
        "Whether you (holder) hold the live claim; null for status, which names no holder."
    ),
    "claim_expires_at": "When the current claim lapses (UTC); null when there is none.",
    "state_expires_at": (
        "When the whole checkpoint is forgotten (UTC); fixed at creation, never extended."
    ),
    "claim_ttl_seconds_remaining": "Whole seconds of claim left; null when there is none.",
    "state_ttl_seconds_remaining": "Whole seconds until the checkpoint is forgotten.",
    "evidence_type": (
        "The evidence type of the transition that entered the current stage; null if none."
    ),
    "evidence_fingerprint_present": (
        "Whether that transition carried an evidence fingerprint (never stored itself)."
    ),
    "retry_failed_allowed": "Whether a failed checkpoint may be claimed again (fixed).",
    "allowed_next_actions": (
        "The actions you may send next (for status: what the current holder could do)."
    ),
    "minimum_action_safety_margin_seconds": (
        "Seconds of claim that must be left to enter external_result_uncertain (15)."
    ),
    "external_proof": "Always false: the tool records what callers assert, never proof.",
}


def output_schema() -> dict[str, Any]:
    """The contract's output (the describe document's), a description on every field. The
    date-time fields keep `format` and drop the long regex that spells it out: the answer
    is the server's to produce, and tools/list is read into every agent's context."""
    schema = model_schema(CheckpointOutput)

    def lean(prop: dict[str, Any]) -> dict[str, Any]:
        if prop.get("format") == "date-time":
            prop = {k: v for k, v in prop.items() if k != "pattern"}
        if "anyOf" in prop:
            prop = {**prop, "anyOf": [lean(option) for option in prop["anyOf"]]}
        return prop

    properties = schema["properties"]
    return {
        **schema,
        "description": "What every successful action returns: the checkpoint as seen by you, now.",
        "properties": {
            name: {**lean(prop), "description": _OUTPUT_DESCRIPTIONS[name]}
            for name, prop in properties.items()
        },
    }


def input_schema() -> dict[str, Any]:
    """The flat argument object: every field of the four contract inputs, only `action`
    required (the service applies each action's own required fields and bounds)."""
    generated: dict[str, Any] = {}
    for model in INPUT_MODELS:
        for name, prop in model_schema(model)["properties"].items():
            generated.setdefault(name, prop)
    generated["action"] = {"type": "string", "enum": list(ACTIONS)}
    return {
        "type": "object",
        "properties": {
            name: {**generated[name], "description": text} for name, text in _DESCRIPTIONS.items()
        },
        "required": ["action"],
        "additionalProperties": False,
    }


def reply_to_result(reply: Reply) -> CallToolResult:
    """Success: the contract's output, as text and structured content. Failure: the error
    envelope as text only, flagged is_error (structured content is the outputSchema's,
    which describes success: docs/mcp.md, "Errors")."""
    if not reply.ok:
        text = json.dumps(reply.body)
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    structured = reply.body["result"]
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(structured))],
        structured_content=structured,
        is_error=False,
    )


def _client_id(ctx: Context) -> str:
    """The rate-limit budget a call is charged to: the MCP session over Streamable HTTP
    (its `mcp-session-id` header), else the one client a stdio server has. (The SDK builds
    a new session object for every request, so its identity cannot key a budget.)"""
    try:
        headers = ctx.headers
    except (LookupError, RuntimeError, AttributeError, ValueError):
        headers = None
    session = headers.get("mcp-session-id") if headers is not None else None
    return f"mcp-session:{session}" if session else "mcp"


def effect_checkpoint_tool(service: FenceService) -> Tool:
    """The `effect_checkpoint` tool backed by `service`, ready for `MCPServer(tools=[...])`."""

    async def effect_checkpoint(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        payload = dict(arguments)
        if payload.get("action") == "transition":
            # Omitted evidence means "no evidence": the contract's explicit null.
            payload.setdefault("evidence_type", None)
            payload.setdefault("evidence_fingerprint", None)
        client = _client_id(ctx)
        reply = await anyio.to_thread.run_sync(lambda: service.execute(payload, client_id=client))
        return reply_to_result(reply)

    return Tool(
        fn=effect_checkpoint,
        name=TOOL_NAME,
        title="Effect checkpoint (fence an external side effect)",
        description=DESCRIPTION,
        parameters=input_schema(),
        fn_metadata=RawArguments(arg_model=ArgModelBase, output_schema=output_schema()),
        is_async=True,
        context_kwarg="ctx",
        annotations=ToolAnnotations(
            title="Effect checkpoint",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
