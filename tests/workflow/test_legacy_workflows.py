"""Drive the former bundled workflows (now v1.4-era fixtures, the files the aliases
`coding-task`, `bug-investigation` and `code-review` used to serve) the way an agent
would, through the advance API. The library that replaced them is driven end to end in
tests/workflows_library."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workrail.workflow import Advanced, AdvanceRequest, compile_definition, decide_advance, start
from workrail.workflow.prompts import render_pending

WORKFLOWS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "legacy_workflows"
ATTEMPT = "attempt_klnxots3oln5nsrbniarnqfm6i"
LONG_NOTES = (
    "Approve. Verification: ran the test suite and linters, all green. Test added. "
    "The traced path and evidence are described here in enough detail for review." * 2
)


def drive(workflow_id: str, context_by_step: dict[str, dict[str, Any]]) -> list[str]:
    definition = json.loads((WORKFLOWS / f"{workflow_id}.json").read_text())
    wf = compile_definition(definition).unwrap()
    context: dict[str, Any] = {}
    snapshot = start(wf, context).unwrap().snapshot()
    visited: list[str] = []
    for _ in range(100):
        pending = snapshot.state.pending_step if hasattr(snapshot.state, "pending_step") else None
        if pending is None:
            return visited
        prompt = render_pending(wf, pending, context)
        assert prompt.prompt
        assert prompt.title
        visited.append(pending.key)
        context = {**context, **context_by_step.get(pending.key, {})}
        decision = decide_advance(
            wf,
            snapshot,
            AdvanceRequest(attempt_id=ATTEMPT, context=context, notes_markdown=LONG_NOTES),
        ).unwrap()
        assert isinstance(decision, Advanced), (pending.key, decision)
        snapshot = decision.snapshot
    raise AssertionError("did not complete")


def test_coding_task_small_with_one_failed_check() -> None:
    visited = drive(
        "coding-task",
        {
            "understand": {"taskComplexity": "small"},
            "plan": {"planSlices": ["parser", "cli"]},
            "verify@0::run-checks": {"checksPassed": False},
            "verify@1::run-checks": {"checksPassed": True},
        },
    )
    assert visited == [
        "understand",
        "plan",
        "implement@0::implement-slice",
        "implement@1::implement-slice",
        "verify@0::run-checks",
        "verify@0::fix-failures",
        "verify@1::run-checks",
        "summarize",
    ]


def test_coding_task_large_asks_for_confirmation() -> None:
    visited = drive(
        "coding-task",
        {
            "understand": {"taskComplexity": "large"},
            "plan": {"planSlices": ["one"]},
            "verify@0::run-checks": {"checksPassed": True},
        },
    )
    assert visited[:3] == ["understand", "plan", "confirm-plan"]


def test_bug_investigation_stops_testing_after_root_cause() -> None:
    visited = drive(
        "bug-investigation",
        {
            "reproduce": {"reproduced": True},
            "hypotheses": {"hypotheses": ["cache", "race", "config"], "rootCauseFound": False},
            "test-hypotheses@1::test-hypothesis": {"rootCauseFound": True, "rootCause": "race"},
        },
    )
    assert visited == [
        "capture",
        "reproduce",
        "hypotheses",
        "test-hypotheses@0::test-hypothesis",
        "test-hypotheses@1::test-hypothesis",
        "fix",
        "report",
    ]


def test_bug_investigation_escalates_without_root_cause() -> None:
    visited = drive(
        "bug-investigation",
        {
            "reproduce": {"reproduced": False},
            "hypotheses": {"hypotheses": ["a"], "rootCauseFound": False},
        },
    )
    assert "ask-for-details" in visited
    assert "escalate" in visited
    assert "fix" not in visited


def test_code_review_with_security_pass_and_findings_loop() -> None:
    visited = drive(
        "code-review",
        {
            "scope": {"reviewAreas": ["api", "tests"], "riskLevel": "high"},
            "triage": {"openBlockingFindings": 2},
            "resolve-findings@0::resolve-finding": {"openBlockingFindings": 1},
            "resolve-findings@1::resolve-finding": {"openBlockingFindings": 0},
        },
    )
    assert visited == [
        "scope",
        "review-areas@0::review-area",
        "review-areas@1::review-area",
        "security-pass",
        "triage",
        "resolve-findings@0::resolve-finding",
        "resolve-findings@1::resolve-finding",
        "verdict",
    ]
