"""`workrail validate` on the current language: the constructs a file uses with the WorkRail
release of each, warnings, libraries (their rights, their routines) and replaced bundled
workflows in `workrail workflows`."""

from __future__ import annotations

import io
import json
from pathlib import Path

from workrail.cli import main

V3 = Path(__file__).resolve().parents[1] / "workflow" / "fixtures" / "v3"
LEGACY = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_workflows"


def run(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), env=env or {}, out=out)
    return code, out.getvalue()


def test_validate_names_the_constructs_and_their_releases() -> None:
    code, text = run("validate", str(V3 / "blocks.json"))
    assert code == 0, text
    assert "uses: promptBlocks (after v1.4.0" in text
    assert "features (" in text
    code, text = run("validate", "--json", str(V3 / "metrics.json"))
    payload = json.loads(text)
    uses = {u["construct"]: u["workrailVersion"] for u in payload["files"][0]["uses"]}
    assert uses["steps"] == "v1.4.0"
    assert uses["metricsProfile"].startswith("after v1.4.0")
    assert [w["code"] for w in payload["files"][0]["warnings"]] == ["STALE_SPEC_VERSION"]


def test_a_v14_file_uses_only_v14_constructs() -> None:
    code, text = run("validate", str(LEGACY / "code-review.json"))
    assert code == 0
    assert "uses: WorkRail v1.4.0 constructs only" in text


def test_warnings_do_not_fail_validation() -> None:
    code, text = run("validate", str(V3 / "regex.json"), str(V3 / "function-not-defined.json"))
    assert code == 0, text
    assert "WARNING JS_INCOMPATIBLE_REGEX  $.steps[0].validationCriteria[0].pattern" in text
    assert "WARNING FUNCTION_NOT_DEFINED  $.steps[0].functionReferences[1]" in text
    assert "2/2 valid" in text


def test_a_routine_beside_the_file_is_found(tmp_path: Path) -> None:
    code, text = run("validate", str(V3 / "routine-call.json"))
    assert code == 0, text
    lonely = tmp_path / "routine-call.json"
    lonely.write_text((V3 / "routine-call.json").read_text())
    code, text = run("validate", str(lonely))
    assert code == 1
    assert "UNKNOWN_TEMPLATE" in text


def _reserved(tmp_path: Path) -> Path:
    library = tmp_path / "library"
    library.mkdir()
    raw = json.loads((LEGACY / "code-review.json").read_text())
    (library / "wr.review.json").write_text(json.dumps({**raw, "id": "wr.review"}))
    replacement = {**raw, "id": "wr.code-review", "version": "9.9.9"}
    (library / "wr.code-review.json").write_text(json.dumps(replacement))
    return library


def test_library_files_may_use_the_reserved_namespace(tmp_path: Path) -> None:
    library = _reserved(tmp_path)
    code, text = run("validate", str(library / "wr.review.json"))
    assert code == 1
    assert "RESERVED_NAMESPACE" in text
    code, text = run("validate", "--library", str(library / "wr.review.json"))
    assert code == 0, text


def test_a_library_workflow_replaces_the_bundled_one(tmp_path: Path) -> None:
    library = _reserved(tmp_path)
    env = {
        "HOME": str(tmp_path / "home"),
        "WORKFLOW_INCLUDE_USER": "false",
        "WORKFLOW_INCLUDE_PROJECT": "false",
    }
    for argv, extra in (
        (("workflows", "--library", str(library)), {}),
        (("workflows",), {"WORKFLOW_LIBRARY_PATH": str(library)}),
    ):
        code, text = run(*argv, env={**env, **extra})
        assert code == 0, text
        assert "wr.review" in text
        assert (
            f"replaced: bundled wr.code-review by the library's {library / 'wr.code-review.json'}"
            in text
        )
    code, text = run("workflows", "--json", "--library", str(library), env=env)
    listing = json.loads(text)
    review = next(w for w in listing["workflows"] if w["workflowId"] == "wr.code-review")
    assert review["version"] == "9.9.9"
    assert review["source"]["origin"] == "library"
    assert listing["shadowed"][0]["replacedByLibrary"] is True
