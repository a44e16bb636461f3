"""The describe document served at GET /v1/tools/workflow-checkpoint.

Schemas come from the pydantic models and limits/errors from the code's constants, so the
published contract cannot drift from what the service enforces.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel

from workrail.fence.contract import (
    INPUT_MODELS,
    MAX_CLAIM_TTL_SECONDS,
    MAX_GENERATIONS,
    MAX_OBSERVATIONS,
    MAX_STATE_TTL_SECONDS,
    MIN_CLAIM_TTL_SECONDS,
    MINIMUM_ACTION_SAFETY_MARGIN_SECONDS,
    CheckpointOutput,
)
from workrail.fence.errors import ERROR_CATALOG
from workrail.fence.ratelimit import RateLimits

SLUG: Final = "workflow-checkpoint"
VERSION: Final = "1.1.0"
ENDPOINT: Final = "/v1/tools/workflow-checkpoint"
JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

EXAMPLE_INPUT: Final[dict[str, Any]] = {
    "action": "claim",
    "namespace": "notion-import:31a0dca1-fd36-4748-a5c5-91d63a611a09",
    "workflow_key": "w_01J9N7K4Y8Q2M5T6R3P0S1U4V7",
    "holder": "h_01J9N7M1A2B3C4D5E6F7G8H9J0",
    "claim_ttl_seconds": 120,
    "state_ttl_seconds": 600,
    "retry_failed": False,
}
EXAMPLE_OUTPUT: Final[dict[str, Any]] = {
    "action": "claim",
    "workflow_hash": "hmac-sha256:" + "a" * 64,
    "observed_at": "2026-07-25T12:00:00.000Z",
    "stage": "claimed",
    "generation": 1,
    "acquired": True,
    "recovered": False,
    "reused": False,
    "recovery_required": False,
    "transitioned": False,
    "observation_replayed": False,
    "abandoned": False,
    "claim_active": True,
    "held_by_caller": True,
    "claim_expires_at": "2026-07-25T12:02:00.000Z",
    "state_expires_at": "2026-07-25T12:10:00.000Z",
    "claim_ttl_seconds_remaining": 120,
    "state_ttl_seconds_remaining": 600,
    "evidence_type": None,
    "evidence_fingerprint_present": False,
    "retry_failed_allowed": False,
    "allowed_next_actions": ["transition", "status", "abandon"],
    "minimum_action_safety_margin_seconds": 15,
    "external_proof": False,
}


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's generated `title`s and model docstrings: the contract has neither."""
    if isinstance(node, dict):
        return {
            key: _strip_titles(value)
            for key, value in node.items()
            if key != "title" and not (key == "description" and "properties" in node)
        }
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    return node


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema: dict[str, Any] = _strip_titles(model.model_json_schema())
    return schema


def input_schema() -> dict[str, Any]:
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "oneOf": [model_schema(model) for model in INPUT_MODELS],
    }


def output_schema() -> dict[str, Any]:
    return {"$schema": JSON_SCHEMA_DIALECT, **model_schema(CheckpointOutput)}


def limits(rates: RateLimits) -> dict[str, int]:
    return {
        "min_claim_ttl_seconds": MIN_CLAIM_TTL_SECONDS,
        "max_claim_ttl_seconds": MAX_CLAIM_TTL_SECONDS,
        "max_state_ttl_seconds": MAX_STATE_TTL_SECONDS,
        "max_generations": MAX_GENERATIONS,
        "max_observations": MAX_OBSERVATIONS,
        "minimum_action_safety_margin_seconds": MINIMUM_ACTION_SAFETY_MARGIN_SECONDS,
        "max_client_requests_per_minute": rates.client_rpm,
        "max_global_requests_per_minute": rates.global_rpm,
    }


def errors() -> list[dict[str, Any]]:
    return [
        {"code": code, "retryable": spec.retryable, "charged": False, "recovery": spec.recovery}
        for code, spec in ERROR_CATALOG.items()
    ]


def describe_result(rates: RateLimits | None = None, backend: str = "sqlite") -> dict[str, Any]:
    """The `result` object of the describe document."""
    return {
        **_presentation(),
        "backend": backend,
        "input_schema": input_schema(),
        "output_schema": output_schema(),
        **_effects(),
        "limits": limits(rates or RateLimits()),
        "examples": _examples(),
        "execution": {"errors": errors(), "idempotency": _idempotency()},
        "endpoints": {"describe": ENDPOINT, "execute": ENDPOINT},
    }


def _presentation() -> dict[str, Any]:
    """What the tool is and when to use it (the document's first keys, in order)."""
    return {
        "slug": SLUG,
        "name": "Opaque Workflow Checkpoint",
        "version": VERSION,
        "category": "workflow-reliability",
        "status": "beta",
        "mode": "atomic",
        "summary": (
            "Fence and recover an opaque external workflow without claiming external proof."
        ),
        "description": (
            "Coordinates one bounded workflow generation through claimed, uncertain,"
            " caller-verified, retry-gated failure, or compensated state. It stores only keyed"
            " identity digests, bounded evidence metadata, and expiring caller assertions; it"
            " never contacts or attests to the external service."
        ),
        "when_to_use": [
            "An external side effect needs an expiring owned generation plus explicit"
            " uncertain, caller-verified, failed, or compensated recovery state.",
            "Workers must recover after a crash without treating a lock or seen stamp as proof"
            " that the external action completed.",
        ],
        "do_not_use_when": [
            "A permanent audit log, cross-plugin transaction, or external exactly-once"
            " guarantee is required.",
            "An ordinary one-time low-risk operation does not need recovery coordination.",
            "The request is simply to create one note or record now.",
        ],
        "tested_with": [
            "SQLite transactions (embedded default)",
            "Valkey/Redis atomic Lua",
            "100 concurrent claim contenders",
            "MCP Streamable HTTP",
        ],
    }


def _effects() -> dict[str, Any]:
    """What a call changes and what the backend keeps."""
    return {
        "payment": {"kind": "free"},
        "side_effects": [
            "Claim creates or recovers an expiring owned generation.",
            "Transition records one bounded caller assertion and may finalize a generation.",
            "Abandon clears only a pre-action claim held by the caller.",
        ],
        "retention": (
            "Keyed HMAC digests, stage, generation, TTL configuration, and at most"
            f" {MAX_OBSERVATIONS} bounded observation records remain in the backend (SQLite"
            f" file or Valkey/Redis) for at most {MAX_STATE_TTL_SECONDS:,} seconds. Raw"
            " namespace, workflow key, holder, observation key, and external content are never"
            " stored or returned."
        ),
    }


def _examples() -> dict[str, Any]:
    return {
        "input": EXAMPLE_INPUT,
        "output": EXAMPLE_OUTPUT,
        "negative": [
            {
                "scenario": "A permanent audit log, cross-plugin transaction, or external"
                " exactly-once guarantee is required.",
                "expected_error": "INVALID_INPUT",
                "charged": False,
            }
        ],
    }


def _idempotency() -> dict[str, Any]:
    return {
        "required": True,
        "required_by_action": {
            "claim": True,
            "transition": True,
            "status": False,
            "abandon": True,
        },
        "mock_or_unpaid_header": "Idempotency-Key",
        "x402_extension": None,
        "replay_retention": "up to 24 hours",
    }


def describe_document(
    rates: RateLimits | None = None, backend: str = "sqlite", observed_at: str | None = None
) -> dict[str, Any]:
    """The whole GET response, in the reference's `{ok, tool, module_version, result}` shape."""
    doc: dict[str, Any] = {
        "ok": True,
        "tool": SLUG,
        "module_version": VERSION,
        "result": describe_result(rates, backend),
    }
    if observed_at is not None:
        doc["meta"] = {"observed_at": observed_at}
    return doc
