"""The former ids of the bundled workflows keep working: `coding-task`,
`bug-investigation` and `code-review` start and inspect the `wr.` workflows that replaced
them, listings show only the new ids, a real workflow with a former id still wins, and a
session started on a former workflow keeps running on the definition it pinned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_agent import tool_answer, workrail_client
from workrail.workflow.aliases import WORKFLOW_ALIASES, alias_target
from workrail.workflow.catalog import FoundFile, WorkflowSource, build_catalog

ROOT = Path(__file__).resolve().parents[2]
LEGACY = ROOT / "tests" / "fixtures" / "legacy_workflows"
pytestmark = pytest.mark.anyio


def _found(origin: Any, directory: Path, definition: dict[str, Any]) -> FoundFile:
    source = WorkflowSource(origin, directory)
    name = f"{definition['id']}.json"
    return FoundFile(source, directory / name, json.dumps(definition).encode())


def test_every_alias_names_a_bundled_workflow() -> None:
    for former, current in WORKFLOW_ALIASES.items():
        assert (ROOT / "workflows" / f"{current}.json").is_file(), current
        assert not (ROOT / "workflows" / f"{former}.json").exists()
        assert alias_target(former) == current
    assert alias_target("wr.coding-task") is None
    assert alias_target("nope") is None


def test_a_real_workflow_with_a_former_id_wins_over_the_alias(tmp_path: Path) -> None:
    legacy = json.loads((LEGACY / "coding-task.json").read_text())
    bundled = {**legacy, "id": "wr.coding-task"}
    only_bundled = build_catalog([_found("bundled", tmp_path / "b", bundled)])
    assert only_bundled.resolve("coding-task").unwrap().workflow_id == "wr.coding-task"
    both = build_catalog(
        [_found("bundled", tmp_path / "b", bundled), _found("project", tmp_path / "p", legacy)]
    )
    assert both.resolve("coding-task").unwrap().workflow_id == "coding-task"
    assert build_catalog([]).resolve("coding-task").failure().workflow_id == "coding-task"


async def test_former_ids_start_and_inspect_the_new_workflows(tmp_path: Path) -> None:
    first_steps = {"coding-task": "triage", "bug-investigation": "capture", "code-review": "scope"}
    async with workrail_client(tmp_path, include_bundled=True) as client:
        listed = await tool_answer(client, "list_workflows", {})
        ids = {w["workflowId"] for w in listed["workflows"]}
        assert set(WORKFLOW_ALIASES.values()) <= ids
        assert not ids & set(WORKFLOW_ALIASES)
        for former, current in WORKFLOW_ALIASES.items():
            inspected = await tool_answer(client, "inspect_workflow", {"workflowId": former})
            assert inspected["workflowId"] == current
            started = await tool_answer(client, "start_workflow", {"workflowId": former})
            assert started["pending"]["stepId"] == first_steps[former]
            listed_hash = next(
                w["workflowHash"] for w in listed["workflows"] if w["workflowId"] == current
            )
            assert inspected["workflowHash"] == listed_hash


async def test_a_session_on_a_former_workflow_keeps_its_pinned_definition(
    tmp_path: Path,
) -> None:
    notes = "Goal, files, open questions: none; size small. " * 3
    async with workrail_client(tmp_path, [LEGACY], on_disk=True) as before:
        started = await tool_answer(before, "start_workflow", {"workflowId": "coding-task"})
        assert started["pending"]["stepId"] == "understand"
        params = {**started["nextCall"]["params"], "output": {"notesMarkdown": notes}}
        params["context"] = {"taskComplexity": "small"}
        advanced = await tool_answer(before, "continue_workflow", params)
        assert advanced["pending"]["stepId"] == "plan"
    # The same data directory, now served the library alone: the former file is gone.
    async with workrail_client(tmp_path, include_bundled=True, on_disk=True) as after:
        rehydrated = await tool_answer(
            after,
            "continue_workflow",
            {"intent": "rehydrate", "stateToken": advanced["stateToken"]},
        )
        assert rehydrated["pending"]["stepId"] == "plan"
        plan = "1. parser: change parse.py, test test_parse. 2. cli: change cli.py, test. " * 2
        params = {**advanced["nextCall"]["params"], "output": {"notesMarkdown": plan}}
        params["context"] = {"planSlices": ["parser"]}
        moved = await tool_answer(after, "continue_workflow", params)
        assert moved["pending"]["stepId"] == "implement-slice"


async def test_a_former_id_still_names_a_prompt(tmp_path: Path) -> None:
    async with workrail_client(tmp_path, include_bundled=True) as client:
        listed = {p.name for p in (await client.list_prompts()).prompts}
        assert "wr.coding-task" in listed
        assert "coding-task" not in listed
        prompt = await client.get_prompt("coding-task", {"goal": "add --json"})
        text = prompt.messages[0].content.text  # type: ignore[union-attr]
        assert '{"workflowId": "wr.coding-task", "context": {"goal": "add --json"}}' in text
