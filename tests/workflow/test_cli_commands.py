"""`workrail validate` and `workrail workflows [show]` through their argparse wiring."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

from workrail.workflow import DiscoveryConfig
from workrail.workflow.cli_commands import add_subcommands, run_list, run_show

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "broken_workflows"
WORKFLOWS = Path(__file__).resolve().parents[2] / "workflows"


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="workrail")
    add_subcommands(parser.add_subparsers(dest="command"))
    return parser.parse_args(list(argv))


def run(*argv: str) -> tuple[int, str]:
    args = parse(*argv)
    out = io.StringIO()
    code = args.handler(args, out)
    return code, out.getvalue()


def test_validate_valid_files_exit_zero() -> None:
    code, text = run("validate", str(WORKFLOWS))
    assert code == 0
    assert "3/3 valid" in text or text.strip().endswith("valid")


def test_validate_reports_problems_and_json() -> None:
    code, text = run(
        "validate", str(CORPUS / "many-problems.json"), str(WORKFLOWS / "code-review.json")
    )
    assert code == 1
    assert "INVALID" in text and "DUPLICATE_STEP_ID" in text and "1/2 valid" in text
    code, text = run("validate", "--json", str(CORPUS / "unknown-loop-body.json"))
    payload = json.loads(text)
    assert code == 1 and payload["valid"] is False
    assert payload["files"][0]["problems"][0]["code"] == "UNKNOWN_LOOP_BODY"


def test_validate_missing_path_exit_two() -> None:
    code, text = run("validate", str(CORPUS / "no-such-file.json"))
    assert code == 2 and "MISSING" in text


def _config(tmp_path: Path) -> DiscoveryConfig:
    project = tmp_path / ".workrail" / "workflows"
    project.mkdir(parents=True)
    (project / "bad.json").write_text((CORPUS / "empty-steps.json").read_text())
    (project / "review.json").write_text((WORKFLOWS / "code-review.json").read_text())
    return DiscoveryConfig(home=tmp_path / "home", cwd=tmp_path, env={}, bundled_dir=WORKFLOWS)


def test_workflows_list_and_show(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    out = io.StringIO()
    assert run_list(parse("workflows"), out, cfg) == 0
    text = out.getvalue()
    assert "coding-task" in text and "INVALID" in text and "shadowed: code-review" in text
    out = io.StringIO()
    run_list(parse("workflows", "--json"), out, cfg)
    listing = json.loads(out.getvalue())
    review = next(w for w in listing["workflows"] if w["workflowId"] == "code-review")
    assert review["source"]["workflowSourceKind"] == "project"
    assert listing["shadowed"][0]["workflowId"] == "code-review"
    out = io.StringIO()
    assert (
        run_show(parse("workflows", "show", "coding-task", "--compiled", "--json"), out, cfg) == 0
    )
    shown = json.loads(out.getvalue())
    assert shown["compiled"]["sourceKind"] == "v1_pinned"
    assert shown["workflowHash"].startswith("sha256:")
    out = io.StringIO()
    assert run_show(parse("workflows", "show", "coding-task"), out, cfg) == 0
    assert "loop forEach" in out.getvalue()
    out = io.StringIO()
    assert run_show(parse("workflows", "show", "nope"), out, cfg) == 1
    assert "Workflow not found: nope" in out.getvalue()
