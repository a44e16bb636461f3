"""Two `workrail migrate` runs at once into one PostgreSQL database both succeed (what the
other wrote is reported as already there), and a workspace path holding a NUL is refused
when recorded, so no lifecycle record keeps one from migrating."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.engine.conftest import make_engine
from tests.engine.helpers import err
from workrail.cli import main
from workrail.store.local.backend import LocalBackend
from workrail.store.postgres import open_postgres_backend

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 40
RUNS = 2


def test_two_migrations_at_once_both_succeed_and_every_session_arrives(
    data_dir: Path, postgres_url: str
) -> None:
    engine = make_engine(data_dir)
    ids = set()
    for n in range(SESSIONS):
        r = engine.start_workflow("probe-flow", {"goal": f"move me {n}"}).unwrap()
        ids.add(r["sessionId"])
    open_postgres_backend(postgres_url).unwrap().close()  # the schema, before the race
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("WORKRAIL_STORE_URL", None)
    argv = [sys.executable, "-m", "workrail", "migrate", "--from", str(data_dir)]
    runs = [
        subprocess.Popen(
            [*argv, "--to", postgres_url, "--json"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(RUNS)
    ]
    reports = []
    for run in runs:
        out, errors = run.communicate(timeout=300)
        assert run.returncode == 0, (out[-2000:], errors[-2000:])
        reports.append(json.loads(out))
    for report in reports:
        assert report["sessions"]["failed"] == 0
        assert report["sessions"]["refused"] == 0
        assert report["sessions"]["moved"] + report["sessions"]["skipped"] == SESSIONS
    assert sum(r["sessions"]["moved"] for r in reports) == SESSIONS  # each written once
    target = open_postgres_backend(postgres_url).unwrap()
    try:
        for sid in ids:
            assert target.sessions.health(sid).unwrap().is_healthy
    finally:
        target.close()


def test_a_workspace_path_with_a_nul_is_refused_and_never_blocks_a_migration(
    data_dir: Path, postgres_url: str, capsys: object
) -> None:
    engine = make_engine(data_dir)
    refused = err(engine.start_workflow("probe-flow", {"goal": "x"}, workspace_path="/srv/\x00a"))
    assert refused.code == "VALIDATION_ERROR"
    assert "workspacePath" in refused.message
    r = engine.start_workflow("probe-flow", {"goal": "x"}, workspace_path="/srv/repo").unwrap()
    sid = r["sessionId"]
    record = data_dir / "sessions" / sid / "lifecycle.json"
    doc = json.loads(record.read_text())
    doc["workspacePath"] = "/srv/\x00repo"  # as an older version may have recorded it
    record.write_text(json.dumps(doc))
    assert LocalBackend.open(data_dir).lifecycle.get(sid).unwrap().workspace_path is None
    assert main(["migrate", "--from", str(data_dir), "--to", postgres_url]) == 0
    target = open_postgres_backend(postgres_url).unwrap()
    try:
        assert target.sessions.exists(sid).unwrap()
    finally:
        target.close()
