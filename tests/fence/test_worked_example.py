"""The worked example in docs/fence.md is true: its calls, sent in order to a real service,
get the answers it shows (each shown field equal; the rest left out for brevity)."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fence.conftest import KEY, ManualClock
from tests.test_docs import ROOT, blocks_of
from workrail.fence.ratelimit import RateLimits
from workrail.fence.service import FenceService
from workrail.fence.sqlite_backend import SqliteBackend

DOC = ROOT / "docs" / "fence.md"


def _pairs() -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    blocks = [b for b in blocks_of(DOC) if b.info.startswith("json effect_checkpoint")]
    calls = [b for b in blocks if b.info.endswith(" call")]
    answers = [b for b in blocks if b.info.endswith(" answer")]
    assert calls, "every call in the example has its answer"
    assert len(calls) == len(answers), "every call in the example has its answer"
    return [
        (call.line, json.loads(call.text), json.loads(answer.text))
        for call, answer in zip(calls, answers, strict=True)
    ]


@pytest.fixture
def service(tmp_path: Path) -> FenceService:
    backend = SqliteBackend(tmp_path / "fence.sqlite3")
    return FenceService(backend, KEY, ManualClock(), RateLimits(client_rpm=0, global_rpm=0))


def test_the_worked_example_gets_the_answers_it_shows(service: FenceService) -> None:
    pairs = _pairs()
    assert len(pairs) >= 5
    for line, call, shown in pairs:
        reply = service.execute(call, client_id="docs")
        body = reply.body["error"] if "code" in shown else reply.body["result"]
        differs = {k: (v, body.get(k)) for k, v in shown.items() if body.get(k) != v}
        assert not differs, f"docs/fence.md:{line}: shown vs real answer: {differs}"
    service.close()


def test_the_shown_fingerprint_is_what_the_shown_command_prints() -> None:
    evidence = [c for _, c, _ in _pairs() if c.get("evidence_fingerprint")]
    digest = hmac.new(
        b"my-worker-secret", b"https://github.com/acme/api/pull/456", hashlib.sha256
    ).hexdigest()
    assert evidence
    assert evidence[0]["evidence_fingerprint"] == f"hmac-sha256:{digest}"
    assert "my-worker-secret" in DOC.read_text()
    assert digest in DOC.read_text()


def test_a_crash_after_the_uncertain_transition_is_what_the_example_says(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    backend = SqliteBackend(tmp_path / "fence.sqlite3")
    service = FenceService(backend, KEY, clock, RateLimits(client_rpm=0, global_rpm=0))
    (_, claim, _), (_, uncertain, _), *_ = _pairs()
    assert service.execute(claim, client_id="a").body["ok"]
    assert service.execute(uncertain, client_id="a").body["ok"]
    clock.advance(claim["claim_ttl_seconds"] + 1)  # worker A is gone; its claim expires
    other = {**claim, "holder": "worker-b-0a9b8c7d"}
    taken = service.execute(other, client_id="b").body["result"]
    assert (taken["acquired"], taken["recovered"], taken["recovery_required"]) == (
        True,
        True,
        True,
    )
    failed = {
        **uncertain,
        "holder": other["holder"],
        "expected_generation": taken["generation"],
        "from_stage": "claimed",
        "to_stage": "failed",
        "observation_key": "obs-3-failed-without-evidence",
    }
    refused = service.execute(failed, client_id="b").body
    assert refused["ok"] is False  # evidence is needed even for `failed` in recovery
    service.close()
