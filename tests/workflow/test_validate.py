"""Validation of workflow sources: the broken-workflow corpus and the message shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workrail.workflow.catalog import FoundFile, LoadedWorkflow, WorkflowSource, load_file
from workrail.workflow.validate import validate_workflow

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "broken_workflows"
EXPECTED: dict[str, list[list[str]]] = json.loads(
    (CORPUS / "_expected" / "problems.json").read_text()
)


def test_every_corpus_file_has_expectations() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_workflow_reports_all_problems(name: str) -> None:
    path = CORPUS / name
    result = load_file(FoundFile(WorkflowSource("custom", CORPUS), path, path.read_bytes()))
    assert not isinstance(result, LoadedWorkflow)
    assert [[p.code, p.path] for p in result.problems] == EXPECTED[name]
    for problem in result.problems:
        assert problem.message
        assert problem.fix
        assert "\n" not in problem.fix
        assert len(problem.fix) < 300


def test_messages_say_what_to_do() -> None:
    path = CORPUS / "missing-required.json"
    problems = validate_workflow(json.loads(path.read_text()))
    assert {p.fix for p in problems} == {
        "add the required property 'description'",
        "add the required property 'version'",
    }
    typo = validate_workflow(json.loads((CORPUS / "unknown-property.json").read_text()))[0]
    assert typo.fix == "rename it to 'prompt'"
    bad_id = validate_workflow(json.loads((CORPUS / "bad-step-id.json").read_text()))[0]
    assert bad_id.message == "'Step_One' is not a valid step id"
    assert "no '_'" in bad_id.fix


def test_reserved_namespace_is_fine_for_bundled_workflows() -> None:
    raw = json.loads((CORPUS / "reserved-namespace.json").read_text())
    assert validate_workflow(raw, bundled=True) == []


def test_fixture_workflows_are_valid(spec_fixtures: Path) -> None:
    for path in sorted((spec_fixtures / "workflows").glob("*.json")):
        assert validate_workflow(json.loads(path.read_text())) == [], path.name
