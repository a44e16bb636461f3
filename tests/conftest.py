from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.postgres import PostgresCluster, start_cluster

# A copy of the data written by the reference implementation (spec fixtures).
REFERENCE = Path(__file__).resolve().parent / "fixtures" / "reference"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def reference_data(tmp_path: Path) -> Path:
    """A writable copy of the reference data directory."""
    target = tmp_path / "refdata"
    shutil.copytree(REFERENCE / "data", target)
    for p in [target, *target.rglob("*")]:
        p.chmod(0o700 if p.is_dir() else 0o600)
    return target


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL for the whole run (tests keep apart by database or id)."""
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """The URL of a new, empty database on the shared cluster."""
    return postgres_cluster.url(postgres_cluster.create_database())


@pytest.fixture
def own_postgres() -> Iterator[PostgresCluster]:
    """A cluster of the test's own, for tests that stop or restart the server."""
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.destroy()
