"""`workrail sessions …`: full ids whatever the width, prefixes, bad input as envelopes that
change nothing, deletion that asks, prune that needs an age, and a followed event stream."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.engine.conftest import make_engine
from workrail.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WORKRAIL_DATA_DIR", str(tmp_path / "unused"))
    monkeypatch.setenv("WORKFLOW_STORAGE_PATH", "")
    monkeypatch.delenv("WORKRAIL_STORE_URL", raising=False)


def _sessions(data_dir: Path, n: int = 2, *, similar: bool = False) -> list[str]:
    """`similar`: ids that share a long start (so a prefix can be ambiguous)."""
    from tests.engine.conftest import engine_over
    from tests.engine.test_sessions import counting_entropy
    from workrail.store.local.backend import LocalBackend

    engine = (
        engine_over(LocalBackend.open(data_dir), entropy=counting_entropy())
        if similar
        else make_engine(data_dir)
    )
    out = []
    for k in range(n):
        r = engine.start_workflow("probe-flow", {"goal": f"Refactor module {k}"}).unwrap()
        out.append(engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id)
    return out


def _run(data_dir: Path, *argv: str) -> int:
    return main(["--data-dir", str(data_dir), "sessions", *argv])


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("columns", ["40", "200"])
def test_list_shows_full_ids_status_progress_and_title(
    data_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    columns: str,
) -> None:
    ids = _sessions(data_dir)
    monkeypatch.setenv("COLUMNS", columns)
    assert _run(data_dir) == 0
    out = capsys.readouterr().out
    for sid in ids:
        assert sid in out  # never cut, at any width
    assert "in_progress" in out
    assert "0/3" in out
    assert "Refactor module 1" in out


def test_piped_the_list_is_a_table_with_a_header_and_one_line_per_session(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.engine.conftest import make_engine

    engine = make_engine(data_dir)
    long_title = "A title long enough to fold on any narrow terminal " * 3
    r = engine.start_workflow("probe-flow", {"goal": long_title.strip()}).unwrap()
    sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    monkeypatch.setenv("COLUMNS", "40")
    assert _run(data_dir) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("session"))
    assert header.split() == ["session", "status", "progress", "title", "workflow", "active"]
    (row,) = [line for line in lines if sid in line]
    assert row.startswith(sid)
    assert long_title[:100] in row
    assert "probe-flow" in row


def test_list_json_and_search(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _sessions(data_dir, 3)
    assert _run(data_dir, "--search", "module 2", "--json") == 0
    (row,) = _json(capsys)["sessions"]
    assert row["sessionId"] == ids[2]
    assert row["title"] == "Refactor module 2"
    assert _run(data_dir, "--limit", "1", "--json") == 0
    page = _json(capsys)
    assert len(page["sessions"]) == 1
    assert page["nextCursor"]
    assert _run(data_dir, "--limit", "5", "--cursor", page["nextCursor"], "--json") == 0
    assert len(_json(capsys)["sessions"]) == 2


def test_one_set_of_status_words_and_the_old_ones_as_aliases(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (sid,) = _sessions(data_dir, 1)
    for word in ("in_progress", "pending", "In progress", "in-progress", "running"):
        assert _run(data_dir, "--status", word, "--json") == 0, word
        assert [s["sessionId"] for s in _json(capsys)["sessions"]] == [sid], word
    assert _run(data_dir, "--status", "done", "--json") == 0
    assert _json(capsys)["sessions"] == []
    assert _run(data_dir, "show", sid, "--json") == 0
    shown = _json(capsys)
    assert shown["status"] == "in_progress"
    assert shown["runs"][0]["status"] == "in_progress"
    assert _run(data_dir, "show", sid) == 0
    tree = capsys.readouterr().out
    assert "in_progress" in tree
    assert "pending" not in tree.split("\n")[0]


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["--status", "complet"], "complete"),
        (["--stauts", "complete"], "--status"),
        (["--limit", "ten"], None),
        (["archiv", "x"], "archive"),
        (["events", "sess_a", "--since", "-3"], None),
        (["prune", "--older-than", "soon"], None),
    ],
)
def test_bad_input_is_a_validation_error_with_did_you_mean(
    data_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], hint: str | None
) -> None:
    _sessions(data_dir, 1)
    assert _run(data_dir, *argv, "--json") == 2
    error = _json(capsys)["error"]
    assert error["code"] == "VALIDATION_ERROR"
    if hint is not None:
        assert hint in error["details"]["suggestion"]
        meant = error["details"].get("didYouMean") or error["details"]["details"]["didYouMean"]
        assert meant == hint


def test_prune_refuses_without_an_age(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _sessions(data_dir, 1)
    assert _run(data_dir, "prune", "--json") == 2
    assert "--older-than" in json.dumps(_json(capsys))
    assert (data_dir / "sessions" / ids[0]).exists()


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["show"], "workrail sessions show"),
        (["show", "sess_x", "--bogus"], "workrail sessions show"),
        (["events", "--bogus"], "workrail sessions events"),
        (["--bogus"], "workrail sessions"),
    ],
)
def test_a_bad_argument_is_reported_against_the_subcommand_that_met_it(
    data_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], command: str
) -> None:
    assert _run(data_dir, *argv, "--json") == 2
    error = _json(capsys)["error"]
    assert error["message"].startswith((f"{command}: ", f"Unknown argument for {command}: "))
    assert error["details"]["suggestion"].endswith(f"See `{command} --help`.")


def test_a_prune_with_nothing_to_delete_says_so_in_a_whole_sentence(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _sessions(data_dir, 1)
    assert _run(data_dir, "prune", "--older-than", "30d", "--dry-run") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Would delete 0 sessions older than 30d."
    assert lines[-1] == "Nothing was changed (--dry-run)."
    assert (data_dir / "sessions" / ids[0]).exists()


def test_archive_by_prefix_and_an_ambiguous_prefix_changes_nothing(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _sessions(data_dir, similar=True)
    common = os.path.commonprefix([a, b])
    assert _run(data_dir, "archive", common, "--json") == 2
    error = _json(capsys)["error"]
    assert sorted(error["details"]["details"]["matches"]) == sorted([a, b])
    assert _run(data_dir, "archive", a[: len(common) + 1]) == 0
    assert a in capsys.readouterr().out
    assert _run(data_dir, "--json") == 0
    assert [s["sessionId"] for s in _json(capsys)["sessions"]] == [b]
    assert _run(data_dir, "--all", "--json") == 0
    assert len(_json(capsys)["sessions"]) == 2


def test_delete_asks_or_takes_yes(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (sid,) = _sessions(data_dir, 1)
    assert _run(data_dir, "delete", sid) == 2  # no terminal to ask on: refused
    assert (data_dir / "sessions" / sid).exists()
    assert _run(data_dir, "delete", "sess_" + "q" * 26, "--yes", "--json") == 2
    assert _json(capsys)["error"]["code"] == "NOT_FOUND"
    assert _run(data_dir, "delete", sid[:14], "--yes") == 0
    assert not (data_dir / "sessions" / sid).exists()


def test_events_as_json_lines_from_a_cursor(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (sid,) = _sessions(data_dir, 1)
    assert _run(data_dir, "events", sid, "--since", "2", "--json") == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [e["eventIndex"] for e in lines] == [2, 3, 4]
    assert _run(data_dir, "events", sid) == 0
    assert "session_created" in capsys.readouterr().out
    assert _run(data_dir, "events", sid, "--limit", "2", "--json") == 0
    got = capsys.readouterr()
    assert [json.loads(x)["eventIndex"] for x in got.out.splitlines()] == [0, 1]
    assert "--since 2" in got.err
    assert _run(data_dir, "events", sid, "--since", "3", "--limit", "2") == 0
    got = capsys.readouterr()
    assert len(got.out.splitlines()) == 2
    assert got.err == ""


def test_events_follow_prints_new_appends(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    r = engine.start_workflow("probe-flow").unwrap()
    sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "workrail",
            "--data-dir",
            str(data_dir),
            "sessions",
            "events",
            sid,
            "--follow",
            "--json",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "WORKFLOW_STORAGE_PATH": ""},
    )
    seen: list[dict[str, Any]] = []
    got_all = threading.Event()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            seen.append(json.loads(line))
            if len(seen) >= 8:
                got_all.set()
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        engine.advance(r["stateToken"], r["ackToken"], notes_markdown="followed").unwrap()
        assert got_all.wait(timeout=30), seen
        assert [e["eventIndex"] for e in seen] == list(range(8))
    finally:
        child.terminate()
        child.wait(timeout=30)
        reader.join(timeout=30)
        assert child.stdout is not None
        child.stdout.close()
