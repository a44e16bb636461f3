"""Every workflow of the bundled library, driven to completion over MCP by an agent that
reads only the answers: each path of paths.py takes its conditions one way, leaves its
loops by decision or by their guard, and retries the steps it was blocked at (careless
notes, a withheld contract artifact, a low assessment rating). Every prompt it was shown
is checked for unfilled placeholders and against the budget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_agent import Run, ScriptedAgent, workrail_client
from tests.workflows_library.agent import (
    CARELESS_NOTES,
    LibraryPath,
    LibraryScript,
    definition,
    prompt_problems,
)
from tests.workflows_library.paths import PATHS

pytestmark = pytest.mark.anyio


def _steps(workflow_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for step in definition(workflow_id)["steps"]:
        found.append(step)
        found.extend(s for s in step.get("body") or [] if isinstance(s, dict))
    return found


def _step(workflow_id: str, step_id: str) -> dict[str, Any]:
    for step in _steps(workflow_id):
        if step.get("id") == step_id:
            return step
    raise AssertionError(f"{workflow_id} has no step {step_id}")


def _blocks(run: Run, step_id: str) -> list[dict[str, Any]]:
    return [
        t.answer
        for t in run.turns
        if t.answer.get("kind") == "blocked"
        and (t.answer.get("pending") or {}).get("stepId") == step_id
    ]


async def _drive(tmp_path: Path, path: LibraryPath) -> Run:
    async with workrail_client(tmp_path, include_bundled=True) as client:
        return await ScriptedAgent(client, LibraryScript(path)).run(path.workflow_id, path.start)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.test_id)
async def test_the_agent_walks_the_path_to_the_end(tmp_path: Path, path: LibraryPath) -> None:
    run = await _drive(tmp_path, path)
    assert run.complete, run.transcript()
    assert run.steps == list(path.expected), run.transcript()
    assert prompt_problems(run) == []
    expected_blocks: set[str] = set()

    for step_id in path.careless:  # a careless agent is told what is missing, then retries
        (block,) = _blocks(run, step_id)
        issues = json.dumps(block.get("validation") or {})
        unmet = [
            c["message"]
            for c in _step(path.workflow_id, step_id).get("validationCriteria", [])
            if c["type"] != "regex" or c["pattern"].lower() not in CARELESS_NOTES.lower()
        ]
        assert any(message in issues for message in unmet), issues
        assert block["nextCall"]["tool"] == "continue_workflow"
        expected_blocks.add(step_id)

    for step_id in path.withheld:  # a contract step without its artifact blocks
        (block,) = _blocks(run, step_id)
        assert block["nextCall"]["tool"] == "continue_workflow", block
        expected_blocks.add(step_id)

    for assessment, levels in path.levels.items():  # a low rating asks for a follow-up
        (step_id,) = [
            s["id"] for s in _steps(path.workflow_id) if assessment in s.get("assessmentRefs", [])
        ]
        assert len(_blocks(run, step_id)) == list(levels).count("low"), run.transcript()
        expected_blocks.add(step_id)

    assert set(run.blocked) == expected_blocks, run.transcript()
