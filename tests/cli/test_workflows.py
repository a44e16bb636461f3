"""`workrail validate` and `workrail workflows [show]` through their argparse wiring."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from workrail.cli import main

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "broken_workflows"
WORKFLOWS = Path(__file__).resolve().parents[2] / "workflows"
LEGACY = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_workflows"


def run(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), env=env or {}, out=out)
    return code, out.getvalue()


def test_validate_valid_files_exit_zero() -> None:
    code, text = run("validate", str(WORKFLOWS))
    assert code == 0
    assert "3/3 valid" in text or text.strip().endswith("valid")


def test_validate_reports_problems_and_json() -> None:
    code, text = run(
        "validate", str(CORPUS / "many-problems.json"), str(WORKFLOWS / "wr.code-review.json")
    )
    assert code == 1
    assert "INVALID" in text
    assert "DUPLICATE_STEP_ID" in text
    assert "1/2 valid" in text
    assert "problems)" in text
    assert "problem(s)" not in text
    assert text.rstrip().splitlines()[-1].startswith("Next: fix each problem")
    code, text = run("validate", str(CORPUS / "unknown-loop-body.json"))
    assert code == 1
    assert "(1 problem)" in text
    code, text = run("validate", "--json", str(CORPUS / "unknown-loop-body.json"))
    payload = json.loads(text)
    assert code == 1
    assert payload["valid"] is False
    assert payload["files"][0]["problems"][0]["code"] == "UNKNOWN_LOOP_BODY"


def test_validate_missing_path_exit_two() -> None:
    code, text = run("validate", str(CORPUS / "no-such-file.json"))
    assert code == 2
    assert "MISSING" in text


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A project directory with one invalid workflow and one that a WORKFLOW_STORAGE_PATH
    directory shadows (the former bundled `code-review`, whose id is no longer bundled, so
    it also wins over that id's alias); its environment."""
    workflows = tmp_path / ".workrail" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "bad.json").write_text((CORPUS / "empty-steps.json").read_text())
    (workflows / "review.json").write_text((LEGACY / "code-review.json").read_text())
    custom = tmp_path / "team-workflows"
    custom.mkdir()
    (custom / "review.json").write_text((LEGACY / "code-review.json").read_text())
    monkeypatch.chdir(tmp_path)
    return {
        "HOME": str(tmp_path / "home"),
        "WORKFLOW_INCLUDE_USER": "false",
        "WORKFLOW_STORAGE_PATH": str(custom),
    }


def test_workflows_list_and_show(project: dict[str, str]) -> None:
    code, text = run("workflows", env=project)
    assert code == 0
    assert "wr.coding-task" in text
    assert "INVALID" in text
    assert "shadowed: code-review" in text
    lines = text.splitlines()
    assert lines[0].split() == ["WORKFLOW", "DESCRIPTION"]
    build = lines.index("Build and change code")
    assert lines[build + 1].split()[0] == "wr.coding-task"  # one line each, under its job
    assert "[custom: " in next(line for line in lines if line.split()[:1] == ["code-review"])
    _, text = run("workflows", "--json", env=project)
    listing = json.loads(text)
    review = next(w for w in listing["workflows"] if w["workflowId"] == "code-review")
    assert review["source"]["workflowSourceKind"] == "project"
    assert review["job"] == "Review and audit"
    assert listing["shadowed"][0]["workflowId"] == "code-review"
    code, text = run("workflows", "show", "coding-task", "--compiled", "--json", env=project)
    assert code == 0
    shown = json.loads(text)
    assert shown["compiled"]["sourceKind"] == "v1_pinned"
    assert shown["workflowHash"].startswith("sha256:")
    code, text = run("--json", "workflows", "show", "coding-task", env=project)
    assert code == 0
    assert json.loads(text)["workflowId"] == "wr.coding-task"
    code, text = run("--json", "workflows", "show", "code-review", env=project)
    assert code == 0
    assert json.loads(text)["workflowId"] == "code-review"
    code, text = run("workflows", "show", "coding-task", env=project)
    assert code == 0
    assert "loop forEach" in text


def test_workflows_show_of_an_unknown_id_is_not_found_with_the_id_meant(
    project: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """An input error like any other (exit 2, on stderr, an envelope under --json), with
    the id a typo most likely meant."""
    code, text = run("workflows", "show", "wr.coding-tsk", env=project)
    err = capsys.readouterr().err
    assert (code, text) == (2, "")
    assert err.startswith("NOT_FOUND: Workflow not found: wr.coding-tsk\n")
    assert "Next: Did you mean wr.coding-task? Run `workrail workflows`" in err
    code, text = run("--json", "workflows", "show", "nope", env=project)
    assert code == 2
    assert capsys.readouterr().err == ""
    error = json.loads(text)["error"]
    assert error["code"] == "NOT_FOUND"
    assert error["details"]["suggestion"] == "Run `workrail workflows` to see the available ids."


def test_workflows_show_of_an_invalid_file_is_workflow_invalid(
    project: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The same code start_workflow answers, with the file and its problems."""
    workflow_id = json.loads((CORPUS / "empty-steps.json").read_text())["id"]
    code, text = run("workflows", "show", workflow_id, env=project)
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("WORKFLOW_INVALID: ")
    assert "bad.json" in err
    assert "Workflow not found" not in text + err
    assert "invalid definition at" in text
    assert "$" in text
    code, text = run("--json", "workflows", "show", workflow_id, env=project)
    found = json.loads(text)["error"]
    assert code == 1
    assert found["code"] == "WORKFLOW_INVALID"
    assert found["details"]["details"]["path"].endswith("bad.json")
    assert found["details"]["details"]["problems"]


def test_validate_warns_of_quoted_literals_without_changing_the_verdict(tmp_path: Path) -> None:
    raw = json.loads((LEGACY / "code-review.json").read_text())
    path = tmp_path / "review.json"
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(raw))
    raw["steps"][0]["runCondition"] = {"var": "skipReview", "equals": "false"}
    path.write_text(json.dumps(raw))
    code, text = run("validate", str(path))
    assert code == 0
    assert "1/1 valid" in text
    assert "INVALID" not in text
    assert "WARNING CONDITION_QUOTED_LITERAL  $.steps[0].runCondition.equals" in text
    assert "write false without quotes" in text
    assert "1 warning:" in text
    code, text = run("validate", "--json", str(path), str(clean))
    payload = json.loads(text)
    assert code == 0
    assert payload["valid"] is True
    warned, plain = payload["files"]
    assert warned["valid"] is True
    assert warned["problems"] == []
    assert [w["code"] for w in warned["warnings"]] == ["CONDITION_QUOTED_LITERAL"]
    assert plain["warnings"] == []
    assert warned["workflowHash"].startswith("sha256:")
