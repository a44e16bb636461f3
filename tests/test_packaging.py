"""What a release ships: the MCP registry's server.json agrees with pyproject.toml and the
README's mcp-name line, the license is the one declared, and the sdist holds the package,
its workflows and docs — never the tests or their fixtures."""

from __future__ import annotations

import json
import re
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from hatchling.builders.sdist import SdistBuilder
from hatchling.builders.wheel import WheelBuilder

ROOT = Path(__file__).resolve().parents[1]


def _project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


def _server() -> dict[str, Any]:
    server: dict[str, Any] = json.loads((ROOT / "server.json").read_text())
    return server


def test_server_json_describes_the_pypi_package_that_pyproject_builds() -> None:
    project, server = _project(), _server()
    assert server["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/")
    assert re.fullmatch(r"io\.github\.[A-Za-z0-9-]+/[A-Za-z0-9._-]+", server["name"])
    assert 0 < len(server["description"]) <= 100  # the registry's limit
    assert server["version"] == project["version"]
    (package,) = server["packages"]
    assert package["registryType"] == "pypi"
    assert package["identifier"] == project["name"]
    assert package["version"] == project["version"]
    assert package["transport"] == {"type": "stdio"}
    assert package["packageArguments"] == [{"type": "positional", "value": "mcp"}]
    assert "workrail" in project["scripts"]  # what `uvx workrail mcp` runs


def test_every_variable_server_json_offers_is_one_workrail_reads() -> None:
    sources = "\n".join(p.read_text() for p in (ROOT / "workrail").rglob("*.py"))
    for variable in _server()["packages"][0]["environmentVariables"]:
        assert f'"{variable["name"]}"' in sources, variable["name"]


def test_the_readme_names_the_registry_entry() -> None:
    marker = re.search(r"mcp-name: (\S+)", (ROOT / "README.md").read_text())
    assert marker is not None
    assert marker.group(1) == _server()["name"]


def test_the_license_is_the_declared_one() -> None:
    project = _project()
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_the_sdist_has_the_package_and_docs_but_no_tests(tmp_path: Path) -> None:
    (built,) = SdistBuilder(str(ROOT)).build(directory=str(tmp_path))
    with tarfile.open(built) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    tops = {n.split("/", 1)[0] for n in names}
    assert {"workrail", "workflows", "docs", "README.md", "LICENSE", "server.json"} <= tops
    assert not any(n.startswith("tests") or "/fixtures/" in n for n in names), sorted(
        n for n in names if "tests" in n
    )
    assert "workflows/wr.coding-task.json" in names
    assert "workflows/routines/handoff.json" in names


def test_the_wheel_carries_the_bundled_workflows_and_schema(tmp_path: Path) -> None:
    (built,) = WheelBuilder(str(ROOT)).build(directory=str(tmp_path))
    with zipfile.ZipFile(built) as wheel:
        names = set(wheel.namelist())
    assert "workrail/bundled_workflows/wr.coding-task.json" in names
    assert "workrail/bundled_workflows/routines/handoff.json" in names
    assert "workrail/workflow/schema/workflow.schema.json" in names
    assert not any(n.startswith("tests/") for n in names)
    assert any(n.endswith("licenses/LICENSE") for n in names)
