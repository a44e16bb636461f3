"""Request builders and assertions shared by the fence tests."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from returns.result import Failure

from workrail.config import load_config
from workrail.fence.service import Clock, FenceService, Reply, open_fence_service, system_clock

NAMESPACE = "notion-import:31a0dca1-fd36-4748-a5c5-91d63a611a09"
WORKFLOW = "w_01J9N7K4Y8Q2M5T6R3P0S1U4V7"
HOLDER_A = "h_01J9N7M1A2B3C4D5E6F7G8H9J0"
HOLDER_B = "h_01J9N7M1ZZZZZZZZZZZZZZZZZZ"
FINGERPRINT = "hmac-sha256:" + "b" * 64


def claim(
    holder: str = HOLDER_A,
    *,
    claim_ttl: int = 120,
    state_ttl: int = 600,
    retry_failed: bool = False,
    workflow: str = WORKFLOW,
) -> dict[str, Any]:
    return {
        "action": "claim",
        "namespace": NAMESPACE,
        "workflow_key": workflow,
        "holder": holder,
        "claim_ttl_seconds": claim_ttl,
        "state_ttl_seconds": state_ttl,
        "retry_failed": retry_failed,
    }


def transition(
    from_stage: str,
    to_stage: str,
    *,
    generation: int = 1,
    holder: str = HOLDER_A,
    observation: str | None = None,
    evidence: bool = False,
    evidence_type: str | None = None,
    fingerprint: str | None = None,
) -> dict[str, Any]:
    if evidence:
        evidence_type = evidence_type or "stable_marker_readback"
        fingerprint = fingerprint or FINGERPRINT
    return {
        "action": "transition",
        "namespace": NAMESPACE,
        "workflow_key": WORKFLOW,
        "holder": holder,
        "expected_generation": generation,
        "from_stage": from_stage,
        "to_stage": to_stage,
        "observation_key": observation or f"obs-{generation}-{from_stage}-{to_stage}",
        "evidence_type": evidence_type,
        "evidence_fingerprint": fingerprint,
    }


def status() -> dict[str, Any]:
    return {"action": "status", "namespace": NAMESPACE, "workflow_key": WORKFLOW}


def abandon(holder: str = HOLDER_A, generation: int = 1) -> dict[str, Any]:
    return {
        "action": "abandon",
        "namespace": NAMESPACE,
        "workflow_key": WORKFLOW,
        "holder": holder,
        "expected_generation": generation,
    }


def run(service: FenceService, payload: dict[str, Any], client: str = "test") -> Reply:
    return service.execute(payload, client_id=client)


def ok(service: FenceService, payload: dict[str, Any], client: str = "test") -> dict[str, Any]:
    reply = run(service, payload, client)
    assert reply.ok, reply.body
    result: dict[str, Any] = reply.body["result"]
    return result


def error_code(service: FenceService, payload: dict[str, Any], client: str = "test") -> str:
    reply = run(service, payload, client)
    assert not reply.ok, reply.body
    code: str = reply.body["error"]["code"]
    return code


def fence_from_env(
    data_dir: Path, env: Mapping[str, str], clock: Clock = system_clock
) -> FenceService:
    """The service a server configured by `env` would open (raises ValueError for a bad
    setting, as the composition root reports it)."""
    config = load_config(env)
    if isinstance(config, Failure):
        raise ValueError(str(config.failure()))
    loaded = config.unwrap()
    return open_fence_service(data_dir, loaded.fence_url, loaded.fence.limits, clock)
