"""WorkRail's current language run end to end over MCP by a scripted agent that reads only
the answers: artifact-decided loops, assessments, output contracts, `in`/`contains`,
parallel steps, human approval gates, notesOptional and carried fields. Each fixture runs
on the files backend and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripted_agent import (
    Output,
    Run,
    Script,
    ScriptedAgent,
    Visit,
    scripted,
    workrail_client,
    workrail_server,
)
from workrail.workflow.contracts import CONTRACTS

FIXTURES = Path(__file__).resolve().parent.parent / "workflow" / "fixtures" / "v3" / "runtime"
pytestmark = pytest.mark.anyio


@pytest.fixture(params=["files", "postgres"])
def store_env(request: pytest.FixtureRequest) -> dict[str, str]:
    if request.param == "files":
        return {}
    return {"WORKRAIL_STORE_URL": str(request.getfixturevalue("postgres_url"))}


async def drive(
    tmp_path: Path,
    env: dict[str, str],
    workflow_id: str,
    script: Script,
    context: dict[str, Any] | None = None,
) -> Run:
    async with workrail_client(tmp_path, [FIXTURES], env=env) as client:
        return await ScriptedAgent(client, script).run(workflow_id, context)


def blocked_answers(run: Run) -> list[dict[str, Any]]:
    return [t.answer for t in run.turns if t.answer.get("kind") == "blocked"]


def codes(answer: dict[str, Any]) -> list[str]:
    return [b["code"] for b in answer.get("blockers", {}).get("blockers", [])]


def sent_artifacts(answer: dict[str, Any]) -> list[Any]:
    return list(answer["nextCall"]["params"].get("output", {}).get("artifacts", []))


# --- loops decided by artifacts ------------------------------------------------------------


def decisions(loop_id: str, sequence: list[str]) -> Script:
    def script(visit: Visit) -> Output:
        decision = sequence[min(visit.visit, len(sequence) - 1)]
        artifact = {"kind": "wr.loop_control", "loopId": loop_id, "decision": decision}
        return Output(notes=f"Pass {visit.visit + 1}: {decision}.", artifacts=[artifact])

    return script


async def test_artifact_loops_enter_without_a_decision_and_exit_on_stop(
    tmp_path: Path, store_env: dict[str, str]
) -> None:
    script = scripted(
        {
            "polish-pass": decisions("polish", ["continue", "stop"]),
            "retry-pass": decisions("retry", ["stop"]),
        }
    )
    run = await drive(tmp_path, store_env, "v3-artifact-loop", script)
    assert run.complete
    assert run.blocked == []
    # No artifact was sent before either loop: both were entered all the same.
    assert run.steps == ["plan", "polish-pass", "polish-pass", "retry-pass", "wrap-up"]


async def test_artifact_loops_exit_at_max_iterations(
    tmp_path: Path, store_env: dict[str, str]
) -> None:
    script = scripted(
        {
            "polish-pass": decisions("polish", ["continue"]),
            "retry-pass": decisions("retry", ["continue"]),
        }
    )
    run = await drive(tmp_path, store_env, "v3-artifact-loop", script)
    assert run.complete
    assert run.steps == ["plan", *["polish-pass"] * 3, *["retry-pass"] * 2, "wrap-up"]


async def test_a_missing_loop_decision_is_answered_with_a_ready_template(
    tmp_path: Path, store_env: dict[str, str]
) -> None:
    run = await drive(tmp_path, store_env, "v3-artifact-loop", scripted({}))
    assert run.complete
    assert run.blocked == [*["polish-pass"] * 3, *["retry-pass"] * 2]
    blocked = blocked_answers(run)
    assert [sent_artifacts(a) for a in blocked[:1]] == [
        [{"kind": "wr.loop_control", "loopId": "polish", "decision": "continue"}]
    ]
    assert sent_artifacts(blocked[-1]) == [
        {"kind": "wr.loop_control", "loopId": "retry", "decision": "continue"}
    ]
    assert all(codes(a) == ["MISSING_REQUIRED_OUTPUT"] for a in blocked)


# --- assessments ---------------------------------------------------------------------------


def assessment(assessment_id: str, **dimensions: Any) -> dict[str, Any]:
    return {"kind": "wr.assessment", "assessmentId": assessment_id, "dimensions": dimensions}


def diagnose(visit: Visit) -> Output:
    if "ASSESSMENT_FOLLOWUP_REQUIRED" in codes(visit.answer):
        ready = assessment(
            "readiness", evidence="high", coverage={"level": "Medium", "rationale": "docs left"}
        )
        return Output(notes="Anchored every finding.", artifacts=[ready])
    # First visit: no assessment at all; after that block, the nextCall's template as is.
    return Output(notes="Diagnosed the failure.")


def decide(visit: Visit) -> Output:
    ready = assessment("readiness", evidence="high", coverage="high")
    if not visit.blocked:
        return Output(
            notes="Chose a fix.",
            artifacts=[assessment("readiness", evidence="high", coverage="maybe")],
        )
    if "INVALID_REQUIRED_OUTPUT" in codes(visit.answer):
        return Output(notes="Chose a fix.", artifacts=[ready, assessment("risk", blast="LARGE")])
    return Output(notes="Split the fix.", artifacts=[ready, assessment("risk", blast="small")])


async def test_assessments_block_with_templates_and_follow_ups(
    tmp_path: Path, store_env: dict[str, str]
) -> None:
    script = scripted({"diagnose": diagnose, "decide": decide})
    run = await drive(tmp_path, store_env, "v3-assessment-gate", script)
    assert run.complete
    assert run.steps == ["diagnose", "decide", "handoff"]
    missing, followup, invalid, risky = blocked_answers(run)

    assert codes(missing) == ["MISSING_REQUIRED_OUTPUT"]
    assert sent_artifacts(missing) == [
        assessment("readiness", evidence="low", coverage="low")  # first allowed levels
    ]

    assert codes(followup) == ["ASSESSMENT_FOLLOWUP_REQUIRED"]
    (blocker,) = followup["blockers"]["blockers"]
    assert blocker["pointer"] == {
        "kind": "assessment_dimension",
        "assessmentId": "readiness",
        "dimensionId": "evidence",
    }
    assert followup["assessmentFollowup"]["guidance"] == (
        "Anchor every finding to a file and a line."
    )
    assert followup["retryable"] is True
    assert "retryAckToken" in followup
    # After a follow-up, the template's levels are the first that trigger no consequence.
    assert sent_artifacts(followup) == [assessment("readiness", evidence="high", coverage="medium")]

    assert codes(invalid) == ["INVALID_REQUIRED_OUTPUT"]
    issues = " ".join(invalid["validation"]["issues"])
    assert "'maybe' is not a level of 'coverage'" in issues
    assert "No assessment artifact reports 'risk'" in issues
    assert sent_artifacts(invalid) == [
        assessment("readiness", evidence="low", coverage="low"),
        assessment("risk", blast="small"),
    ]

    # "LARGE" is read as the canonical "large", which the risk consequence is scoped to.
    assert codes(risky) == ["ASSESSMENT_FOLLOWUP_REQUIRED"]
    assert risky["blockers"]["blockers"][0]["pointer"]["assessmentId"] == "risk"
    # The risk consequence is scoped: readiness keeps its first levels, risk avoids "large".
    assert sent_artifacts(risky) == [
        assessment("readiness", evidence="low", coverage="low"),
        assessment("risk", blast="small"),
    ]
    prompt = run.prompts["diagnose"][0]
    assert "**ASSESSMENT (System):**" in prompt
    assert "evidence: one of low | high" in prompt

    # The answer that completed the step says what was recorded, normalised levels noted.
    after = next(
        t.answer for t in run.turns if t.answer.get("pending", {}).get("stepId") == "decide"
    )
    (recorded,) = after["stepContext"]["assessments"]
    assert recorded == {
        "assessmentId": "readiness",
        "dimensions": [
            {"dimensionId": "evidence", "level": "high"},
            {"dimensionId": "coverage", "level": "medium", "rationale": "docs left"},
        ],
        "normalizationNotes": ["'coverage': read 'Medium' as 'medium'."],
    }
    handoff = next(
        t.answer for t in run.turns if t.answer.get("pending", {}).get("stepId") == "handoff"
    )
    assert [a["assessmentId"] for a in handoff["stepContext"]["assessments"]] == [
        "readiness",
        "risk",
    ]
    assert "stepContext" not in run.last  # the handoff step asks for no assessment


# --- output contracts ----------------------------------------------------------------------


async def test_every_output_contract_blocks_with_a_template_that_passes(
    tmp_path: Path, store_env: dict[str, str]
) -> None:
    def review(visit: Visit) -> Output:
        if visit.blocked:
            return Output(notes="Reviewed.")
        return Output(notes="Reviewed.", artifacts=[{"kind": "wr.review_verdict", "verdict": "ok"}])

    run = await drive(tmp_path, store_env, "v3-output-contracts", scripted({"review": review}))
    assert run.complete
    steps = ["discover", "differentiate", "shape", "code", "review", "gate"]
    assert run.steps == steps
    assert run.blocked == steps
    refs = {
        "discover": "wr.contracts.discovery_handoff",
        "differentiate": "wr.contracts.differentiation_handoff",
        "shape": "wr.contracts.shaping_handoff",
        "code": "wr.contracts.coding_handoff",
        "review": "wr.contracts.review_verdict",
        "gate": "wr.contracts.gate_verdict",
    }
    for step, answer in zip(steps, blocked_answers(run), strict=True):
        spec = CONTRACTS[refs[step]]
        expected = "INVALID_REQUIRED_OUTPUT" if step == "review" else "MISSING_REQUIRED_OUTPUT"
        assert codes(answer) == [expected], step
        (template,) = sent_artifacts(answer)
        assert template["kind"] == spec.kind
        assert spec.issues(template) == []
        assert f"Artifact contract: {spec.ref}" in run.prompts[step][0]
    review_block = blocked_answers(run)[4]
    assert any("verdict" in issue for issue in review_block["validation"]["issues"])


# --- conditions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ({"tier": "Gold", "areas": ["ui", "api"]}, ["start", "premium", "ui-work", "finish"]),
        ({"tier": "silver", "areas": "backend"}, ["start", "standard", "no-ui", "finish"]),
    ],
)
async def test_in_and_contains_choose_steps_both_ways(
    tmp_path: Path, store_env: dict[str, str], context: dict[str, Any], expected: list[str]
) -> None:
    run = await drive(tmp_path, store_env, "v3-conditions", scripted({}), context)
    assert run.complete
    assert run.steps == expected


# --- parallel steps ------------------------------------------------------------------------


@pytest.mark.parametrize("perf", [False, True])
async def test_a_parallel_step_is_rendered_as_subagent_instructions(
    tmp_path: Path, store_env: dict[str, str], perf: bool
) -> None:
    run = await drive(tmp_path, store_env, "v3-parallel", scripted({}), {"perfSensitive": perf})
    assert run.complete
    assert run.steps == ["design", "fan-out", "fix"]
    prompt = run.prompts["fan-out"][0]
    assert f"Delegate this step to {3 if perf else 2} subagent(s)" in prompt
    assert "1. Run workflow 'team.security-review': Look for security problems" in prompt
    assert ("team.performance-review" in prompt) is perf
    assert "Hand it these context values (yours → its): target → scope" in prompt
    assert "Tools it may use: read_file" in prompt
    assert "Then: Merge the reviews into one list of findings, worst first." in prompt


# --- human approval ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("audience", "gated"), [("public", ["publish", "announce"]), ("internal", ["publish"])]
)
async def test_human_approval_waits_for_the_user(
    tmp_path: Path, store_env: dict[str, str], audience: str, gated: list[str]
) -> None:
    run = await drive(
        tmp_path, store_env, "v3-human-approval", scripted({}), {"audience": audience}
    )
    assert run.complete
    assert run.confirmations == gated
    assert "**HUMAN APPROVAL REQUIRED:**" in run.prompts["publish"][0]
    assert ("HUMAN APPROVAL" in run.prompts["announce"][0]) is (audience == "public")
    assert "HUMAN APPROVAL" not in run.prompts["draft"][0]


# --- notes ---------------------------------------------------------------------------------


async def test_notes_are_required_unless_the_step_or_its_loop_says_optional(
    tmp_path: Path, store_env: dict[str, str]
) -> None:
    def silent_first(visit: Visit) -> Output:
        return Output(notes="Done, with notes." if visit.blocked else None)

    script = scripted({}, fallback=silent_first)
    run = await drive(tmp_path, store_env, "v3-notes-optional", script, {"folders": ["a", "b"]})
    assert run.complete
    assert run.steps == ["record", "tick", "sweep-folder", "sweep-folder", "close"]
    assert run.blocked == ["record", "close"]
    for answer in blocked_answers(run):
        assert codes(answer) == ["MISSING_REQUIRED_NOTES"]
        assert "output" not in answer["nextCall"]["params"]  # nothing to template


# --- carried fields ------------------------------------------------------------------------


async def test_extension_points_audit_verification_and_model_tier_are_kept(
    tmp_path: Path, store_env: dict[str, str]
) -> None:
    async with workrail_server(tmp_path, [FIXTURES], env=store_env) as (client, engine):
        run = await ScriptedAgent(client).run("v3-carried-fields")
        session_id = str(run.last["sessionId"])
        workflow_hash = engine.deps.sessions.read(
            session_id, lambda log: next(iter(log.index.runs.values())).started.data.workflowHash
        ).unwrap()
        pinned = engine.deps.pinned.get(workflow_hash).unwrap()
    assert run.complete
    assert run.steps == ["change", "finish"]
    assert pinned is not None
    definition = pinned["definition"]
    assert definition["modelTier"] == "mid"
    assert definition["extensionPoints"][0]["slotId"] == "reviewer"
    change = definition["steps"][0]
    assert change["audit"]["rubric"] == ["tests pass", "no new warnings"]
    assert change["verification"]["command"] == "make check"
    assert change["modelTier"] == "heavy"
