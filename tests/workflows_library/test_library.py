"""What the bundled library promises as a whole: at least fifteen workflows and six
routines, each workflow with its metadata, conditions, validation criteria and loops that
end by artifact under a guard, each routine called by several workflows, and paths.py
taking every top-level condition both ways and leaving every artifact loop both by its
decision and by its guard. The README and docs/workflows.md list every workflow."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.workflows_library.agent import LIBRARY, ROOT, ROUTINES, LibraryPath
from tests.workflows_library.paths import PATHS
from workrail.workflow.passes.templates import routine_template_id

WORKFLOWS = {p.stem: json.loads(p.read_text()) for p in sorted(LIBRARY.glob("*.json"))}
ROUTINE_FILES = {p.stem: json.loads(p.read_text()) for p in sorted(ROUTINES.glob("*.json"))}
ROUTINE_IDS = {routine_template_id(r["id"]): r for r in ROUTINE_FILES.values()}
ARG_RE = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")


def _all_steps(definition: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for step in definition["steps"]:
        yield step
        yield from (s for s in step.get("body") or [] if isinstance(s, dict))


def _artifact_loops(definition: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        s
        for s in definition["steps"]
        if s.get("type") == "loop"
        and (s["loop"].get("conditionSource") or {}).get("kind") == "artifact_contract"
    ]


def _decision_step(loop: dict[str, Any]) -> str:
    (step,) = [
        s["id"]
        for s in loop["body"]
        if (s.get("outputContract") or {}).get("contractRef") == "wr.contracts.loop_control"
    ]
    return str(step)


def _paths(workflow_id: str) -> list[LibraryPath]:
    return [p for p in PATHS if p.workflow_id == workflow_id]


def test_the_library_has_fifteen_workflows_and_six_routines() -> None:
    assert len(WORKFLOWS) >= 15
    assert len(ROUTINE_FILES) >= 6
    assert all(stem.startswith("wr.") for stem in WORKFLOWS)


@pytest.mark.parametrize("stem", sorted(WORKFLOWS))
def test_each_workflow_carries_what_the_library_promises(stem: str) -> None:
    wf = WORKFLOWS[stem]
    assert wf["id"] == stem
    assert len(wf["about"]) > 200
    assert len(wf["examples"]) >= 2
    assert wf["metricsProfile"] in {"coding", "review", "research", "design", "ticket", "none"}
    steps = list(_all_steps(wf))
    assert any("runCondition" in s for s in steps), "no condition changes the path"
    criteria = [c for s in steps for c in s.get("validationCriteria", [])]
    assert criteria
    assert all(len(c.get("message", "")) > 30 for c in criteria)
    loops = [s for s in wf["steps"] if s.get("type") == "loop"]
    assert all(1 <= s["loop"]["maxIterations"] <= 40 for s in loops)
    for loop in _artifact_loops(wf):
        assert loop["loop"]["conditionSource"]["loopId"] == loop["id"]
        decision = next(s for s in loop["body"] if s["id"] == _decision_step(loop))
        assert f"loopId {loop['id']}" in json.dumps(decision["promptBlocks"])
    assert _artifact_loops(wf), "no loop ends by artifact"


@pytest.mark.parametrize("stem", sorted(WORKFLOWS))
def test_each_template_call_names_a_routine_and_passes_its_arguments(stem: str) -> None:
    for step in _all_steps(WORKFLOWS[stem]):
        call = step.get("templateCall")
        if call is None:
            continue
        routine = ROUTINE_IDS[call["templateId"]]
        needed = set(ARG_RE.findall(json.dumps(routine["steps"])))
        assert needed <= set(call.get("args", {})), (step["id"], needed)


def test_each_routine_is_called_by_several_workflows() -> None:
    callers: dict[str, set[str]] = {tid: set() for tid in ROUTINE_IDS}
    for stem, wf in WORKFLOWS.items():
        for step in _all_steps(wf):
            if "templateCall" in step:
                callers[step["templateCall"]["templateId"]].add(stem)
    assert all(len(c) >= 2 for c in callers.values()), callers


@pytest.mark.parametrize("stem", sorted(WORKFLOWS))
def test_the_paths_take_every_condition_both_ways(stem: str) -> None:
    paths = _paths(stem)
    assert len(paths) >= 2
    for step in WORKFLOWS[stem]["steps"]:
        if "runCondition" not in step:
            continue
        ids = {step["id"]} | {s["id"] for s in step.get("body") or []}
        taken = [bool(ids & set(p.expected)) for p in paths]
        assert any(taken), (step["id"], taken)
        assert not all(taken), (step["id"], taken)


@pytest.mark.parametrize("stem", sorted(WORKFLOWS))
def test_the_paths_leave_every_artifact_loop_by_decision_and_by_guard(stem: str) -> None:
    for loop in _artifact_loops(WORKFLOWS[stem]):
        decision, guard = _decision_step(loop), loop["loop"]["maxIterations"]
        exits = set()
        for path in _paths(stem):
            rounds = list(path.expected).count(decision)
            if rounds:
                chosen = path.decisions.get(loop["id"], ["stop"])
                last = chosen[min(rounds, len(chosen)) - 1]
                exits.add("decision" if last == "stop" else "guard" if rounds == guard else "?")
        assert exits == {"decision", "guard"}, (loop["id"], exits)


def test_the_readme_and_the_docs_list_every_workflow() -> None:
    readme = (ROOT / "README.md").read_text()
    docs = (ROOT / "docs" / "workflows.md").read_text()
    table = docs[docs.index("## The bundled library") :]
    for stem in WORKFLOWS:
        assert f"`{stem}`" in readme, stem
        assert f"`{stem}`" in table, stem
    for routine in ROUTINE_FILES.values():
        assert routine_template_id(routine["id"]).rsplit(".", 1)[1] in table
