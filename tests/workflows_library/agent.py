"""The script a diligent agent follows through the bundled library, and the checks every
answer it reads must pass.

The agent reads only the answers: the loop id of a decision step and the assessment id
of a rating step come from the pending prompt; what it decides (context values, loop
decisions, assessment levels, when to be careless) comes from the path being tested.
Its notes are one text that does what every step of the library asks for (criteria,
evidence, commands, numbers), so a block can only come from a missing artifact, a rating
or a step the path makes careless on purpose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tests.scripted_agent import Output, Run, Visit
from workrail.core.budgets import REHYDRATE_PROMPT_MAX_BYTES, utf8_len

ROOT: Final = Path(__file__).resolve().parents[2]
LIBRARY: Final = ROOT / "workflows"
ROUTINES: Final = LIBRARY / "routines"
PROMPT_BUDGET_BYTES: Final = REHYDRATE_PROMPT_MAX_BYTES
"""No budget applies to a pending prompt itself; the recovery budget (12 KiB) is the
largest prompt the engine ever sends, so every rendered step must fit in it."""

CARELESS_NOTES: Final = "Done."
DILIGENT_NOTES: Final = (
    "Acceptance criteria: 1. the endpoint pages results (met; evidence: ran "
    "pytest tests/test_api.py, output 42 passed, 0 failed, exit code 0; see "
    "src/app/handlers.py line 88). Size: small; risk: low; out of scope: caching.\n"
    "Files: src/app/handlers.py, docs/cli.md, .workrail/workflows/team.release.json. "
    "Commands: make test. Existing tests cover the main path; edge, boundary and error "
    "cases were added.\n"
    "Assumptions: none beyond the documented ones. Questions: none blocking. Is the "
    "invariant kept? Yes, behaviour unchanged.\n"
    "Findings: 1 blocking (applied), 1 should-fix (declined: out of scope), a nit; "
    "severity minor at src/app/handlers.py:88. Authorisation, inputs and secret "
    "handling checked. Verdict: clean; ready with conditions (owner: platform team; "
    "actions typed prevent and detect).\n"
    "Rival and alternative explanations named with the expected result under each; the "
    "experiment refuted the cache hypothesis and confirmed the race; ruled out: "
    "configuration. Reproduced with a regression test; first bad commit 3f9c2ab.\n"
    "Baseline median 412 ms (min 398 ms, max 431 ms), target 300 ms; profile: parse() "
    "61%; coverage 93%. Timeline: 14:32 UTC first alert; impact: 1200 requests; why? "
    "because the retry had no backoff.\n"
    "Versions 4.2.11 -> 5.1.2 per the changelog: breaking changes read, lock file "
    "regenerated, rollback tested. Examples: works. Tickets: ready, dependencies named. "
    "Each break was caught. Checklist: pass, fail and unknown items listed; test "
    "failures: no failures (no product bug, no flaky test). Expected and actual "
    "output compared. Statements marked observed or inferred; confidence: high; "
    "we recommend option A.\n"
    "Verification: workrail validate printed no problems; workrail workflows show "
    "listed every path; workrail --version checked; re-ran the original command and "
    "its output shows no error; cause: a stale PATH; every loop has maxIterations; a "
    "careless run would skip the tests. Start with start_workflow, workflowId "
    "wr.coding-task, then wr.code-review. Remaining: no follow-ups, no known "
    "limitations. Class: feature."
)

LOOP_ID_RE: Final = re.compile(r"loopId ([a-z0-9][a-z0-9-]*)|Loop '([a-z0-9][a-z0-9-]*)'")
ASSESSMENT_ID_RE: Final = re.compile(r"assessmentId ([a-z0-9][a-z0-9_-]*)")
UNFILLED_RE: Final = re.compile(r"\{\{[^}]*\}\}|(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*\}(?!\})")


def definition(workflow_id: str) -> dict[str, Any]:
    loaded = json.loads((LIBRARY / f"{workflow_id}.json").read_text())
    assert isinstance(loaded, dict)
    return loaded


def assessment_dimensions(workflow_id: str) -> dict[str, list[str]]:
    """Assessment id -> its dimension ids, as the workflow declares them."""
    return {
        a["id"]: [d["id"] for d in a["dimensions"]]
        for a in definition(workflow_id).get("assessments", [])
    }


@dataclass(frozen=True)
class LibraryPath:
    """One way through one workflow, and what the agent decides on it."""

    workflow_id: str
    name: str
    expected: Sequence[str]
    """Step ids in the order the agent must see them pending."""
    context: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    """Step id -> context sent on its 1st, 2nd… visit (the last one repeats)."""
    decisions: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Loop id -> decisions in order (the last one repeats); loops not named stop."""
    levels: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Assessment id -> the level rated on each submission (the last one repeats)."""
    careless: frozenset[str] = frozenset()
    """Steps whose first attempt sends only 'Done.' and must be blocked."""
    withheld: frozenset[str] = frozenset()
    """Steps whose first attempt omits their contract artifact and must be blocked."""
    start: Mapping[str, Any] | None = None

    @property
    def test_id(self) -> str:
        return f"{self.workflow_id}:{self.name}"


def _nth(values: Sequence[Any], index: int) -> Any:
    return values[min(index, len(values) - 1)]


class LibraryScript:
    """The agent's choices on one path (see the module docstring)."""

    def __init__(self, path: LibraryPath) -> None:
        self.path = path
        self.dimensions = assessment_dimensions(path.workflow_id)
        self.attempts: dict[str, int] = {}
        self.loop_visits: dict[str, int] = {}
        self.rated: dict[str, int] = {}

    def __call__(self, visit: Visit) -> Output:
        step = visit.step_id
        attempt = self.attempts.get(step, 0)
        self.attempts[step] = attempt + 1
        first_try = not visit.blocked
        notes = DILIGENT_NOTES
        if step in self.path.careless and visit.visit == 0 and first_try:
            notes = CARELESS_NOTES
        artifacts = self._artifacts(visit, withhold=step in self.path.withheld and first_try)
        sets = self.path.context.get(step)
        context = dict(_nth(sets, visit.visit)) if sets else None
        return Output(notes=notes, context=context, artifacts=artifacts)

    def _artifacts(self, visit: Visit, *, withhold: bool) -> list[Any]:
        prompt = visit.prompt
        if visit.step_id.endswith("-decision"):
            loop = LOOP_ID_RE.search(prompt)
            assert loop is not None, f"{visit.step_id}: the prompt names no loopId: {prompt}"
            loop_id = loop.group(1) or loop.group(2)
            if not visit.blocked:
                self.loop_visits[loop_id] = self.loop_visits.get(loop_id, 0) + 1
            decision = _nth(
                self.path.decisions.get(loop_id, ["stop"]), self.loop_visits[loop_id] - 1
            )
            return [{"kind": "wr.loop_control", "loopId": loop_id, "decision": decision}]
        found = ASSESSMENT_ID_RE.search(prompt)
        if found is not None and found.group(1) in self.dimensions:
            assessment = found.group(1)
            index = self.rated.get(assessment, 0)
            self.rated[assessment] = index + 1
            level = _nth(self.path.levels.get(assessment, ["high"]), index)
            dims = dict.fromkeys(self.dimensions[assessment], level)
            return [{"kind": "wr.assessment", "assessmentId": assessment, "dimensions": dims}]
        if withhold:
            return []
        if "wr.review_verdict" in prompt:
            return [REVIEW_VERDICT]
        if "wr.coding_handoff" in prompt:
            return [CODING_HANDOFF]
        return []


REVIEW_VERDICT: Final = {
    "kind": "wr.review_verdict",
    "verdict": "minor",
    "confidence": "high",
    "findings": [{"severity": "minor", "summary": "Unchecked empty page size"}],
    "summary": "One minor finding, otherwise clean",
}
CODING_HANDOFF: Final = {
    "kind": "wr.coding_handoff",
    "version": 1,
    "keyDecisions": ["Paginate with cursors: offsets drift under concurrent writes"],
    "knownLimitations": ["No total count in the response"],
    "testsAdded": ["tests/test_api.py::test_pages_are_stable"],
    "filesChanged": ["src/app/handlers.py"],
}


def prompt_problems(run: Run) -> list[str]:
    """Every rendered prompt of the run that holds an unfilled placeholder or is over
    the budget."""
    problems = []
    for step, prompts in run.prompts.items():
        for text in prompts:
            left = UNFILLED_RE.findall(text)
            if left:
                problems.append(f"{step}: unfilled {sorted(set(left))}")
            size = utf8_len(text)
            if size > PROMPT_BUDGET_BYTES:
                problems.append(f"{step}: {size} bytes > {PROMPT_BUDGET_BYTES}")
    return problems


def routine(caller: str, name: str) -> list[str]:
    """The step ids a templateCall of routine `name` in step `caller` expands to."""
    steps = json.loads((ROUTINES / f"{name}.json").read_text())["steps"]
    return [f"{caller}__{s['id']}" for s in steps]
