"""The contract suite: every backend must pass every test here (see `backend` in conftest)."""

from __future__ import annotations

import pytest

from tests.fence.conftest import KEY, ManualClock
from tests.fence.helpers import (
    FINGERPRINT,
    HOLDER_A,
    HOLDER_B,
    NAMESPACE,
    WORKFLOW,
    abandon,
    claim,
    error_code,
    ok,
    run,
    status,
    transition,
)
from workrail.fence.backend import FenceBackend
from workrail.fence.contract import INPUT_ADAPTER, CheckpointOutput
from workrail.fence.decide import EDGES
from workrail.fence.describe import EXAMPLE_OUTPUT
from workrail.fence.ratelimit import RateLimits
from workrail.fence.service import FenceService

# --- claim -------------------------------------------------------------------------------


def test_first_claim_matches_the_published_example(service: FenceService) -> None:
    result = ok(service, claim())
    CheckpointOutput.model_validate(result)
    assert result["workflow_hash"].startswith("hmac-sha256:")
    expected = dict(EXAMPLE_OUTPUT, workflow_hash=result["workflow_hash"])
    assert result == expected


def test_same_holder_reclaim_is_reused_without_extending(
    service: FenceService, clock: ManualClock
) -> None:
    first = ok(service, claim())
    clock.advance(30)
    again = ok(service, claim())
    assert (again["acquired"], again["reused"], again["generation"]) == (True, True, 1)
    assert again["claim_expires_at"] == first["claim_expires_at"]
    assert again["claim_ttl_seconds_remaining"] == 90


def test_other_holder_does_not_acquire_an_active_claim(service: FenceService) -> None:
    ok(service, claim(HOLDER_A))
    other = ok(service, claim(HOLDER_B))
    assert other["acquired"] is False
    assert other["held_by_caller"] is False
    assert other["claim_active"] is True
    assert other["allowed_next_actions"] == ["status"]


def test_expired_claim_in_claimed_starts_a_recovered_generation(
    service: FenceService, clock: ManualClock
) -> None:
    ok(service, claim(HOLDER_A))
    clock.advance(120)
    taken = ok(service, claim(HOLDER_B))
    assert (taken["generation"], taken["acquired"], taken["recovered"]) == (2, True, True)
    assert taken["recovery_required"] is False
    # The old holder is fenced off by the generation.
    assert error_code(service, transition("claimed", "failed", generation=1)) == (
        "STALE_GENERATION"
    )


def test_expiry_while_uncertain_requires_recovery(
    service: FenceService, clock: ManualClock
) -> None:
    ok(service, claim(HOLDER_A))
    ok(service, transition("claimed", "external_result_uncertain"))
    clock.advance(120)
    taken = ok(service, claim(HOLDER_B))
    assert (taken["generation"], taken["recovery_required"], taken["stage"]) == (
        2,
        True,
        "claimed",
    )
    # Acting again in a recovery generation needs evidence that the result was checked.
    no_evidence = transition("claimed", "external_result_uncertain", generation=2, holder=HOLDER_B)
    assert error_code(service, no_evidence) == "INVALID_TRANSITION"
    with_evidence = transition(
        "claimed",
        "external_result_uncertain",
        generation=2,
        holder=HOLDER_B,
        evidence=True,
        observation="obs-recheck-0001",
    )
    assert ok(service, with_evidence)["stage"] == "external_result_uncertain"


def test_recovery_requirement_survives_an_unresolved_recovery_generation(
    service: FenceService, clock: ManualClock
) -> None:
    ok(service, claim(HOLDER_A))
    ok(service, transition("claimed", "external_result_uncertain"))
    clock.advance(120)
    ok(service, claim(HOLDER_B))
    clock.advance(120)
    third = ok(service, claim(HOLDER_A))
    assert (third["generation"], third["recovery_required"]) == (3, True)


def test_a_recovery_generation_cannot_give_up_without_evidence(
    service: FenceService, clock: ManualClock
) -> None:
    ok(service, claim(HOLDER_A, retry_failed=True))
    ok(service, transition("claimed", "external_result_uncertain"))
    clock.advance(120)  # A may have acted, then crashed
    assert ok(service, claim(HOLDER_B, retry_failed=True))["recovery_required"] is True
    give_up = transition("claimed", "failed", generation=2, holder=HOLDER_B)
    assert error_code(service, give_up) == "INVALID_TRANSITION"
    # Otherwise retry_failed would start generation 3 without the recovery requirement.
    assert (ok(service, status())["stage"], ok(service, status())["generation"]) == ("claimed", 2)
    checked = transition(
        "claimed",
        "failed",
        generation=2,
        holder=HOLDER_B,
        evidence=True,
        observation="obs-checked-not-done",
    )
    assert ok(service, checked)["stage"] == "failed"
    third = ok(service, claim(HOLDER_B, retry_failed=True))
    assert (third["generation"], third["recovery_required"]) == (3, False)


def test_failed_is_reclaimable_only_with_retry_failed(
    service: FenceService, clock: ManualClock
) -> None:
    ok(service, claim(retry_failed=True))
    ok(service, transition("claimed", "failed"))
    retried = ok(service, claim(HOLDER_B, retry_failed=True))
    assert (retried["generation"], retried["recovered"], retried["recovery_required"]) == (
        2,
        True,
        False,
    )


def test_failed_without_retry_is_terminal(service: FenceService) -> None:
    ok(service, claim(retry_failed=False))
    failed = ok(service, transition("claimed", "failed"))
    assert failed["allowed_next_actions"] == ["status"]
    assert error_code(service, claim(HOLDER_B)) == "CHECKPOINT_TERMINAL"


@pytest.mark.parametrize("final", ["caller_verified", "compensated"])
def test_final_stages_are_terminal(service: FenceService, final: str) -> None:
    ok(service, claim())
    ok(service, transition("claimed", "external_result_uncertain"))
    done = ok(service, transition("external_result_uncertain", final, evidence=True))
    assert (done["stage"], done["claim_active"], done["claim_expires_at"]) == (final, False, None)
    assert done["external_proof"] is False
    assert error_code(service, claim()) == "CHECKPOINT_TERMINAL"
    assert error_code(service, abandon()) == "CHECKPOINT_TERMINAL"
    assert error_code(
        service, transition(final, "claimed", observation="obs-after-final-stage")
    ) == ("CHECKPOINT_TERMINAL")


@pytest.mark.parametrize(
    "change",
    [{"claim_ttl": 300}, {"state_ttl": 900}, {"retry_failed": True}],
)
def test_claim_with_other_configuration_conflicts(
    service: FenceService, change: dict[str, object]
) -> None:
    ok(service, claim())
    assert error_code(service, claim(**change)) == "CONFIGURATION_CONFLICT"  # type: ignore[arg-type]


def test_generation_seventeen_is_refused(service: FenceService, clock: ManualClock) -> None:
    ok(service, claim(claim_ttl=60, state_ttl=3600))
    for generation in range(2, 17):
        clock.advance(60)
        assert ok(service, claim(claim_ttl=60, state_ttl=3600))["generation"] == generation
    clock.advance(60)
    assert error_code(service, claim(claim_ttl=60, state_ttl=3600)) == "CHECKPOINT_LIMIT_REACHED"
    assert "claim" not in ok(service, status())["allowed_next_actions"]


def test_claim_never_outlives_the_state(service: FenceService, clock: ManualClock) -> None:
    ok(service, claim(claim_ttl=60, state_ttl=90))
    clock.advance(60)
    second = ok(service, claim(HOLDER_B, claim_ttl=60, state_ttl=90))
    assert second["claim_expires_at"] == second["state_expires_at"]
    assert second["claim_ttl_seconds_remaining"] == 30


# --- transition ----------------------------------------------------------------------------


def _reach(service: FenceService, clock: ManualClock, stage: str, recovery: bool) -> None:
    ok(service, claim(HOLDER_A))
    if recovery:
        ok(
            service,
            transition("claimed", "external_result_uncertain", observation="obs-generation-one"),
        )
        clock.advance(120)
        ok(service, claim(HOLDER_A))
    if stage == "external_result_uncertain":
        ok(
            service,
            transition(
                "claimed",
                stage,
                generation=2 if recovery else 1,
                evidence=recovery,
                observation="obs-reach-uncertain",
            ),
        )


@pytest.mark.parametrize(("from_stage", "to_stage"), sorted(EDGES))
def test_every_published_edge_is_accepted(
    service: FenceService, clock: ManualClock, from_stage: str, to_stage: str
) -> None:
    recovery = (from_stage, to_stage) == ("claimed", "compensated")
    _reach(service, clock, from_stage, recovery)
    generation = 2 if recovery else 1
    result = ok(service, transition(from_stage, to_stage, generation=generation, evidence=True))
    assert (result["stage"], result["transitioned"], result["generation"]) == (
        to_stage,
        True,
        generation,
    )
    assert result["evidence_type"] == "stable_marker_readback"
    assert result["evidence_fingerprint_present"] is True
    assert result["held_by_caller"] is (to_stage == "external_result_uncertain")


def test_uncertain_never_returns_to_claimed(service: FenceService) -> None:
    ok(service, claim())
    ok(service, transition("claimed", "external_result_uncertain"))
    back = transition("external_result_uncertain", "claimed", evidence=True)
    assert error_code(service, back) == "INVALID_TRANSITION"


@pytest.mark.parametrize(
    "payload",
    [
        transition("claimed", "claimed"),
        transition("claimed", "caller_verified"),
        transition("claimed", "caller_verified", evidence_type="manual_review"),
        transition("claimed", "caller_verified", fingerprint=FINGERPRINT),
        transition("claimed", "compensated", evidence=True),
    ],
    ids=[
        "self-loop",
        "verified-without-evidence",
        "type-only",
        "fingerprint-only",
        "compensate-without-action",
    ],
)
def test_graph_and_evidence_rules(service: FenceService, payload: dict[str, object]) -> None:
    ok(service, claim())
    assert error_code(service, payload) == "INVALID_TRANSITION"


def test_leaving_uncertainty_needs_evidence(service: FenceService) -> None:
    ok(service, claim())
    ok(service, transition("claimed", "external_result_uncertain"))
    assert error_code(service, transition("external_result_uncertain", "failed")) == (
        "INVALID_TRANSITION"
    )


def test_transition_needs_the_holder(service: FenceService) -> None:
    ok(service, claim(HOLDER_A))
    assert error_code(service, transition("claimed", "failed", holder=HOLDER_B)) == (
        "CHECKPOINT_NOT_HELD"
    )


def test_transition_after_own_claim_expired_is_not_held(
    service: FenceService, clock: ManualClock
) -> None:
    ok(service, claim())
    clock.advance(120)
    assert error_code(service, transition("claimed", "failed")) == "CHECKPOINT_NOT_HELD"


def test_transition_needs_current_generation_and_stage(service: FenceService) -> None:
    ok(service, claim())
    assert error_code(service, transition("claimed", "failed", generation=2)) == (
        "STALE_GENERATION"
    )
    ok(service, transition("claimed", "external_result_uncertain"))
    assert error_code(
        service, transition("claimed", "failed", observation="obs-stale-view-0001")
    ) == ("STALE_GENERATION")


def test_safety_margin_before_acting(service: FenceService, clock: ManualClock) -> None:
    ok(service, claim(claim_ttl=60))
    clock.advance(45.001)
    late = transition("claimed", "external_result_uncertain", observation="obs-late-act-00001")
    assert error_code(service, late) == "INVALID_TRANSITION"
    # Resolving without acting is still fine inside the margin.
    assert ok(service, transition("claimed", "failed"))["stage"] == "failed"


def test_safety_margin_boundary_is_inclusive(service: FenceService, clock: ManualClock) -> None:
    ok(service, claim(claim_ttl=60))
    clock.advance(45)
    assert ok(service, transition("claimed", "external_result_uncertain"))["claim_active"]


def test_transition_on_unknown_workflow_is_not_found(service: FenceService) -> None:
    assert error_code(service, transition("claimed", "failed")) == "CHECKPOINT_NOT_FOUND"


def test_observation_replay_and_conflict(service: FenceService, clock: ManualClock) -> None:
    ok(service, claim())
    first = ok(service, transition("claimed", "external_result_uncertain", observation="o" * 16))
    assert (first["transitioned"], first["observation_replayed"]) == (True, False)
    clock.advance(5)
    again = ok(service, transition("claimed", "external_result_uncertain", observation="o" * 16))
    assert (again["transitioned"], again["observation_replayed"]) == (False, True)
    assert again["stage"] == "external_result_uncertain"
    different = transition("claimed", "failed", observation="o" * 16)
    assert error_code(service, different) == "OBSERVATION_CONFLICT"


def test_replay_still_answers_after_the_claim_is_released(service: FenceService) -> None:
    ok(service, claim())
    body = transition("claimed", "failed", observation="obs-final-report")
    ok(service, body)
    assert ok(service, body)["observation_replayed"] is True


# --- status and abandon ------------------------------------------------------------------------


def test_status_of_unknown_workflow(service: FenceService) -> None:
    assert error_code(service, status()) == "CHECKPOINT_NOT_FOUND"
    assert error_code(service, abandon()) == "CHECKPOINT_NOT_FOUND"


def test_status_reads_without_a_caller(service: FenceService, clock: ManualClock) -> None:
    ok(service, claim())
    clock.advance(20)
    seen = ok(service, status())
    assert seen["held_by_caller"] is None
    assert (seen["acquired"], seen["claim_ttl_seconds_remaining"]) == (False, 100)
    assert seen["allowed_next_actions"] == ["transition", "status", "abandon"]


def test_abandon_releases_a_pre_action_claim(service: FenceService) -> None:
    ok(service, claim(HOLDER_A))
    released = ok(service, abandon(HOLDER_A))
    assert (released["abandoned"], released["claim_active"], released["claim_expires_at"]) == (
        True,
        False,
        None,
    )
    assert released["allowed_next_actions"] == ["claim", "status"]
    assert ok(service, abandon(HOLDER_A))["abandoned"] is True  # a repeat is a no-op
    taken = ok(service, claim(HOLDER_B))
    assert (taken["generation"], taken["recovered"], taken["recovery_required"]) == (
        2,
        True,
        False,
    )


def test_abandon_rules(service: FenceService) -> None:
    ok(service, claim(HOLDER_A))
    assert error_code(service, abandon(HOLDER_B)) == "CHECKPOINT_NOT_HELD"
    assert error_code(service, abandon(HOLDER_A, generation=2)) == "STALE_GENERATION"
    ok(service, transition("claimed", "external_result_uncertain"))
    assert error_code(service, abandon(HOLDER_A)) == "INVALID_TRANSITION"


# --- expiry, privacy, input ----------------------------------------------------------------------


def test_state_expires_after_state_ttl(service: FenceService, clock: ManualClock) -> None:
    ok(service, claim(state_ttl=600))
    clock.advance(599)
    assert ok(service, status())["state_ttl_seconds_remaining"] == 1
    clock.advance(1)
    assert error_code(service, status()) == "CHECKPOINT_NOT_FOUND"
    fresh = ok(service, claim(HOLDER_B, retry_failed=True))
    assert (fresh["generation"], fresh["recovered"]) == (1, False)


def test_raw_identifiers_are_never_stored_or_returned(
    service: FenceService, backend: FenceBackend
) -> None:
    observation = "obs-private-observation-key"
    replies = [
        run(service, claim()),
        run(service, transition("claimed", "external_result_uncertain", observation=observation)),
        run(service, claim(HOLDER_B)),
        run(service, status()),
    ]
    stored = backend.stored_bytes()
    assert b"hmac-sha256" in stored or b"cp:" in stored  # we really read the store
    for raw in (NAMESPACE, WORKFLOW, HOLDER_A, HOLDER_B, observation, "31a0dca1"):
        assert raw.encode() not in stored
        for reply in replies:
            assert raw not in str(reply.body)


def test_invalid_input_names_the_field_not_the_value(service: FenceService) -> None:
    bad = claim(claim_ttl=59) | {"holder": "short-secret"}
    reply = run(service, bad)
    assert reply.body["error"]["code"] == "INVALID_INPUT"
    assert reply.status == 400
    assert "short-secret" not in str(reply.body)
    assert "holder" in reply.body["error"]["message"]
    assert error_code(service, {"action": "explode"}) == "INVALID_INPUT"
    assert error_code(service, claim() | {"extra": 1}) == "INVALID_INPUT"
    assert error_code(service, claim() | {"namespace": "scope:not-a-uuid"}) == "INVALID_INPUT"


def test_pause_and_resume(service: FenceService, backend_factory: object) -> None:
    service.pause()
    reply = run(service, status())
    assert reply.body["error"]["code"] == "TOOL_PAUSED"
    assert reply.body["error"]["retryable"] is True
    service.resume()
    assert error_code(service, status()) == "CHECKPOINT_NOT_FOUND"


def test_pause_is_seen_by_another_connection(backend_factory: object, clock: ManualClock) -> None:
    factory = backend_factory
    first = FenceService(factory(), KEY, clock)  # type: ignore[operator]
    second = FenceService(factory(), KEY, clock)  # type: ignore[operator]
    first.pause()
    assert run(second, status()).body["error"]["code"] == "TOOL_PAUSED"
    first.resume()
    assert run(second, status()).body["error"]["code"] == "CHECKPOINT_NOT_FOUND"
    first.close()
    second.close()


def test_rate_limits_per_client_and_global(backend: FenceBackend, clock: ManualClock) -> None:
    service = FenceService(backend, KEY, clock, RateLimits(client_rpm=2, global_rpm=3))
    clock.advance(10)
    assert run(service, status(), "a").body["error"]["code"] == "CHECKPOINT_NOT_FOUND"
    run(service, status(), "a")
    limited = run(service, status(), "a")
    assert (limited.status, limited.body["error"]["code"]) == (429, "RATE_LIMITED")
    assert limited.retry_after == 50
    assert run(service, status(), "b").body["error"]["code"] == "CHECKPOINT_NOT_FOUND"
    assert run(service, status(), "c").body["error"]["code"] == "RATE_LIMITED"  # global
    clock.advance(50)
    assert run(service, status(), "a").body["error"]["code"] == "CHECKPOINT_NOT_FOUND"


def test_idempotency_key_replays_the_first_reply(service: FenceService, clock: ManualClock) -> None:
    first = service.execute(claim(), client_id="t", idempotency_key="idem-0001-claim")
    clock.advance(10)
    again = service.execute(claim(), client_id="t", idempotency_key="idem-0001-claim")
    assert again.replayed
    assert again.body == first.body
    other = service.execute(claim(HOLDER_B), client_id="t", idempotency_key="idem-0001-claim")
    assert other.body["error"]["code"] == "INVALID_INPUT"
    clock.advance(24 * 3600 - 10 - 1)  # 24 h - 1 s after the first use: still kept
    kept = service.execute(claim(), client_id="t", idempotency_key="idem-0001-claim")
    assert kept.replayed
    assert kept.body == first.body
    clock.advance(2)  # 24 h + 1 s: forgotten, so the claim runs again (the state expired too)
    expired = service.execute(claim(), client_id="t", idempotency_key="idem-0001-claim")
    assert not expired.replayed
    assert expired.body["result"]["observed_at"] != first.body["result"]["observed_at"]
    assert expired.body["result"]["acquired"] is True


def test_example_input_is_valid() -> None:
    from workrail.fence.describe import EXAMPLE_INPUT

    assert INPUT_ADAPTER.validate_python(EXAMPLE_INPUT).action == "claim"
