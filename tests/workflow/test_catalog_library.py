"""Libraries (WORKFLOW_LIBRARY_PATH, --library): the bundled rights and precedence, their
routines, and the compile cache that keeps a rebuilt catalogue from compiling again what
it has seen."""

from __future__ import annotations

import json
from pathlib import Path

from workrail.config import Overrides, WorkrailConfig, load_config
from workrail.workflow.catalog import CompileCache
from workrail.workflow.jsvalues import compile_js_regex, python_only_syntax
from workrail.workflow.sources import discover

V3 = Path(__file__).parent / "fixtures" / "v3"
LEGACY = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_workflows"


def _library(tmp_path: Path) -> Path:
    library = tmp_path / "lib"
    (library / "routines").mkdir(parents=True)
    raw = json.loads((LEGACY / "code-review.json").read_text())
    (library / "wr.review.json").write_text(json.dumps({**raw, "id": "wr.review"}))
    replacement = {**raw, "id": "wr.code-review", "version": "9.9.9"}
    (library / "wr.code-review.json").write_text(json.dumps(replacement))
    (library / "call.json").write_text((V3 / "routine-call.json").read_text())
    (library / "routines" / "check.json").write_text(
        (V3 / "routines" / "routine-e2e-check.json").read_text()
    )
    return library


def test_library_dirs_come_from_the_environment_and_the_command_line(tmp_path: Path) -> None:
    library = _library(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    config = load_config(
        {"WORKFLOW_LIBRARY_PATH": str(library), "WORKFLOW_INCLUDE_USER": "false"},
        Overrides(library_dirs=(str(other),)),
        home=tmp_path,
        cwd=tmp_path,
    ).unwrap()
    origins = [(s.origin, s.directory) for s in config.discovery.sources()]
    assert ("library", library) in origins
    assert ("library", other) in origins
    assert origins.index(("library", library)) < origins.index(("library", other))
    assert origins[-1][0] == "bundled"
    catalog = discover(config.discovery)
    assert catalog.workflows["wr.review"].source.origin == "library"
    assert catalog.workflows["wr.code-review"].definition["version"] == "9.9.9"
    replaced = [s for s in catalog.shadowed if s.workflow.workflow_id == "wr.code-review"]
    assert replaced[0].workflow.source.origin == "bundled"
    steps = [s["id"] for s in catalog.workflows["v3.routine-call"].definition["steps"]]
    assert steps == ["start", "check__inspect", "check__report", "finish"]
    assert "routine-e2e-check" not in catalog.workflows


def _config(tmp_path: Path, variable: str, library: Path) -> WorkrailConfig:
    """The configuration with `library` named by `variable`, and no user workflows."""
    config: WorkrailConfig = load_config(
        {variable: str(library), "WORKFLOW_INCLUDE_USER": "false"}, home=tmp_path, cwd=tmp_path
    ).unwrap()
    return config


def test_the_reserved_namespace_stays_reserved_outside_libraries(tmp_path: Path) -> None:
    library = _library(tmp_path)
    config = _config(tmp_path, "WORKFLOW_STORAGE_PATH", library)
    catalog = discover(config.discovery)
    assert "wr.review" not in catalog.workflows
    bad = next(b for b in catalog.invalid if b.workflow_id == "wr.review")
    assert bad.problems[0].code == "RESERVED_NAMESPACE"


def test_a_rebuilt_catalogue_compiles_only_what_changed(tmp_path: Path) -> None:
    library = _library(tmp_path)
    config = _config(tmp_path, "WORKFLOW_LIBRARY_PATH", library)
    cache = CompileCache()
    first = discover(config.discovery, cache)
    assert cache.hits == 0
    again = discover(config.discovery, cache)
    files = len(first.workflows) + len(first.invalid) + len(first.shadowed) + len(first.routines)
    assert cache.hits == files
    assert again.workflows["v3.routine-call"].definition == (
        first.workflows["v3.routine-call"].definition
    )
    edited = json.loads((library / "call.json").read_text())
    edited["description"] = "Edited."
    (library / "call.json").write_text(json.dumps(edited))
    third = discover(config.discovery, cache)
    assert cache.hits == 2 * files - 1
    assert third.workflows["v3.routine-call"].definition["description"] == "Edited."


def test_python_only_regex_syntax_is_honoured_and_named() -> None:
    inline = compile_js_regex("status: (?i)done")
    assert inline is not None
    assert inline.search("STATUS: DONE")
    dotall = compile_js_regex("a(?s).b")
    assert dotall is not None
    assert dotall.search("a\nb")
    named = compile_js_regex("(?P<word>x)(?P=word)")
    assert named is not None
    assert named.fullmatch("xx")
    assert python_only_syntax("(?i)x(?P<n>y)") == ["(?i)", "(?P<name>…)"]
    assert python_only_syntax("(?<n>y)\\k<n>") == []
