"""`workrail export` / `workrail import` through the command's own entry point."""

from __future__ import annotations

import io
import json
from pathlib import Path

from tests.bundle.helpers import PROBE, tree_fingerprint
from workrail.bundle.validate import validate_bytes
from workrail.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list[str], data: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = {"WORKRAIL_DATA_DIR": str(data), "WORKFLOW_STORAGE_PATH": ""}
    code = main(argv, env=env, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_export_to_file_then_import_prints_fresh_tokens(
    reference_data: Path, data_dir: Path, tmp_path: Path
) -> None:
    target = tmp_path / "probe.bundle.json"
    code, out, _ = _run(["export", PROBE, "-o", str(target), "--json"], reference_data)
    assert code == 0
    summary = json.loads(out)
    assert summary["ok"]
    assert summary["complete"]
    assert summary["sessionId"] == PROBE
    assert validate_bytes(target.read_bytes()).unwrap()

    code, out, _ = _run(["import", str(target), "--json"], data_dir)
    assert code == 0
    payload = json.loads(out)
    assert payload["sessionId"] == PROBE
    assert payload["renamed"] is False
    run = payload["runs"][0]
    (minted,) = payload["tokens"]["runs"]
    assert minted["runId"] == run["runId"]
    assert minted["nodeId"] == run["preferredTipNodeId"]
    assert minted["stateToken"].startswith("st1")

    before = tree_fingerprint(data_dir / "sessions")
    code, out, _ = _run(["import", str(target)], data_dir)  # again: already here
    assert code == 0
    assert f"already imported as {PROBE}" in out
    assert "--copy" in out
    assert tree_fingerprint(data_dir / "sessions") == before, "nothing was written"
    code, out, _ = _run(["import", str(target), "--json"], data_dir)
    assert json.loads(out)["alreadyImportedAs"] == PROBE

    code, out, _ = _run(["import", str(target), "--copy"], data_dir)  # a second copy
    assert code == 0
    assert "renamed from " + PROBE in out
    assert "continue at node" in out
    # a person's summary: no tokens, no JSON dump, what to do next
    assert "st1" not in out
    assert "ack1" not in out
    assert '"tokens"' not in out
    assert len(out) < 1000
    assert "resume_session" in out
    assert "workrail sessions show" in out


def test_export_to_stdout_puts_the_summary_on_stderr(reference_data: Path) -> None:
    code, out, err = _run(["export", PROBE], reference_data)
    assert code == 0
    assert validate_bytes(out.encode()).unwrap().bundle.session.sessionId == PROBE
    assert f"Exported {PROBE} to stdout" in err


def test_errors_are_reported_with_code_what_to_do_next_and_exit_status(
    reference_data: Path, data_dir: Path, tmp_path: Path
) -> None:
    code, _, err = _run(["export", "sess_aaaaaaaaaaaaaaaaaaaaaaaaaa"], reference_data)
    assert code == 2
    assert err.startswith("NOT_FOUND: No session sess_aaaa")
    bad = tmp_path / "bad.json"
    bad.write_text('{"bundleSchemaVersion": 7}')
    before = tree_fingerprint(data_dir)
    code, out, _ = _run(["import", str(bad), "--json"], data_dir)
    assert code == 2  # the input was at fault
    error = json.loads(out)["error"]
    assert error["code"] == "BUNDLE_UNSUPPORTED_VERSION"
    assert error["details"]["path"] == "bundleSchemaVersion"
    assert error["retry"] == {"kind": "not_retryable"}
    assert error["details"]["suggestion"]
    assert "workrail export SESSION -o FILE" in error["details"]["suggestion"]
    code, _, err = _run(["import", str(tmp_path / "absent.json")], data_dir)
    assert code == 2
    assert err.startswith("IMPORT_READ_FAILED")
    assert "Next: Check the file's path" in err
    assert "argument" not in err
    assert tree_fingerprint(data_dir) == before


def test_export_takes_a_unique_start_of_an_id_and_says_when_it_cannot_write(
    reference_data: Path, tmp_path: Path
) -> None:
    code, out, _ = _run(["export", PROBE[:12], "--json"], reference_data)
    assert code == 0
    assert validate_bytes(out.encode()).unwrap().bundle.session.sessionId == PROBE
    missing = tmp_path / "no" / "such" / "folder" / "x.json"
    code, _, err = _run(["export", PROBE, "-o", str(missing)], reference_data)
    assert code == 1
    assert err.startswith("EXPORT_BUILD_FAILED")
    assert "folder of the output file" in err
    assert "sessions show" not in err


def test_salvage_export_is_announced(reference_data: Path, tmp_path: Path) -> None:
    segment = max((reference_data / "sessions" / PROBE / "events").iterdir())
    segment.write_bytes(segment.read_bytes().replace(b'"v":1', b'"v":2', 1))
    code, out, _ = _run(["export", PROBE, "-o", str(tmp_path / "b.json")], reference_data)
    assert code == 0
    assert "WARNING" in out
    assert "validated prefix" in out
    code, out, _ = _run(["export", PROBE, "-o", str(tmp_path / "b.json"), "--json"], reference_data)
    assert json.loads(out)["complete"] is False


def test_import_json_has_the_fields_docs_mcp_names(
    reference_data: Path, data_dir: Path, tmp_path: Path
) -> None:
    import re

    doc = " ".join((ROOT / "docs" / "mcp.md").read_text(encoding="utf-8").split())
    named = re.search(r"`--json` prints `\{(.*?)\}`, where `tokens` is `\{(.*?)\}`", doc)
    assert named is not None

    def top(fields: str) -> set[str]:
        flat = re.sub(r"\[\{[^]]*\}\]", "", fields)
        return {f.split(":")[0].strip() for f in flat.split(",") if f.strip()}

    target = tmp_path / "probe.bundle.json"
    assert _run(["export", PROBE, "-o", str(target)], reference_data)[0] == 0
    code, out, _ = _run(["import", str(target), "--json"], data_dir)
    assert code == 0
    payload = json.loads(out)
    assert set(payload) == top(named.group(1))
    assert set(payload["tokens"]) == top(named.group(2))
    runs = re.search(r"runs: \[\{(.*?)\}\]", named.group(2))
    assert runs is not None
    documented = {f.strip() for f in runs.group(1).split(",")}
    assert set(payload["tokens"]["runs"][0]) <= documented


def test_import_names_the_store_it_wrote_to_in_what_to_run_next(
    reference_data: Path, tmp_path: Path
) -> None:
    """The follow-up command reads the store the import wrote to (--data-dir given on the
    command line), not the one the environment names; a finished session is not offered
    to an agent to continue."""
    target = tmp_path / "probe.bundle.json"
    assert _run(["export", PROBE, "-o", str(target)], reference_data)[0] == 0
    there = tmp_path / "there"
    code, out, _ = _run(["--data-dir", str(there), "import", str(target)], tmp_path / "elsewhere")
    assert code == 0
    see = next(line for line in out.splitlines() if line.startswith("See it: "))
    assert see == f"See it: workrail --data-dir {there} sessions show {PROBE}"
    shown = _run(see.removeprefix("See it: workrail ").split(), tmp_path / "elsewhere")
    assert shown[0] == 0, shown
    assert PROBE in shown[1]
    assert "resume_session" in out


def test_a_finished_session_imported_is_not_offered_to_continue(
    data_dir: Path, tmp_path: Path
) -> None:
    from tests.engine.conftest import engine_over
    from workrail.store.local.backend import LocalBackend

    engine = engine_over(LocalBackend.open(tmp_path / "source"))
    step = engine.start_workflow("probe-flow").unwrap()
    while not step["isComplete"]:
        step = engine.advance(step["stateToken"], step["ackToken"], notes_markdown="x").unwrap()
    target = tmp_path / "done.bundle.json"
    assert _run(["export", step["sessionId"], "-o", str(target)], tmp_path / "source")[0] == 0
    code, out, _ = _run(["import", str(target)], data_dir)
    assert code == 0
    assert "It is complete: nothing is left to continue." in out
    assert "resume_session" not in out
