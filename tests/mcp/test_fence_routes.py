"""GET describes, POST executes, Idempotency-Key replays, errors carry HTTP semantics."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.fence.conftest import KEY, ManualClock
from tests.fence.helpers import claim, status
from workrail.fence.backend import FenceBackend
from workrail.fence.describe import describe_result
from workrail.fence.ratelimit import RateLimits
from workrail.fence.service import FenceService
from workrail.mcp.fence_routes import fence_routes

URL = "/v1/tools/workflow-checkpoint"


def client_for(service: FenceService) -> TestClient:
    return TestClient(Starlette(routes=fence_routes(service)))


def test_get_returns_the_generated_describe_document(service: FenceService) -> None:
    response = client_for(service).get(URL)
    assert response.status_code == 200
    body = response.json()
    assert body["result"]["input_schema"] == describe_result()["input_schema"]
    assert body["meta"]["observed_at"] == "2026-07-25T12:00:00.000Z"


def test_post_claim_needs_an_idempotency_key(service: FenceService) -> None:
    response = client_for(service).post(URL, json=claim())
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_INPUT"
    assert "Idempotency-Key" in response.json()["error"]["message"]


def test_post_status_needs_no_key(service: FenceService) -> None:
    response = client_for(service).post(URL, json=status())
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "CHECKPOINT_NOT_FOUND"


def test_idempotent_replay_returns_the_first_response(
    service: FenceService, clock: ManualClock
) -> None:
    http = client_for(service)
    headers = {"Idempotency-Key": "0b9f1c7e-claim-attempt"}
    first = http.post(URL, json=claim(), headers=headers)
    assert first.status_code == 200
    assert first.json()["result"]["acquired"] is True
    clock.advance(30)
    again = http.post(URL, json=claim(), headers=headers)
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    fresh = http.post(URL, json=claim(), headers={"Idempotency-Key": "0b9f1c7e-claim-retry2"})
    assert fresh.json()["result"]["reused"] is True
    assert fresh.json()["result"]["observed_at"] != first.json()["result"]["observed_at"]


def test_bad_json_and_rate_limit_headers(backend: FenceBackend, clock: ManualClock) -> None:
    http = client_for(FenceService(backend, KEY, clock, RateLimits(client_rpm=1, global_rpm=0)))
    bad = http.post(URL, content=b"{nope", headers={"Content-Type": "application/json"})
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "INVALID_INPUT")
    http.post(URL, json=status())
    limited = http.post(URL, json=status())
    assert limited.status_code == 429
    assert limited.headers["Retry-After"] == "60"
    assert limited.json()["error"]["retryable"] is True


def test_a_body_over_16_kib_is_refused(service: FenceService) -> None:
    oversized = b'{"action": "status", "pad": "' + b"x" * (16 * 1024) + b'"}'
    response = client_for(service).post(
        URL, content=oversized, headers={"Content-Type": "application/json"}
    )
    assert (response.status_code, response.json()["error"]["code"]) == (400, "INVALID_INPUT")
    assert "16 KiB" in response.json()["error"]["message"]


CROSS_SITE = {"Origin": "https://attacker.example"}


def test_a_cross_site_page_cannot_call_the_api_or_spend_a_local_clients_budget(
    backend: FenceBackend, clock: ManualClock
) -> None:
    http = client_for(FenceService(backend, KEY, clock, RateLimits(client_rpm=2, global_rpm=0)))
    for _ in range(5):
        refused = http.post(URL, json=status(), headers=CROSS_SITE)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "INVALID_INPUT"
        assert "attacker.example" in refused.json()["error"]["message"]
        # a "simple" cross-site request (no preflight) cannot say application/json
        simple = http.post(
            URL, content=json.dumps(status()), headers={"Content-Type": "text/plain"}
        )
        assert simple.status_code == 415
    assert http.get(URL, headers=CROSS_SITE).status_code == 403
    for _ in range(2):  # the local client's whole budget is still there
        assert http.post(URL, json=status()).status_code == 404  # CHECKPOINT_NOT_FOUND
    assert http.post(URL, json=status()).status_code == 429


@pytest.mark.parametrize(
    "origin",
    ["http://127.0.0.1:8765", "http://localhost:3000", "http://[::1]:8765", "http://testserver"],
)
def test_loopback_and_same_origin_requests_are_served(service: FenceService, origin: str) -> None:
    response = client_for(service).post(URL, json=status(), headers={"Origin": origin})
    assert response.status_code == 404, response.json()


@pytest.mark.parametrize(
    "origin", ["null", "http://127.0.0.1.attacker.example", "file://", "http://testserver.evil"]
)
def test_lookalike_and_opaque_origins_are_refused(service: FenceService, origin: str) -> None:
    response = client_for(service).post(URL, json=status(), headers={"Origin": origin})
    assert response.status_code == 403
