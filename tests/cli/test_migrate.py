"""`workrail migrate`: a data directory into PostgreSQL and back, byte for byte; safe to
re-run; never overwrites a different session; damaged sessions are reported, not moved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REFERENCE
from tests.engine.conftest import counter_entropy, engine_over
from workrail.cli import main
from workrail.core.lifecycle import SessionLifecycle
from workrail.store.local.backend import LocalBackend
from workrail.store.postgres import open_postgres_backend

SESSIONS = sorted(p.name for p in (REFERENCE / "data" / "sessions").iterdir())


def _files(root: Path, under: str) -> dict[str, bytes]:
    base = root / under
    return {
        str(p.relative_to(base)): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def _migrate(source: str, target: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    code = main(["migrate", "--from", source, "--to", target, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_files_to_postgres_and_back_is_byte_identical(
    reference_data: Path, postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archived = SessionLifecycle(archived=True, archived_at="2026-01-02T03:04:05Z")
    LocalBackend.open(reference_data).lifecycle.put(SESSIONS[1], archived).unwrap()
    code, report = _migrate(str(reference_data), postgres_url, capsys)
    assert code == 0
    assert report["ok"] is True
    assert report["sessions"]["moved"] == len(SESSIONS)
    assert report["snapshots"]["moved"] == len(list((reference_data / "snapshots").iterdir()))
    assert report["pinnedWorkflows"]["moved"] == len(
        list((reference_data / "workflows" / "pinned").iterdir())
    )
    assert "***" in report["to"]
    assert postgres_url.split(":")[2].split("@")[0] not in report["to"]

    again_code, again = _migrate(str(reference_data), postgres_url, capsys)
    assert again_code == 0
    assert again["sessions"]["skipped"] == len(SESSIONS)
    assert again["sessions"]["moved"] == 0
    assert again["snapshots"]["moved"] == 0
    assert again["snapshots"]["skipped"] > 0

    back = tmp_path / "back"
    code, report = _migrate(postgres_url, str(back), capsys)
    assert code == 0
    assert report["sessions"]["moved"] == len(SESSIONS)
    assert LocalBackend.open(back).lifecycle.get(SESSIONS[1]).unwrap() == archived
    assert LocalBackend.open(back).lifecycle.get(SESSIONS[0]).unwrap().is_default
    for under in ("sessions", "snapshots", "workflows/pinned"):
        assert _files(back, under) == _files(reference_data, under), under
    assert (back / "keys" / "keyring.json").read_bytes() == (
        reference_data / "keys" / "keyring.json"
    ).read_bytes()


def test_a_different_session_under_the_same_id_is_refused(
    data_dir: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    on_files = engine_over(LocalBackend.open(data_dir), entropy=counter_entropy("clash"))
    r = on_files.start_workflow("probe-flow").unwrap()
    sid = on_files.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    pg = open_postgres_backend(postgres_url).unwrap()
    try:
        on_pg = engine_over(pg, entropy=counter_entropy("clash"))
        other = on_pg.start_workflow("val-flow").unwrap()
        assert on_pg.deps.codec.parse_state(other["stateToken"]).unwrap().session_id == sid
    finally:
        pg.close()
    code = main(["migrate", "--from", str(data_dir), "--to", postgres_url])
    captured = capsys.readouterr()
    assert code == 1
    assert f"refused {sid}: the target holds different content" in captured.out
    assert "Traceback" not in captured.err


def test_a_damaged_session_is_reported_and_the_rest_moved(
    reference_data: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    damaged = SESSIONS[0]
    segment = max((reference_data / "sessions" / damaged / "events").glob("*.jsonl"))
    raw = bytearray(segment.read_bytes())
    raw[len(raw) // 2] ^= 1
    segment.write_bytes(bytes(raw))
    code, report = _migrate(str(reference_data), postgres_url, capsys)
    assert code == 1
    assert report["ok"] is False
    assert report["sessions"]["moved"] == len(SESSIONS) - 1
    (problem,) = report["sessions"]["problems"]
    assert problem["id"] == damaged
    assert problem["outcome"] == "refused"
    assert "corrupt_tail" in problem["reason"]
    assert "workrail export" in problem["reason"]


def test_an_unreachable_target_is_one_line(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.services.postgres import free_port

    url = f"postgresql://u:pa55word@127.0.0.1:{free_port()}/db"
    LocalBackend.open(data_dir).keyring.load().unwrap()  # a store to copy from
    assert main(["migrate", "--from", str(data_dir), "--to", url]) == 1
    err = capsys.readouterr().err
    assert "Cannot reach PostgreSQL" in err
    assert "pa55word" not in err
    assert "Traceback" not in err


@pytest.mark.parametrize("source", ["missing", "empty", "a file"])
def test_a_source_that_holds_no_store_is_refused_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str
) -> None:
    """A mistyped --from is not read as an empty store (which made a keyring in it and
    reported everything moved): refused as input, with nothing written on either side."""
    path = tmp_path / "typo"
    if source == "empty":
        path.mkdir()
    elif source == "a file":
        path.write_text("notes")
    target = tmp_path / "target"
    assert main(["migrate", "--from", str(path), "--to", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("CONFIG_INVALID: "), err
    assert str(path) in err
    assert "Check --from" in err
    assert "Traceback" not in err
    assert not target.exists()
    if source == "empty":
        assert list(path.iterdir()) == []
    elif source == "a file":
        assert path.read_text() == "notes"
    else:
        assert not path.exists()


def _stamped(backend: Any) -> dict[str, Any]:
    """Each session's last activity as the store and its summaries say it, by id."""
    from workrail.store.ports import SessionFilter

    page = backend.query.page(SessionFilter(archived="include"), limit=500).unwrap()
    listed = {s.session_id: s.last_activity for s in page.summaries}
    stored = {sid: backend.sessions.last_activity(sid).unwrap() for sid in listed}
    assert listed == stored
    return listed


def test_last_activity_survives_the_move_both_ways(
    reference_data: Path, postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The log has no clock: the stamp of the source's last append travels with each
    session, so list order and prune --older-than mean the same after a move."""
    import os
    from datetime import UTC, datetime, timedelta

    days = {sid: 10 * (n + 1) for n, sid in enumerate(SESSIONS)}  # 10, 20, … days ago
    now = datetime.now(UTC).replace(microsecond=123456)
    for sid, age in days.items():
        manifest = reference_data / "sessions" / sid / "manifest.jsonl"
        stamp = int((now - timedelta(days=age)).timestamp()) * 10**9 + 123456789
        os.utime(manifest, ns=(stamp, stamp))
    source = LocalBackend.open(reference_data)
    before = _stamped(source)
    source.close()
    assert len(before) == len(SESSIONS)

    assert _migrate(str(reference_data), postgres_url, capsys)[0] == 0
    pg = open_postgres_backend(postgres_url).unwrap()
    try:
        assert _stamped(pg) == before
    finally:
        pg.close()
    back = tmp_path / "back"
    assert _migrate(postgres_url, str(back), capsys)[0] == 0
    assert _stamped(LocalBackend.open(back)) == before

    oldest = max(days.values())
    code = main(
        [
            "--data-dir",
            str(back),
            "sessions",
            "prune",
            "--older-than",
            f"{oldest - 5}d",
            "--dry-run",
            "--json",
        ]
    )
    assert code == 0
    chosen = set(json.loads(capsys.readouterr().out)["selected"])
    assert chosen == {sid for sid, age in days.items() if age > oldest - 5}
