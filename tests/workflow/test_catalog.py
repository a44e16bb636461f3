"""Discovery: sources, precedence, shadowing, invalid files and missing directories."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure

from tests.workflow.wf_helpers import make_workflow, step
from workrail.workflow import DiscoveryConfig, discover
from workrail.workflow.sources import bundled_workflows_dir

REPO_WORKFLOWS = Path(__file__).resolve().parents[2] / "workflows"


def write(directory: Path, name: str, definition: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(definition) if not isinstance(definition, str) else definition)
    return path


def flow(workflow_id: str, prompt: str = "Do it.") -> dict[str, Any]:
    return {**make_workflow([step("only", prompt=prompt)]), "id": workflow_id}


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {
        "home": tmp_path / "home",
        "cwd": tmp_path / "work",
        "bundled": tmp_path / "bundled",
        "custom1": tmp_path / "custom1",
        "custom2": tmp_path / "custom2",
    }


def config(dirs: dict[str, Path], **env: str) -> DiscoveryConfig:
    return DiscoveryConfig(home=dirs["home"], cwd=dirs["cwd"], env=env, bundled_dir=dirs["bundled"])


def test_precedence_and_shadowing(dirs: dict[str, Path]) -> None:
    write(dirs["bundled"], "a.json", flow("shared", "bundled"))
    write(dirs["home"] / ".workrail" / "workflows", "a.json", flow("shared", "user"))
    write(dirs["cwd"] / ".workrail" / "workflows", "a.json", flow("shared", "project"))
    write(dirs["custom2"], "a.json", flow("shared", "custom2"))
    write(dirs["custom1"], "a.json", flow("shared", "custom1"))
    storage = os.pathsep.join([str(dirs["custom1"]), str(dirs["custom2"])])
    catalog = discover(config(dirs, WORKFLOW_STORAGE_PATH=storage))
    winner = catalog.resolve("shared").unwrap()
    assert winner.definition["steps"][0]["prompt"] == "custom1"
    assert (winner.source.kind, winner.source.ref) == ("project", str(dirs["custom1"]))
    assert [s.workflow.definition["steps"][0]["prompt"] for s in catalog.shadowed] == [
        "custom2",
        "project",
        "user",
        "bundled",
    ]
    without_custom = discover(config(dirs))
    assert without_custom.resolve("shared").unwrap().source.origin == "project"
    user_only = discover(config(dirs, WORKFLOW_INCLUDE_PROJECT="false"))
    user = user_only.resolve("shared").unwrap()
    assert (user.source.kind, user.source.ref) == (
        "user",
        str(dirs["home"] / ".workrail" / "workflows"),
    )
    bundled = discover(config(dirs, WORKFLOW_INCLUDE_PROJECT="0", WORKFLOW_INCLUDE_USER="no"))
    assert (bundled.resolve("shared").unwrap().source.ref) == "(bundled)"
    assert (
        discover(
            config(
                dirs,
                WORKFLOW_INCLUDE_PROJECT="0",
                WORKFLOW_INCLUDE_USER="0",
                WORKFLOW_INCLUDE_BUNDLED="off",
            )
        ).workflows
        == {}
    )


def test_invalid_file_is_listed_and_does_not_hide_valid_one(dirs: dict[str, Path]) -> None:
    write(dirs["bundled"], "good.json", flow("shared"))
    bad = {**flow("shared"), "steps": []}
    write(dirs["cwd"] / ".workrail" / "workflows", "bad.json", bad)
    write(dirs["cwd"] / ".workrail" / "workflows", "broken.json", "{not json")
    write(dirs["cwd"] / ".workrail" / "workflows", "only-bad.json", {**flow("lonely"), "name": ""})
    catalog = discover(config(dirs))
    assert catalog.resolve("shared").unwrap().source.origin == "bundled"
    assert sorted(i.path.name for i in catalog.invalid) == [
        "bad.json",
        "broken.json",
        "only-bad.json",
    ]
    assert isinstance(catalog.resolve("lonely"), Failure)
    rows = {r["workflowId"]: r for r in catalog.summaries()}
    assert rows["lonely"]["workflowHash"] is None
    assert rows["shared"]["workflowHash"].startswith("sha256:")


def test_missing_and_unreadable_directories_warn(dirs: dict[str, Path], tmp_path: Path) -> None:
    write(dirs["bundled"], "a.json", flow("alpha"))
    not_a_dir = write(tmp_path, "file.txt", "x")
    storage = os.pathsep.join([str(tmp_path / "nope"), str(not_a_dir)])
    catalog = discover(config(dirs, WORKFLOW_STORAGE_PATH=storage))
    assert catalog.resolve("alpha").unwrap()
    assert any("does not exist" in w for w in catalog.warnings)
    assert any("cannot read" in w for w in catalog.warnings)


def test_same_directory_duplicates_use_file_name_order(dirs: dict[str, Path]) -> None:
    write(dirs["bundled"], "b.json", flow("dup", "second"))
    write(dirs["bundled"], "a.json", flow("dup", "first"))
    catalog = discover(config(dirs))
    assert catalog.resolve("dup").unwrap().path.name == "a.json"
    assert catalog.shadowed[0].workflow.path.name == "b.json"


def test_relative_storage_path_is_resolved_against_cwd(dirs: dict[str, Path]) -> None:
    write(dirs["cwd"] / "flows", "a.json", flow("rel"))
    catalog = discover(config(dirs, WORKFLOW_STORAGE_PATH="flows"))
    assert catalog.resolve("rel").unwrap().source.ref == str(dirs["cwd"] / "flows")


def test_bundled_workflows_are_valid_and_drivable() -> None:
    assert bundled_workflows_dir() is not None
    cfg = DiscoveryConfig(
        home=Path("/nonexistent-home"),
        cwd=Path("/nonexistent-cwd"),
        env={},
        bundled_dir=REPO_WORKFLOWS,
    )
    catalog = discover(cfg)
    assert catalog.invalid == ()
    assert len(catalog.workflows) >= 3
    for wf in catalog.workflows.values():
        compiled = wf.compile().unwrap()
        assert compiled.loops, f"{wf.workflow_id} should use at least one loop"
        assert any(s.run_condition is not None for s in compiled.steps_by_id.values())
        assert wf.source.ref == "(bundled)"
