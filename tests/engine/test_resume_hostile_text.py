"""A NUL in any resume_session argument is the same VALIDATION_ERROR on every backend,
answered before a store is asked (PostgreSQL text cannot hold a NUL at all)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.conftest import engine_over
from tests.engine.helpers import err
from workrail.engine.api import Engine
from workrail.engine.resume import ResumeRequest
from workrail.store.local.backend import LocalBackend
from workrail.store.ports import Backend


@pytest.fixture(params=["files", "postgres"])
def engine(request: pytest.FixtureRequest, data_dir: Path) -> Iterator[Engine]:
    backend: Backend
    if request.param == "files":
        backend = LocalBackend.open(data_dir)
    else:
        from workrail.store.postgres import open_postgres_backend

        backend = open_postgres_backend(request.getfixturevalue("postgres_url")).unwrap()
    made = engine_over(backend)
    made.start_workflow("probe-flow", {"goal": "the parser refactor"}).unwrap()
    yield made
    backend.close()


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (ResumeRequest(query="parser\x00refactor"), "query"),
        (ResumeRequest(session_id="sess_\x00"), "sessionId"),
        (ResumeRequest(run_id="run_\x00x"), "runId"),
        (ResumeRequest(query="parser", workspace_path="/srv/\x00repo"), "workspacePath"),
        (ResumeRequest(query="parser", git_branch="main\x00"), "gitBranch"),
        (ResumeRequest(query="parser", git_head_sha="ab\x00cd"), "gitHeadSha"),
    ],
)
def test_a_nul_in_any_argument_is_a_validation_error(
    engine: Engine, request_: ResumeRequest, field: str
) -> None:
    refused = err(engine.resume_session(request_))
    assert refused.code == "VALIDATION_ERROR", refused
    assert field in refused.message
    assert "NUL" in refused.message
    assert engine.resume_session(ResumeRequest(query="parser")).unwrap().candidates
