"""The paths through the library the end-to-end tests walk.

Each workflow has at least two: together they take every condition both ways and leave
every loop both by its decision and by its maxIterations guard (or, for forEach, by
running out of items). `expected` is the exact order of pending steps; a routine called
through templateCall appears as its expanded steps (`caller__step`).
"""

from __future__ import annotations

from typing import Final

from tests.workflows_library.agent import LibraryPath, routine

CG = "context-gathering"


def _times(n: int, *steps: str | list[str]) -> list[str]:
    out: list[str] = []
    for _ in range(n):
        for s in steps:
            out.extend([s] if isinstance(s, str) else s)
    return out


def _coding() -> list[LibraryPath]:
    tests = routine("run-tests", "test-run")
    tail = [*routine("verify", "final-verification"), *routine("handoff", "handoff")]
    return [
        LibraryPath(
            "wr.coding-task",
            "small-low-risk-one-failed-run",
            careless=frozenset({"triage"}),
            context={
                "triage": [{"taskComplexity": "small", "riskLevel": "low"}],
                "plan": [{"planSlices": ["parser", "cli"]}],
                "run-tests__run": [{"testsFailing": 1}, {"testsFailing": 0}],
            },
            decisions={"test-loop": ["continue", "stop"]},
            expected=[
                "triage",
                *routine("gather-context", CG),
                "plan",
                "implement-slice",
                "implement-slice",
                *tests,
                "fix-failures",
                "test-decision",
                *tests,
                "test-decision",
                *tail,
            ],
        ),
        LibraryPath(
            "wr.coding-task",
            "large-high-risk-review-to-the-guard",
            withheld=frozenset({"handoff__write"}),
            context={
                "triage": [{"taskComplexity": "large", "riskLevel": "high"}],
                "plan": [{"planSlices": ["schema"]}],
                "run-tests__run": [{"testsFailing": 0}],
            },
            decisions={"plan-review-loop": ["continue"], "test-loop": ["continue"]},
            expected=[
                "triage",
                *routine("gather-context", CG),
                "plan",
                *_times(3, routine("review-plan", "plan-review"), "plan-review-decision"),
                "approve-plan",
                "implement-slice",
                *_times(4, tests, "test-decision"),
                "security-pass",
                *tail,
            ],
        ),
        LibraryPath(
            "wr.coding-task",
            "medium-review-stops-when-clean",
            context={
                "triage": [{"taskComplexity": "medium", "riskLevel": "medium"}],
                "plan": [{"planSlices": ["api", "docs"]}],
                "run-tests__run": [{"testsFailing": 0}],
            },
            decisions={"plan-review-loop": ["continue", "stop"]},
            expected=[
                "triage",
                *routine("gather-context", CG),
                "plan",
                *_times(2, routine("review-plan", "plan-review"), "plan-review-decision"),
                "implement-slice",
                "implement-slice",
                *tests,
                "test-decision",
                *tail,
            ],
        ),
    ]


def _bug() -> list[LibraryPath]:
    return [
        LibraryPath(
            "wr.bug-investigation",
            "regression-found-and-fixed",
            careless=frozenset({"capture"}),
            context={
                "capture": [{"riskLevel": "high", "regressionSuspected": True}],
                "reproduce": [{"reproduced": False}, {"reproduced": True}],
                "rank-hypotheses": [
                    {"hypotheses": ["cache", "race", "config"], "rootCauseFound": False}
                ],
                "test-hypothesis": [
                    {"rootCauseFound": False},
                    {"rootCauseFound": True, "rootCause": "two writers race"},
                ],
                "run-tests__run": [{"testsFailing": 0}],
            },
            decisions={"reproduction-loop": ["continue", "stop"]},
            levels={"root-cause-confidence": ["low", "high"]},
            expected=[
                "capture",
                *routine("gather-context", CG),
                "reproduce",
                "ask-for-details",
                "reproduction-decision",
                "reproduce",
                "reproduction-decision",
                "bisect",
                "rank-hypotheses",
                "test-hypothesis",
                "test-hypothesis",
                *routine("challenge-cause", "hypothesis-challenge"),
                "assess-cause",
                "fix",
                *routine("run-tests", "test-run"),
                "fix-decision",
                *routine("handoff", "handoff"),
            ],
        ),
        LibraryPath(
            "wr.bug-investigation",
            "never-reproduced-escalated",
            context={
                "capture": [{"riskLevel": "low", "regressionSuspected": False}],
                "reproduce": [{"reproduced": False}],
                "rank-hypotheses": [{"hypotheses": ["locale"], "rootCauseFound": False}],
                "test-hypothesis": [{"rootCauseFound": False}],
            },
            decisions={"reproduction-loop": ["continue"]},
            expected=[
                "capture",
                *routine("gather-context", CG),
                *_times(3, "reproduce", "ask-for-details", "reproduction-decision"),
                "rank-hypotheses",
                "test-hypothesis",
                *routine("challenge-cause", "hypothesis-challenge"),
                "escalate",
                *routine("handoff", "handoff"),
            ],
        ),
        LibraryPath(
            "wr.bug-investigation",
            "fix-needs-three-rounds",
            context={
                "capture": [{"riskLevel": "medium", "regressionSuspected": False}],
                "reproduce": [{"reproduced": True}],
                "rank-hypotheses": [{"hypotheses": ["off-by-one"], "rootCauseFound": False}],
                "test-hypothesis": [
                    {"rootCauseFound": True, "rootCause": "the last page is dropped"}
                ],
                "run-tests__run": [{"testsFailing": 2}],
            },
            decisions={"fix-loop": ["continue"]},
            expected=[
                "capture",
                *routine("gather-context", CG),
                "reproduce",
                "reproduction-decision",
                "rank-hypotheses",
                "test-hypothesis",
                *routine("challenge-cause", "hypothesis-challenge"),
                "assess-cause",
                *_times(3, "fix", routine("run-tests", "test-run"), "fix-decision"),
                *routine("handoff", "handoff"),
            ],
        ),
    ]


def _review() -> list[LibraryPath]:
    tests = routine("run-tests", "test-run")
    return [
        LibraryPath(
            "wr.code-review",
            "high-risk-second-look-to-the-guard",
            careless=frozenset({"scope"}),
            context={"scope": [{"reviewAreas": ["api", "storage"], "riskLevel": "high"}]},
            decisions={"second-look-loop": ["continue"]},
            levels={"verdict-confidence": ["low", "high"]},
            expected=[
                "scope",
                *routine("gather-context", CG),
                "review-area",
                "review-area",
                "security-pass",
                *tests,
                *_times(2, "second-look", "second-look-decision"),
                "calibrate",
                "verdict",
            ],
        ),
        LibraryPath(
            "wr.code-review",
            "low-risk-verdict-retried-for-its-artifact",
            withheld=frozenset({"verdict"}),
            context={"scope": [{"reviewAreas": ["docs"], "riskLevel": "low"}]},
            expected=[
                "scope",
                *routine("gather-context", CG),
                "review-area",
                *tests,
                "second-look",
                "second-look-decision",
                "calibrate",
                "verdict",
            ],
        ),
    ]


def _docs() -> list[LibraryPath]:
    head = ["triage", *routine("gather-context", CG), "find-drift"]
    tail = [*routine("verify", "final-verification"), "summary"]
    return [
        LibraryPath(
            "wr.documentation-update",
            "large-with-examples-to-the-guard",
            careless=frozenset({"triage"}),
            context={
                "triage": [
                    {
                        "docTargets": ["docs/cli.md", "docs/config.md"],
                        "taskComplexity": "large",
                        "hasCodeExamples": True,
                    }
                ]
            },
            decisions={"example-loop": ["continue"]},
            expected=[
                *head,
                "outline",
                "update-page",
                "update-page",
                *_times(3, "run-examples", "example-decision"),
                *tail,
            ],
        ),
        LibraryPath(
            "wr.documentation-update",
            "small-examples-work-first-time",
            context={
                "triage": [
                    {
                        "docTargets": ["README.md"],
                        "taskComplexity": "small",
                        "hasCodeExamples": True,
                    }
                ]
            },
            expected=[*head, "update-page", "run-examples", "example-decision", *tail],
        ),
        LibraryPath(
            "wr.documentation-update",
            "no-examples",
            context={
                "triage": [
                    {
                        "docTargets": ["docs/faq.md"],
                        "taskComplexity": "small",
                        "hasCodeExamples": False,
                    }
                ]
            },
            expected=[*head, "update-page", *tail],
        ),
    ]


def _tests() -> list[LibraryPath]:
    head = ["target", *routine("gather-context", CG), "inventory"]
    tests = routine("run-tests", "test-run")
    return [
        LibraryPath(
            "wr.test-generation",
            "high-risk-all-breaks-caught",
            careless=frozenset({"target"}),
            context={
                "target": [
                    {
                        "riskLevel": "high",
                        "testTargets": ["rounds half to even", "rejects negatives"],
                    }
                ]
            },
            expected=[
                *head,
                "write-test",
                "write-test",
                *tests,
                "mutate",
                "mutation-decision",
                "coverage",
                "summary",
            ],
        ),
        LibraryPath(
            "wr.test-generation",
            "low-risk-breaks-survive-to-the-guard",
            context={"target": [{"riskLevel": "low", "testTargets": ["parses empty input"]}]},
            decisions={"mutation-loop": ["continue"]},
            expected=[
                *head,
                "write-test",
                *tests,
                *_times(3, "mutate", "mutation-decision"),
                "summary",
            ],
        ),
    ]


def _exploration() -> list[LibraryPath]:
    head = ["frame", *routine("gather-context", CG), "sources"]
    challenge = routine("challenge", "hypothesis-challenge")
    return [
        LibraryPath(
            "wr.exploration",
            "large-external-question",
            careless=frozenset({"frame"}),
            context={"frame": [{"taskComplexity": "large", "researchKind": "external"}]},
            decisions={"evidence-loop": ["continue", "stop"]},
            expected=[
                *head,
                *_times(2, "investigate", "evidence-decision"),
                *challenge,
                "compare-options",
                "report",
            ],
        ),
        LibraryPath(
            "wr.exploration",
            "small-codebase-question-to-the-guard",
            context={"frame": [{"taskComplexity": "small", "researchKind": "codebase"}]},
            decisions={"evidence-loop": ["continue"]},
            expected=[*head, *_times(4, "investigate", "evidence-decision"), *challenge, "report"],
        ),
    ]


def _tickets() -> list[LibraryPath]:
    head = ["intake", *routine("gather-context", CG)]
    return [
        LibraryPath(
            "wr.ticket-creation",
            "one-ticket",
            careless=frozenset({"intake"}),
            context={
                "intake": [{"taskComplexity": "small"}],
                "single-ticket": [{"tickets": ["Show totals"]}],
            },
            expected=[*head, "single-ticket", "check-tickets", "quality-decision", "publish"],
        ),
        LibraryPath(
            "wr.ticket-creation",
            "epic-checked-to-the-guard",
            context={
                "intake": [{"taskComplexity": "large"}],
                "decompose": [{"tickets": ["Login page", "Token refresh", "Audit log"]}],
            },
            decisions={"quality-loop": ["continue"]},
            expected=[
                *head,
                "decompose",
                "write-ticket",
                "write-ticket",
                "write-ticket",
                *_times(2, "check-tickets", "quality-decision"),
                "publish",
            ],
        ),
    ]


def _architecture() -> list[LibraryPath]:
    head = ["scope", *routine("gather-context", CG), "map"]
    challenge = routine("challenge", "hypothesis-challenge")
    return [
        LibraryPath(
            "wr.architecture-audit",
            "large-two-dimensions",
            careless=frozenset({"scope"}),
            context={
                "scope": [
                    {"auditDimensions": ["modularity", "reliability"], "taskComplexity": "large"}
                ]
            },
            decisions={"synthesis-loop": ["continue", "stop"]},
            expected=[
                *head,
                "audit-dimension",
                "audit-dimension",
                *_times(2, "reconcile", "synthesis-decision"),
                *challenge,
                "deep-dive",
                "report",
            ],
        ),
        LibraryPath(
            "wr.architecture-audit",
            "small-synthesis-to-the-guard",
            context={"scope": [{"auditDimensions": ["security"], "taskComplexity": "small"}]},
            decisions={"synthesis-loop": ["continue"]},
            expected=[
                *head,
                "audit-dimension",
                *_times(3, "reconcile", "synthesis-decision"),
                *challenge,
                "report",
            ],
        ),
    ]


def _readiness() -> list[LibraryPath]:
    head = ["scope", *routine("gather-context", CG)]
    return [
        LibraryPath(
            "wr.production-readiness",
            "critical-service-weak-evidence-first",
            careless=frozenset({"scope"}),
            context={
                "scope": [
                    {"riskLevel": "high", "readinessAreas": ["observability", "failure handling"]}
                ]
            },
            levels={"readiness-evidence": ["low", "high"]},
            expected=[
                *head,
                "check-area",
                "check-area",
                "capacity",
                "close-unknowns",
                "unknowns-decision",
                "assess",
                "verdict",
            ],
        ),
        LibraryPath(
            "wr.production-readiness",
            "low-criticality-unknowns-to-the-guard",
            context={"scope": [{"riskLevel": "low", "readinessAreas": ["security"]}]},
            decisions={"unknowns-loop": ["continue"]},
            expected=[
                *head,
                "check-area",
                *_times(3, "close-unknowns", "unknowns-decision"),
                "assess",
                "verdict",
            ],
        ),
    ]


def _refactoring() -> list[LibraryPath]:
    head = ["goal", *routine("gather-context", CG)]
    tests = routine("run-tests", "test-run")
    tail = [*routine("verify", "final-verification"), *routine("handoff", "handoff")]
    return [
        LibraryPath(
            "wr.refactoring",
            "small-without-safety-net",
            careless=frozenset({"goal"}),
            context={
                "goal": [{"taskComplexity": "small", "hasSafetyNet": False}],
                "plan": [{"refactorSteps": ["extract pricing", "rename Account"]}],
                "run-tests__run": [{"testsFailing": 0}],
            },
            expected=[
                *head,
                "characterise",
                "plan",
                "apply-move",
                "apply-move",
                *tests,
                "test-decision",
                *tail,
            ],
        ),
        LibraryPath(
            "wr.refactoring",
            "large-with-safety-net-loops-to-the-guard",
            context={
                "goal": [{"taskComplexity": "large", "hasSafetyNet": True}],
                "plan": [{"refactorSteps": ["move module"]}],
                "run-tests__run": [{"testsFailing": 2}],
            },
            decisions={"plan-review-loop": ["continue", "stop"], "test-loop": ["continue"]},
            expected=[
                *head,
                "plan",
                *_times(2, routine("review-plan", "plan-review"), "plan-review-decision"),
                "apply-move",
                *_times(3, tests, "test-decision"),
                *tail,
            ],
        ),
        LibraryPath(
            "wr.refactoring",
            "medium-plan-review-to-the-guard",
            context={
                "goal": [{"taskComplexity": "medium", "hasSafetyNet": True}],
                "plan": [{"refactorSteps": ["inline helper"]}],
                "run-tests__run": [{"testsFailing": 0}],
            },
            decisions={"plan-review-loop": ["continue"]},
            expected=[
                *head,
                "plan",
                *_times(3, routine("review-plan", "plan-review"), "plan-review-decision"),
                "apply-move",
                *tests,
                "test-decision",
                *tail,
            ],
        ),
    ]


def _upgrade() -> list[LibraryPath]:
    head = ["inventory", *routine("gather-context", CG), "read-changes"]
    tests = routine("run-tests", "test-run")
    migration = [
        "migration-plan",
        *routine("review-migration", "plan-review"),
        "migration-decision",
    ]
    tail = [*routine("verify", "final-verification"), *routine("handoff", "handoff")]
    return [
        LibraryPath(
            "wr.dependency-upgrade",
            "major-high-risk",
            careless=frozenset({"inventory"}),
            context={
                "inventory": [{"upgradeKind": "major", "riskLevel": "high"}],
                "run-tests__run": [{"testsFailing": 3}, {"testsFailing": 0}],
            },
            decisions={
                "migration-review-loop": ["continue", "stop"],
                "test-loop": ["continue", "stop"],
            },
            expected=[
                *head,
                *_times(2, migration),
                "upgrade",
                *tests,
                "fix-breakage",
                "test-decision",
                *tests,
                "test-decision",
                "rollback",
                *tail,
            ],
        ),
        LibraryPath(
            "wr.dependency-upgrade",
            "patch-tests-to-the-guard",
            context={
                "inventory": [{"upgradeKind": "patch", "riskLevel": "low"}],
                "run-tests__run": [{"testsFailing": 0}],
            },
            decisions={"test-loop": ["continue"]},
            expected=[*head, "upgrade", *_times(4, tests, "test-decision"), *tail],
        ),
        LibraryPath(
            "wr.dependency-upgrade",
            "major-migration-review-to-the-guard",
            context={
                "inventory": [{"upgradeKind": "major", "riskLevel": "medium"}],
                "run-tests__run": [{"testsFailing": 0}],
            },
            decisions={"migration-review-loop": ["continue"]},
            expected=[*head, *_times(3, migration), "upgrade", *tests, "test-decision", *tail],
        ),
    ]


def _postmortem() -> list[LibraryPath]:
    head = ["facts", "timeline", "factors", *routine("challenge", "hypothesis-challenge")]
    return [
        LibraryPath(
            "wr.incident-postmortem",
            "sev1-three-whys",
            careless=frozenset({"facts"}),
            context={"facts": [{"severity": "sev1"}]},
            decisions={"why-loop": ["continue", "continue", "stop"]},
            expected=[
                *head,
                *_times(3, "ask-why", "why-decision"),
                "actions",
                "exec-summary",
                "review",
            ],
        ),
        LibraryPath(
            "wr.incident-postmortem",
            "sev3-whys-to-the-guard",
            context={"facts": [{"severity": "sev3"}]},
            decisions={"why-loop": ["continue"]},
            expected=[*head, *_times(5, "ask-why", "why-decision"), "actions", "review"],
        ),
    ]


def _performance() -> list[LibraryPath]:
    head = ["define", *routine("gather-context", CG), "baseline", "profile"]
    challenge = routine("challenge", "hypothesis-challenge")
    tail = [*routine("run-tests", "test-run"), *routine("handoff", "handoff")]
    return [
        LibraryPath(
            "wr.performance-investigation",
            "regression-with-a-fast-version",
            careless=frozenset({"define"}),
            context={"define": [{"hasBaseline": True}]},
            decisions={"experiment-loop": ["continue", "stop"]},
            expected=[
                *head,
                "compare-baseline",
                *challenge,
                *_times(2, "experiment", "experiment-decision"),
                *tail,
            ],
        ),
        LibraryPath(
            "wr.performance-investigation",
            "no-baseline-experiments-to-the-guard",
            context={"define": [{"hasBaseline": False}]},
            decisions={"experiment-loop": ["continue"]},
            expected=[*head, *challenge, *_times(5, "experiment", "experiment-decision"), *tail],
        ),
    ]


def _authoring() -> list[LibraryPath]:
    head = ["job", "study", "design", *routine("review-design", "plan-review"), "write-file"]
    return [
        LibraryPath(
            "wr.workflow-authoring",
            "small-fixed-after-one-round",
            careless=frozenset({"job"}),
            context={
                "job": [{"taskComplexity": "small"}],
                "write-file": [{"workflowFile": ".workrail/workflows/team.release.json"}],
                "validate": [{"validationErrors": 2}, {"validationErrors": 0}],
            },
            decisions={"validate-loop": ["continue", "stop"]},
            expected=[
                *head,
                "validate",
                "fix-problems",
                "validate-decision",
                "validate",
                "validate-decision",
                "summary",
            ],
        ),
        LibraryPath(
            "wr.workflow-authoring",
            "large-validate-to-the-guard",
            context={"job": [{"taskComplexity": "large"}], "validate": [{"validationErrors": 0}]},
            decisions={"validate-loop": ["continue"]},
            expected=[*head, *_times(5, "validate", "validate-decision"), "walk-paths", "summary"],
        ),
    ]


def _environment() -> list[LibraryPath]:
    challenge = routine("challenge", "hypothesis-challenge")
    return [
        LibraryPath(
            "wr.environment-diagnosis",
            "workrail-setup",
            careless=frozenset({"symptom"}),
            context={"symptom": [{"symptomKind": "workrail"}]},
            decisions={"fix-loop": ["continue", "stop"]},
            expected=[
                "symptom",
                "probe",
                "workrail-checks",
                *challenge,
                *_times(2, "apply-fix", "fix-decision"),
                "report",
            ],
        ),
        LibraryPath(
            "wr.environment-diagnosis",
            "build-fixes-to-the-guard",
            context={"symptom": [{"symptomKind": "build"}]},
            decisions={"fix-loop": ["continue"]},
            expected=[
                "symptom",
                "probe",
                *challenge,
                *_times(4, "apply-fix", "fix-decision"),
                "report",
            ],
        ),
    ]


def _classification() -> list[LibraryPath]:
    return [
        LibraryPath(
            "wr.task-classification",
            "ambiguous-needs-several",
            careless=frozenset({"read-request"}),
            context={
                "read-request": [
                    {
                        "taskType": "research",
                        "taskComplexity": "medium",
                        "riskLevel": "low",
                        "ambiguous": True,
                        "needsSeveral": True,
                    }
                ],
                "clarify": [{"ambiguous": False, "taskType": "feature"}],
            },
            levels={"route-fit": ["low", "high"]},
            expected=[
                "read-request",
                "clarify",
                "clarify-decision",
                "recommend",
                "sequence",
                "route",
            ],
        ),
        LibraryPath(
            "wr.task-classification",
            "clear-single-workflow",
            context={
                "read-request": [
                    {
                        "taskType": "bug",
                        "taskComplexity": "small",
                        "riskLevel": "medium",
                        "ambiguous": False,
                        "needsSeveral": False,
                    }
                ]
            },
            expected=["read-request", "recommend", "route"],
        ),
        LibraryPath(
            "wr.task-classification",
            "still-ambiguous-after-the-guard",
            context={
                "read-request": [
                    {
                        "taskType": "review",
                        "taskComplexity": "small",
                        "riskLevel": "low",
                        "ambiguous": True,
                        "needsSeveral": False,
                    }
                ]
            },
            decisions={"clarify-loop": ["continue"]},
            expected=[
                "read-request",
                *_times(2, "clarify", "clarify-decision"),
                "recommend",
                "route",
            ],
        ),
    ]


PATHS: Final = [
    *_coding(),
    *_bug(),
    *_review(),
    *_docs(),
    *_tests(),
    *_exploration(),
    *_tickets(),
    *_architecture(),
    *_readiness(),
    *_refactoring(),
    *_upgrade(),
    *_postmortem(),
    *_performance(),
    *_authoring(),
    *_environment(),
    *_classification(),
]
